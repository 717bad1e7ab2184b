import { SPLIT_STATE } from "../core/splits.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { ADMIN_ROLES, ADMIN_ROLES_SQL, DEPLOYER_ROLES_SQL, type Role } from "../db/roles";
import { sql } from "../db/sql";
import { type ChangeRequestState, type EditChangeRequestBody, REVIEWS_MAX, type ReviewBody } from "./change-requests.schemas";
import {
  EVENT_FIELDS,
  MAY_APPROVE,
  PROPOSAL_CTES,
  PROPOSER_ROLES,
  type ProposalField,
  REFUSED_REVIEWERS,
  REFUSED_REVIEWERS_JSON,
  REQUEST_CTES,
  type Refusal,
  type RefusedReviewer,
  replayed,
  requestRead,
  requestStatements,
  WRITTEN,
  type WriteOutcome,
} from "./change-requests.sql.ts";

/*
 * A change request's actions (docs/CHANGE-REQUESTS.md §3, §4): edited, submitted, reviewed, rebased, scheduled and
 * cancelled, each one batch with its event; reads and the create in change-requests.sql.ts.
 */

/**
 * The actions on a request (§3's table but apply): the states they are taken in (as read)
 * and who takes them: its author (a proposer still), its author or an owner or workspace admin, a proposer, or an
 * approver (a role of `approver_roles`, not the author unless `allow_self_approval`).
 */
export const ACTIONS = {
  edit: { states: ["draft", "open", "approved", "scheduled"], who: "author" },
  submit: { states: ["draft"], who: "author" },
  rebase: {
    states: ["open", "approved", "scheduled", "failed"],
    who: "author_or_admin",
  },
  cancel: {
    states: ["draft", "open", "approved", "scheduled", "failed"],
    who: "author_or_admin",
  },
  comment: { states: ["open", "approved"], who: "proposer" },
  approve: { states: ["open", "approved"], who: "approver" },
  decline: { states: ["open", "approved"], who: "approver" },
  schedule: { states: ["approved"], who: "proposer" },
  unschedule: { states: ["scheduled"], who: "proposer" },
} as const satisfies Record<string, { states: ChangeRequestState[]; who: string }>;

export type Action = keyof typeof ACTIONS;

/** The request and what an action needs of it: `cr` (COUNTED), `target`, `env_now` and `proposal` (PROPOSAL_CTES), an edit's `refused_reviewers`. */
const ACTION_CTES = `${REQUEST_CTES}, target AS (SELECT app_id, environment FROM cr_found), ${PROPOSAL_CTES},
reviewing AS (SELECT organization_id, approver_roles, allow_self_approval, author_id FROM cr), ${REFUSED_REVIEWERS}`;

/** Whether an edit changes the revision proposed: a proposal given (:proposal_given) other than the request's. */
const REVISION_CHANGED = `(:proposal_given = 1 AND EXISTS (SELECT 1 FROM proposal p JOIN cr_found c
                                                   WHERE p.variant_revision_id IS NOT c.variant_revision_id
                                                      OR p.revert_to_revision_id IS NOT c.revert_to_revision_id))`;

/** Whether an edit changes the proposal: its revision, or a split request's weight, steps or promote_at_end (:split). */
const PROPOSAL_CHANGED = `(${REVISION_CHANGED} OR (:split IS NOT NULL
  AND EXISTS (SELECT 1 FROM cr_found c WHERE json_patch(c.split, :split) IS NOT c.split)))`;

/**
 * Whether the edit takes only what the request's kind may change: a deploy or revert request no `split`; a split
 * request no revision (its candidate stays), a promote neither.
 */
const FITS_KIND = `CASE cr.split ->> '$.kind' WHEN 'split' THEN :proposal_given = 0 WHEN 'promote' THEN :proposal_given = 0 AND :split IS NULL
  ELSE :split IS NULL END`;

