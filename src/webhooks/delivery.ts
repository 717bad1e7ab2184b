import { bucketedSince } from "../db/buckets";
import { allShards, isShardName, type ShardName, shardNamed } from "../db/pool";
import { type Event, toEvent } from "../events/events.sql.ts";
import type { DeliveryMessage } from "../http/hand-off";
import {
  type AttemptOutcome,
  type Claim,
  type ClaimBounds,
  type ClaimedDelivery,
  claimDeliveries,
  claimOverdueDeliveries,
  recordAttempts,
} from "./deliveries.sql.ts";
import { openSecret, type WebhookSettings } from "./secret-box";
import { signedHeaders } from "./signing";
import type { Target } from "./webhooks.sql.ts";

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

type DeliveryEnv = Env & WebhookSettings;

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
 * A run serves N shards (a queue batch: those its messages name, at most SHARDS_PER_RUN; the sweep: every shard) and
 * divides its bounds among them. It makes at most ATTEMPTS_PER_RUN fetches in all, 2 D1 round trips per shard (the
 * claim, the records) and one queue send (its retries, at most ATTEMPTS_PER_RUN messages; what it left over, at most
 * LEFT_OVER_PER_RUN ids in messages of IDS_PER_MESSAGE; a batch's messages for other shards): 40 + 2N + 1
 * subrequests. A queue batch: at most 47. The sweep: within 50 for a pool of up to 4 shards (Paid beyond).
 */
export const ATTEMPTS_PER_RUN = 40;
const IDS_PER_MESSAGE = 100;
const LEFT_OVER_PER_RUN = 1000;
export const SHARDS_PER_RUN = 3;

/** Each shard's share of a run's bounds, when the run serves `shards` shards. */
const boundsPerShard = (shards: number): ClaimBounds => ({
  limit: Math.max(1, Math.floor(ATTEMPTS_PER_RUN / Math.max(1, shards))),
  leftOverLimit: Math.floor(LEFT_OVER_PER_RUN / Math.max(1, shards)),
});

/** The shard of a message queued before the pool: the one database then is SHARD_0 now. */
const SHARD_OF_UNNAMED: ShardName = "SHARD_0";

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

/** Claims on each of the shards at once, each with its share of the run's bounds. */
const claimOnShards = (
  env: DeliveryEnv,
  shards: ShardName[],
  claim: (db: D1Database, bounds: ClaimBounds, shard: ShardName) => Promise<Claim>,
) =>
  Promise.all(
    shards.map(async (shard) => ({ shard, claim: await claim(shardNamed(env, shard), boundsPerShard(shards.length), shard) })),
  );

/**
 * Attempts what a run claimed on its shards (OPEN_CONNECTIONS at a time in all), records each shard's attempts in one
 * round trip (the shards at once), then queues, in one send, the retries with their delays, what the run left over
 * (claimable, past its bound) IDS_PER_MESSAGE a message, and `passedOn`.
 */
async function attemptClaimed(
  env: DeliveryEnv,
  claims: { shard: ShardName; claim: Claim }[],
  passedOn: MessageSendRequest<DeliveryMessage>[] = [],
): Promise<void> {
  const claimed = claims.flatMap(({ shard, claim }) => claim.claimed.map((delivery) => ({ shard, delivery })));
  const attempts = await attemptFewAtATime(
    env,
    claimed.map(({ delivery }) => delivery),
  );
  await Promise.all(
    claims.map(async ({ shard }) => {
      const outcomes = attempts.flatMap(({ outcome }, i) => (claimed[i].shard === shard ? [outcome] : []));
      if (outcomes.length > 0) await recordAttempts(shardNamed(env, shard), outcomes, bucketedSince(env));
    }),
  );
  const messages: MessageSendRequest<DeliveryMessage>[] = attempts.flatMap(({ outcome, retryIn }, i) =>
    retryIn === null ? [] : [{ body: { shard: claimed[i].shard, deliveries: [outcome.deliveryId] }, delaySeconds: retryIn }],
  );
  for (const { shard, claim } of claims) {
    for (let i = 0; i < claim.leftOver.length; i += IDS_PER_MESSAGE) {
      messages.push({ body: { shard, deliveries: claim.leftOver.slice(i, i + IDS_PER_MESSAGE) } });
    }
  }
  await sendInBatches(env.WEBHOOK_DELIVERIES, [...messages, ...passedOn]);
}

/**
 * The queue consumer: on the shards the messages name (SHARDS_PER_RUN of them; the other shards' messages are queued
 * again as they are), claims at most ATTEMPTS_PER_RUN of what the messages name, each organization's oldest first (a
 * delivery already settled, leased or not yet due is left alone, so duplicates are harmless), attempts them, and
 * queues the retries and the rest. A message naming no shard of the pool is dropped (the sweep of the shard holding
 * its deliveries takes them up). A failure to reach D1 or the queue throws: the queue retries the batch.
 */
export async function deliverQueued(batch: MessageBatch<DeliveryMessage>, env: DeliveryEnv): Promise<void> {
  const named = new Map<ShardName, { events: string[]; deliveries: string[] }>();
  const passedOn: MessageSendRequest<DeliveryMessage>[] = [];
  for (const { body } of batch.messages) {
    const shard = body.shard ?? SHARD_OF_UNNAMED;
    if (!isShardName(env, shard)) {
      console.warn(JSON.stringify({ level: "warn", message: "delivery message for no shard of the pool dropped", shard }));
      continue;
    }
    const names = named.get(shard) ?? (named.size < SHARDS_PER_RUN ? { events: [], deliveries: [] } : null);
    if (!names) {
      passedOn.push({ body });
      continue;
    }
    names.events.push(...(body.events ?? []));
    names.deliveries.push(...(body.deliveries ?? []));
    named.set(shard, names);
  }
  const claims = await claimOnShards(env, [...named.keys()], (db, bounds, shard) =>
    claimDeliveries(db, named.get(shard) as { events: string[]; deliveries: string[] }, bounds),
  );
  await attemptClaimed(env, claims, passedOn);
  batch.ackAll();
}

/**
 * Each minute: the deliveries a lost hand-off (an isolate gone after its commit) or a lost retry message left
 * pending. The sweep attempts ATTEMPTS_PER_RUN of them itself, each organization's oldest first, whatever the queue
 * holds (a backlog there cannot hold them back), and queues the next LEFT_OVER_PER_RUN for the consumer.
 */
export async function sweepOverdueDeliveries(env: DeliveryEnv): Promise<void> {
  await attemptClaimed(env, await claimOnShards(env, allShards(env), claimOverdueDeliveries));
}
