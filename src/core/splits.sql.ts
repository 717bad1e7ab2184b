/**
 * An environment's split (docs/SPLITS.md §1): its row in `environment_splits` (migrations/0017) while it runs. Every
 * write is one batch whose checks are conditions of its statements (`split_gate`), its event beside it.
 */

import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { batchClaimed, type ClaimedBatch, type IdempotencyClaim } from "../db/idempotency";
import { DEPLOYER_ROLES_SQL } from "../db/roles";
import { type Statement, sql } from "../db/sql";
import { APP_PLACE, deploymentEvent } from "./change-events.sql.ts";
import { CONFIG_CTES, type Ref, refValues } from "./configs.sql.ts";
import { type DeploymentIds, environmentRevisionStatement, newDeploymentIds } from "./deployments.sql.ts";
import type { EnvironmentState } from "./environment-etag";

/**
 * A split as its answer shows it (src/apps/splits.schemas.ts's SplitOutput, which the routes above type it as), its
 * JSON parsed.
 */
export type SplitJson = Record<string, unknown>;

export const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/** A revision as a split's answer shows it, from revision `r` of variant `v`. */
const REVISION_JSON = `json_object('variant_revision_id', r.id, 'config_name', COALESCE(v.removed_name, v.name), 'revision', r.revision)`;

/** A split `s` of environment `e` as its answer shows it (GET …/split, every split event's `split`), JSON text. */
export const SPLIT_JSON = `json_object('id', s.id, 'environment', e.name,
  'base', (SELECT json_set(${REVISION_JSON}, '$.environment_revision', er.revision, '$.environment_revision_id', er.id)
             FROM environment_revisions er JOIN app_variant_revisions r ON r.id = er.deployed_app_variant_revision_id
             JOIN app_variants v ON v.id = r.variant_id WHERE er.id = s.base_environment_revision_id),
  'candidate', (SELECT ${REVISION_JSON} FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id
                 WHERE r.id = s.candidate_revision_id),
  'weight', s.weight, 'salt', s.salt, 'steps', json(s.steps), 'next_step_at', s.next_step_at,
  'promote_at_end', json(CASE s.promote_at_end WHEN 1 THEN 'true' ELSE 'false' END),
  'held', json(CASE s.held WHEN 1 THEN 'true' ELSE 'false' END), 'last_verdict', json(s.last_verdict),
  'started_at', s.started_at,
  'started_by', (SELECT json_object('user_id', id, 'username', username) FROM users WHERE id = s.started_by),
  'changes', json(s.changes))`;

/** When the first of the steps :steps (JSON text) is due, counted from now: null for none. */
const NEXT_STEP_AT = `CASE WHEN json_array_length(:steps) > 0
  THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || json_extract(:steps, '$[0].after_minutes') || ' minutes') END`;

/** Who made a change: the caller's user (`{user_id, username}`), null for none. */
export const CHANGED_BY = `(SELECT json_object('user_id', id, 'username', username) FROM users WHERE id = (SELECT user_id FROM caller))`;

/** Split `s`'s `changes` with a change from its weight to :weight by :by (user, schedule, verdict) appended. */
export const CHANGED = `json_insert(s.changes, '$[#]', json_object('at', ${NOW}, 'from', s.weight, 'to', :weight, 'by', :by, 'user', ${CHANGED_BY}))`;

/** What every event of split `s` of environment `e` of app `a` says (json_object's keys and values, more may follow). */
export const SPLIT_EVENT_DATA = `'app_id', a.id, 'app_name', a.name, 'environment', e.name, 'split', json(${SPLIT_JSON})`;

/**
 * What a change request of kind split or promote was made on (docs/SPLITS.md §1): split `s`, its id and its count of
 * weight changes; its apply is a conflict when the environment's split is no longer in that state. The environment's
 * ETag names it too (src/core/environment-etag.ts).
 */
export const SPLIT_STATE = `(s.id || ':' || json_array_length(s.changes))`;

/**
 * The split write's CTEs, binding `refValues` of the candidate's refs, :app_id and :environment, :op (put, promote,
 * abort, rotate), :candidate_given, :salt and If-Match's :expected_*: `split_gate`, one row when the app and its environment
 * are visible, with `refusal`, why the write may not go on (null: it may), in the order refusals are answered.
 */
