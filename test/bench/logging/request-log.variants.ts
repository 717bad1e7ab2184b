/**
 * Ways of writing the per-request log line, measured against each other by `npm run bench -- --log-variants`.
 *
 * This file stands in for src/http/request-log.ts in a copy of the service per variant: the bench writes it there
 * with VARIANT set to the variant's name and the imports below made relative to src/http/. Each variant writes one
 * line per request, at the end of the request; the request id, its header and what is logged are as in
 * src/http/request-log.ts, which writes the entries of a burst of requests in one line; keep them in step.
 */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import { setAnswerHeaders } from "../../../src/http/answer-headers";
import type { RequestCaller } from "../../../src/http/request-caller";
import type { AppEnv } from "../../../src/types";

export const REQUEST_ID_HEADER = "X-Request-Id";

/** As src/http/request-log.ts: the caller, set further in on routes that take a key, is read after the answer. */
type LogEnv = AppEnv & { Variables: { caller?: RequestCaller } };

/** A caller's request id is kept only if it is this safe to log and echo; any other is replaced. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Set by the bench in each copy (see test/bench/logging/variants.ts). */
const VARIANT: string = "__VARIANT__";

/** The route pattern that answered (middleware is registered for "ALL"; a route's own handlers carry its method). */
const routeOf = (c: Context<LogEnv>) =>
  matchedRoutes(c)
    .filter((route) => route.method !== "ALL")
    .at(-1)?.path ?? null;

type Emit = (c: Context<LogEnv>, requestId: string, started: number) => void;

/** The entries of the 8- and 4-field variants, each written as JSON by one and as an object by the other. */
const entry8 = (c: Context<LogEnv>, requestId: string, started: number) => ({
  level: "info",
  message: "request",
  request_id: requestId,
  method: c.req.method,
  route: routeOf(c),
  status: c.res.status,
  duration_ms: Date.now() - started,
  user_id: c.var.caller?.userId ?? null,
});
const entry4 = (c: Context<LogEnv>, requestId: string) => ({
  request_id: requestId,
  route: `${c.req.method} ${routeOf(c)}`,
  status: c.res.status,
  user_id: c.var.caller?.userId ?? null,
});

const EMITTERS: Record<string, Emit> = {
  none: () => {},
  "json-8": (c, requestId, started) => console.log(JSON.stringify(entry8(c, requestId, started))),
  "object-8": (c, requestId, started) => console.log(entry8(c, requestId, started)),
  "json-4": (c, requestId) => console.log(JSON.stringify(entry4(c, requestId))),
  "object-4": (c, requestId) => console.log(entry4(c, requestId)),
  "object-5": (c, requestId) =>
    console.log({
      request_id: requestId,
      method: c.req.method,
      route: routeOf(c),
      status: c.res.status,
      user_id: c.var.caller?.userId ?? null,
    }),
  text: (c, requestId) =>
    console.log(`${c.req.method} ${routeOf(c)} ${c.res.status} ${requestId} ${c.var.caller?.userId ?? "-"}`),
};

const emit = EMITTERS[VARIANT];
if (!emit) throw new Error(`unknown request log variant ${VARIANT}`);

export const requestLog = createMiddleware<LogEnv>(async (c, next) => {
  const started = Date.now();
  const given = c.req.header(REQUEST_ID_HEADER);
  const requestId = given !== undefined && REQUEST_ID_PATTERN.test(given) ? given : crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  setAnswerHeaders(c, { [REQUEST_ID_HEADER]: requestId });
  emit(c, requestId, started);
});
