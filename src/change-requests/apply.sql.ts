/**
 * A change request's apply (docs/CHANGE-REQUESTS.md §3): by a proposer (POST /change-requests/{id}/apply), or by the
 * minute cron as the user who scheduled it. One batch whose checks are conditions of its writes: the deployment row is
 * made only while the request may be applied now (approvals counted in the batch, with that moment's settings and
 * roles; the revision deployable; the environment still at the base), and every write after it only if it was.
 */

import { deploymentEvent, LIVE_EVERYWHERE_BY } from "../core/change-events.sql.ts";
import { type DeploymentIds, environmentRevisionStatement, newDeploymentIds } from "../core/deployments.sql.ts";
import { endStatements, putStatements, SPLIT_ANSWER, SPLIT_STATE } from "../core/splits.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { DEPLOYER_ROLES_SQL } from "../db/roles";
import { sql } from "../db/sql";
import type { ChangeRequestState } from "./change-requests.schemas";
import {
  type ChangeRequestRead,
  type ChangeRequestRow,
  COUNTED,
  type DiffSideRow,
  diffSidesOf,
  diffSidesStatement,
  EVENT_FIELDS,
  NOW,
  requestRead,
  requestStatements,
  SELECT_REQUESTS,
  WRITTEN,
} from "./change-requests.sql.ts";

/**
 * Request :change_request_id with the caller's role in its organization, null when the caller is no member (a
 * scheduler who left: the cron records why it failed): `cr_found`, as COUNTED reads it.
 */
const REQUEST_OF_ANY_CALLER = `cr_found AS (
  SELECT r.*, a.name AS app_name, a.project_id, w.id AS workspace_id, w.organization_id, m.role
    FROM change_requests r JOIN apps a ON a.id = r.app_id JOIN projects p ON p.id = a.project_id
    JOIN workspaces w ON w.id = p.workspace_id LEFT JOIN membership m ON m.organization_id = w.organization_id
   WHERE r.id = :change_request_id)`;

/** The request as read now, `cr` (COUNTED), whoever the caller is. */
export const REQUEST_NOW = `${CALLER_CTE}, ${REQUEST_OF_ANY_CALLER}, ${COUNTED}`;

/** The request :change_request_id as read now, whoever the caller is (the cron's, for its mails). */
export const REQUEST_READ_NOW = sql<ChangeRequestRow>(`WITH ${REQUEST_NOW} ${SELECT_REQUESTS}`);

/**
 * After REQUEST_NOW: `verdict`, the request with its environment now and `refusal`, why it may not be applied now
 * (null: it may), in the order the refusals are answered. An apply takes it in the states :states (as read); the
 * cron's (:scheduled = 1) only when due and scheduled by the caller still (else `not_due`: left to a later run).
 */
const VERDICT = `applying AS (
  SELECT cr.*, e.id AS environment_id, e.revision AS current_revision,
         e.deployed_app_variant_revision_id AS current_variant_revision_id,
         (SELECT id FROM environment_revisions WHERE environment_id = e.id AND revision = e.revision) AS current_revision_id,
         v.removed_at IS NOT NULL AS removed, v.archived_at IS NOT NULL AS archived
    FROM cr JOIN environments e ON e.app_id = cr.app_id AND e.name = cr.environment
    JOIN app_variant_revisions vr ON vr.id = cr.variant_revision_id JOIN app_variants v ON v.id = vr.variant_id),
verdict AS (
  SELECT applying.*, CASE
      WHEN role IS NULL THEN 'not_found'
      WHEN role NOT IN ${DEPLOYER_ROLES_SQL} THEN 'forbidden'
      WHEN read_state NOT IN (SELECT value FROM json_each(:states)) THEN 'invalid_state'
      WHEN :scheduled = 1 AND (scheduled_at > ${NOW} OR scheduled_by IS NOT (SELECT user_id FROM caller)) THEN 'not_due'
      WHEN approvals < required_approvals THEN 'not_approved'
      WHEN removed OR archived THEN 'revision_unavailable'
      WHEN :scheduled = 0 AND split IS NULL
           AND EXISTS (SELECT 1 FROM environment_splits WHERE environment_id = applying.environment_id) THEN 'split_running'
      WHEN current_revision <> base_environment_revision OR split IS NOT NULL AND (split ->> '$.running' IS NOT
           (SELECT ${SPLIT_STATE} FROM environment_splits s WHERE s.environment_id = applying.environment_id)
           OR split ->> '$.kind' = 'promote' AND split ->> '$.running' IS NULL) THEN 'conflict'
      WHEN :expected_writes IS NOT NULL AND writes <> :expected_writes THEN 'moved_on'
      WHEN split IS NOT NULL AND :split_pass = 0 THEN 'split_kind'
    END AS refusal
    FROM applying)`;