const SPLIT_GATE = `${CALLER_CTE}, ${CONFIG_CTES},
target AS (
  SELECT e.id, e.name, e.revision, e.deployed_app_variant_revision_id AS base_revision_id,
         (SELECT id FROM environment_revisions WHERE environment_id = e.id AND revision = e.revision) AS revision_id
    FROM environments e WHERE e.app_id = (SELECT id FROM app) AND e.name = :environment),
split_gate AS (
  SELECT app.role, app.id AS app_id, target.id AS environment_id, target.revision, target.revision_id, s.id AS split_id,
         ${SPLIT_STATE} AS split_state,
         COALESCE(ep.protected, 0) AS protected,
         vr.id AS candidate_id, CASE
      WHEN app.role NOT IN ${DEPLOYER_ROLES_SQL} THEN 'forbidden'
      WHEN :via_request IS NOT NULL AND NOT EXISTS (SELECT 1 FROM change_requests
             WHERE id = :via_request AND applied_environment_revision_id = :request_mark) THEN 'not_approved'
      WHEN s.id IS NULL AND :op <> 'put' THEN 'no_split'
      WHEN s.id IS NULL AND (:candidate_given = 0 OR vr.id IS NULL) THEN 'no_candidate'
      WHEN s.id IS NULL AND vr.removed_at IS NOT NULL THEN 'removed'
      WHEN s.id IS NULL AND vr.archived_at IS NOT NULL THEN 'archived'
      WHEN s.id IS NULL AND target.revision = 0 THEN 'nothing_deployed'
      WHEN s.id IS NULL AND vr.id = target.base_revision_id THEN 'same_as_base'
      WHEN :op NOT IN ('abort', 'rotate') AND :via_request IS NULL AND COALESCE(ep.protected, 0) = 1 THEN 'protected'
      WHEN :op = 'put' AND s.id IS NOT NULL AND (:candidate_given = 1 OR :salt IS NOT s.salt AND :salt IS NOT NULL) THEN 'split_running'
      WHEN :op = 'promote' AND (cv.removed_at IS NOT NULL OR cv.archived_at IS NOT NULL) THEN 'archived'
      WHEN :expected_environment_id IS NOT NULL
           AND (target.id IS NOT :expected_environment_id OR target.revision IS NOT :expected_revision
                OR ${SPLIT_STATE} IS NOT :expected_split) THEN 'moved_on'
    END AS refusal
    FROM app JOIN target
    LEFT JOIN environment_splits s ON s.environment_id = target.id
    LEFT JOIN app_variant_revisions cr ON cr.id = s.candidate_revision_id LEFT JOIN app_variants cv ON cv.id = cr.variant_id
    LEFT JOIN variant_revision vr
    LEFT JOIN environment_protections ep ON ep.project_id = app.project_id AND ep.environment = target.name)`;

/** Why a split write wrote nothing. */
export type SplitRefusal =
  | "not_found"
  | "forbidden"
  | "not_approved"
  | "no_split"
  | "no_candidate"
  | "removed"
  | "archived"
  | "nothing_deployed"
  | "same_as_base"
  | "protected"
  | "split_running"
  | "moved_on";

const FACTS = sql<{ refusal: SplitRefusal | null; appId: string; revision: number; environmentId: string; split: string | null }>(
  `WITH ${SPLIT_GATE} SELECT refusal, app_id AS appId, revision, environment_id AS environmentId, split_state AS split FROM split_gate`,
);

/** A split `s` with its environment `e` and app `a`. */
export const SPLIT_PLACE = `environment_splits s JOIN environments e ON e.id = s.environment_id JOIN apps a ON a.id = e.app_id ${APP_PLACE}`;

/**
 * What write :event_id (its event's id) answers: its event's split, and the split's sealed verdict secret when the
 * event is its start or a rotation of its secret (shown with the answer, a replay's too, while the split runs: a
 * PUT's, a change request's apply's or a rotation's; the secret now, should it have been rotated since); the
 * environment's state now (its ETag's: an end's row is dropped after its answer).
 */
export const SPLIT_ANSWER = sql<{ data: string; sealedSecret: string | null } & Required<EnvironmentState>>(
  `SELECT ev.data,
          CASE WHEN ev.type IN ('environment.split_started', 'environment.split_secret_rotated') THEN s.verdict_secret END AS sealedSecret,
          e.id AS environmentId, e.revision, CASE WHEN ev.type <> 'environment.split_ended'
            THEN (SELECT ${SPLIT_STATE} FROM environment_splits s WHERE s.environment_id = e.id) END AS split
     FROM events ev LEFT JOIN environment_splits s ON s.id = json_extract(ev.data, '$.split.id')
     JOIN environments e ON e.app_id = ev.app_id AND e.name = json_extract(ev.data, '$.environment') WHERE ev.id = :event_id`,
);

