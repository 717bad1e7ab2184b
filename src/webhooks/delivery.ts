import { bucketedSince } from "../db/buckets";
import { type Event, toEvent } from "../events/events.sql.ts";
import {
  type AttemptOutcome,
  type Claim,
  type ClaimedDelivery,
  claimDeliveries,
  claimOverdueDeliveries,
  recordAttempts,
} from "./deliveries.sql.ts";
import { openSecret, type WebhookSettings } from "./secret-box";
import { signedHeaders } from "./signing";
import type { Target } from "./webhooks.sql.ts";

/** A message on the delivery queue: events just committed, or deliveries due (a retry, a redelivery, the sweep). */
export interface DeliveryMessage {
  events?: string[];
  deliveries?: string[];
}

/** Seconds to wait after the nth failed attempt (about 19 hours in all); after the last, the delivery has failed. */
const RETRY_DELAYS = [5, 60, 600, 3600, 6 * 3600, 12 * 3600];
/** Cloudflare Queues delay a message by 12 hours at most. */
const MAX_QUEUE_DELAY = 12 * 3600;

/** The delay before the next attempt after `attempts` failed ones, with up to 20% jitter; null: no attempt left. */
function retryDelay(attempts: number): number | null {
  const base = RETRY_DELAYS[attempts - 1];
  if (base === undefined) return null;
  return Math.min(MAX_QUEUE_DELAY, Math.round(base * (1 + Math.random() * 0.2)));
}

/** How long an attempt may take. A failure to reach the URL is reported as taking this long, whenever it happened. */
export const ATTEMPT_DEADLINE_MS = 10_000;
/**
 * What every failure to reach the URL says (refused, reset, TLS, DNS, no answer in time), with no exception text: how
 * a host refuses would otherwise tell whoever names it what listens there.
 */
export const UNREACHABLE = "could not reach the URL";
const EXCERPT_BYTES = 1024;

/** The first KiB of a response body (as text), leaving the rest unread. */
async function excerpt(response: Response): Promise<string | null> {
  if (!response.body) return null;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let read = 0;
  while (read < EXCERPT_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    const part = value.subarray(0, EXCERPT_BYTES - read);
    read += part.byteLength;
    text += decoder.decode(part, { stream: true });
  }
  await reader.cancel().catch(() => {});
  return text + decoder.decode();
}

export interface AttemptResult {
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

/**
 * One signed POST of `event` to the target: a 2xx within 10 seconds is success. Redirects are not followed (a 3xx
 * fails): the URL rules judged the URL given, not where it may send the service. A failure to reach the URL is
 * UNREACHABLE with the deadline as its duration (the exception goes to the operator's log only).
 */
export async function sendEvent(
  settings: WebhookSettings,
  target: Target,
  messageId: string,
  event: Event,
): Promise<AttemptResult> {
  const started = Date.now();
  const took = () => Date.now() - started;
  const failed = (error: unknown, result: AttemptResult): AttemptResult => {
    console.warn(
      JSON.stringify({ message: "webhook attempt failed", webhook_id: target.webhook_id, error: String(error).slice(0, 200) }),
    );
    return result;
  };
  let body: string;
  let headers: Record<string, string>;
  try {
    const secrets = [await openSecret(settings, target.secret)];
    if (target.previous_secret) secrets.push(await openSecret(settings, target.previous_secret));
    body = JSON.stringify({ type: event.type, timestamp: event.occurred_at, data: event });
    headers = await signedHeaders(secrets, messageId, Math.floor(Date.now() / 1000), body);
  } catch (error) {
    // A secret the service's key no longer opens: nothing was sent, and nothing about the target is told.
    return failed(error, { status_code: null, duration_ms: took(), response_excerpt: null, error: "could not sign the event" });
  }
  try {
    const response = await fetch(target.url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "User-Agent": "app-management-service-webhooks", ...headers },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(ATTEMPT_DEADLINE_MS),
    });
    const text = await excerpt(response).catch(() => null);
    const ok = response.status >= 200 && response.status < 300;
    return {
      status_code: response.status,
      duration_ms: took(),
      response_excerpt: text,
      error: ok ? null : `HTTP ${response.status}`,
    };
  } catch (error) {
    return failed(error, { status_code: null, duration_ms: ATTEMPT_DEADLINE_MS, response_excerpt: null, error: UNREACHABLE });
  }
}

/**
 * sendEvent for POST /webhooks/{id}/test, whose caller reads the answer as it comes: a failure to reach the URL
 * answers only once the deadline has passed since the attempt began, so a closed port, a port that speaks no TLS and
 * one that never answers all look alike (the same body, at the same time) rather than like a port scan.
 */
export async function sendTestEvent(
  settings: WebhookSettings,
  target: Target,
  messageId: string,
  event: Event,
): Promise<AttemptResult> {
  const deadline = Date.now() + ATTEMPT_DEADLINE_MS;
  const result = await sendEvent(settings, target, messageId, event);
  if (result.error === UNREACHABLE) await scheduler.wait(Math.max(0, deadline - Date.now()));
  return result;
}

interface Queues {
  WEBHOOK_DELIVERIES: Queue<DeliveryMessage>;
  DB: D1Database;
  BUCKETED_SINCE: string;
}