const APPLY_CTES = `${REQUEST_NOW}, ${VERDICT}`;

/** Why an apply may not go on, as `verdict` says. */
type ApplyRefusal =
  | "not_found"
  | "forbidden"
  | "invalid_state"
  | "not_due"
  | "not_approved"
  | "revision_unavailable"
  | "split_running"
  | "conflict"
  | "moved_on"
  /** A request of kind split or promote, let through by every check: applySplitRequest applies it. */
  | "split_kind";

interface ApplyFacts {
  refusal: ApplyRefusal | null;
  readState: ChangeRequestState;
  writes: number;
  approvals: number;
  approvalsRequired: number;
  removed: number;
  appId: string;
  environment: string;
  kind: "deploy" | "revert" | "split" | "promote";
  /** Kinds split and promote: what was proposed, JSON (ChangeRequestRow's `split`). */
  split: string | null;
  currentRevision: number;
}

const APPLY_FACTS = sql<ApplyFacts>(
  `WITH ${APPLY_CTES}
   SELECT refusal, read_state AS readState, writes, approvals, required_approvals AS approvalsRequired, removed, app_id AS appId,
          environment, COALESCE(json_extract(split, '$.kind'), kind) AS kind, split, current_revision AS currentRevision
     FROM verdict`,
);

/** The deployment row of the apply, made only when nothing refuses it: the mark every write after it checks. */
const INSERT_DEPLOYMENT = sql(
  `WITH ${APPLY_CTES}
   INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by)
   SELECT :deployment_id, environment_id, variant_revision_id, (SELECT user_id FROM caller) FROM verdict WHERE refusal IS NULL
      AND NOT EXISTS (SELECT 1 FROM environment_splits WHERE environment_id = verdict.environment_id)`,
);

/** The apply's environment revision was made. */
const APPLIED = "EXISTS (SELECT 1 FROM environment_revisions WHERE id = :environment_revision_id)";

const MARK_APPLIED = sql(
  `WITH ${CALLER_CTE}
   UPDATE change_requests
      SET state = 'applied', applied_at = ${NOW}, applied_by = (SELECT user_id FROM caller),
          applied_environment_revision_id = :environment_revision_id, applied_scheduled = :scheduled, ${WRITTEN}
    WHERE id = :change_request_id AND (${APPLIED} OR EXISTS (SELECT 1 FROM events WHERE id = :split_event_id))`,
);

/**
 * A split request's apply first marks the request (its applied_environment_revision_id, :environment_revision_id)
 * when its verdict lets it through: the split's write checks the mark (splits.sql.ts's SplitVia) and MARK_APPLIED
 * follows it; a mark left by a write the split refused is taken off again (UNMARK).
 */
const MARK_SPLIT_REQUEST = sql(
  `WITH ${APPLY_CTES}
   UPDATE change_requests SET applied_environment_revision_id = :environment_revision_id
    WHERE id = :change_request_id AND EXISTS (SELECT 1 FROM verdict WHERE refusal IS NULL)`,
);

const UNMARK = sql(
  `UPDATE change_requests SET applied_environment_revision_id = NULL
    WHERE id = :change_request_id AND state <> 'applied' AND applied_environment_revision_id = :environment_revision_id`,
);

/** `change_request.applied`, after MARK_APPLIED: from `approved` (a proposer's apply) or `scheduled` (the cron's). */
const APPLIED_EVENT = sql(
  `WITH ${REQUEST_NOW} ${INSERT_EVENT}
   SELECT :applied_event_id, 'change_request.applied', cr.organization_id, cr.workspace_id, cr.project_id, cr.app_id,
          ${EVENT_ACTOR},
          json_set(json_object('previous_state', CASE :scheduled WHEN 1 THEN 'scheduled' ELSE 'approved' END,
                               'environment_revision', er.revision, 'environment_revision_id', er.id,
                               'scheduled', json(CASE :scheduled WHEN 1 THEN 'true' ELSE 'false' END),
                               'live_everywhere_by', ${LIVE_EVERYWHERE_BY}),
                   ${EVENT_FIELDS})
     FROM cr LEFT JOIN environment_revisions er ON er.id = :environment_revision_id
    WHERE er.id IS NOT NULL OR EXISTS (SELECT 1 FROM events WHERE id = :split_event_id) ${EVENT_HANDOFF}`,
);