// A change of a running split: its weight, steps and promote_at_end, the steps' clock started again, a hold lifted.
const CHANGE = sql(
  `WITH ${SPLIT_GATE}
   UPDATE environment_splits AS s
      SET weight = :weight, steps = :steps, promote_at_end = :promote_at_end, held = 0, next_step_at = ${NEXT_STEP_AT},
          changes = ${CHANGED}, last_write_id = :write_id
    WHERE s.id = (SELECT split_id FROM split_gate WHERE refusal IS NULL)`,
);

const START = sql(
  `WITH ${SPLIT_GATE}
   INSERT INTO environment_splits (id, environment_id, base_environment_revision_id, candidate_revision_id, weight, salt, steps,
                                   next_step_at, promote_at_end, verdict_secret, changes, last_write_id, started_by)
   SELECT :split_id, environment_id, revision_id, candidate_id, :weight, COALESCE(:salt, :split_id), :steps, ${NEXT_STEP_AT},
          :promote_at_end, :verdict_secret,
          json_array(json_object('at', ${NOW}, 'from', 0, 'to', :weight, 'by', 'user', 'user', ${CHANGED_BY})),
          :write_id, (SELECT user_id FROM caller)
     FROM split_gate WHERE refusal IS NULL AND split_id IS NULL`,
);

// A new verdict secret for the running split (its traffic unchanged), marked by :write_id for its event.
const ROTATE = sql(
  `WITH ${SPLIT_GATE}
   UPDATE environment_splits AS s SET verdict_secret = :verdict_secret, last_write_id = :write_id
    WHERE s.id = (SELECT split_id FROM split_gate WHERE refusal IS NULL)`,
);

const ROTATE_EVENT = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'environment.split_secret_rotated', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_object(${SPLIT_EVENT_DATA})
     FROM ${SPLIT_PLACE} WHERE s.last_write_id = :write_id ${EVENT_HANDOFF}`,
);

/** `environment.split_started` or `.split_changed`, of the split the batch's write :write_id made or changed. */
export const PUT_EVENT = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, CASE WHEN s.id = :split_id THEN 'environment.split_started' ELSE 'environment.split_changed' END,
          w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_object(${SPLIT_EVENT_DATA}, 'change', json(json_extract(s.changes, '$[#-1]')))
     FROM ${SPLIT_PLACE} WHERE s.last_write_id = :write_id ${EVENT_HANDOFF}`,
);

/**
 * `environment.split_ended` by the caller: an abort the gate lets through; a promote once its revision is made (the
 * gate, read again after it, sees the environment moved on). The end is the split's last change (to 0 or 10000, by
 * the user), and `protected` says whether the environment was: an abort there is the one direct write allowed.
 */
const END_EVENT = sql(
  `WITH ${SPLIT_GATE} ${INSERT_EVENT}
   SELECT :event_id, 'environment.split_ended', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_insert(json_object(${SPLIT_EVENT_DATA}, 'outcome', :op, 'by', 'user', 'reason', NULL,
                        'environment_revision_id', (SELECT id FROM environment_revisions WHERE id = :environment_revision_id),
                        'protected', json(CASE (SELECT protected FROM split_gate) WHEN 1 THEN 'true' ELSE 'false' END)),
                      '$.split.changes[#]', json_object('at', ${NOW}, 'from', s.weight,
                        'to', CASE :op WHEN 'abort' THEN 0 ELSE 10000 END, 'by', 'user', 'user', ${CHANGED_BY}))
     FROM ${SPLIT_PLACE}
    WHERE s.id = (SELECT split_id FROM split_gate)
      AND CASE :op WHEN 'abort' THEN (SELECT refusal FROM split_gate) IS NULL
               ELSE EXISTS (SELECT 1 FROM environment_revisions WHERE id = :environment_revision_id) END ${EVENT_HANDOFF}`,
);

/** A promote's deployment row: the candidate, made only when the gate lets it through. */
const PROMOTE = sql(
  `WITH ${SPLIT_GATE}
   INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by)
   SELECT :deployment_id, s.environment_id, s.candidate_revision_id, (SELECT user_id FROM caller)
     FROM split_gate JOIN environment_splits s ON s.id = split_gate.split_id WHERE refusal IS NULL AND :op = 'promote'`,
);

/** The split's row goes once its end's event is written. */
export const DROP_ENDED = sql(
  `DELETE FROM environment_splits WHERE id IN (SELECT json_extract(data, '$.split.id') FROM events WHERE id = :event_id)`,
);

