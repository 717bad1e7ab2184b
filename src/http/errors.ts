import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as z from "zod/mini";
import type { ProtectionRefusal } from "../core/protection.sql.ts";
import { UnknownApiKeyError } from "../db/caller";
import { isFenceTrip, isTransientD1Error } from "../db/d1";
import { BucketMovedError } from "../db/fences";
import { documented, schemaName } from "./documentation";

/** One problem in a 422 body, in FastAPI's shape: where, what, and a machine-readable type. */
export const ValidationIssue = z
  .object({
    loc: z
      .array(z.union([z.string(), z.int()]))
      .apply(documented(globalThis.DOCUMENTATION && { description: 'Where: "body" or "path", then the field' })),
    msg: z.string(),
    type: z.string().apply(
      documented(
        globalThis.DOCUMENTATION && {
          description: "The error's type, as FastAPI names it",
          examples: ["missing", "string_type", "uuid_parsing", "json_invalid"],
        },
      ),
    ),
  })
  .apply(schemaName(globalThis.DOCUMENTATION && "ValidationIssue"));
export type ValidationIssue = z.infer<typeof ValidationIssue>;

/** The body of every error but 422. */
export const ErrorBody = z.object({ detail: z.string() }).apply(schemaName(globalThis.DOCUMENTATION && "Error"));
export type ErrorBody = z.infer<typeof ErrorBody>;

/** The body of a 422. */
export const ValidationErrorBody = z
  .object({ detail: z.array(ValidationIssue) })
  .apply(schemaName(globalThis.DOCUMENTATION && "ValidationError"));
export type ValidationErrorBody = z.infer<typeof ValidationErrorBody>;

/** The detail of the platform's 409 for a slug taken (today's SDK shows its `message`). */
export const SlugConflict = z.object({ message: z.string(), conflict: z.object({ slug: z.string() }) });
export type SlugConflict = z.infer<typeof SlugConflict>;

/**
 * The detail of a 409 that names its reason by `code` (docs/CHANGE-REQUESTS.md: "409 bodies"), with what the client
 * needs to act on it.
 */
export const CodedConflict = z.looseObject({ code: z.string(), message: z.string() });
export type CodedConflict = z.infer<typeof CodedConflict>;

/** The body of such a 409. */
export const CodedConflictError = z
  .object({ detail: CodedConflict })
  .apply(schemaName(globalThis.DOCUMENTATION && "CodedConflictError"));

/** Every error the service answers with: a status, a `detail` and, sometimes, headers. */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly detail: string | ValidationIssue[] | SlugConflict | CodedConflict,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === "string" ? detail : Array.isArray(detail) ? "Validation error" : detail.message);
  }
}

export const unauthorized = () =>
  new ApiError(401, "Unauthorized", { "WWW-Authenticate": 'ApiKey realm="app-management", Bearer realm="app-management"' });

export const forbidden = () =>
  new ApiError(403, "You do not have access to perform this action. Please contact your organization admin.");

// Rate limit windows are 10 or 60 s; telling clients the longer one is never too early.
export const tooManyRequests = () => new ApiError(429, "Too Many Requests", { "Retry-After": "60" });

export const appEnvironmentNotFound = () => new ApiError(404, "App environment not found");

export const appNameTaken = () => new ApiError(409, "App with the same name already exists");

/**
 * A slug taken in its scope (an app's in the project, a variant's in the app), in the platform's shape; `archived`:
 * by an archived one, which keeps its slug for life (unarchive it to use it again).
 */
export const slugTaken = (slug: string, archived = false) =>
  new ApiError(409, {
    message:
      `A resource with slug '${slug}' already exists in this project.` +
      (archived ? " It is archived: unarchive it, or choose another slug." : ""),
    conflict: { slug },
  });

export const appNotFound = () => new ApiError(404, "App not found");

export const variantNotFound = () => new ApiError(404, "Variant not found");

export const variantRevisionNotFound = () => new ApiError(404, "Variant revision not found");

export const deploymentRevisionNotFound = () => new ApiError(404, "Deployment revision not found");

export const nothingDeployed = () => new ApiError(404, "No variant is deployed to this environment");

// The platform's own messages, which its SDK shows as they are.
export const configNotFound = () => new ApiError(404, "Config not found.");

export const configExists = () => new ApiError(400, "Config already exists.");

export const configNameTaken = () =>
  new ApiError(400, "Config name already exists. Please use a different name or set overwrite to True.");

/**
 * A diff's revision (docs/CHANGE-REQUESTS.md §5): none of that id the caller can see, or the two of two organizations;
 * a change request's proposal (§3): no such revision of the app.
 */
