/**
 * What moves a split without a user (docs/SPLITS.md §3): its steps, applied by the minute cron on every shard, and the
 * verdicts of the team's own evaluation, signed with the split's secret. Each is one batch with its events; a step to
 * 10000 that is the last, with `promote_at_end`, promotes (a deploy made by whoever started the split).
 */
import { deploymentEvent } from "../core/change-events.sql.ts";
import { environmentRevisionStatement, newDeploymentIds } from "../core/deployments.sql.ts";
import { CHANGED_BY, NOW, PUT_EVENT, SPLIT_EVENT_DATA, SPLIT_JSON, SPLIT_PLACE } from "../core/splits.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE, Caller } from "../db/caller";
import { isFenceTrip, isUniqueViolation } from "../db/d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import { type CallerDb, CallerWriteDb } from "../db/handles";
import { allShards, type ShardName, shardNamed } from "../db/pool";
import { batch, sql } from "../db/sql";
import type { DeliveryMessage } from "../http/hand-off";

/** A verdict accepted: its `webhook-id` recorded for split :split_id by this batch (a replay fails its insert). */
const ACCEPTED = "EXISTS (SELECT 1 FROM split_verdicts WHERE split_id = :split_id AND webhook_id = :webhook_id)";

const RECORD_VERDICT = sql(
  `INSERT INTO split_verdicts (split_id, webhook_id) SELECT id, :webhook_id FROM environment_splits WHERE id = :split_id`,
);

const VERDICT_EVENT = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :verdict_event_id, 'environment.split_verdict', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_object(${SPLIT_EVENT_DATA}, 'verdict', :verdict, 'reason', :reason)
     FROM ${SPLIT_PLACE} WHERE s.id = :split_id AND ${ACCEPTED} ${EVENT_HANDOFF}`,
);

const NOTE_VERDICT = sql(
  `UPDATE environment_splits
      SET last_verdict = json_object('verdict', :verdict, 'reason', :reason, 'at', ${NOW}),
          held = CASE :verdict WHEN 'hold' THEN 1 WHEN 'resume' THEN 0 ELSE held END
    WHERE id = :split_id AND ${ACCEPTED}`,
);

/**
 * The split's next step, applied by :by (schedule: when due and not held; verdict: a pass, now): its weight, the steps
 * after it, the next one's time, the change recorded; stamped :write_id, which its event and a promote find it by.
 */
const STEP = sql(
  `WITH ${CALLER_CTE}
   UPDATE environment_splits AS s
      SET weight = json_extract(s.steps, '$[0].weight'), steps = json_remove(s.steps, '$[0]'),
          next_step_at = CASE WHEN json_array_length(s.steps) > 1
            THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || json_extract(s.steps, '$[1].after_minutes') || ' minutes') END,
          changes = json_insert(s.changes, '$[#]', json_object('at', ${NOW}, 'from', s.weight,
            'to', json_extract(s.steps, '$[0].weight'), 'by', :by, 'user', ${CHANGED_BY})),
          last_write_id = :write_id
    WHERE s.id = :split_id AND json_array_length(s.steps) > 0
      AND CASE :by WHEN 'verdict' THEN :verdict = 'pass' AND ${ACCEPTED} ELSE s.held = 0 AND s.next_step_at <= ${NOW} END`,
);

/** A split the step :write_id took to its end: all to the candidate, promoted at the end. */
const ENDS_PROMOTED = `s.last_write_id = :write_id AND s.weight = 10000 AND s.promote_at_end = 1 AND json_array_length(s.steps) = 0`;

const PROMOTE = sql(
  `INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by)
   SELECT :deployment_id, s.environment_id, s.candidate_revision_id, s.started_by FROM environment_splits s WHERE ${ENDS_PROMOTED}`,
);

/** What ends the split here: a promote (its revision made), or a failing verdict. */
const ENDS = `(EXISTS (SELECT 1 FROM environment_revisions WHERE id = :environment_revision_id)
  OR (:verdict = 'fail' AND ${ACCEPTED}))`;

const ENDED_EVENT = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'environment.split_ended', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_object(${SPLIT_EVENT_DATA}, 'outcome', CASE :verdict WHEN 'fail' THEN 'abort' ELSE 'promote' END, 'by', :by,
                      'reason', :reason, 'environment_revision_id', (SELECT id FROM environment_revisions WHERE id = :environment_revision_id))
     FROM ${SPLIT_PLACE} WHERE s.id = :split_id AND ${ENDS} ${EVENT_HANDOFF}`,
);

const DROP_ENDED = sql(`DELETE FROM environment_splits WHERE id = :split_id AND ${ENDS}`);

const SPLIT_NOW = sql<{ split: string | null }>(`SELECT ${SPLIT_JSON} AS split FROM ${SPLIT_PLACE} WHERE s.id = :split_id`);

/**
 * The statements that move split `splitId` on, by `by`: a verdict's (`verdict`: recorded with `webhookId`, its event, its
 * effect) or the schedule's (its due step); a step that ends the split promotes it; `split` reads it after.
 */
