import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { expect, inject } from "vitest";
import { type Delivery, type DeliveryMessage, expectJson, send, type Webhook, worker } from "../fixtures";
import { databaseOf, shards } from "../pool";
import type { Received } from "../webhook-receiver";

/** A fresh inbox on the tests' receiver (webhook-receiver.ts); `query` sets how it answers (status, fail_first...). */
export const newInbox = (query = "") => `${inject("receiverUrl")}/${crypto.randomUUID()}${query ? `?${query}` : ""}`;

/** What an inbox got so far, oldest first. */
export async function received(inbox: string): Promise<Received[]> {
  const url = new URL(inbox);
  return (await fetch(`${url.origin}${url.pathname}`)).json();
}

/** What an inbox got, once it got `count` requests (polling; fails after `withinMs`). */
export async function receivedAtLeast(inbox: string, count: number, withinMs = 15_000): Promise<Received[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const got = await received(inbox);
    if (got.length >= count) return got;
    if (Date.now() > deadline) throw new Error(`${inbox} got ${got.length} requests, expected ${count}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export type CreatedWebhook = Webhook & { secret: string };

export const subscribe = async (key: string, body: Record<string, unknown>) =>
  expectJson<CreatedWebhook>(await send("POST", "/webhooks", { key, body }));

/** The payload of a received request, once its signature verifies with `secret` (the standardwebhooks library). */
export const verified = (request: Received, secret: string) => new StandardWebhook(secret).verify(request.body, request.headers);

/** Runs the Worker's cron handler as the trigger `cron` would, to its end (with `bindings` in place of the real ones). */
export async function runCron(cron: "* * * * *" | "23 * * * *", bindings: Partial<Env> = {}) {
  const context = createExecutionContext();
  await worker.scheduled?.(createScheduledController({ cron }), { ...env, ...bindings }, context);
  await waitOnExecutionContext(context);
}

/**
 * Messages handed to the Worker's queue consumer directly, as one batch (as duplicates of the queue's own would be),
 * run to its end (with `bindings` in place of the real ones).
 */
export async function deliverMessages(bodies: DeliveryMessage[], bindings: Partial<Env> = {}) {
  const batch = createMessageBatch<DeliveryMessage>(
    "webhook-deliveries",
    bodies.map((body) => ({ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body })),
  );
  const context = createExecutionContext();
  await worker.queue?.(batch, { ...env, ...bindings });
  return getQueueResult(batch, context);
}

/** A queue binding that drops what it is given: a hand-off lost with its isolate. */
export const losingQueue = {
  send: async () => {},
  sendBatch: async () => {},
} as unknown as Queue;

/**
 * A queue binding that keeps what it is sent, each sendBatch call apart, and refuses a call past Cloudflare Queues'
 * limits (100 messages, 256 KB) as the real queue does.
 */
export function recordingQueue() {
  const calls: MessageSendRequest<DeliveryMessage>[][] = [];
  const queue = {
    send: async (body: DeliveryMessage) => void calls.push([{ body }]),
    sendBatch: async (messages: MessageSendRequest<DeliveryMessage>[]) => {
      const bytes = messages.reduce((sum, message) => sum + JSON.stringify(message.body).length, 0);
      if (messages.length > 100 || bytes > 256 * 1024) throw new Error("Unknown Internal Error (15000)");
      calls.push(messages);
    },
  } as unknown as Queue;
  return { queue, calls, messages: () => calls.flat() };
}

/** How many of the organization's deliveries are in each status (of those that have any). */
export async function deliveryStatuses(organizationId: string): Promise<Record<string, number>> {
  const { results } = await databaseOf(organizationId)
    .prepare(
      `SELECT d.status, count(*) AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
      WHERE w.organization_id = ?1 GROUP BY d.status`,
    )
    .bind(organizationId)
    .all<{ status: string; n: number }>();
  return Object.fromEntries(results.map(({ status, n }) => [status, n]));
}

/** The organization's deliveries that had at least `attempts` attempts. */
export async function attemptedDeliveries(organizationId: string, attempts = 1): Promise<string[]> {
  const { results } = await databaseOf(organizationId)
    .prepare(
      `SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
      WHERE w.organization_id = ?1 AND d.attempts >= ?2 ORDER BY d.id`,
    )
    .bind(organizationId, attempts)
    .all<{ id: string }>();
  return results.map(({ id }) => id);
}

export const deliveriesOf = async (key: string, webhookId: string, query = "") =>
  expectJson<{ deliveries: Delivery[]; next_cursor: string | null }>(
    await send("GET", `/webhooks/${webhookId}/deliveries${query}`, { key }),
  );

/** The webhook's deliveries once none is being attempted or due within `withinMs` (polling). */
export async function settledDeliveries(key: string, webhookId: string, withinMs = 15_000) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const { deliveries } = await deliveriesOf(key, webhookId);
    if (deliveries.every((delivery) => delivery.status !== "pending" || delivery.attempts > 0)) return deliveries;
    expect(Date.now(), "deliveries still unattempted").toBeLessThan(deadline);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Time passes, as far as the event and webhook tables know: every time they hold moves `seconds` into the past. */
export async function timePasses(seconds: number) {
  const shift = `-${seconds} seconds`;
  for (const db of shards()) await timePassesOn(db, shift);
}

async function timePassesOn(db: D1Database, shift: string) {
  await db.batch([
    db
      .prepare(
        `UPDATE webhook_deliveries SET next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', next_attempt_at, ?1),
              leased_until = strftime('%Y-%m-%dT%H:%M:%fZ', leased_until, ?1), created_at = strftime('%Y-%m-%dT%H:%M:%fZ', created_at, ?1)`,
      )
      .bind(shift),
    db
      .prepare(
        `UPDATE webhooks SET failing_since = strftime('%Y-%m-%dT%H:%M:%fZ', failing_since, ?1),
              previous_secret_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', previous_secret_expires_at, ?1)`,
      )
      .bind(shift),
    db.prepare("UPDATE events SET occurred_at = strftime('%Y-%m-%dT%H:%M:%fZ', occurred_at, ?1)").bind(shift),
  ]);
}