/** Whether the caller may take action :action on `cr` (ACTIONS' `who`, bound as :who). */
const CALLER_MAY = `CASE :who
    WHEN 'author' THEN cr.author_id = (SELECT user_id FROM caller) AND cr.role IN ${DEPLOYER_ROLES_SQL}
    WHEN 'author_or_admin' THEN (cr.author_id = (SELECT user_id FROM caller) AND cr.role IN ${DEPLOYER_ROLES_SQL})
                                OR cr.role IN ${ADMIN_ROLES_SQL}
    WHEN 'proposer' THEN cr.role IN ${DEPLOYER_ROLES_SQL}
    WHEN 'approver' THEN ${MAY_APPROVE}
  END`;

/** What an action found, before it wrote (its refusal is read from these, in the order of `actionRefusal`). */
interface ActionFacts {
  role: Role;
  isAuthor: number;
  isApprover: number;
  allowSelfApproval: number;
  readState: ChangeRequestState;
  version: number;
  reviews: number;
  proposalFound: number;
  refusedReviewers: string;
  /** Kinds split and promote (null for the others). */
  splitKind: "split" | "promote" | null;
}

const ACTION_FACTS = sql<ActionFacts>(
  `WITH ${ACTION_CTES}
   SELECT cr.role, cr.author_id = (SELECT user_id FROM caller) AS isAuthor,
          cr.role IN (SELECT value FROM json_each(cr.approver_roles)) AS isApprover,
          cr.allow_self_approval AS allowSelfApproval, cr.read_state AS readState, cr.version,
          (SELECT count(*) FROM change_request_reviews WHERE change_request_id = cr.id) AS reviews,
          EXISTS (SELECT 1 FROM proposal) AS proposalFound, ${REFUSED_REVIEWERS_JSON} AS refusedReviewers,
          cr.split ->> '$.kind' AS splitKind
     FROM cr`,
);

/**
 * An action's event, made first and only when the action is allowed (the caller may, the state allows it, the version
 * reviewed is the current one, the reviews are not full, the proposal edited to exists, If-Match holds): the writes
 * after it are made only when it was (the event is the action's mark). It holds the request's state before the action
 * and the fields of its type; EVENT_COMPLETED adds the request as it is after.
 */
const ACTION_EVENT = sql(
  `WITH ${ACTION_CTES} ${INSERT_EVENT}
   SELECT :event_id, :event_type, cr.organization_id, cr.workspace_id, cr.project_id, cr.app_id, ${EVENT_ACTOR},
          CASE :action
            WHEN 'edit' THEN json_object('previous_state', cr.read_state,
              'changed', json((SELECT json_group_array(value) FROM json_each(json_array(
                            CASE WHEN :title IS NOT NULL AND :title <> cr.title THEN 'title' END,
                            CASE WHEN :description IS NOT NULL AND :description <> cr.description THEN 'description' END,
                            CASE WHEN ${PROPOSAL_CHANGED} THEN 'proposal' END,
                            CASE WHEN :reviewers <> cr.reviewers THEN 'reviewers' END)) WHERE value IS NOT NULL)),
              'approvals_reset', json(CASE WHEN ${PROPOSAL_CHANGED} THEN 'true' ELSE 'false' END))
            WHEN 'rebase' THEN json_object('previous_state', cr.read_state,
              'previous_base', json_object('environment_revision', cr.base_environment_revision,
                                           'environment_revision_id', cr.base_environment_revision_id,
                                           'variant_revision_id', cr.base_variant_revision_id))
            WHEN 'review' THEN json_object('previous_state', cr.read_state, 'kind', :review_kind, 'comment', :comment)
            WHEN 'schedule' THEN json_object('previous_state', cr.read_state, 'scheduled_at', :scheduled_at)
            ELSE json_object('previous_state', cr.read_state)
          END
     FROM cr
    WHERE cr.read_state IN (SELECT value FROM json_each(:states)) AND ${CALLER_MAY}
      AND (:version IS NULL OR cr.version = :version)
      AND (:review_kind IS NULL OR (SELECT count(*) FROM change_request_reviews WHERE change_request_id = cr.id) < :reviews_max)
      AND (:proposal_given = 0 OR EXISTS (SELECT 1 FROM proposal)) AND NOT EXISTS (SELECT 1 FROM refused_reviewers)
      AND ${FITS_KIND}
      AND (:expected_writes IS NULL OR cr.writes = :expected_writes)
   ${EVENT_HANDOFF}`,
);

