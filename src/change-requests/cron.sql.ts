/**
 * The change requests' share of the minute cron (docs/CHANGE-REQUESTS.md §3, §7), on every shard: each due scheduled
 * request applied as the user who scheduled it (src/change-requests/apply.sql.ts), and each request past `expires_at`
 * recorded `expired`; at most PER_RUN of each a shard and run, one batch each, fenced buckets left alone.
 */
import { newId } from "../db/buckets";
import { Caller } from "../db/caller";
import { isFenceTrip } from "../db/d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import { CallerWriteDb } from "../db/handles";
import { allShards, type ShardName, shardNamed } from "../db/pool";
import { batch, sql } from "../db/sql";
import type { DeliveryMessage } from "../http/hand-off";
import { applyScheduled, REQUEST_NOW } from "./apply.sql.ts";
import { EVENT_FIELDS, NOW, WRITTEN } from "./change-requests.sql.ts";

/** How many due applies, and how many expiries, a shard records in one run at most (§7); the rest wait a minute. */
export const PER_RUN = 100;

/** The organization's bucket of request `r` (its app `a`), and whether it is fenced (a move copies it: not touched). */
const BUCKET_OF_REQUEST = `JOIN apps a ON a.id = r.app_id JOIN projects p ON p.id = a.project_id
  JOIN workspaces w ON w.id = p.workspace_id JOIN organizations o ON o.id = w.organization_id
  WHERE o.bucket NOT IN (SELECT bucket FROM bucket_fences)`;

const DUE = sql<{ id: string; scheduledBy: string; bucket: number }>(
  `SELECT r.id, r.scheduled_by AS scheduledBy, o.bucket FROM change_requests r ${BUCKET_OF_REQUEST}
     AND r.state = 'scheduled' AND r.scheduled_at <= ${NOW}
   ORDER BY r.scheduled_at, r.id LIMIT ${PER_RUN}`,
);

// Scheduled requests do not expire (§3).
const EXPIRING = sql<{ id: string; bucket: number }>(
  `SELECT r.id, o.bucket FROM change_requests r ${BUCKET_OF_REQUEST}
     AND r.state IN ('draft', 'open', 'failed') AND r.expires_at <= ${NOW}
   ORDER BY r.expires_at, r.id LIMIT ${PER_RUN}`,
);

/** `change_request.expired`, by no one (the cron): the mark of MARK_EXPIRED. Its previous state as it read before. */
const EXPIRED_EVENT = sql(
  `WITH ${REQUEST_NOW} ${INSERT_EVENT}
   SELECT :event_id, 'change_request.expired', cr.organization_id, cr.workspace_id, cr.project_id, cr.app_id, ${EVENT_ACTOR},
          json_set(json_object('previous_state', CASE WHEN cr.state = 'open' AND cr.approvals >= cr.required_approvals
                                                      THEN 'approved' ELSE cr.state END),
                   ${EVENT_FIELDS}, '$.state', 'expired')
     FROM cr WHERE cr.state IN ('draft', 'open', 'failed') AND cr.expires_at <= ${NOW} ${EVENT_HANDOFF}`,
);

const MARK_EXPIRED = sql(
  `UPDATE change_requests SET state = 'expired', ${WRITTEN}
    WHERE id = :change_request_id AND EXISTS (SELECT 1 FROM events WHERE id = :event_id)`,
);

/** The events a shard's run committed, for the delivery queue. */
type Committed = string[];

/** The writer of one request's batch on `db`: as `caller`, its ids minted in `bucket`, its events kept in `committed`. */
const writerOf = (db: D1Database, caller: Caller, bucket: number, committed: Committed) =>
  new CallerWriteDb(db, caller, bucket, (events) => committed.push(...events));

/** Records request `id` expired, as no one. */
async function expire(db: CallerWriteDb, id: string) {
  const values = { change_request_id: id, event_id: newId(db.bucket) };
  await db.batch({ event: db.statement(EXPIRED_EVENT, values), expired: db.statement(MARK_EXPIRED, values) });
}

/**
 * One shard's run: its due requests and its expired ones read in one round trip, then each in a batch of its own. A
 * request whose bucket got fenced since is skipped (its batch refused whole); any other failure is logged and the
 * rest go on.
 */
async function runOnShard(env: Env, shard: ShardName): Promise<Committed> {
  const db = shardNamed(env, shard);
  const { due, expiring } = await batch(db, { due: DUE.bind(db, {}), expiring: EXPIRING.bind(db, {}) });
  const committed: Committed = [];
  const work = [
    ...due.results.map(
      (request) => () =>
        applyScheduled(writerOf(db, Caller.operatorAs(request.scheduledBy), request.bucket, committed), request.id),
    ),
    ...expiring.results.map((request) => () => expire(writerOf(db, Caller.nobody, request.bucket, committed), request.id)),
  ];
  for (const step of work) {
    try {
      await step();
    } catch (error) {
      if (isFenceTrip(error)) continue;
      console.error(JSON.stringify({ level: "error", message: "change request cron step failed", shard, error: String(error) }));
    }
  }
  return committed;
}

/**
 * The minute's change-request work on every shard at once; the events it committed are handed to the delivery queue
 * (a lost hand-off loses nothing: the delivery sweep queues what stays pending).
 */
export async function runChangeRequestCron(env: Env): Promise<void> {
  await Promise.all(
    allShards(env).map(async (shard) => {
      const events = await runOnShard(env, shard);
      if (events.length === 0) return;
      await env.WEBHOOK_DELIVERIES.send({ shard, events } satisfies DeliveryMessage).catch((error: unknown) => {
        console.error(
          JSON.stringify({ message: "hand-off to the delivery queue failed; the sweep will queue it", error: String(error) }),
        );
      });
    }),
  );
}