/** Attempts one claimed delivery: what to record, and the delay of the retry (null: settled). */
async function attemptDelivery(
  settings: WebhookSettings,
  claimed: ClaimedDelivery,
): Promise<{ outcome: AttemptOutcome; retryIn: number | null }> {
  const attemptedAt = new Date().toISOString();
  const result = await sendEvent(settings, claimed, claimed.delivery_id, toEvent(claimed.event));
  const ok = result.error === null; // sendEvent's error is null exactly for a 2xx
  const retryIn = ok ? null : retryDelay(claimed.attempts + 1);
  const outcome = {
    deliveryId: claimed.delivery_id,
    webhookId: claimed.webhook_id,
    attemptedAt,
    statusCode: result.status_code,
    durationMs: result.duration_ms,
    responseExcerpt: result.response_excerpt,
    error: result.error,
    succeeded: ok,
    nextAttemptAt: retryIn === null ? null : new Date(Date.parse(attemptedAt) + retryIn * 1000).toISOString(),
  };
  return { outcome, retryIn };
}

/*
 * Bounds. A run (a queue batch, or a sweep) must stay within Workers' subrequest limit, which counts each fetch,
 * each D1 call and each queue send: 50 per invocation on the Free plan, the tightest (Paid allows 1,000 or more).
 * A run makes at most ATTEMPTS_PER_RUN fetches, 2 D1 round trips (the claim, the records) and one queue send (its
 * retries, at most ATTEMPTS_PER_RUN messages, and what it left over, at most LEFT_OVER_PER_RUN ids in messages of
 * IDS_PER_MESSAGE): 40 + 2 + 1 = 43 subrequests.
 */
export const ATTEMPTS_PER_RUN = 40;
const IDS_PER_MESSAGE = 100;
const LEFT_OVER_PER_RUN = 1000;
const RUN_BOUNDS = { limit: ATTEMPTS_PER_RUN, leftOverLimit: LEFT_OVER_PER_RUN };

/** Cloudflare Queues take at most 100 messages, and 256 KB, in one sendBatch. */
const SEND_BATCH_MESSAGES = 100;
const SEND_BATCH_BYTES = 256 * 1024;
/** What a message may add to a batch beside its body (its delay, the encoding): generously more than it does. */
const MESSAGE_OVERHEAD_BYTES = 1024;

/** Sends the messages in as many sendBatch calls as the Queues limits take (in order, one call at a time). */
export async function sendInBatches(queue: Queue<DeliveryMessage>, messages: MessageSendRequest<DeliveryMessage>[]) {
  let batch: MessageSendRequest<DeliveryMessage>[] = [];
  let bytes = 0;
  for (const message of messages) {
    const size = JSON.stringify(message.body).length + MESSAGE_OVERHEAD_BYTES;
    if (batch.length === SEND_BATCH_MESSAGES || (batch.length > 0 && bytes + size > SEND_BATCH_BYTES)) {
      await queue.sendBatch(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(message);
    bytes += size;
  }
  if (batch.length > 0) await queue.sendBatch(batch);
}

/**
 * A Worker keeps at most 6 connections open at once and holds further fetches back, while each attempt's 10 seconds
 * run from its call: 40 fetches at once would time out those held back. So 6 at a time, each timed from its own
 * start: a run's attempts take at most 7 x 10 seconds, within the claim's lease (deliveries.ts).
 */
const OPEN_CONNECTIONS = 6;

async function attemptFewAtATime(settings: WebhookSettings, claimed: ClaimedDelivery[]) {
  const attempts: Awaited<ReturnType<typeof attemptDelivery>>[] = [];
  let next = 0;
  const connection = async () => {
    while (next < claimed.length) {
      const index = next++;
      attempts[index] = await attemptDelivery(settings, claimed[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(OPEN_CONNECTIONS, claimed.length) }, connection));
  return attempts;
}

/**
 * Attempts what a run claimed, records every attempt in one round trip, then queues the retries with their delays
 * and, at once, what the run left over (claimable, past its bound), IDS_PER_MESSAGE a message.
 */
async function attemptClaimed(env: Queues & WebhookSettings, { claimed, leftOver }: Claim): Promise<void> {
  const attempts = await attemptFewAtATime(env, claimed);
  if (attempts.length > 0) {
    await recordAttempts(
      env.DB,
      attempts.map(({ outcome }) => outcome),
      bucketedSince(env),
    );
  }
  const messages: MessageSendRequest<DeliveryMessage>[] = attempts.flatMap(({ outcome, retryIn }) =>
    retryIn === null ? [] : [{ body: { deliveries: [outcome.deliveryId] }, delaySeconds: retryIn }],
  );
  for (let i = 0; i < leftOver.length; i += IDS_PER_MESSAGE) {
    messages.push({ body: { deliveries: leftOver.slice(i, i + IDS_PER_MESSAGE) } });
  }
  await sendInBatches(env.WEBHOOK_DELIVERIES, messages);
}

/**
 * The queue consumer: claims at most ATTEMPTS_PER_RUN of what the messages name, each organization's oldest first
 * (a delivery already settled, leased or not yet due is left alone, so duplicates are harmless), attempts them, and
 * queues the retries and the rest. A failure to reach D1 or the queue throws: the queue retries the batch.
 */
export async function deliverQueued(batch: MessageBatch<DeliveryMessage>, env: Queues & WebhookSettings): Promise<void> {
  const events = batch.messages.flatMap((message) => message.body.events ?? []);
  const deliveries = batch.messages.flatMap((message) => message.body.deliveries ?? []);
  await attemptClaimed(env, await claimDeliveries(env.DB, { events, deliveries }, RUN_BOUNDS));
  batch.ackAll();
}

/**
 * Each minute: the deliveries a lost hand-off (an isolate gone after its commit) or a lost retry message left
 * pending. The sweep attempts ATTEMPTS_PER_RUN of them itself, each organization's oldest first, whatever the queue
 * holds (a backlog there cannot hold them back), and queues the next LEFT_OVER_PER_RUN for the consumer.
 */
export async function sweepOverdueDeliveries(env: Queues & WebhookSettings): Promise<void> {
  await attemptClaimed(env, await claimOverdueDeliveries(env.DB, RUN_BOUNDS));
}
