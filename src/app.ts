import { Hono } from "hono";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import { methodNotAllowed } from "hono/method-not-allowed";
import { optionalApiKey, requireApiKey } from "./auth/require-api-key";
import { consoleRoutes } from "./console/console.routes";
import { bucketedSince } from "./db/buckets";
import { shardMapIsValid } from "./db/pool";
import { docsRoutes } from "./docs/docs.routes";
import { setAnswerHeaders } from "./http/answer-headers";
import { BOOKMARK_HEADER } from "./http/d1-session";
import { afterWrite, LIVE_EVERYWHERE_BY } from "./http/edge-cache";
import { edgeSettings } from "./http/edge-settings";
import { handleError, methodNotAllowed as methodNotAllowedResponse, notFound } from "./http/errors";
import { IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER } from "./http/idempotency";
import { PROTECTION_BYPASS_HEADER } from "./http/protection-bypass";
import { REQUEST_ID_HEADER, requestLog } from "./http/request-log";
import { mountRoutes } from "./http/route";
import { CONFIG_SPLIT_HEADER, TARGETING_KEY_HEADER } from "./http/targeting-key";
import { ROUTES } from "./routes";
import type { AppEnv } from "./types";

export interface ServiceConfig {
  /** Prefix every route is mounted under, e.g. "/api", or "" for the root. */
  basePath: string;
  /** Origins browsers may call from (["*"]: any); none turns CORS off, and OPTIONS stays a 405. */
  corsOrigins: string[];
}

// Account data: never stored by browsers or shared caches, never sniffed as anything but JSON.
const ACCOUNT_DATA_HEADERS = { "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" };
// After a write, the cached reads' entries are dropped before the answer goes, which says when it is live everywhere.
const accountData = createMiddleware(async (c, next) => {
  await next();
  setAnswerHeaders(c, ACCOUNT_DATA_HEADERS);
  afterWrite(c);
});

// With SHARD_MAP, BUCKETED_SINCE, FRESHNESS_BOUND_SECONDS or STALE_IF_ERROR_SECONDS refused, no request can be served:
// each gets a 500. The logs say why (db/pool.ts logs the map's reason once; a bad setting of the others throws, and
// handleError logs it).
const configured = createMiddleware<AppEnv>(async (c, next) => {
  bucketedSince(c.env);
  edgeSettings(c.env);
  if (!shardMapIsValid(c.env)) return c.json({ detail: "Internal Server Error" }, 500);
  await next();
});

/** The whole service, every route mounted under `basePath`. */
export function createService({ basePath, corsOrigins }: ServiceConfig) {
  // Not strict: existing clients send paths with and without a trailing slash; both route the same.
  const service = new Hono<AppEnv>({ strict: false });
  service.use(requestLog);
  if (corsOrigins.length > 0) {
    // Ahead of the 405 check, so that a preflight is answered (204) rather than refused.
    service.use(
      cors({
        origin: corsOrigins.includes("*") ? "*" : corsOrigins,
        allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
        allowHeaders: [
          "Authorization",
          "Content-Type",
          REQUEST_ID_HEADER,
          BOOKMARK_HEADER,
          "If-None-Match",
          "If-Match",
          "Cache-Control",
          IDEMPOTENCY_KEY_HEADER,
          PROTECTION_BYPASS_HEADER,
          TARGETING_KEY_HEADER,
        ],
        exposeHeaders: [
          REQUEST_ID_HEADER,
          BOOKMARK_HEADER,
          "ETag",
          "Retry-After",
          REPLAYED_HEADER,
          "Age",
          "Cache-Status",
          LIVE_EVERYWHERE_BY,
          CONFIG_SPLIT_HEADER,
        ],
        maxAge: 600,
      }),
    );
  }
  service.use(configured);
  service.use(methodNotAllowed({ app: service, onMethodNotAllowed: methodNotAllowedResponse }));
  service.onError(handleError);
  service.notFound(notFound);

  const base = service
    .basePath(basePath || "/")
    .route("/docs", docsRoutes(basePath))
    .route("/console", consoleRoutes(basePath));
  // Account data under every first segment of a route that takes a key (unknown paths under it too).
  const keyed = ROUTES.filter(({ declaration }) => declaration.auth !== "none");
  for (const segment of new Set(keyed.map(({ declaration }) => declaration.path.split("/")[1])))
    base.use(`/${segment}/*`, accountData);
  mountRoutes(base, ROUTES, { key: [requireApiKey], optional: [optionalApiKey], none: [] });
  return service;
}