export const revisionNotFound = () => new ApiError(404, "Revision not found");

// The current API's (docs/CURRENT-SDK-API.md), in the platform's words, which its SDK shows as they are.
export const applicationRevisionNotFound = () => new ApiError(404, "Application revision not found.");

export const environmentRevisionNotFound = () => new ApiError(404, "Environment revision not found.");

export const applicationVariantNotFound = () => new ApiError(404, "Application variant not found.");

export const environmentRunsNothing = () =>
  new ApiError(404, "Environment revision does not contain application references for the requested key.");

export const deployRefsMissing = () => new ApiError(400, "application_ref and environment_ref (with a slug) are required.");

export const variantRemoved = () =>
  new ApiError(409, "This revision belongs to a removed variant, which cannot be deployed again: deploy another config");

export const variantArchived = () =>
  new ApiError(
    409,
    "This revision belongs to an archived variant, which cannot be deployed again until it is unarchived " +
      "(POST /applications/variants/{variant_id}/unarchive): deploy another config, or unarchive it first",
  );

export const configArchived = () =>
  new ApiError(409, "Config is archived: unarchive it (POST /applications/variants/{variant_id}/unarchive) to save to it again");

export const variantStillDeployed = (environments: string[]) =>
  new ApiError(
    409,
    `Variant is deployed to ${environments.join(", ")}: deploy another variant there first, then remove this one`,
  );

// Accounts (docs/ACCOUNTS-API.md).
export const apiKeyNotFound = () => new ApiError(404, "API key not found");

export const organizationNotFound = () => new ApiError(404, "Organization not found");

export const workspaceNotFound = () => new ApiError(404, "Workspace not found in this organization");

export const memberNotFound = () => new ApiError(404, "No member of this organization has that email");

export const alreadyMember = () => new ApiError(409, "This email is already a member of the organization");

export const lastOwner = () => new ApiError(409, "This is the organization's last owner: make another member an owner first");

export const userNotFound = () => new ApiError(404, "User not found");

export const invitationNotFound = () => new ApiError(404, "Invitation not found");

export const invitationUsed = () => new ApiError(409, "This invitation has already been accepted");

export const invitationExpired = () => new ApiError(410, "This invitation has expired: ask for it to be sent again");

export const invitationReplaced = () => new ApiError(410, "This invitation was replaced by a newer one: use the latest token");

export const projectNotFound = () => new ApiError(404, "Project not found");

export const environmentNotFound = () => new ApiError(404, "Environment not found");

export const projectNotInWorkspace = () => new ApiError(404, "Project not found in this workspace");

export const invitationNeedsKey = () =>
  new ApiError(401, "This email already has an account: accept the invitation with that account's API key", {
    "WWW-Authenticate": 'ApiKey realm="app-management", Bearer realm="app-management"',
  });

/** An invitation whose token was not mailed: the inviter saw it, so it alone proves nothing of the invitee. */
export const invitationNeedsInviteeKey = () =>
  new ApiError(
    401,
    "This invitation's token was not sent by email, so it alone makes no account: accept it with the invitee's own " +
      "API key. A new person's account is made by the service's operator; with INVITATION_EMAIL_FROM and " +
      "PUBLIC_BASE_URL set, invitations are mailed and a new person accepts with the mailed token alone",
    { "WWW-Authenticate": 'ApiKey realm="app-management", Bearer realm="app-management"' },
  );

export const invitationForAnotherEmail = () => new ApiError(403, "This invitation is for another email address");

export const invitationNotMailed = () =>
  new ApiError(
    502,
    "The invitation was made, but its email could not be sent: send it again (POST .../invite/resend), which voids this one",
  );

export const invitationForNewAccount = () =>
  new ApiError(
    403,
    "This invitation is for an email that has no account yet: accept it with the token alone, without an API key",
  );

export const webhookNotFound = () => new ApiError(404, "Webhook not found");

export const deliveryNotFound = () => new ApiError(404, "Delivery not found for this webhook");

export const webhookDisabled = () => new ApiError(409, "This webhook is disabled: enable it (PATCH enabled: true) first");

export const webhooksNotSetUp = () =>
  new ApiError(501, "Webhooks are not set up on this service: its operator must set the WEBHOOK_SECRETS_KEY secret");

// A 422 in FastAPI's list shape, like the other body refusals of POST /webhooks.
export const webhookLimitReached = (limit: number) =>
  validationFailed([
    {
      loc: ["body"],
      msg: `Value error, this organization already has ${limit} webhooks, the most it may have: delete one to add another`,
      type: "value_error",
    },
  ]);

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