/** The mark of an allowed action (ACTION_EVENT): a condition of each write after it. */
const ALLOWED = "EXISTS (SELECT 1 FROM events WHERE id = :event_id)";

/** Renewed by a create, an edit and a rebase (§3 Expiry). */
const RENEWED_EXPIRY = `expires_at = (SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || request_ttl_days || ' days') FROM cr)`;

/**
 * An edit: the title and description given; a proposal other than the request's replaces it (a split request's
 * split merged), bumps `version` (approvals reset) and makes an open, approved or scheduled request open again,
 * unscheduled; the expiry renewed.
 */
const EDIT = sql(
  `WITH ${ACTION_CTES}
   UPDATE change_requests
      SET title = COALESCE(:title, title), description = COALESCE(:description, description),
          reviewers = COALESCE(:reviewers, reviewers),
          kind = CASE WHEN ${REVISION_CHANGED} THEN CASE WHEN (SELECT revert_to_revision_id FROM proposal) IS NULL THEN 'deploy' ELSE 'revert' END ELSE kind END,
          variant_revision_id = CASE WHEN ${REVISION_CHANGED} THEN (SELECT variant_revision_id FROM proposal) ELSE variant_revision_id END,
          revert_to_revision_id = CASE WHEN ${REVISION_CHANGED} THEN (SELECT revert_to_revision_id FROM proposal) ELSE revert_to_revision_id END,
          split = CASE WHEN :split IS NULL THEN split ELSE json_patch(split, :split) END,
          state = CASE WHEN state <> 'draft' AND ${PROPOSAL_CHANGED} THEN 'open' ELSE state END,
          scheduled_at = CASE WHEN ${PROPOSAL_CHANGED} THEN NULL ELSE scheduled_at END,
          scheduled_by = CASE WHEN ${PROPOSAL_CHANGED} THEN NULL ELSE scheduled_by END,
          version = version + ${PROPOSAL_CHANGED}, ${RENEWED_EXPIRY}, ${WRITTEN}
    WHERE id = :change_request_id AND ${ALLOWED}`,
);

const SUBMIT = sql(`UPDATE change_requests SET state = 'open', ${WRITTEN} WHERE id = :change_request_id AND ${ALLOWED}`);

/**
 * A rebase: the base is the environment now, `version` bumped, open again (unscheduled, its failure cleared); a split
 * or promote request's split too (a promote's candidate the running split's).
 */
const REBASE = sql(
  `WITH ${ACTION_CTES}, running AS (SELECT s.candidate_revision_id, ${SPLIT_STATE} AS state FROM environment_splits s
                                     WHERE s.environment_id = (SELECT id FROM env_now))
   UPDATE change_requests
      SET split = json_set(split, '$.running', (SELECT state FROM running)),
          variant_revision_id = CASE WHEN split ->> '$.kind' = 'promote'
                                     THEN COALESCE((SELECT candidate_revision_id FROM running), variant_revision_id)
                                     ELSE variant_revision_id END,
          base_environment_revision = (SELECT revision FROM env_now), base_environment_revision_id = (SELECT revision_id FROM env_now),
          base_variant_revision_id = (SELECT variant_revision_id FROM env_now), version = version + 1, state = 'open',
          scheduled_at = NULL, scheduled_by = NULL, failed_at = NULL, failure_reason = NULL, failure_detail = NULL,
          ${RENEWED_EXPIRY}, ${WRITTEN}
    WHERE id = :change_request_id AND ${ALLOWED}`,
);

/** A schedule: the minute cron applies the request from :scheduled_at on, as the caller (src/change-requests/apply.sql.ts). */
const SCHEDULE = sql(
  `WITH ${CALLER_CTE}
   UPDATE change_requests SET state = 'scheduled', scheduled_at = :scheduled_at, scheduled_by = (SELECT user_id FROM caller), ${WRITTEN}
    WHERE id = :change_request_id AND ${ALLOWED}`,
);

/** An unschedule: open again (read as approved while its approvals still count), its expiry as it was. */
const UNSCHEDULE = sql(
  `UPDATE change_requests SET state = 'open', scheduled_at = NULL, scheduled_by = NULL, ${WRITTEN}
    WHERE id = :change_request_id AND ${ALLOWED}`,
);