/** What a PUT asks for (docs/SPLITS.md §1). */
export interface SplitChange {
  candidate: Ref | null;
  weight: number;
  steps: { weight: number; after_minutes: number }[];
  promoteAtEnd: boolean;
  salt: string | null;
}

/** Where a split write goes, as the caller asks. */
export interface SplitPlace {
  appId: string;
  environment: string;
  expected: EnvironmentState | null;
}

/**
 * A write through an approved change request (docs/SPLITS.md §1): the gate lets it pass a protected environment only
 * once the apply, earlier in the same batch, marked request `requestId` with `mark` (its verdict let it through).
 */
export interface SplitVia {
  requestId: string;
  mark: string;
}

function gateValues(
  place: SplitPlace,
  op: "put" | "promote" | "abort" | "rotate",
  candidate: Ref | null = null,
  salt: string | null = null,
  via: SplitVia | null = null,
) {
  return {
    via_request: via?.requestId ?? null,
    request_mark: via?.mark ?? null,
    ...refValues({ application: { id: place.appId, slug: null, version: null }, variant: candidate, environment: null }),
    environment: place.environment,
    op,
    candidate_given: candidate ? 1 : 0,
    salt,
    expected_environment_id: place.expected?.environmentId ?? null,
    expected_revision: place.expected?.revision ?? null,
    expected_split: place.expected?.split ?? null,
  };
}

/** What a split write did: the split (as answered), or why nothing was written. */
export type SplitOutcome =
  | { outcome: "done"; split: SplitJson; sealedSecret: string | null; replayed: boolean; state: EnvironmentState }
  | { outcome: "key_reused" }
  | { outcome: SplitRefusal; appId?: string };

function refused(facts: { refusal: SplitRefusal | null; appId: string } | undefined): SplitOutcome {
  return { outcome: facts?.refusal ?? "not_found", appId: facts?.appId };
}

/** The answer of write :event_id, read back for a replay of its Idempotency-Key. */
const answerOf = async (db: CallerDb, eventId: string) =>
  (await db.batch({ answer: db.statement(SPLIT_ANSWER, { event_id: eventId }) })).answer;

/** A write's outcome from its SPLIT_ANSWER: the split (an end's with its outcome), or, with none, why nothing was written. */
function outcomeOf(
  answer: D1Result<{ data: string; sealedSecret: string | null } & EnvironmentState>,
  facts: D1Result<{ refusal: SplitRefusal | null; appId: string }> | null,
  replayed: boolean,
): SplitOutcome {
  const row = answer.results[0];
  if (!row) return facts ? refused(facts.results[0]) : { outcome: "no_split" };
  const { split, outcome, environment_revision_id } = JSON.parse(row.data);
  const ended = outcome ? { outcome, environment_revision_id } : {};
  return { outcome: "done", split: { ...split, ...ended }, sealedSecret: row.sealedSecret, replayed, state: row };
}

/**
 * Starts a split of the environment or changes the running one (docs/SPLITS.md §1), in one batch with its event;
 * `sealedSecret` is the new split's verdict secret, sealed (unused by a change).
 */
export async function putSplit(
  db: CallerWriteDb,
  place: SplitPlace,
  change: SplitChange,
  sealedSecret: string,
  claim: IdempotencyClaim | null,
): Promise<SplitOutcome> {
  const eventId = newId(db.bucket);
  const batch = await batchClaimed(db, claim, eventId, {
    facts: db.statement(FACTS, gateValues(place, "put", change.candidate, change.salt)),
    ...putStatements(db, place, change, sealedSecret, eventId),
  });
  return claimedOutcome(db, batch);
}

/** A claimed write's outcome: its own, or its first request's answer replayed, or a key reused. */
async function claimedOutcome(
  db: CallerDb,
  batch: ClaimedBatch<{
    answer: Statement<{ data: string; sealedSecret: string | null } & Required<EnvironmentState>>;
    facts: Statement<{ refusal: SplitRefusal | null; appId: string }>;
  }>,
): Promise<SplitOutcome> {
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) return outcomeOf(await answerOf(db, batch.replayOf), null, true);
  return outcomeOf(batch.ran.answer, batch.ran.facts, false);
}

/**
 * Gives the running split a new verdict secret, `sealedSecret` (README.md, "Splits"): one batch with its event,
 * allowed wherever an abort is (a protected environment too: its traffic does not change).
 */
