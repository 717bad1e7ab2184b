import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../types";

export const REQUEST_ID_HEADER = "X-Request-Id";

/** A caller's request id is kept only if it is this safe to log and echo; any other is replaced. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id (the caller's `X-Request-Id` when it matches the pattern, else a new UUID), echoes it
 * on the response, errors included, and logs one line per request once the response is ready: what operators
 * need to find a request and who made it, nothing of the Authorization header, and the route pattern, never the raw
 * path. The line is a plain object, whose fields Workers Logs extracts and indexes; how long the request took and
 * how it ended are in the invocation's own log. Each console call is costly under `wrangler dev` whatever it
 * holds (BENCHMARKS.md, "The per-request log line"), so there is one per request and it stays small.
 */
export const requestLog = createMiddleware<AppEnv>(async (c, next) => {
  const given = c.req.header(REQUEST_ID_HEADER);
  const requestId = given !== undefined && REQUEST_ID_PATTERN.test(given) ? given : crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  c.header(REQUEST_ID_HEADER, requestId);
  console.log({
    request_id: requestId,
    method: c.req.method,
    // Middleware is registered for every method ("ALL"); a route's own handlers carry its method.
    route:
      matchedRoutes(c)
        .filter((route) => route.method !== "ALL")
        .at(-1)?.path ?? null,
    status: c.res.status,
    user_id: c.var.caller?.userId ?? null,
  });
});
