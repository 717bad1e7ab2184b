/**
 * The change requests' share of the minute cron (docs/CHANGE-REQUESTS.md §3, §7), on every shard: each due scheduled
 * request applied as the user who scheduled it (src/change-requests/apply.sql.ts), a batch each, PER_RUN a run; each
 * request past `expires_at` recorded `expired`, PER_RUN a shard and run, a batch per bucket; fenced buckets left alone.
 */
import { newId } from "../db/buckets";
import { Caller } from "../db/caller";
import { isFenceTrip } from "../db/d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import { CallerWriteDb } from "../db/handles";
import { allShards, type ShardName, shardNamed } from "../db/pool";
import { batch, type Statement, sql } from "../db/sql";
import { liveAfter } from "../http/edge-settings";
import type { DeliveryMessage } from "../http/hand-off";
import { sealSecret } from "../webhooks/secret-box";
import { newWebhookSecret } from "../webhooks/signing";
import { applyScheduled, REQUEST_NOW, REQUEST_READ_NOW } from "./apply.sql.ts";
import { type ChangeRequestRow, EVENT_FIELDS, NOW, WRITTEN } from "./change-requests.sql.ts";
import { mailRequest, type RequestMail } from "./mail";

/** How many due applies a run makes at most (§7), and how many expiries a shard records; the rest wait a minute. */
export const PER_RUN = 100;

/** The organization's bucket of request `r` (its app `a`), and whether it is fenced (a move copies it: not touched). */
const BUCKET_OF_REQUEST = `JOIN apps a ON a.id = r.app_id JOIN projects p ON p.id = a.project_id
  JOIN workspaces w ON w.id = p.workspace_id JOIN organizations o ON o.id = w.organization_id
  WHERE o.bucket NOT IN (SELECT bucket FROM bucket_fences)`;

const DUE = sql<{ id: string; scheduledBy: string; scheduledAt: string; bucket: number }>(
  `SELECT r.id, r.scheduled_by AS scheduledBy, r.scheduled_at AS scheduledAt, o.bucket FROM change_requests r ${BUCKET_OF_REQUEST}
     AND r.state = 'scheduled' AND r.scheduled_at <= ${NOW}
   ORDER BY r.scheduled_at, r.id LIMIT :per_run`,
);

// Scheduled requests do not expire (§3).
const EXPIRING = sql<{ id: string; bucket: number }>(
  `SELECT r.id, o.bucket FROM change_requests r ${BUCKET_OF_REQUEST}
     AND r.state IN ('draft', 'open', 'failed') AND r.expires_at <= ${NOW}
   ORDER BY r.expires_at, r.id LIMIT :per_run`,
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

/** The writer of a batch on `db`: as `caller`, its ids minted in (and its fence guard of) `bucket`, its events kept. */
const writerOf = (env: Env, db: D1Database, caller: Caller, bucket: number, committed: Committed) =>
  new CallerWriteDb(db, caller, bucket, (events) => committed.push(...events), undefined, null, liveAfter(env));

/** The mails a run's writes call for. */
type Mails = [ChangeRequestRow, RequestMail][];

/** Records requests `ids`, all of one bucket, expired, as no one: one batch; each recorded is to be mailed. */
async function expire(db: CallerWriteDb, ids: string[], mails: Mails) {
  const statements: Record<string, Statement<unknown>> = {};
  ids.forEach((id, i) => {
    const values = { change_request_id: id, event_id: newId(db.bucket) };
    statements[`event${i}`] = db.statement(EXPIRED_EVENT, values);
    statements[`expired${i}`] = db.statement(MARK_EXPIRED, values);
    statements[`now${i}`] = db.statement(REQUEST_READ_NOW, values);
  });
  const ran = (await db.batch(statements)) as Record<string, D1Result<ChangeRequestRow>>;
  ids.forEach((_, i) => {
    const request = ran[`now${i}`].results[0];
    if (ran[`expired${i}`].meta.changes > 0 && request) mails.push([request, "expired"]);
  });
}

/** Runs `step`; a batch refused by a fence (its bucket fenced since it was read) is left to a later run. */
async function tolerantly(shard: ShardName, step: () => Promise<unknown>) {
  try {
    await step();
  } catch (error) {
    if (isFenceTrip(error)) return;
    console.error(JSON.stringify({ level: "error", message: "change request cron step failed", shard, error: String(error) }));
  }
}

/** A shard's due and expired requests, PER_RUN of each at most, in one round trip. */
async function workOf(env: Env, shard: ShardName) {
  const db = shardNamed(env, shard);
  const bound = { per_run: PER_RUN };
  const { due, expiring } = await batch(db, { due: DUE.bind(db, bound), expiring: EXPIRING.bind(db, bound) });
  return { shard, due: due.results, expiring: expiring.results };
}

/**
 * One shard's writes: its expired requests, a batch per bucket; then the due requests it was given, a batch each, as
 * their schedulers; then the mails they call for. A failure is logged and the rest go on.
 */
async function runOnShard(env: Env, { shard, due, expiring }: Awaited<ReturnType<typeof workOf>>): Promise<Committed> {
  const db = shardNamed(env, shard);
  const committed: Committed = [];
  const mails: Mails = [];
  const byBucket = new Map<number, string[]>();
  for (const { id, bucket } of expiring) byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), id]);
  for (const [bucket, ids] of byBucket) {
    await tolerantly(shard, () => expire(writerOf(env, db, Caller.nobody, bucket, committed), ids, mails));
  }
  for (const request of due) {
    const scheduler = writerOf(env, db, Caller.operatorAs(request.scheduledBy), request.bucket, committed);
    await tolerantly(shard, async () => {
      const { outcome, request: now } = await applyScheduled(scheduler, request.id, () => sealSecret(env, newWebhookSecret()));
      if (now && outcome !== "left") mails.push([now, outcome]);
    });
  }
  await Promise.all(mails.map(([request, what]) => mailRequest(env, request, what)));
  return committed;
}

/**
 * The minute's change-request work: every shard read at once, then the PER_RUN requests due longest applied (over all
 * shards: a run's subrequests stay bounded) and every shard's expired ones recorded, the shards in parallel. The events
 * committed go to the delivery queue (a lost hand-off loses nothing: the delivery sweep queues what stays pending).
 */
export async function runChangeRequestCron(env: Env): Promise<void> {
  const found = await Promise.all(allShards(env).map((shard) => workOf(env, shard)));
  const applied = new Set(
    found
      .flatMap(({ due }) => due)
      .sort((a, b) => a.scheduledAt.localeCompare(b.scheduledAt))
      .slice(0, PER_RUN),
  );
  await Promise.all(
    found.map(async (work) => {
      const events = await runOnShard(env, { ...work, due: work.due.filter((request) => applied.has(request)) });
      if (events.length === 0) return;
      await env.WEBHOOK_DELIVERIES.send({ shard: work.shard, events } satisfies DeliveryMessage).catch((error: unknown) => {
        console.error(
          JSON.stringify({ message: "hand-off to the delivery queue failed; the sweep will queue it", error: String(error) }),
        );
      });
    }),
  );
}
