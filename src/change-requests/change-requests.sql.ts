/**
 * Change requests (docs/CHANGE-REQUESTS.md §3, §4, §7; migrations/0015): read with their approvals counted and their
 * state as read, and made, in one batch with its event; their actions (edits, reviews, ...) in actions.sql.ts.
 */

import type { EnvironmentState } from "../core/environment-etag";
import { PROTECTION_COLUMNS } from "../core/protection.sql.ts";
import { SPLIT_STATE } from "../core/splits.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { DEPLOYER_ROLES, DEPLOYER_ROLES_SQL, type Role } from "../db/roles";
import { type Results, sql } from "../db/sql";
import { APP_BY_ID_CTE } from "../db/visibility";
import {
  type ChangeRequestState,
  type CreateChangeRequestBody,
  type ListChangeRequestsQuery,
  UNFINISHED_MAX,
} from "./change-requests.schemas";

export const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/** Who may make a request, comment on one and apply it: the roles that may deploy (§3's "proposers"). */
export const PROPOSER_ROLES = DEPLOYER_ROLES;

/** A stored state still to be finished, unless it reads `expired` (past `expires_at`, not scheduled). */
const UNFINISHED = `(state IN ('draft', 'open', 'scheduled', 'failed') AND (state = 'scheduled' OR expires_at > ${NOW}))`;

/** A request :change_request_id of an organization the caller is a member of, with the caller's role there: `cr_found`. */
const ONE_REQUEST = `cr_found AS (
  SELECT r.*, a.name AS app_name, a.project_id, w.id AS workspace_id, w.organization_id, m.role
    FROM change_requests r JOIN apps a ON a.id = r.app_id JOIN projects p ON p.id = a.project_id
    JOIN workspaces w ON w.id = p.workspace_id JOIN membership m ON m.organization_id = w.organization_id
   WHERE r.id = :change_request_id)`;

/**
 * After `cr_found`: `cr`, each request with its environment's protection settings (PROTECTION_COLUMNS), its approvals
 * counted now (§3: reviewers whose latest approve-or-decline is an approve of the current version, members now with a
 * role in `approver_roles`, not the author unless `allow_self_approval`; one each, being each one's latest) and its
 * state as read (`read_state`: `expired` past `expires_at` unless scheduled or finished, `approved` when open with
 * enough approvals, else as stored).
 */
export const COUNTED = `cr_settings AS (
  SELECT f.*, ${PROTECTION_COLUMNS}
    FROM cr_found f LEFT JOIN environment_protections ep ON ep.project_id = f.project_id AND ep.environment = f.environment),
cr_counted AS (
  SELECT s.*, (
    SELECT count(*) FROM change_request_reviews rv
      JOIN organization_members om ON om.user_id = rv.reviewer_id AND om.organization_id = s.organization_id
     WHERE rv.change_request_id = s.id AND rv.kind = 'approve' AND rv.version = s.version
       AND om.role IN (SELECT value FROM json_each(s.approver_roles))
       AND (rv.reviewer_id <> s.author_id OR s.allow_self_approval = 1)
       AND NOT EXISTS (SELECT 1 FROM change_request_reviews later
                        WHERE later.change_request_id = s.id AND later.reviewer_id = rv.reviewer_id
                          AND later.kind IN ('approve', 'decline') AND later.id > rv.id)) AS approvals
    FROM cr_settings s),
cr AS (
  SELECT c.*, CASE WHEN c.state IN ('draft', 'open', 'failed') AND c.expires_at <= ${NOW} THEN 'expired'
                   WHEN c.state = 'open' AND c.approvals >= c.required_approvals THEN 'approved'
                   ELSE c.state END AS read_state
    FROM cr_counted c)`;

/** Whether the caller may approve or decline request `cr` (COUNTED): a role of `approver_roles`, not the author unless allowed. */
export const MAY_APPROVE = `cr.role IN (SELECT value FROM json_each(cr.approver_roles))
  AND (cr.author_id <> (SELECT user_id FROM caller) OR cr.allow_self_approval = 1)`;

