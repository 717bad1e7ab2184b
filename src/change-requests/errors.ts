import { ApiError, validationFailed } from "../http/errors";
import type { RefusedReviewer } from "./change-requests.sql.ts";

// Change requests (docs/CHANGE-REQUESTS.md §3).
export const changeRequestNotFound = () => new ApiError(404, "Change request not found");

export const selfApproval = () => new ApiError(403, "You cannot approve your own change request.");

/** A request's action its state forbids (an expired request's too: it reads `expired`). */
export const invalidState = (state: string) =>
  new ApiError(409, {
    code: "invalid_state",
    message: `This change request is ${state}: this action is not allowed now.`,
    state,
  });

export const staleVersion = (version: number) =>
  new ApiError(409, {
    code: "stale_version",
    message: `This change request is at version ${version} now: review that version.`,
    version,
  });

export const tooManyOpen = (limit: number) =>
  new ApiError(409, {
    code: "too_many_open",
    message: `This app environment has ${limit} unfinished change requests, the most it may have: finish or cancel one first.`,
    limit,
  });

export const tooManyReviews = (limit: number) =>
  new ApiError(409, {
    code: "too_many_reviews",
    message: `This change request has ${limit} reviews, the most it may have.`,
    limit,
  });

/** An apply of a request without the approvals its settings require now. */
export const notApproved = (approvals: number, approvalsRequired: number) =>
  new ApiError(409, {
    code: "not_approved",
    message: `This change request has ${approvals} of the ${approvalsRequired} approvals it needs.`,
    approvals,
    approvals_required: approvalsRequired,
  });

/** An apply of a request whose config revision can no longer be deployed. */
export const revisionUnavailable = (removed: boolean) =>
  new ApiError(409, {
    code: "revision_unavailable",
    message: removed
      ? "The config revision this change request deploys belongs to a removed config: propose another one (PATCH)."
      : "The config revision this change request deploys belongs to an archived config: unarchive it, or propose another one (PATCH).",
  });

/**
 * An apply of a request whose environment moved on since its base: what it is now (`current`), what applying would
 * change (`diff`, current to proposed) and what changed since the base (`drift`).
 */
export const changeRequestConflict = (sides: { base: object; current: object; diff: object; drift: object }) =>
  new ApiError(409, {
    code: "change_request_conflict",
    message:
      "The environment has changed since this change request's base: nothing was written. Rebase it " +
      "(POST /change-requests/{id}/rebase), have it approved again, then apply it.",
    ...sides,
  });

export const changeRequestMovedOn = () =>
  new ApiError(412, "The change request has changed since the ETag given in If-Match: read it again, then retry");

/** An approve naming neither the version it approves nor the request's ETag (docs/CHANGE-REQUESTS.md §3). */
export const approvalUnbound = () =>
  new ApiError(
    428,
    "Name what you approve: send the request's `version` you reviewed in the body, or If-Match with its ETag " +
      "(GET /change-requests/{id} answers both).",
  );

/** Requested reviewers who may not approve on the request's environment (§3), each at its index. */
export const reviewersRefused = (refused: RefusedReviewer[]) =>
  validationFailed(
    refused.map(({ position, role, why }) => ({
      loc: ["body", "reviewers", position],
      msg:
        why === "member"
          ? "Not a member of this organization: cannot approve here."
          : why === "role"
            ? `Role ${role} is not in this environment's approver_roles: cannot approve here.`
            : "The author: this environment does not allow self-approval.",
      type: "value_error",
    })),
  );

/** docs/SPLITS.md §1: a split request made on a running split names its candidate (a change keeps it). */
export const splitCandidateKept = (candidate: string) =>
  validationFailed([
    {
      loc: ["body", "split", "variant_revision_id"],
      msg: `Value error, a split runs with candidate ${candidate}: a change keeps it`,
      type: "value_error",
    },
  ]);

/** An edit of a proposal's field its request's kind does not take (docs/CHANGE-REQUESTS.md §3). */
export const notOfKind = (field: string, kind: "split" | "promote" | null) =>
  validationFailed([
    {
      loc: ["body", field],
      msg: `Value error, a ${kind ?? "deploy or revert"} request's edit does not take ${field}`,
      type: "value_error",
    },
  ]);