/** What a refusal of the cron's apply records as its `failure.reason`: a scheduler no longer a proposer is removed. */
const FAILURE_REASON = `CASE WHEN refusal IN ('not_found', 'forbidden') THEN 'scheduler_removed' ELSE refusal END`;

/** The refusals of the cron's apply that fail the request (the others leave it to a later run, or to the user). */
const FAILING = "refusal IN ('not_found', 'forbidden', 'not_approved', 'revision_unavailable', 'conflict')";

/** What a failure's `detail` says, by reason: what the request would need (GET …/diff shows a conflict whole). */
const FAILURE_DETAIL = `CASE
    WHEN refusal IN ('not_found', 'forbidden') THEN json_object('scheduled_by', scheduled_by)
    WHEN refusal = 'not_approved' THEN json_object('approvals', approvals, 'approvals_required', required_approvals)
    WHEN refusal = 'revision_unavailable' THEN json_object('variant_revision_id', variant_revision_id,
                                                            'removed', json(CASE WHEN removed THEN 'true' ELSE 'false' END))
    ELSE json_object('base', json_object('environment_revision', base_environment_revision,
                                         'environment_revision_id', base_environment_revision_id,
                                         'variant_revision_id', base_variant_revision_id),
                     'current', json_object('environment_revision', current_revision,
                                            'environment_revision_id', current_revision_id,
                                            'variant_revision_id', current_variant_revision_id)) END`;

/** `change_request.failed`, when the cron's apply was refused: the mark of MARK_FAILED. */
const FAILED_EVENT = sql(
  `WITH ${APPLY_CTES} ${INSERT_EVENT}
   SELECT :failed_event_id, 'change_request.failed', cr.organization_id, cr.workspace_id, cr.project_id, cr.app_id, ${EVENT_ACTOR},
          json_set(json_object('previous_state', cr.read_state, 'reason', ${FAILURE_REASON}), ${EVENT_FIELDS}, '$.state', 'failed')
     FROM verdict cr
    WHERE :scheduled = 1 AND ${FAILING} AND NOT ${APPLIED} ${EVENT_HANDOFF}`,
);

const MARK_FAILED = sql(
  `WITH ${APPLY_CTES}
   UPDATE change_requests
      SET state = 'failed', failed_at = ${NOW}, failure_reason = (SELECT ${FAILURE_REASON} FROM verdict),
          failure_detail = (SELECT ${FAILURE_DETAIL} FROM verdict), ${WRITTEN}
    WHERE id = :change_request_id AND EXISTS (SELECT 1 FROM events WHERE id = :failed_event_id)`,
);

/** An apply's values: the request, the ids it makes, who applies it (a proposer's If-Match, or the cron). */
function applyValues(id: string, ids: DeploymentIds, db: CallerWriteDb, by: ApplyBy) {
  return {
    change_request_id: id,
    deployment_id: ids.deploymentId,
    environment_revision_id: ids.environmentRevisionId,
    applied_event_id: newId(db.bucket),
    failed_event_id: newId(db.bucket),
    scheduled: by.scheduled ? 1 : 0,
    states: JSON.stringify(by.scheduled ? ["scheduled"] : ["open", "approved"]),
    expected_writes: by.scheduled ? null : by.expectedWrites,
    live_after: db.liveAfter,
    split_pass: 0,
    split_event_id: null as string | null,
  };
}

/** Who applies: a proposer (with the request's If-Match) or the cron, as the scheduler. */
type ApplyBy = { scheduled: false; expectedWrites: number | null } | { scheduled: true };

/** The statements of an apply (see the file's comment), for one batch; the cron's records its refusal as a failure. */
function applyStatements(db: CallerWriteDb, id: string, by: ApplyBy) {
  const ids = newDeploymentIds(db.bucket);
  const values = applyValues(id, ids, db, by);
  return {
    ids,
    statements: {
      facts: db.statement(APPLY_FACTS, values),
      sides: diffSidesStatement(db, id),
      deployment: db.statement(INSERT_DEPLOYMENT, values),
      environmentRevision: environmentRevisionStatement(db, ids),
      deploymentEvent: deploymentEvent(db, ids.environmentRevisionId, null, id),
      applied: db.statement(MARK_APPLIED, values),
      appliedEvent: db.statement(APPLIED_EVENT, values),
      ...(by.scheduled
        ? {
            failedEvent: db.statement(FAILED_EVENT, values),
            failed: db.statement(MARK_FAILED, values),
            now: db.statement(REQUEST_READ_NOW, values),
          }
        : {}),
      ...requestStatements(db, id),
    },
  };
}

