/**
 * The change requests' answers (src/change-requests/change-requests.schemas.ts) made from the rows their SQL reads
 * (change-requests.sql.ts).
 */
import { diffDocuments, storedConfigDocument } from "../core/diff";
import type { ChangeRequest, ChangeRequestDiff, ChangeRequestSummary } from "./change-requests.schemas";
import type { ChangeRequestRow, DiffSideRow, ReviewRow } from "./change-requests.sql.ts";

const userOf = (id: string | null, username: string | null) =>
  id === null || username === null ? null : { user_id: id, username };

/** A request's requested reviewers, in order, with the address of each who is a member now (else null). */
export const requestedReviewers = (row: Pick<ChangeRequestRow, "reviewers">) =>
  JSON.parse(row.reviewers) as { user_id: string; username: string; email: string | null }[];

/** A split request's proposal as answered: null for the other kinds (a promote's too). */
function splitFields(split: string | null) {
  if (split === null) return null;
  const { weight, steps, promote_at_end } = JSON.parse(split);
  return weight === undefined ? null : { weight, steps, promote_at_end };
}

/** The answer for a request's row (as read: its state, its approvals counted) without its reviews. */
export function toChangeRequestSummary(row: ChangeRequestRow): ChangeRequestSummary {
  return {
    id: row.id,
    app_id: row.appId,
    app_name: row.appName,
    environment: row.environment,
    project_id: row.projectId,
    kind: row.kind,
    variant_revision_id: row.variantRevisionId,
    split: splitFields(row.split),
    config_name: row.configName,
    revision: row.revision,
    revert_to_revision_id: row.revertToRevisionId,
    base: {
      environment_revision: row.baseEnvironmentRevision,
      environment_revision_id: row.baseEnvironmentRevisionId,
      variant_revision_id: row.baseVariantRevisionId,
    },
    title: row.title,
    description: row.description,
    state: row.readState,
    version: row.version,
    approvals: row.approvals,
    approvals_required: row.requiredApprovals,
    author: { user_id: row.authorId, username: row.authorUsername },
    reviewers: requestedReviewers(row).map(({ user_id, username }) => ({ user_id, username })),
    scheduled_at: row.scheduledAt,
    expires_at: row.expiresAt,
    applied:
      row.appliedAt === null
        ? null
        : {
            at: row.appliedAt,
            by: userOf(row.appliedBy, row.appliedByUsername),
            environment_revision: row.appliedEnvironmentRevision,
            environment_revision_id: row.appliedEnvironmentRevisionId,
            scheduled: row.appliedScheduled === 1,
          },
    failure:
      row.failedAt === null || row.failureReason === null
        ? null
        : {
            at: row.failedAt,
            reason: row.failureReason,
            detail: row.failureDetail === null ? null : JSON.parse(row.failureDetail),
          },
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

/** The whole answer: the request and its reviews, oldest first, those of an earlier version `stale`. */
export function toChangeRequest(row: ChangeRequestRow, reviews: ReviewRow[]): ChangeRequest {
  const { scheduled_at, expires_at, applied, failure, created_at, updated_at, ...head } = toChangeRequestSummary(row);
  return {
    ...head,
    reviews: reviews.map((review) => ({
      id: review.id,
      kind: review.kind,
      comment: review.comment,
      version: review.version,
      stale: review.version !== row.version,
      reviewer: {
        user_id: review.reviewerId,
        username: review.reviewerUsername,
      },
      created_at: review.createdAt,
    })),
    scheduled_at,
    expires_at,
    applied,
    failure,
    created_at,
    updated_at,
  };
}

const environmentSide = (side: DiffSideRow) => ({
  environment_revision: side.environmentRevision ?? 0,
  environment_revision_id: side.environmentRevisionId,
  variant_revision_id: side.variantRevisionId,
  config_name: side.configName,
  revision: side.revision,
  document: storedConfigDocument(side),
});

/**
 * A request's diff from its sides: `diff` what applying it would change now (current to proposed), `drift` how the
 * environment moved since its base (base to current).
 */
export function toChangeRequestDiff(sides: Record<DiffSideRow["side"], DiffSideRow>): ChangeRequestDiff {
  const base = environmentSide(sides.base);
  const current = environmentSide(sides.current);
  const proposed = storedConfigDocument(sides.proposed);
  return {
    base,
    current,
    proposed: {
      variant_revision_id: sides.proposed.variantRevisionId ?? "",
      config_name: sides.proposed.configName ?? "",
      revision: sides.proposed.revision ?? 0,
      document: proposed,
    },
    base_is_current: base.environment_revision === current.environment_revision,
    diff: diffDocuments(current.document, proposed),
    drift: diffDocuments(base.document, current.document),
  };
}

/** A request's ETag: its id and write count, which every write bumps. */
export const changeRequestETag = (row: Pick<ChangeRequestRow, "id" | "writes">) => `"${row.id}.${row.writes}"`;
