import { Hono } from "hono";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import { methodNotAllowed } from "hono/method-not-allowed";
import { appsRoutes } from "./apps/apps.routes";
import { configsRoutes } from "./configs/configs.routes";
import { deploymentsRoutes } from "./deployments/deployments.routes";
import { docsRoutes } from "./docs/docs.routes";
import { environmentsRoutes } from "./environments/environments.routes";
import { eventsRoutes } from "./events/events.routes";
import { BOOKMARK_HEADER } from "./http/d1-session";
import { handleError, methodNotAllowed as methodNotAllowedResponse, notFound } from "./http/errors";
import { IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER } from "./http/idempotency";
import { REQUEST_ID_HEADER, requestLog } from "./http/request-log";
import { keysRoutes, profileRoutes } from "./keys/keys.routes";
import { openApiDocument } from "./openapi";
import { organizationsRoutes } from "./organizations/organizations.routes";
import { basesRoutes, registryRoutes } from "./registry/registry.routes";
import type { AppEnv } from "./types";
import { appVariantsRoutes, variantsRoutes } from "./variants/variants.routes";
import { webhooksRoutes } from "./webhooks/webhooks.routes";
import { workspacesRoutes } from "./workspaces/workspaces.routes";

export interface ServiceConfig {
  /** Prefix every route is mounted under, e.g. "/api", or "" for the root. */
  basePath: string;
  /** Origins browsers may call from (["*"]: any); none turns CORS off, and OPTIONS stays a 405. */
  corsOrigins: string[];
}

// Account data: never stored by browsers or shared caches, never sniffed as anything but JSON.
const accountData = createMiddleware(async (c, next) => {
  await next();
  c.header("Cache-Control", "no-store");
  c.header("X-Content-Type-Options", "nosniff");
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
          IDEMPOTENCY_KEY_HEADER,
        ],
        exposeHeaders: [REQUEST_ID_HEADER, BOOKMARK_HEADER, "ETag", "Retry-After", REPLAYED_HEADER],
        maxAge: 600,
      }),
    );
  }
  service.use(methodNotAllowed({ app: service, onMethodNotAllowed: methodNotAllowedResponse }));
  service.onError(handleError);
  service.notFound(notFound);

  let document: ReturnType<typeof openApiDocument> | undefined; // built on first request, then kept for the isolate
  service
    .basePath(basePath || "/")
    .get("/health", (c) => c.json({ status: "ok" }))
    .get("/openapi.json", (c) => {
      document ??= openApiDocument(basePath);
      return c.json(document);
    })
    .route("/docs", docsRoutes(basePath))
    .use("/apps/*", accountData)
    .use("/variants/*", accountData)
    .use("/environments/*", accountData)
    .use("/configs/*", accountData)
    .use("/bases/*", accountData)
    .use("/keys/*", accountData)
    .use("/profile/*", accountData)
    .use("/organizations/*", accountData)
    .use("/workspaces/*", accountData)
    .use("/events/*", accountData)
    .use("/webhooks/*", accountData)
    .route("/", deploymentsRoutes)
    .route("/apps", appVariantsRoutes)
    .route("/apps", appsRoutes)
    .route("/apps", environmentsRoutes)
    .route("/variants/configs", configsRoutes)
    .route("/variants", variantsRoutes)
    .route("/configs", registryRoutes)
    .route("/bases", basesRoutes)
    .route("/keys", keysRoutes)
    .route("/profile", profileRoutes)
    .route("/organizations", organizationsRoutes)
    .route("/workspaces", workspacesRoutes)
    .route("/events", eventsRoutes)
    .route("/webhooks", webhooksRoutes);
  return service;
}
