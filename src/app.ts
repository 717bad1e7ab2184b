import { Hono } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import { getPath } from "hono/utils/url";
import { appsRoutes } from "./apps/apps.routes";
import { handleError, methodNotAllowed as methodNotAllowedResponse, notFound } from "./http/errors";
import type { AppEnv } from "./types";

/** Existing clients send paths with and without a trailing slash; both route the same. */
const withoutTrailingSlash = (request: Request) => getPath(request).replace(/(.)\/$/, "$1");

/** The whole service, every route mounted under `basePath` (e.g. "/api", or "" for the root). */
export function buildService(basePath: string) {
  const service = new Hono<AppEnv>({ getPath: withoutTrailingSlash });
  service.use(methodNotAllowed({ app: service, onMethodNotAllowed: methodNotAllowedResponse }));
  service.onError(handleError);
  service.notFound(notFound);

  const api = new Hono<AppEnv>();
  api.get("/health", (c) => c.json({ status: "ok" }));
  api.route("/apps", appsRoutes);
  service.route(basePath || "/", api);
  return service;
}