function moveStatements(
  db: CallerWriteDb,
  splitId: string,
  by: { by: "schedule" } | { by: "verdict"; verdict: string; reason: string; webhookId: string },
) {
  const ids = newDeploymentIds(db.bucket);
  const values = {
    split_id: splitId,
    by: by.by,
    verdict: by.by === "verdict" ? by.verdict : null,
    reason: by.by === "verdict" ? by.reason : null,
    webhook_id: by.by === "verdict" ? by.webhookId : null,
    write_id: newId(db.bucket),
    event_id: newId(db.bucket),
    verdict_event_id: newId(db.bucket),
    deployment_id: ids.deploymentId,
    environment_revision_id: ids.environmentRevisionId,
  };
  return {
    ...(by.by === "verdict"
      ? {
          record: db.statement(RECORD_VERDICT, values),
          verdictEvent: db.statement(VERDICT_EVENT, values),
          note: db.statement(NOTE_VERDICT, values),
        }
      : {}),
    step: db.statement(STEP, values),
    stepEvent: db.statement(PUT_EVENT, { ...values, split_id: null, event_id: newId(db.bucket) }),
    promote: db.statement(PROMOTE, values),
    environmentRevision: environmentRevisionStatement(db, ids),
    deploymentEvent: deploymentEvent(db, ids.environmentRevisionId, null, null),
    endedEvent: db.statement(ENDED_EVENT, values),
    drop: db.statement(DROP_ENDED, values),
    split: db.statement(SPLIT_NOW, values),
  };
}

/** The split a verdict would move: its id and sealed secret, whether that `webhook-id` was seen (no row: none runs). */
const VERDICT_TARGET = sql<{ splitId: string; sealedSecret: string; seen: number }>(
  `SELECT s.id AS splitId, s.verdict_secret AS sealedSecret,
          EXISTS (SELECT 1 FROM split_verdicts WHERE split_id = s.id AND webhook_id = :webhook_id) AS seen
     FROM environment_splits s JOIN environments e ON e.id = s.environment_id WHERE e.app_id = :app_id AND e.name = :environment`,
);

export async function verdictTarget(db: CallerDb, appId: string, environment: string, webhookId: string) {
  const { target } = await db.batch({
    target: db.statement(VERDICT_TARGET, { app_id: appId, environment, webhook_id: webhookId }),
  });
  return target.results[0] ?? null;
}

/**
 * Applies an accepted verdict to split `splitId` in one batch: null when the split ended meanwhile; "replayed" when
 * its `webhook-id` was recorded meanwhile (the batch failed: nothing written); else the split after it (null: ended).
 */
export async function applyVerdict(
  db: CallerWriteDb,
  splitId: string,
  verdict: { verdict: string; reason: string; webhookId: string },
): Promise<{ split: string | null } | "replayed" | null> {
  try {
    const { record, split } = await db.batch(moveStatements(db, splitId, { by: "verdict", ...verdict }));
    if (!record || record.meta.changes === 0) return null;
    return { split: split.results[0]?.split ?? null };
  } catch (error) {
    if (isUniqueViolation(error, "split_verdicts")) return "replayed";
    throw error;
  }
}

/** How many due steps a shard's run applies at most; the rest wait a minute. */
export const STEPS_PER_RUN = 100;

const DUE = sql<{ id: string; bucket: number }>(
  `SELECT s.id, o.bucket FROM environment_splits s JOIN environments e ON e.id = s.environment_id JOIN apps a ON a.id = e.app_id
     JOIN projects p ON p.id = a.project_id JOIN workspaces w ON w.id = p.workspace_id JOIN organizations o ON o.id = w.organization_id
    WHERE s.held = 0 AND s.next_step_at <= ${NOW} AND o.bucket NOT IN (SELECT bucket FROM bucket_fences)
    ORDER BY s.next_step_at LIMIT :per_run`,
);

/** One shard's due steps, a batch each, by the schedule (no one); the events committed go to the delivery queue. */
async function stepShard(env: Env, shard: ShardName) {
  const db = shardNamed(env, shard);
  const { due } = await batch(db, { due: DUE.bind(db, { per_run: STEPS_PER_RUN }) });
  const events: string[] = [];
  for (const { id, bucket } of due.results) {
    const writer = new CallerWriteDb(db, Caller.nobody, bucket, (made) => events.push(...made));
    try {
      await writer.batch(moveStatements(writer, id, { by: "schedule" }));
    } catch (error) {
      if (!isFenceTrip(error))
        console.error(JSON.stringify({ level: "error", message: "split step failed", shard, error: String(error) }));
    }
  }
  if (events.length > 0) {
    await env.WEBHOOK_DELIVERIES.send({ shard, events } satisfies DeliveryMessage).catch((error: unknown) => {
      console.error(
        JSON.stringify({ message: "hand-off to the delivery queue failed; the sweep will queue it", error: String(error) }),
      );
    });
  }
}

/** The minute's split steps (docs/SPLITS.md §3), every shard at once. */
export const runSplitCron = (env: Env) => Promise.all(allShards(env).map((shard) => stepShard(env, shard)));
