import { bucketOfId, newId } from "../db/buckets";
import type { Queryable } from "../db/d1";
import { EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import { batch, sql } from "../db/sql";
import type { StoredEvent } from "../events/events.sql.ts";
import type { Retention } from "./retention";
import { TARGET_COLUMNS, type Target } from "./webhooks.sql.ts";

/*
 * The delivery side of webhooks: the queue consumer's claims and records, the minute's sweep and the hourly pruning,
 * outside any request (no caller). The routes' side is webhooks.ts.
 */

/** A claimed delivery: what to send, where, and how many attempts it had. */
export interface ClaimedDelivery extends Target {
  delivery_id: string;
  attempts: number;
  event: StoredEvent;
}

/**
 * Deliveries `d` ranked by turn in their organization (1 for the oldest due), for `claimable` below. Taken by turn,
 * every organization's oldest go before any organization's second: one organization's backlog cannot hold another's
 * deliveries back.
 */
const BY_TURN = `SELECT d.id, d.next_attempt_at,
         ROW_NUMBER() OVER (PARTITION BY w.organization_id ORDER BY d.next_attempt_at, d.id) AS turn
    FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id`;

/**
 * The organizations whose bucket is fenced, being moved between shards (docs/SHARDING.md §4, §5): statements that span
 * organizations without a caller leave their rows alone, so that a move's copy sees no write.
 */
const FENCED_ORGANIZATIONS = "SELECT id FROM organizations WHERE bucket IN (SELECT bucket FROM bucket_fences)";

/** What may be claimed: pending, due, unleased (or its lease is over), of an enabled webhook, out of fenced buckets. */
const MAY_CLAIM = `d.status = 'pending' AND d.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+2 seconds')
  AND (d.leased_until IS NULL OR d.leased_until < strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AND w.enabled = 1
  AND w.organization_id NOT IN (${FENCED_ORGANIZATIONS})`;

/** `claimable`, among the deliveries (:deliveries) and the events' deliveries (:events) that queue messages name. */
const NAMED = `claimable AS (${BY_TURN}
  WHERE (d.id IN (SELECT value FROM json_each(:deliveries)) OR d.event_id IN (SELECT value FROM json_each(:events)))
    AND ${MAY_CLAIM})`;

/** `claimable`, among those a lost hand-off (or a lost retry message) left behind: overdue by a minute. */
const OVERDUE = `claimable AS (${BY_TURN}
  WHERE d.next_attempt_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-60 seconds') AND ${MAY_CLAIM})`;

/**
 * How long a claim holds its deliveries: longer than a run's attempts take (70 seconds at most: delivery.ts). LEASE
 * writes it out (SQL text is made of literals); the lease tests hold the two together.
 */
export const LEASE_SECONDS = 120;

/** After a `claimable`: the lease :lease on the first :row_limit of them, by turn, for LEASE_SECONDS. */
const LEASE = `UPDATE webhook_deliveries SET lease = :lease, leased_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+120 seconds')
  WHERE id IN (SELECT id FROM claimable ORDER BY turn, next_attempt_at, id LIMIT :row_limit)`;

/** After a `claimable` (once leased, what was claimed is no longer in it): the first :row_limit of those left, by turn. */
const LEFT_OVER = "SELECT id FROM claimable ORDER BY turn, next_attempt_at, id LIMIT :row_limit";

const LEASE_NAMED = sql(`WITH ${NAMED} ${LEASE}`);
const LEFT_OVER_NAMED = sql<{ id: string }>(`WITH ${NAMED} ${LEFT_OVER}`);
const LEASE_OVERDUE = sql(`WITH ${OVERDUE} ${LEASE}`);
const LEFT_OVER_OVERDUE = sql<{ id: string }>(`WITH ${OVERDUE} ${LEFT_OVER}`);

const CLAIMED = sql<Omit<ClaimedDelivery, "event"> & { event: string }>(
  `SELECT d.id AS delivery_id, d.attempts, ${TARGET_COLUMNS},
          json_object('id', e.id, 'type', e.type, 'occurred_at', e.occurred_at, 'organization_id', e.organization_id,
                      'workspace_id', e.workspace_id, 'project_id', e.project_id, 'actor_user_id', e.actor_user_id,
                      'actor_username', e.actor_username, 'actor_api_key_prefix', e.actor_api_key_prefix,
                      'data', e.data) AS event
     FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id
    WHERE d.lease = :lease`,
);

/** What a claim got: the deliveries leased to the caller, and (ids) the claimable ones past its bound, by turn. */
export interface Claim {
  claimed: ClaimedDelivery[];
  leftOver: string[];
}

/** How much a claim takes: at most `limit` deliveries, and the ids of at most `leftOverLimit` left over. */
export interface ClaimBounds {
  limit: number;
  leftOverLimit: number;
}

/** Runs a claim's `lease` and `leftOver` statements (under `lease`) around the read of what was claimed. */
async function claim(
  db: Queryable,
  lease: string,
  statements: { lease: D1PreparedStatement; leftOver: D1PreparedStatement & { row?: { id: string } } },
): Promise<Claim> {
  const { rows, leftOver } = await batch(db, {
    lease: statements.lease,
    rows: CLAIMED.bind(db, { lease }),
    leftOver: statements.leftOver,
  });
  const claimed = rows.results.map((row) => ({ ...row, event: JSON.parse(row.event) }));
  return { claimed, leftOver: leftOver.results.map(({ id }) => id) };
}

/**
 * Claims at most `limit` of the claimable deliveries that queue messages name (deliveries, and events' deliveries),
 * by turn, for LEASE_SECONDS under a new lease, and reads what they need, with the ids of those left over. A duplicate
 * queue message, or a sweep, finds a claimed delivery leased (or settled) and leaves it alone.
 */
export function claimDeliveries(db: Queryable, names: { events: string[]; deliveries: string[] }, bounds: ClaimBounds) {
  const lease = crypto.randomUUID();
  const named = { deliveries: JSON.stringify(names.deliveries), events: JSON.stringify(names.events) };
  return claim(db, lease, {
    lease: LEASE_NAMED.bind(db, { ...named, lease, row_limit: bounds.limit }),
    leftOver: LEFT_OVER_NAMED.bind(db, { ...named, row_limit: bounds.leftOverLimit }),
  });
}

/** Claims, as `claimDeliveries` does, among the deliveries overdue by a minute (a lost hand-off's or retry's). */
export function claimOverdueDeliveries(db: Queryable, bounds: ClaimBounds) {
  const lease = crypto.randomUUID();
  return claim(db, lease, {
    lease: LEASE_OVERDUE.bind(db, { lease, row_limit: bounds.limit }),
    leftOver: LEFT_OVER_OVERDUE.bind(db, { row_limit: bounds.leftOverLimit }),
  });
}

/** What one attempt got: a status code (any) or an error (no answer), its duration and the response's first 1 KiB. */
export interface AttemptOutcome {
  deliveryId: string;
  webhookId: string;
  attemptedAt: string;
  statusCode: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
  succeeded: boolean;
  /** When to try again (failed attempts with retries left), else null: settled. */
  nextAttemptAt: string | null;
}

/** An enabled webhook that has failed long enough, as of :attempted_at, to be disabled. */
const MUST_DISABLE = `enabled = 1 AND (failed_events >= 20 OR failing_since <= strftime('%Y-%m-%dT%H:%M:%fZ', :attempted_at, '-24 hours'))`;
const DISABLE_REASON = `CASE WHEN failed_events >= 20 THEN 'deliveries of 20 events in a row failed'
  ELSE 'every delivery failed for 24 hours' END`;

/**
 * The webhook :webhook_id's organization is in no fenced bucket: an attempt made before a fence and recorded after it
 * is not recorded, so that a move's copy sees no write; its delivery, still leased, is attempted again once its lease
 * ends, from whichever shard then holds it (at least once, as Standard Webhooks expects).
 */
const WEBHOOK_UNFENCED = `(SELECT organization_id FROM webhooks WHERE id = :webhook_id) NOT IN (${FENCED_ORGANIZATIONS})`;

const INSERT_ATTEMPT = sql(
  `INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, status_code, duration_ms, response_excerpt, error)
   SELECT :delivery_id, (SELECT coalesce(max(attempt), 0) + 1 FROM webhook_attempts WHERE delivery_id = :delivery_id),
          :attempted_at, :status_code, :duration_ms, :response_excerpt, :error WHERE ${WEBHOOK_UNFENCED}`,
);
const SETTLE_DELIVERY = sql(
  `UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = :attempted_at, last_status_code = :status_code,
          last_error = :error,
          status = CASE WHEN :succeeded = 1 THEN 'succeeded' WHEN :next_attempt_at IS NULL THEN 'failed' ELSE 'pending' END,
          next_attempt_at = :next_attempt_at, lease = NULL, leased_until = NULL
    WHERE id = :delivery_id AND ${WEBHOOK_UNFENCED}`,
);
const COUNT_FAILURE = sql(
  `UPDATE webhooks SET
     failing_since = CASE WHEN :succeeded = 1 THEN NULL ELSE COALESCE(failing_since, :attempted_at) END,
     failed_events = CASE WHEN :succeeded = 1 THEN 0
                          WHEN (SELECT attempts FROM webhook_deliveries WHERE id = :delivery_id) = 1 THEN failed_events + 1
                          ELSE failed_events END
    WHERE id = :webhook_id AND ${WEBHOOK_UNFENCED}`,
);
// The event, then the change, on the same condition (while the webhook is still enabled).
const WEBHOOK_DISABLED = sql(
  `WITH hook AS (SELECT *, ${DISABLE_REASON} AS reason FROM webhooks WHERE id = :webhook_id AND ${MUST_DISABLE} AND ${WEBHOOK_UNFENCED})
   ${INSERT_EVENT}
   SELECT :event_id, 'webhook.disabled', organization_id, NULL, NULL, NULL, NULL, NULL, NULL,
          json_object('webhook_id', id, 'url', url, 'reason', reason)
     FROM hook ${EVENT_HANDOFF}`,
);
const DISABLE_WEBHOOK = sql(
  `UPDATE webhooks SET enabled = 0, disabled_reason = ${DISABLE_REASON}, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE id = :webhook_id AND ${MUST_DISABLE} AND ${WEBHOOK_UNFENCED}`,
);
const FAIL_PENDING_OF_DISABLED = sql(
  `UPDATE webhook_deliveries SET status = 'failed', last_error = 'webhook disabled', next_attempt_at = NULL,
          lease = NULL, leased_until = NULL
    WHERE webhook_id = :webhook_id AND status = 'pending' AND (SELECT enabled FROM webhooks WHERE id = :webhook_id) = 0
      AND ${WEBHOOK_UNFENCED}`,
);

/**
 * The statements that record an attempt and settle or reschedule its delivery. A failure counts against the webhook
 * (an event whose first attempt failed is one more failed event; failing since when); a success clears that. A
 * webhook whose deliveries have failed for 24 hours, or for 20 events in a row, is disabled with a `webhook.disabled`
 * event (in the webhook's bucket: `bucketedSince` is BUCKETED_SINCE), and its pending deliveries end as failed.
 */
function attemptStatements(db: Queryable, outcome: AttemptOutcome, bucketedSince: number): D1PreparedStatement[] {
  const values = {
    delivery_id: outcome.deliveryId,
    webhook_id: outcome.webhookId,
    attempted_at: outcome.attemptedAt,
    status_code: outcome.statusCode,
    duration_ms: outcome.durationMs,
    response_excerpt: outcome.responseExcerpt,
    error: outcome.error,
    succeeded: outcome.succeeded ? 1 : 0,
    next_attempt_at: outcome.nextAttemptAt,
  };
  return [
    INSERT_ATTEMPT.bind(db, values),
    SETTLE_DELIVERY.bind(db, values),
    COUNT_FAILURE.bind(db, values),
    WEBHOOK_DISABLED.bind(db, { ...values, event_id: newId(bucketOfId(outcome.webhookId, bucketedSince)) }),
    DISABLE_WEBHOOK.bind(db, values),
    FAIL_PENDING_OF_DISABLED.bind(db, values),
  ];
}

/** Records a queue batch's attempts (see `attemptStatements`), in one round trip and in order; its results are not read. */
export const recordAttempts = (db: Queryable, outcomes: AttemptOutcome[], bucketedSince: number) =>
  db.batch(outcomes.flatMap((outcome) => attemptStatements(db, outcome, bucketedSince)));

const PRUNE_DELIVERIES = sql(
  `DELETE FROM webhook_deliveries WHERE id IN (
     SELECT id FROM webhook_deliveries
      WHERE status <> 'pending'
        AND created_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || :delivery_retention_days || ' days')
        AND webhook_id NOT IN (SELECT id FROM webhooks WHERE organization_id IN (${FENCED_ORGANIZATIONS})) LIMIT 10000)`,
);
// An event's deliveries go with it (ON DELETE CASCADE): one with a pending delivery waits, whatever the retention.
const PRUNE_EVENTS = sql(
  `DELETE FROM events WHERE id IN (
     SELECT id FROM events
      WHERE occurred_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || :event_retention_days || ' days')
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id AND d.status = 'pending')
        AND organization_id NOT IN (${FENCED_ORGANIZATIONS})
      ORDER BY id LIMIT 10000)`,
);

/**
 * Retention (src/webhooks/retention.ts): events are kept `eventDays`, settled deliveries (and their attempts)
 * `deliveryDays`; a pending delivery and its event are never pruned, nor are a fenced bucket's rows. Each run deletes
 * at most 10,000 of each, oldest first; the hourly cron catches up over a few runs.
 */
export function pruneHistory(db: Queryable, { eventDays, deliveryDays }: Retention) {
  return batch(db, {
    deliveries: PRUNE_DELIVERIES.bind(db, { delivery_retention_days: deliveryDays }),
    events: PRUNE_EVENTS.bind(db, { event_retention_days: eventDays }),
  });
}
