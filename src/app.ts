import { Hono } from "hono";
import { cors } from "hono/cors";
import { methodNotAllowed } from "hono/method-not-allowed";
import { getPath } from "hono/utils/url";
import { appsRoutes, BOOKMARK_HEADER } from "./apps/apps.routes";
import { handleError, methodNotAllowed as methodNotAllowedResponse, notFound } from "./http/errors";
import { REQUEST_ID_HEADER, requestLog } from "./http/request-log";
import { openApiDocument } from "./openapi";
import type { AppEnv } from "./types";

/** Existing clients send paths with and without a trailing slash; both route the same. */
const withoutTrailingSlash = (request: Request) => getPath(request).replace(/(.)\/$/, "$1");

export interface ServiceConfig {
  /** Prefix every route is mounted under, e.g. "/api", or "" for the root. */
  basePath: string;
  /** Origins browsers may call from (["*"]: any); none turns CORS off, and OPTIONS stays a 405. */
  corsOrigins: string[];
}

/** The whole service, every route mounted under `basePath`. */
export function buildService({ basePath, corsOrigins }: ServiceConfig) {
  const service = new Hono<AppEnv>({ getPath: withoutTrailingSlash });
  service.use(requestLog);
  if (corsOrigins.length > 0) {
    // Ahead of the 405 check, so that a preflight is answered (204) rather than refused.
    service.use(
      cors({
        origin: corsOrigins.includes("*") ? "*" : corsOrigins,
        allowMethods: ["GET", "HEAD", "POST"],
        allowHeaders: ["Authorization", "Content-Type", REQUEST_ID_HEADER, BOOKMARK_HEADER, "If-None-Match"],
        exposeHeaders: [REQUEST_ID_HEADER, BOOKMARK_HEADER, "ETag", "Retry-After"],
        maxAge: 600,
      }),
    );
  }
  service.use(methodNotAllowed({ app: service, onMethodNotAllowed: methodNotAllowedResponse }));
  service.onError(handleError);
  service.notFound(notFound);

  const api = new Hono<AppEnv>();
  api.get("/health", (c) => c.json({ status: "ok" }));
  let document: ReturnType<typeof openApiDocument> | undefined; // built on first request, then kept for the isolate
  api.get("/openapi.json", (c) => {
    document ??= openApiDocument(basePath);
    return c.json(document);
  });
  api.route("/apps", appsRoutes);
  service.route(basePath || "/", api);
  return service;
}
