import { v7 as uuidv7 } from "uuid";
import type { Queryable } from "./d1";
import { EVENT_HANDOFF, INSERT_EVENT, type StoredEvent } from "./events";
import { TARGET_COLUMNS, type Target } from "./webhooks";

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
 * Claims the pending, due, unleased deliveries of the events and deliveries named, for `leaseSeconds` under the
 * lease ?3, and reads what they need: a duplicate queue message finds them leased (or settled) and does nothing.
 */
export async function claimDeliveries(
  db: Queryable,
  names: { events: string[]; deliveries: string[] },
): Promise<ClaimedDelivery[]> {
  const lease = crypto.randomUUID();
  const [, rows] = await db.batch([
    db
      .prepare(
        `UPDATE webhook_deliveries SET lease = ?3, leased_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+60 seconds')
          WHERE (id IN (SELECT value FROM json_each(?1)) OR event_id IN (SELECT value FROM json_each(?2)))
            AND status = 'pending' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+2 seconds')
            AND (leased_until IS NULL OR leased_until < strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
            AND webhook_id IN (SELECT id FROM webhooks WHERE enabled = 1)`,
      )
      .bind(JSON.stringify(names.deliveries), JSON.stringify(names.events), lease),
    db
      .prepare(
        `SELECT d.id AS delivery_id, d.attempts, ${TARGET_COLUMNS},
                json_object('id', e.id, 'type', e.type, 'occurred_at', e.occurred_at, 'organization_id', e.organization_id,
                            'workspace_id', e.workspace_id, 'project_id', e.project_id, 'actor_user_id', e.actor_user_id,
                            'actor_username', e.actor_username, 'actor_api_key_prefix', e.actor_api_key_prefix,
                            'data', e.data) AS event
           FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id
          WHERE d.lease = ?1`,
      )
      .bind(lease),
  ]);
  return (rows.results as unknown as (Omit<ClaimedDelivery, "event"> & { event: string })[]).map((row) => ({
    ...row,
    event: JSON.parse(row.event),
  }));
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

/** An enabled webhook (?1) that has failed long enough, as of ?2, to be disabled. */
const MUST_DISABLE = `enabled = 1 AND (failed_events >= 20 OR failing_since <= strftime('%Y-%m-%dT%H:%M:%fZ', ?2, '-24 hours'))`;
const DISABLE_REASON = `CASE WHEN failed_events >= 20 THEN 'deliveries of 20 events in a row failed'
  ELSE 'every delivery failed for 24 hours' END`;

/**
 * The statements that record an attempt and settle or reschedule its delivery. A failure counts against the webhook
 * (an event whose first attempt failed is one more failed event; failing since when); a success clears that. A
 * webhook whose deliveries have failed for 24 hours, or for 20 events in a row, is disabled with a `webhook.disabled`
 * event, and its pending deliveries end as failed.
 */
function attemptStatements(db: Queryable, outcome: AttemptOutcome): D1PreparedStatement[] {
  const { deliveryId, webhookId, attemptedAt, statusCode, error } = outcome;
  return [
    db
      .prepare(
        `INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, response_excerpt, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
      )
      .bind(deliveryId, attemptedAt, statusCode, outcome.durationMs, outcome.responseExcerpt, error),
    db
      .prepare(
        `UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = ?2, last_status_code = ?3, last_error = ?4,
                status = CASE WHEN ?5 = 1 THEN 'succeeded' WHEN ?6 IS NULL THEN 'failed' ELSE 'pending' END,
                next_attempt_at = ?6, lease = NULL, leased_until = NULL
          WHERE id = ?1`,
      )
      .bind(deliveryId, attemptedAt, statusCode, error, outcome.succeeded ? 1 : 0, outcome.nextAttemptAt),
    db
      .prepare(
        `UPDATE webhooks SET
           failing_since = CASE WHEN ?4 = 1 THEN NULL ELSE COALESCE(failing_since, ?3) END,
           failed_events = CASE WHEN ?4 = 1 THEN 0
                                WHEN (SELECT attempts FROM webhook_deliveries WHERE id = ?1) = 1 THEN failed_events + 1
                                ELSE failed_events END
          WHERE id = ?2`,
      )
      .bind(deliveryId, webhookId, attemptedAt, outcome.succeeded ? 1 : 0),
    // The event, then the change, on the same condition (while the webhook is still enabled).
    db
      .prepare(
        `WITH hook AS (SELECT *, ${DISABLE_REASON} AS reason FROM webhooks WHERE id = ?1 AND ${MUST_DISABLE})
         ${INSERT_EVENT}
         SELECT ?3, 'webhook.disabled', organization_id, NULL, NULL, NULL, NULL, NULL, NULL,
                json_object('webhook_id', id, 'url', url, 'reason', reason)
           FROM hook ${EVENT_HANDOFF}`,
      )
      .bind(webhookId, attemptedAt, uuidv7()),
    db
      .prepare(
        `UPDATE webhooks SET enabled = 0, disabled_reason = ${DISABLE_REASON}, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
          WHERE id = ?1 AND ${MUST_DISABLE}`,
      )
      .bind(webhookId, attemptedAt),
    db
      .prepare(
        `UPDATE webhook_deliveries SET status = 'failed', last_error = 'webhook disabled', next_attempt_at = NULL,
                lease = NULL, leased_until = NULL
          WHERE webhook_id = ?1 AND status = 'pending' AND (SELECT enabled FROM webhooks WHERE id = ?1) = 0`,
      )
      .bind(webhookId),
  ];
}

/** Records a queue batch's attempts (see `attemptStatements`), in one round trip and in order. */
export const recordAttempts = (db: Queryable, outcomes: AttemptOutcome[]) =>
  db.batch(outcomes.flatMap((outcome) => attemptStatements(db, outcome)));

/** Deliveries a lost hand-off (or a lost retry message) left behind: pending, unleased, overdue by a minute. */
export async function overdueDeliveries(db: Queryable): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT id FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-60 seconds')
          AND (leased_until IS NULL OR leased_until < strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        ORDER BY next_attempt_at LIMIT 1000`,
    )
    .all<{ id: string }>();
  return results.map(({ id }) => id);
}

/**
 * Retention: events are kept 400 days, settled deliveries (and their attempts) 30 days. Each run deletes at most
 * 10,000 of each, oldest first; the hourly cron catches up over a few runs.
 */
export function pruneHistory(db: Queryable) {
  return db.batch([
    db.prepare(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
          WHERE status <> 'pending' AND created_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 days') LIMIT 10000)`,
    ),
    db.prepare(
      `DELETE FROM events WHERE id IN (
         SELECT id FROM events WHERE occurred_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-400 days') ORDER BY id LIMIT 10000)`,
    ),
  ]);
}