export async function rotateSecret(
  db: CallerWriteDb,
  place: SplitPlace,
  sealedSecret: string,
  claim: IdempotencyClaim | null,
): Promise<SplitOutcome> {
  const eventId = newId(db.bucket);
  const values = { ...gateValues(place, "rotate"), verdict_secret: sealedSecret, write_id: newId(db.bucket), event_id: eventId };
  const batch = await batchClaimed(db, claim, eventId, {
    facts: db.statement(FACTS, values),
    rotate: db.statement(ROTATE, values),
    event: db.statement(ROTATE_EVENT, values),
    answer: db.statement(SPLIT_ANSWER, values),
  });
  return claimedOutcome(db, batch);
}

/**
 * A start's or change's statements, for a batch (a PUT's, or a change request's apply `via`): its write, its event
 * :event_id and its answer.
 */
export function putStatements(
  db: CallerWriteDb,
  place: SplitPlace,
  change: SplitChange,
  sealedSecret: string,
  eventId: string,
  via: SplitVia | null = null,
) {
  const splitId = newId(db.bucket);
  const writeId = newId(db.bucket);
  const values = {
    ...gateValues(place, "put", change.candidate, change.salt, via),
    split_id: splitId,
    write_id: writeId,
    weight: change.weight,
    steps: JSON.stringify(change.steps),
    promote_at_end: change.promoteAtEnd ? 1 : 0,
    verdict_secret: sealedSecret,
    by: "user",
  };
  return {
    change: db.statement(CHANGE, values),
    start: db.statement(START, values),
    event: db.statement(PUT_EVENT, { ...values, event_id: eventId }),
    answer: db.statement(SPLIT_ANSWER, { event_id: eventId }),
  };
}

/** Ends the split: `promote` deploys its candidate (a deploy in the environment's history), `abort` leaves the base. */
export async function endSplit(db: CallerWriteDb, place: SplitPlace, outcome: "promote" | "abort"): Promise<SplitOutcome> {
  const { facts, answer } = await db.batch({
    facts: db.statement(FACTS, gateValues(place, outcome)),
    ...endStatements(db, place, outcome, newDeploymentIds(db.bucket), newId(db.bucket)),
  });
  return outcomeOf(answer, facts, false);
}

/**
 * An end's statements, for a batch (a DELETE's, or a promote request's apply `via`, its deployment `ids` the apply's):
 * a promote's deployment, the end's event :event_id, its answer, the split's row dropped.
 */
export function endStatements(
  db: CallerWriteDb,
  place: SplitPlace,
  outcome: "promote" | "abort",
  ids: DeploymentIds,
  eventId: string,
  via: SplitVia | null = null,
) {
  const values = {
    ...gateValues(place, outcome, null, null, via),
    event_id: eventId,
    deployment_id: ids.deploymentId,
    environment_revision_id: ids.environmentRevisionId,
  };
  return {
    deployment: db.statement(PROMOTE, values),
    environmentRevision: environmentRevisionStatement(db, ids),
    deploymentEvent: deploymentEvent(db, ids.environmentRevisionId, null, via?.requestId ?? null),
    event: db.statement(END_EVENT, values),
    answer: db.statement(SPLIT_ANSWER, values),
    drop: db.statement(DROP_ENDED, values),
  };
}

/**
 * What a write would do, read, not made (its dry-run): the split and the environment's state as they are, or why the
 * write would be refused.
 */
export async function previewSplit(
  db: CallerDb,
  place: SplitPlace,
  op: "put" | "promote" | "abort",
  change: Pick<SplitChange, "candidate" | "salt"> = { candidate: null, salt: null },
): Promise<{ outcome: "would"; split: SplitJson | null; state: EnvironmentState } | SplitOutcome> {
  const values = gateValues(place, op, change.candidate, change.salt);
  const { facts, split } = await db.batch({
    facts: db.statement(FACTS, values),
    split: db.statement(SPLIT_BY_PLACE, { ...values, app_id: place.appId }),
  });
  const found = facts.results[0];
  if (!found || found.refusal !== null) return refused(found);
  const row = split.results[0];
  return { outcome: "would", split: row ? JSON.parse(row.split) : null, state: found };
}

const SPLIT_BY_PLACE = sql<{ split: string }>(
  `WITH ${CALLER_CTE}
   SELECT ${SPLIT_JSON} AS split FROM ${SPLIT_PLACE}
     JOIN membership m ON m.organization_id = w.organization_id
    WHERE a.id = :app_id AND e.name = :environment`,
);

/** The split running in environment :environment of app :app_id, as the caller may see it (any role): one round trip. */
export async function readSplit(db: CallerDb, appId: string, environment: string): Promise<SplitJson | null> {
  const { split } = await db.batch({ split: db.statement(SPLIT_BY_PLACE, { app_id: appId, environment }) });
  const row = split.results[0];
  return row ? JSON.parse(row.split) : null;
}