const CANCEL = sql(`UPDATE change_requests SET state = 'cancelled', ${WRITTEN} WHERE id = :change_request_id AND ${ALLOWED}`);

/** A review, of the current version (or the one named, which must be it); a decline rejects the request. */
const INSERT_REVIEW = sql(
  `WITH ${CALLER_CTE}
   INSERT INTO change_request_reviews (id, change_request_id, reviewer_id, kind, comment, version)
   SELECT :review_id, id, (SELECT user_id FROM caller), :review_kind, :comment, version FROM change_requests
    WHERE id = :change_request_id AND ${ALLOWED}`,
);

const REVIEWED = sql(
  `UPDATE change_requests SET state = CASE WHEN :review_kind = 'decline' THEN 'rejected' ELSE state END, ${WRITTEN}
    WHERE id = :change_request_id AND ${ALLOWED}`,
);

/** Completes an action's event with the request as it is after the action (EVENT_FIELDS). */
const EVENT_COMPLETED = sql(
  `WITH ${REQUEST_CTES}
   UPDATE events SET data = (SELECT json_set(events.data, ${EVENT_FIELDS}) FROM cr) WHERE id = :event_id`,
);

/**
 * The event of a state an action reached, after its own: `change_request.approved` (open before, approved now: the
 * count reached) or `.rejected`.
 */
const STATE_REACHED_EVENT = sql(
  `WITH ${REQUEST_CTES} ${INSERT_EVENT}
   SELECT :reached_event_id, 'change_request.' || cr.read_state, cr.organization_id, cr.workspace_id, cr.project_id, cr.app_id,
          ${EVENT_ACTOR}, json_set(json_object('previous_state', before.previous_state), ${EVENT_FIELDS})
     FROM cr JOIN (SELECT json_extract(data, '$.previous_state') AS previous_state FROM events WHERE id = :event_id) before
    WHERE (cr.read_state = 'approved' AND before.previous_state = 'open') OR cr.read_state = 'rejected'
   ${EVENT_HANDOFF}`,
);

/** Each action's own writes, and its event's type. */
const ACTION_WRITES = {
  edit: { write: EDIT, type: "change_request.edited" },
  submit: { write: SUBMIT, type: "change_request.opened" },
  rebase: { write: REBASE, type: "change_request.rebased" },
  cancel: { write: CANCEL, type: "change_request.cancelled" },
  comment: { write: REVIEWED, type: "change_request.reviewed" },
  approve: { write: REVIEWED, type: "change_request.reviewed" },
  decline: { write: REVIEWED, type: "change_request.reviewed" },
  schedule: { write: SCHEDULE, type: "change_request.scheduled" },
  unschedule: { write: UNSCHEDULE, type: "change_request.unscheduled" },
} as const;

/** What an action takes besides the request: an edit's fields, a review, a schedule's time. */
export type ActionInput =
  | { action: "edit"; edit: EditChangeRequestBody }
  | { action: "submit" | "rebase" | "cancel" | "unschedule" }
  | { action: "schedule"; scheduledAt: string }
  | { action: "comment" | "approve" | "decline"; review: ReviewBody };

/** An edit's fields that change the proposal, of which a request's kind takes some (FITS_KIND). */
const PROPOSAL_FIELDS: ProposalField[] = ["variant_revision_id", "revert_to_revision_id", "split"];