export const badIdempotencyKey = () =>
  new ApiError(400, "Idempotency-Key must be 1 to 255 printable ASCII characters (optionally as a quoted string)");

export const idempotencyKeyInFlight = () =>
  new ApiError(409, "A request with this Idempotency-Key is still being processed; retry it once that one is answered");

// A 422 keeps FastAPI's list shape, which clients parse.
export const idempotencyKeyReused = () =>
  validationFailed([
    {
      loc: ["header", "Idempotency-Key"],
      msg: "Value error, this Idempotency-Key was used for another request (another method, path or body)",
      type: "value_error",
    },
  ]);

export const environmentMovedOn = () =>
  new ApiError(412, "The environment has changed since the ETag given in If-Match: read it again, then retry");

/** A direct write to a protected environment (docs/CHANGE-REQUESTS.md §2): it goes through a change request. */
export const environmentProtected = (appId: string, environment: string) =>
  new ApiError(409, {
    code: "environment_protected",
    app_id: appId,
    environment,
    message: `Environment '${environment}' is protected: propose the change with POST /change-requests.`,
    change_request_route: "POST /change-requests",
  });

export const protectionBypassForbidden = () =>
  new ApiError(403, "Bypassing the protection of this environment is not allowed for your role.");

/** A write a protected environment refused (src/core/protection.sql.ts): its 409, or the 403 of a bypass not allowed. */
export const protectionRefused = ({
  refusal,
  appId,
  environment,
}: {
  refusal: ProtectionRefusal;
  appId: string;
  environment: string;
}) => (refusal === "protected" ? environmentProtected(appId, environment) : protectionBypassForbidden());

export const staleConfig = (latest: number) =>
  new ApiError(409, `Config has changed: its latest version is ${latest}. Fetch it and commit on top of it.`);

export const payloadTooLarge = (maxBytes: number) => new ApiError(413, `Request body is larger than ${maxBytes} bytes`);

export const unsupportedMediaType = () =>
  new ApiError(415, "Request body must be JSON, sent with Content-Type: application/json");

export const validationFailed = (issues: ValidationIssue[]) => new ApiError(422, issues);

export const notFound: NotFoundHandler = (c) => c.json({ detail: "Not Found" }, 404);

export const methodNotAllowed = (c: Context, allowed: string[]) =>
  c.json({ detail: "Method Not Allowed" }, 405, { Allow: allowed.join(", ") });

// How long a client should wait before retrying after a transient database failure.
const RETRY_AFTER_SECONDS = "1";

/**
 * A write to an organization whose bucket is being moved between shards (docs/SHARDING.md §5): refused whole, nothing
 * written, never retried by the service; the move's copy and verify take longer than a transient failure.
 */
export const bucketFenced = () => new ApiError(503, "Service temporarily unavailable", { "Retry-After": "30" });

/**
 * A user being made with the same email at this moment (its claim in the directory, docs/SHARDING.md §3.3, not yet
 * settled), or a claim that lapsed before the write: nothing written; a retry a moment later is answered.
 */
export const emailBeingClaimed = () => new ApiError(503, "Service temporarily unavailable", { "Retry-After": "5" });

/** The one place that turns anything thrown into a response; nothing internal reaches the client. */
export const handleError: ErrorHandler = (error, c) => {
  if (error instanceof UnknownApiKeyError) return handleError(unauthorized(), c);
  if (isFenceTrip(error) || error instanceof BucketMovedError) return handleError(bucketFenced(), c);
  if (error instanceof ApiError) {
    return c.json({ detail: error.detail }, error.status, error.headers);
  }
  if (error instanceof HTTPException && error.status < 500) {
    // Raised by Hono itself (e.g. a body it cannot read); its message is meant for clients.
    return c.json({ detail: error.message || "Bad Request" }, error.status);
  }
  if (isTransientD1Error(error)) {
    console.warn(
      JSON.stringify({
        level: "warn",
        message: "database temporarily unavailable",
        request_id: c.get("requestId"),
        route: c.req.routePath,
      }),
    );
    return c.json({ detail: "Service temporarily unavailable" }, 503, { "Retry-After": RETRY_AFTER_SECONDS });
  }
  console.error(
    JSON.stringify({
      level: "error",
      message: "unhandled error",
      request_id: c.get("requestId"),
      method: c.req.method,
      route: c.req.routePath,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    }),
  );
  return c.json({ detail: "Internal Server Error" }, 500);
};