/** The sides of a request's diff (DIFF_SIDES), for a conflict's or a dry-run's answer. */
export type DiffSides = Record<DiffSideRow["side"], DiffSideRow>;

/** Why an apply wrote nothing (the route turns each into its error). */
export type ApplyRefusalOutcome =
  | { outcome: "not_found" | "forbidden" | "moved_on" }
  | { outcome: "split_running"; appId: string; environment: string }
  | { outcome: "invalid_state"; state: ChangeRequestState }
  | { outcome: "not_approved"; approvals: number; approvalsRequired: number }
  | { outcome: "revision_unavailable"; removed: boolean }
  | { outcome: "conflict"; sides: DiffSides };

export type ApplyOutcome =
  /** `sealedSecret`: the verdict secret of the split a split request's apply started, sealed. */
  | { outcome: "done"; read: ChangeRequestRead; replayed: boolean; sealedSecret?: string | null }
  | { outcome: "key_reused" }
  | ApplyRefusalOutcome;

/** What would refuse the apply, from its facts and sides (none: the request the caller cannot see); null: none. */
function applyRefusal(facts: ApplyFacts | undefined, sides: DiffSides | null): ApplyRefusalOutcome | null {
  if (!facts || !sides || facts.refusal === "not_found" || facts.refusal === "not_due") return { outcome: "not_found" };
  switch (facts.refusal) {
    case null:
    case "split_kind":
      return null;
    case "invalid_state":
      return { outcome: "invalid_state", state: facts.readState };
    case "not_approved":
      return { outcome: "not_approved", approvals: facts.approvals, approvalsRequired: facts.approvalsRequired };
    case "revision_unavailable":
      return { outcome: "revision_unavailable", removed: facts.removed === 1 };
    case "conflict":
      return { outcome: "conflict", sides };
    case "split_running":
      return { outcome: "split_running", appId: facts.appId, environment: facts.environment };
    default:
      return { outcome: facts.refusal };
  }
}

/**
 * A proposer's apply of request `id` in one batch, with the request's If-Match (`expectedWrites`) and claim (the
 * environment revision it makes is what the claim records): the request applied, or why nothing was written.
 */
export async function applyChangeRequest(
  db: CallerWriteDb,
  id: string,
  expectedWrites: number | null,
  claim: IdempotencyClaim | null,
  seal: () => Promise<string>,
): Promise<ApplyOutcome> {
  const by = { scheduled: false, expectedWrites } as const;
  const { ids, statements } = applyStatements(db, id, by);
  const batch = await batchClaimed(db, claim, ids.environmentRevisionId, statements);
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) return replayedApply(db, id, batch.replayOf);
  const read = requestRead(batch.ran);
  if (read && batch.ran.applied.meta.changes > 0) return { outcome: "done", read, replayed: false };
  if (read && batch.ran.facts.results[0]?.refusal === "split_kind") {
    const { ran, sealedSecret } = await applySplitRequest(db, read.request, by, claim, seal);
    if ("reused" in ran) return { outcome: "key_reused" };
    if ("replayOf" in ran) return replayedApply(db, id, ran.replayOf);
    const now = requestRead(ran.ran);
    if (now && ran.ran.applied.meta.changes > 0) return { outcome: "done", read: now, replayed: false, sealedSecret };
    return applyRefusal(ran.ran.facts.results[0], diffSidesOf(ran.ran.sides.results)) ?? { outcome: "moved_on" };
  }
  return (
    applyRefusal(batch.ran.facts.results[0], diffSidesOf(batch.ran.sides.results)) ?? {
      // Refused by nothing, yet not made: what it read changed under it; never so in one transaction.
      outcome: "conflict",
      sides: diffSidesOf(batch.ran.sides.results) as DiffSides,
    }
  );
}

/**
 * Replays an apply's first answer, `resultId` the claim's (a split request's: its split's event): the request now and,
 * while the split that apply started runs, its sealed verdict secret, as the first answer had it (README.md, "Splits").
 */
async function replayedApply(db: CallerWriteDb, id: string, resultId: string): Promise<ApplyOutcome> {
  const { answer, ...request } = await db.batch({
    ...requestStatements(db, id),
    answer: db.statement(SPLIT_ANSWER, { event_id: resultId }),
  });
  const read = requestRead(request);
  if (!read) return { outcome: "not_found" };
  return { outcome: "done", read, replayed: true, sealedSecret: answer.results[0]?.sealedSecret ?? null };
}