/** Why action `action` was refused, from ACTION_FACTS' row (none: no request the caller can see). */
function actionRefusal(
  action: Action,
  facts: ActionFacts | undefined,
  input: { version: number | null; proposalGiven: boolean; proposalField: ProposalField | undefined; review: boolean },
): Refusal {
  if (!facts) return { outcome: "not_found", missing: "change_request" };
  const { who, states } = ACTIONS[action];
  const proposer = PROPOSER_ROLES.includes(facts.role);
  const allowed =
    who === "author"
      ? facts.isAuthor === 1 && proposer
      : who === "author_or_admin"
        ? (facts.isAuthor === 1 && proposer) || ADMIN_ROLES.includes(facts.role)
        : who === "proposer"
          ? proposer
          : facts.isApprover === 1 && (facts.isAuthor === 0 || facts.allowSelfApproval === 1);
  if (!allowed)
    return {
      outcome: "forbidden",
      self: who === "approver" && facts.isAuthor === 1 && facts.allowSelfApproval === 0,
    };
  if (input.proposalField && facts.splitKind !== (input.proposalField === "split" ? "split" : null))
    return { outcome: "not_of_kind", field: input.proposalField, kind: facts.splitKind };
  if (input.proposalGiven && !facts.proposalFound) return { outcome: "not_found", missing: "revision" };
  const refused: RefusedReviewer[] = JSON.parse(facts.refusedReviewers);
  if (refused.length > 0) return { outcome: "reviewers_refused", refused };
  if (!(states as readonly ChangeRequestState[]).includes(facts.readState))
    return { outcome: "invalid_state", state: facts.readState };
  if (input.version !== null && input.version !== facts.version) return { outcome: "stale_version", version: facts.version };
  if (input.review && facts.reviews >= REVIEWS_MAX) return { outcome: "too_many_reviews" };
  return { outcome: "moved_on", of: "change_request" };
}

/**
 * Takes `input.action` on request `id` in one batch (§3): its checks and its event first (ACTION_EVENT), its writes
 * only if that was made, the event completed, a state reached recorded, and the request read back; with the request's
 * If-Match (`expectedWrites`) and claim (the event's id is what the claim records).
 */
export async function actOnChangeRequest(
  db: CallerWriteDb,
  id: string,
  input: ActionInput,
  expectedWrites: number | null,
  claim: IdempotencyClaim | null,
): Promise<WriteOutcome> {
  const eventId = newId(db.bucket);
  const { action } = input;
  const edit = input.action === "edit" ? input.edit : null;
  const review = "review" in input ? input.review : null;
  const values = {
    change_request_id: id,
    event_id: eventId,
    event_type: ACTION_WRITES[action].type,
    action: review ? "review" : action,
    who: ACTIONS[action].who,
    states: JSON.stringify(ACTIONS[action].states),
    version: review?.version ?? null,
    review_kind: review?.kind ?? null,
    comment: review?.comment ?? null,
    title: edit?.title ?? null,
    description: edit?.description ?? null,
    variant_revision_id: edit?.variant_revision_id ?? null,
    revert_to_revision_id: edit?.revert_to_revision_id ?? null,
    reviewers: edit?.reviewers ? JSON.stringify(edit.reviewers) : null,
    proposal_given: edit && (edit.variant_revision_id ?? edit.revert_to_revision_id) !== undefined ? 1 : 0,
    split: edit?.split
      ? JSON.stringify({
          weight: edit.split.weight,
          steps: edit.split.steps ?? [],
          promote_at_end: edit.split.promote_at_end ?? false,
        })
      : null,
    expected_writes: expectedWrites,
    scheduled_at: input.action === "schedule" ? input.scheduledAt : null,
    reviews_max: REVIEWS_MAX,
  };
  const batch = await batchClaimed(db, claim, eventId, {
    facts: db.statement(ACTION_FACTS, values),
    event: db.statement(ACTION_EVENT, values),
    ...(review
      ? {
          review: db.statement(INSERT_REVIEW, {
            ...values,
            review_id: newId(db.bucket),
          }),
        }
      : {}),
    write: db.statement(ACTION_WRITES[action].write, values),
    completed: db.statement(EVENT_COMPLETED, values),
    reached: db.statement(STATE_REACHED_EVENT, {
      ...values,
      reached_event_id: newId(db.bucket),
    }),
    ...requestStatements(db, id),
  });
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) return replayed(db, id);
  const read = requestRead(batch.ran);
  // The event is the action's mark: made, the action was taken.
  if (read && batch.ran.event.results.length > 0)
    return { outcome: "done", read, replayed: false, reached: batch.ran.reached.results.length > 0 };
  return actionRefusal(action, batch.ran.facts.results[0], {
    version: values.version,
    proposalGiven: values.proposal_given === 1,
    proposalField: edit ? PROPOSAL_FIELDS.find((field) => edit[field] !== undefined) : undefined,
    review: review !== null,
  });
}
