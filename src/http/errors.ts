import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** One problem in a 422 body, in FastAPI's shape: where, what, and a machine-readable type. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** Every error the service answers with: a status, a `detail` and, sometimes, headers. */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly detail: string | ValidationIssue[],
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === "string" ? detail : "Validation error");
  }
}

export const unauthorized = () =>
  new ApiError(401, "Unauthorized", { "WWW-Authenticate": 'ApiKey realm="app-management", Bearer realm="app-management"' });

export const forbidden = () =>
  new ApiError(403, "You do not have access to perform this action. Please contact your organization admin.");

export const appEnvironmentNotFound = () => new ApiError(404, "App environment not found");

export const appNameTaken = () => new ApiError(409, "App with the same name already exists");

export const payloadTooLarge = (maxBytes: number) =>
  new ApiError(413, `Request body is larger than ${maxBytes} bytes`);

export const unsupportedMediaType = () =>
  new ApiError(415, "Request body must be JSON, sent with Content-Type: application/json");

export const validationFailed = (issues: ValidationIssue[]) => new ApiError(422, issues);

export const notFound: NotFoundHandler = (c) => c.json({ detail: "Not Found" }, 404);

export const methodNotAllowed = (c: Context, allowed: string[]) =>
  c.json({ detail: "Method Not Allowed" }, 405, { Allow: allowed.join(", ") });

/** The one place that turns anything thrown into a response; nothing internal reaches the client. */
export const handleError: ErrorHandler = (error, c) => {
  if (error instanceof ApiError) {
    return c.json({ detail: error.detail }, error.status, error.headers);
  }
  if (error instanceof HTTPException && error.status < 500) {
    // Raised by Hono itself (e.g. a body it cannot read); its message is meant for clients.
    return c.json({ detail: error.message || "Bad Request" }, error.status);
  }
  console.error(
    JSON.stringify({
      level: "error",
      message: "unhandled error",
      method: c.req.method,
      route: c.req.routePath,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    }),
  );
  return c.json({ detail: "Internal Server Error" }, 500);
};