/**
 * After a CTE `reviewing` (a request's organization_id, approver_roles, allow_self_approval and author_id):
 * `refused_reviewers`, the requested reviewers of :reviewers (a JSON array of user ids; null: none given) who may not
 * approve there, by index, with their role and why: no `member` of the organization, a `role` not in
 * `approver_roles`, or the `author` where self-approval is not allowed.
 */
export const REFUSED_REVIEWERS = `refused_reviewers AS (
  SELECT position, role, why FROM (
    SELECT j.key AS position, om.role, CASE WHEN om.role IS NULL THEN 'member'
        WHEN om.role NOT IN (SELECT value FROM json_each(s.approver_roles)) THEN 'role'
        WHEN j.value = s.author_id AND s.allow_self_approval = 0 THEN 'author' END AS why
      FROM reviewing s JOIN json_each(:reviewers) j
      LEFT JOIN organization_members om ON om.organization_id = s.organization_id AND om.user_id = j.value)
   WHERE why IS NOT NULL)`;

/** A requested reviewer who may not approve (refused_reviewers' row). */
export interface RefusedReviewer {
  position: number;
  role: Role | null;
  why: "member" | "role" | "author";
}

/** The refused_reviewers rows as one JSON array, a column of a facts' row. */
export const REFUSED_REVIEWERS_JSON = `(SELECT json_group_array(json_object('position', position, 'role', role, 'why', why))
  FROM refused_reviewers)`;

/** The request :change_request_id as the caller sees it: `cr` (see COUNTED). */
export const REQUEST_CTES = `${CALLER_CTE}, ${ONE_REQUEST}, ${COUNTED}`;

