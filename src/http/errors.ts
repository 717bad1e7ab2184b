import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as z from "zod/mini";
import { UnknownApiKeyError } from "../db/caller";
import { isFenceTrip, isTransientD1Error } from "../db/d1";
import { BucketMovedError } from "../db/fences";
import { documented, schemaName } from "./documentation";

/** One problem in a 422 body, in FastAPI's shape: where, what, and a machine-readable type. */
export const ValidationIssue = /* @__PURE__ */ z
  .object({
    loc: z
      .array(z.union([z.string(), z.int()]))
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: 'Where: "body" or "path", then the field' })),
    msg: z.string(),
    type: z.string().apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "The error's type, as FastAPI names it",
          examples: ["missing", "string_type", "uuid_parsing", "json_invalid"],
        },
      ),
    ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ValidationIssue"));
export type ValidationIssue = z.infer<typeof ValidationIssue>;

/** The body of every error but 422. */
export const ErrorBody = /* @__PURE__ */ z
  .object({ detail: z.string() })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Error"));
export type ErrorBody = z.infer<typeof ErrorBody>;

/** The body of a 422. */
export const ValidationErrorBody = /* @__PURE__ */ z
  .object({ detail: z.array(ValidationIssue) })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ValidationError"));
export type ValidationErrorBody = z.infer<typeof ValidationErrorBody>;

/** The detail of the platform's 409 for a slug taken (today's SDK shows its `message`). */
export const SlugConflict = /* @__PURE__ */ z.object({
  message: /* @__PURE__ */ z.string(),
  conflict: /* @__PURE__ */ z.object({ slug: /* @__PURE__ */ z.string() }),
});
export type SlugConflict = z.infer<typeof SlugConflict>;

/**
 * The detail of a 409 that names its reason by `code` (docs/CHANGE-REQUESTS.md: "409 bodies"), with what the client
 * needs to act on it.
 */
export const CodedConflict = /* @__PURE__ */ z.looseObject({
  code: /* @__PURE__ */ z.string(),
  message: /* @__PURE__ */ z.string(),
});
export type CodedConflict = z.infer<typeof CodedConflict>;

/** The body of such a 409. */
export const CodedConflictError = /* @__PURE__ */ z
  .object({ detail: CodedConflict })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "CodedConflictError"));

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