/**
 * The apply of a request of kind split or promote (docs/SPLITS.md §1) once the first batch found it let through by
 * every check (`split_kind`): a second batch, checked as the first with the request's write count as read then (a
 * request changed in between is moved on), marked (MARK_SPLIT_REQUEST), the split started or changed as PUT …/split
 * would or promoted as DELETE …/split?outcome=promote would (src/core/splits.sql.ts), the request applied after it.
 */
async function applySplitRequest(
  db: CallerWriteDb,
  request: ChangeRequestRow,
  by: ApplyBy,
  claim: IdempotencyClaim | null,
  seal: () => Promise<string>,
) {
  const ids = newDeploymentIds(db.bucket);
  const eventId = newId(db.bucket);
  const values = {
    ...applyValues(request.id, ids, db, by),
    expected_writes: request.writes,
    split_pass: 1,
    split_event_id: eventId,
  };
  const place = { appId: request.appId, environment: request.environment, expected: null };
  const via = { requestId: request.id, mark: ids.environmentRevisionId };
  const proposal = JSON.parse(request.split ?? "{}");
  const change = {
    candidate: proposal.running === null ? { id: request.variantRevisionId, slug: null, version: null } : null,
    weight: proposal.weight,
    steps: proposal.steps,
    promoteAtEnd: proposal.promote_at_end,
    salt: null,
  };
  const split =
    proposal.kind === "promote"
      ? endStatements(db, place, "promote", ids, eventId, via)
      : putStatements(db, place, change, await seal(), eventId, via);
  const ran = await batchClaimed(db, claim, eventId, {
    facts: db.statement(APPLY_FACTS, values),
    sides: diffSidesStatement(db, request.id),
    mark: db.statement(MARK_SPLIT_REQUEST, values),
    ...split,
    applied: db.statement(MARK_APPLIED, values),
    appliedEvent: db.statement(APPLIED_EVENT, values),
    unmark: db.statement(UNMARK, values),
    ...(by.scheduled
      ? {
          failedEvent: db.statement(FAILED_EVENT, values),
          failed: db.statement(MARK_FAILED, values),
          now: db.statement(REQUEST_READ_NOW, values),
        }
      : {}),
    ...requestStatements(db, request.id),
  });
  const answer = "ran" in ran ? ran.ran.answer.results[0] : undefined;
  return { ran, sealedSecret: answer?.sealedSecret ?? null };
}

/** What an apply would do now (its dry-run, §6): one read, nothing written. */
export type ApplyPreview = { outcome: "would_apply"; facts: ApplyFacts; sides: DiffSides } | ApplyRefusalOutcome;

/** The apply of request `id` as the caller would make it now, with If-Match (`expectedWrites`), read, not made. */
export async function previewApply(db: CallerDb, id: string, expectedWrites: number | null): Promise<ApplyPreview> {
  const values = {
    change_request_id: id,
    scheduled: 0,
    states: JSON.stringify(["open", "approved"]),
    expected_writes: expectedWrites,
    split_pass: 1,
  };
  const { facts, sides } = await db.batch({ facts: db.statement(APPLY_FACTS, values), sides: diffSidesStatement(db, id) });
  const found = facts.results[0];
  const bySide = diffSidesOf(sides.results);
  return applyRefusal(found, bySide) ?? { outcome: "would_apply", facts: found, sides: bySide as DiffSides };
}

/** What the cron's apply of a due request did, and the request after it. */
export interface ScheduledApply {
  outcome: "applied" | "failed" | "left";
  request: ChangeRequestRow | undefined;
}

/** The cron's apply of due request `id` as its scheduler (`db`'s caller): one batch; a refusal fails it (§3). */
export async function applyScheduled(db: CallerWriteDb, id: string, seal: () => Promise<string>): Promise<ScheduledApply> {
  const { statements } = applyStatements(db, id, { scheduled: true });
  const first = await db.batch(statements);
  const due = first.facts.results[0]?.refusal === "split_kind" ? first.request.results[0] : undefined;
  const { applied, failed, now } = due
    ? ((await applySplitRequest(db, due, { scheduled: true }, null, seal)).ran as { ran: typeof first }).ran
    : first;
  const request = now?.results[0];
  if (applied.meta.changes > 0) return { outcome: "applied", request };
  return { outcome: failed && failed.meta.changes > 0 ? "failed" : "left", request };
}