/** A request as read (with what the answer names: its config, author, the revision its apply made). */
export interface ChangeRequestRow {
  id: string;
  appId: string;
  appName: string;
  environment: "development" | "staging" | "production";
  projectId: string;
  kind: "deploy" | "revert" | "split" | "promote";
  /** Kinds split and promote: what was proposed, JSON {kind, weight?, steps?, promote_at_end?, running}. */
  split: string | null;
  variantRevisionId: string;
  configName: string;
  revision: number;
  revertToRevisionId: string | null;
  baseEnvironmentRevision: number;
  baseEnvironmentRevisionId: string | null;
  baseVariantRevisionId: string | null;
  title: string;
  description: string;
  readState: ChangeRequestState;
  version: number;
  writes: number;
  approvals: number;
  requiredApprovals: number;
  authorId: string;
  authorUsername: string;
  authorEmail: string;
  /** The requested reviewers, a JSON array of `{user_id, username, email}` in order; `email` null for one no member now. */
  reviewers: string;
  scheduledAt: string | null;
  expiresAt: string;
  appliedAt: string | null;
  appliedBy: string | null;
  appliedByUsername: string | null;
  appliedEnvironmentRevision: number | null;
  appliedEnvironmentRevisionId: string | null;
  appliedScheduled: number | null;
  failedAt: string | null;
  failureReason: "conflict" | "not_approved" | "revision_unavailable" | "scheduler_removed" | null;
  failureDetail: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The ChangeRequestRow of each request of `cr`. */
export const SELECT_REQUESTS = `SELECT cr.id, cr.app_id AS appId, cr.app_name AS appName, cr.environment, cr.project_id AS projectId,
       COALESCE(json_extract(cr.split, '$.kind'), cr.kind) AS kind, cr.split,
       cr.variant_revision_id AS variantRevisionId, COALESCE(v.removed_name, v.name) AS configName, vr.revision,
       cr.revert_to_revision_id AS revertToRevisionId, cr.base_environment_revision AS baseEnvironmentRevision,
       cr.base_environment_revision_id AS baseEnvironmentRevisionId, cr.base_variant_revision_id AS baseVariantRevisionId,
       cr.title, cr.description, cr.read_state AS readState, cr.version, cr.writes, cr.approvals,
       cr.required_approvals AS requiredApprovals, cr.author_id AS authorId, au.username AS authorUsername,
       au.email AS authorEmail,
       (SELECT json_group_array(json_object('user_id', u.id, 'username', u.username, 'email',
                 CASE WHEN EXISTS (SELECT 1 FROM organization_members om WHERE om.organization_id = cr.organization_id
                                                                          AND om.user_id = u.id) THEN u.email END))
          FROM json_each(cr.reviewers) j CROSS JOIN users u ON u.id = j.value) AS reviewers,
       cr.scheduled_at AS scheduledAt, cr.expires_at AS expiresAt, cr.applied_at AS appliedAt, cr.applied_by AS appliedBy,
       ap.username AS appliedByUsername, aer.revision AS appliedEnvironmentRevision,
       aer.id AS appliedEnvironmentRevisionId, cr.applied_scheduled AS appliedScheduled,
       cr.failed_at AS failedAt, cr.failure_reason AS failureReason, cr.failure_detail AS failureDetail,
       cr.created_at AS createdAt, cr.updated_at AS updatedAt
  FROM cr
  JOIN app_variant_revisions vr ON vr.id = cr.variant_revision_id JOIN app_variants v ON v.id = vr.variant_id
  JOIN users au ON au.id = cr.author_id
  LEFT JOIN users ap ON ap.id = cr.applied_by
  LEFT JOIN environment_revisions aer ON aer.id = cr.applied_environment_revision_id`;

const REQUEST = sql<ChangeRequestRow>(`WITH ${REQUEST_CTES} ${SELECT_REQUESTS}`);

/** One review of a request. */
export interface ReviewRow {
  id: string;
  kind: "approve" | "decline" | "comment";
  comment: string | null;
  version: number;
  reviewerId: string;
  reviewerUsername: string;
  createdAt: string;
}

const REVIEWS = sql<ReviewRow>(
  `WITH ${CALLER_CTE}, ${ONE_REQUEST}
   SELECT rv.id, rv.kind, rv.comment, rv.version, rv.reviewer_id AS reviewerId, u.username AS reviewerUsername,
          rv.created_at AS createdAt
     FROM cr_found JOIN change_request_reviews rv ON rv.change_request_id = cr_found.id JOIN users u ON u.id = rv.reviewer_id
    ORDER BY rv.id`,
);

/** A request as read, with its reviews oldest first. */
export interface ChangeRequestRead {
  request: ChangeRequestRow;
  reviews: ReviewRow[];
}

/** The statements that read request `id` whole (REQUEST and REVIEWS), for a batch. */
export const requestStatements = (db: CallerDb, id: string) => ({
  request: db.statement(REQUEST, { change_request_id: id }),
  reviews: db.statement(REVIEWS, { change_request_id: id }),
});

/** What `requestStatements` read: the request, or null when there is none the caller can see. */
export function requestRead({ request, reviews }: Results<ReturnType<typeof requestStatements>>): ChangeRequestRead | null {
  const found = request.results[0];
  return found ? { request: found, reviews: reviews.results } : null;
}

/** Request `id` as the caller sees it, with its reviews: one round trip; null when there is none the caller can see. */
export const readChangeRequest = async (db: CallerDb, id: string) => requestRead(await db.batch(requestStatements(db, id)));

// Listing.

/**
 * The requests a list names (§3): of app :app_id, else of project :project_id, else of the key's project; in
 * :environment, by :author, older than :cursor; of organizations the caller is a member of.
 */
const LISTED_REQUESTS = `cr_found AS (
  SELECT r.*, a.name AS app_name, a.project_id, w.id AS workspace_id, w.organization_id, m.role
    FROM change_requests r JOIN apps a ON a.id = r.app_id JOIN projects p ON p.id = a.project_id
    JOIN workspaces w ON w.id = p.workspace_id JOIN membership m ON m.organization_id = w.organization_id
   WHERE (:app_id IS NULL OR r.app_id = :app_id)
     AND a.project_id = COALESCE(:project_id, CASE WHEN :app_id IS NULL THEN (SELECT project_id FROM caller) END, a.project_id)
     AND (:environment IS NULL OR r.environment = :environment) AND (:author IS NULL OR r.author_id = :author)
     AND (:cursor IS NULL OR r.id < :cursor))`;

const LIST = sql<ChangeRequestRow>(
  `WITH ${CALLER_CTE}, ${LISTED_REQUESTS}, ${COUNTED}
   ${SELECT_REQUESTS}
    WHERE (NOT EXISTS (SELECT 1 FROM json_each(:states)) OR cr.read_state IN (SELECT value FROM json_each(:states)))
      AND (:awaiting_my_review = 0 OR (cr.read_state IN ('open', 'approved') AND ${MAY_APPROVE}
        AND NOT EXISTS (SELECT 1 FROM change_request_reviews rv
                         WHERE rv.change_request_id = cr.id AND rv.reviewer_id = (SELECT user_id FROM caller)
                           AND rv.version = cr.version AND rv.kind IN ('approve', 'decline'))))
    ORDER BY cr.id DESC LIMIT :limit`,
);

/** A page of the list, newest first, and the cursor of the next (null: the last page). */
export async function listChangeRequests(db: CallerDb, query: ListChangeRequestsQuery) {
  const { page } = await db.batch({
    page: db.statement(LIST, {
      app_id: query.app_id ?? null,
      project_id: query.project_id ?? null,
      environment: query.environment ?? null,
      author: query.author ?? null,
      cursor: query.cursor ?? null,
      states: JSON.stringify(query.state),
      awaiting_my_review: query.awaiting_my_review ? 1 : 0,
      limit: query.limit + 1,
    }),
  });
  const rows = page.results.slice(0, query.limit);
  return {
    rows,
    nextCursor: page.results.length > query.limit ? rows[rows.length - 1].id : null,
  };
}

// Writes.

/**
 * After a CTE `target (app_id, environment)`: `env_now`, that environment as it is now (its revision, the id of that
 * revision, the config revision it runs; revision 0 and nulls before its first deployment), and `proposal`, what
 * :variant_revision_id (a config revision of the app, not of a removed config) or :revert_to_revision_id (a revision
 * of that environment that deployed something) proposes: the config revision deployed and the revision reverted to.
 */
export const PROPOSAL_CTES = `env_now AS (
  SELECT e.id, e.revision, e.deployed_app_variant_revision_id AS variant_revision_id,
         (SELECT id FROM environment_revisions WHERE environment_id = e.id AND revision = e.revision) AS revision_id
    FROM environments e JOIN target t ON e.app_id = t.app_id AND e.name = t.environment),
proposal AS (
  SELECT r.id AS variant_revision_id, NULL AS revert_to_revision_id
    FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id
   WHERE r.id = :variant_revision_id AND v.app_id = (SELECT app_id FROM target) AND v.removed_at IS NULL
  UNION ALL
  SELECT er.deployed_app_variant_revision_id, er.id FROM environment_revisions er
   WHERE er.id = :revert_to_revision_id AND er.environment_id = (SELECT id FROM env_now)
     AND er.deployed_app_variant_revision_id IS NOT NULL)`;

/** A new request's place, after APP_BY_ID_CTE: `target` (see PROPOSAL_CTES) and its settings. */
const NEW_REQUEST_CTES = `${CALLER_CTE}, ${APP_BY_ID_CTE}, target AS (SELECT id AS app_id, :environment AS environment FROM app),
${PROPOSAL_CTES},
running AS (SELECT s.candidate_revision_id, ${SPLIT_STATE} AS state FROM environment_splits s WHERE s.environment_id = (SELECT id FROM env_now)),
proposed AS (SELECT * FROM proposal UNION ALL SELECT candidate_revision_id, NULL FROM running WHERE :end_split = 1),
settings AS (SELECT ${PROTECTION_COLUMNS}, w.organization_id FROM app
              JOIN projects p ON p.id = app.project_id JOIN workspaces w ON w.id = p.workspace_id
              LEFT JOIN environment_protections ep ON ep.project_id = app.project_id AND ep.environment = :environment),
reviewing AS (SELECT organization_id, approver_roles, allow_self_approval, (SELECT user_id FROM caller) AS author_id FROM settings),
${REFUSED_REVIEWERS},
unfinished AS (SELECT count(*) AS n FROM change_requests WHERE app_id = :app_id AND environment = :environment AND ${UNFINISHED})`;

/** What a create found, before it wrote: the caller's role, the proposal, the environment, its unfinished requests. */
const CREATE_FACTS = sql<{
  role: Role;
  proposalFound: number;
  environmentId: string | null;
  environmentRevision: number | null;
  unfinished: number;
  refusedReviewers: string;
  runningCandidate: string | null;
}>(
  `WITH ${NEW_REQUEST_CTES}
   SELECT app.role, EXISTS (SELECT 1 FROM proposed) AS proposalFound, (SELECT id FROM env_now) AS environmentId,
          (SELECT candidate_revision_id FROM running) AS runningCandidate,
          (SELECT revision FROM env_now) AS environmentRevision, (SELECT n FROM unfinished) AS unfinished,
          ${REFUSED_REVIEWERS_JSON} AS refusedReviewers
     FROM app`,
);

const INSERT_REQUEST = sql(
  `WITH ${NEW_REQUEST_CTES}
   INSERT INTO change_requests (id, app_id, environment, kind, variant_revision_id, revert_to_revision_id,
                                base_environment_revision, base_environment_revision_id, base_variant_revision_id,
                                title, description, state, author_id, expires_at, reviewers, split)
   SELECT :change_request_id, app.id, :environment, CASE WHEN proposed.revert_to_revision_id IS NULL THEN 'deploy' ELSE 'revert' END,
          proposed.variant_revision_id, proposed.revert_to_revision_id, env_now.revision, env_now.revision_id,
          env_now.variant_revision_id, :title, :description, :state, (SELECT user_id FROM caller),
          strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || settings.request_ttl_days || ' days'), COALESCE(:reviewers, '[]'),
          json_set(:split, '$.running', (SELECT state FROM running))
     FROM app JOIN proposed JOIN env_now JOIN settings
    WHERE app.role IN ${DEPLOYER_ROLES_SQL} AND (SELECT n FROM unfinished) < :unfinished_max
      AND NOT EXISTS (SELECT 1 FROM refused_reviewers)
      AND (:split IS NULL OR :end_split = 1 OR proposed.variant_revision_id = COALESCE((SELECT candidate_revision_id FROM running), proposed.variant_revision_id))
      AND (:expected_environment_id IS NULL OR (env_now.id = :expected_environment_id AND env_now.revision = :expected_revision
                                                AND (SELECT state FROM running) IS :expected_split))`,
);

/**
 * What every event of a request says of it as it is now (§4), as `json_set` arguments over `cr`: to complete an event
 * whose own fields (`previous_state` and those of its type) are set already.
 */
export const EVENT_FIELDS = `'$.change_request_id', cr.id, '$.app_id', cr.app_id, '$.app_name', cr.app_name, '$.environment', cr.environment,
  '$.title', cr.title, '$.state', cr.read_state, '$.version', cr.version, '$.variant_revision_id', cr.variant_revision_id,
  '$.base', json_object('environment_revision', cr.base_environment_revision,
                        'environment_revision_id', cr.base_environment_revision_id,
                        'variant_revision_id', cr.base_variant_revision_id)`;

/** The event of a request just made: `change_request.drafted` or `.opened`. */
const CREATED_EVENT = sql(
  `WITH ${REQUEST_CTES} ${INSERT_EVENT}
   SELECT :event_id, CASE cr.state WHEN 'draft' THEN 'change_request.drafted' ELSE 'change_request.opened' END,
          cr.organization_id, cr.workspace_id, cr.project_id, cr.app_id, ${EVENT_ACTOR},
          json_set(json_object('previous_state', NULL), ${EVENT_FIELDS})
     FROM cr ${EVENT_HANDOFF}`,
);

/** A side of a request's diff: the environment at its base or now, or what it proposes; its config revision, if any. */
export interface DiffSideRow {
  side: "base" | "current" | "proposed";
  environmentRevision: number | null;
  environmentRevisionId: string | null;
  variantRevisionId: string | null;
  configName: string | null;
  revision: number | null;
  params: string | null;
  url: string | null;
}

/** The three sides of request :change_request_id's diff (none: no request the caller can see). */
const DIFF_SIDES = sql<DiffSideRow>(
  `WITH ${REQUEST_CTES}, target AS (SELECT app_id, environment FROM cr_found), ${PROPOSAL_CTES},
   sides AS (
     SELECT 'base' AS side, base_environment_revision AS environment_revision, base_environment_revision_id AS environment_revision_id,
            base_variant_revision_id AS variant_revision_id FROM cr
     UNION ALL SELECT 'current', revision, revision_id, variant_revision_id FROM env_now
     UNION ALL SELECT 'proposed', NULL, NULL, variant_revision_id FROM cr)
   SELECT s.side, s.environment_revision AS environmentRevision, s.environment_revision_id AS environmentRevisionId,
          s.variant_revision_id AS variantRevisionId, COALESCE(v.removed_name, v.name) AS configName, r.revision, r.params, r.url
     FROM sides s LEFT JOIN app_variant_revisions r ON r.id = s.variant_revision_id LEFT JOIN app_variants v ON v.id = r.variant_id`,
);

/** The statement of the sides of request `id`'s diff, for a batch (an apply's conflict answers them too). */
export const diffSidesStatement = (db: CallerDb, id: string) =>
  db.statement(DIFF_SIDES, {
    change_request_id: id,
    variant_revision_id: null,
    revert_to_revision_id: null,
  });

/** The sides of request `id`'s diff by name: one round trip; null when there is no request the caller can see. */
export async function readDiffSides(db: CallerDb, id: string) {
  const { sides } = await db.batch({ sides: diffSidesStatement(db, id) });
  return diffSidesOf(sides.results);
}

/** The rows of DIFF_SIDES by side, or null when there are none. */
export function diffSidesOf(rows: DiffSideRow[]): Record<DiffSideRow["side"], DiffSideRow> | null {
  const bySide = Object.fromEntries(rows.map((row) => [row.side, row])) as Partial<Record<DiffSideRow["side"], DiffSideRow>>;
  const { base, current, proposed } = bySide;
  return base && current && proposed ? { base, current, proposed } : null;
}

/** An edit's fields that change the proposal, of which a request's kind takes some. */
export type ProposalField = "variant_revision_id" | "revert_to_revision_id" | "split";

/** Why a write wrote nothing (the routes turn each into its error). */
export type Refusal =
  | { outcome: "not_found"; missing: "app" | "change_request" | "revision" | "split" }
  /** A split request on a running split names another candidate than the split's (a change keeps it). */
  | { outcome: "split_candidate"; candidate: string }
  /** An edit of a field its request's kind does not take (kind: split, promote, or null for deploy and revert). */
  | { outcome: "not_of_kind"; field: ProposalField; kind: "split" | "promote" | null }
  | { outcome: "forbidden"; self?: boolean }
  | { outcome: "invalid_state"; state: ChangeRequestState }
  | { outcome: "stale_version"; version: number }
  | { outcome: "too_many_open" }
  | { outcome: "too_many_reviews" }
  | { outcome: "reviewers_refused"; refused: RefusedReviewer[] }
  /** If-Match named another state: of the environment (a create) or of the request (an action). */
  | { outcome: "moved_on"; of: "environment" | "change_request" };

/** What a write did: the request as it is now (`replayed`: as an Idempotency-Key's first request left it), or why not. */
export type WriteOutcome =
  /** `reached`: the write made the request approved or rejected. */
  { outcome: "done"; read: ChangeRequestRead; replayed: boolean; reached?: boolean } | { outcome: "key_reused" } | Refusal;

/** Replays a claimed write's first answer: the request as it is now (it exists: the write made it or changed it). */
export async function replayed(db: CallerWriteDb, id: string): Promise<Extract<WriteOutcome, { outcome: "done" | "not_found" }>> {
  const read = await readChangeRequest(db, id);
  return read ? { outcome: "done", read, replayed: true } : { outcome: "not_found", missing: "change_request" };
}

/**
 * Makes a request (§3) and its event in one batch, with the environment's state If-Match named (`expected`) and the
 * request's claim: the request as made, or why nothing was.
 */
export async function createChangeRequest(
  db: CallerWriteDb,
  body: CreateChangeRequestBody,
  expected: EnvironmentState | null,
  claim: IdempotencyClaim | null,
): Promise<WriteOutcome> {
  const id = newId(db.bucket);
  const values = {
    change_request_id: id,
    app_id: body.app_id,
    environment: body.environment,
    variant_revision_id: body.variant_revision_id ?? null,
    revert_to_revision_id: body.revert_to_revision_id ?? null,
    ...splitValues(body),
    title: body.title,
    description: body.description ?? "",
    state: body.draft ? "draft" : "open",
    expected_environment_id: expected?.environmentId ?? null,
    expected_revision: expected?.revision ?? null,
    expected_split: expected?.split ?? null,
    unfinished_max: UNFINISHED_MAX,
    reviewers: body.reviewers ? JSON.stringify(body.reviewers) : null,
  };
  const batch = await batchClaimed(db, claim, id, {
    facts: db.statement(CREATE_FACTS, values),
    insert: db.statement(INSERT_REQUEST, values),
    event: db.statement(CREATED_EVENT, {
      change_request_id: id,
      event_id: newId(db.bucket),
    }),
    ...requestStatements(db, id),
  });
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) return replayed(db, batch.replayOf);
  const read = requestRead(batch.ran);
  if (read) return { outcome: "done", read, replayed: false };
  const facts = batch.ran.facts.results[0];
  if (!facts) return { outcome: "not_found", missing: "app" };
  if (!PROPOSER_ROLES.includes(facts.role)) return { outcome: "forbidden" };
  if (!facts.proposalFound) return { outcome: "not_found", missing: body.end_split ? "split" : "revision" };
  if (body.split && facts.runningCandidate && facts.runningCandidate !== body.split.variant_revision_id)
    return { outcome: "split_candidate", candidate: facts.runningCandidate };
  const refused: RefusedReviewer[] = JSON.parse(facts.refusedReviewers);
  if (refused.length > 0) return { outcome: "reviewers_refused", refused };
  if (facts.unfinished >= UNFINISHED_MAX) return { outcome: "too_many_open" };
  return { outcome: "moved_on", of: "environment" };
}

/** What a create of kind split or promote binds (docs/SPLITS.md §1); the candidate of a split is its variant_revision_id. */
function splitValues({ split, end_split }: CreateChangeRequestBody) {
  const proposal = split
    ? { kind: "split", weight: split.weight, steps: split.steps ?? [], promote_at_end: split.promote_at_end ?? false }
    : end_split && { kind: "promote" };
  return {
    split: proposal ? JSON.stringify(proposal) : null,
    end_split: end_split ? 1 : 0,
    ...(split && { variant_revision_id: split.variant_revision_id }),
  };
}

/** Every write bumps the request's ETag. */
export const WRITTEN = `writes = writes + 1, updated_at = ${NOW}`;
