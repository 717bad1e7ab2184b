import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../types";
import { setAnswerHeaders } from "./answer-headers";
import type { RequestCaller } from "./request-caller";

export const REQUEST_ID_HEADER = "X-Request-Id";

/** A caller's request id is kept only if it is this safe to log and echo; any other is replaced. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** What operators need to find a request and who made it; never anything of the Authorization header. */
interface RequestLogEntry {
  request_id: string;
  method: string;
  /** The route pattern that answered, never the raw path; null when no route serves the path. */
  route: string | null;
  status: number;
  user_id: string | null;
}

/** A line holds the entries of the requests that end within this long of the first, and at most this many. */
export const BURST_MS = 100;
export const BURST_ENTRIES = 50;

// Each console call costs about 1 ms of CPU under wrangler dev whatever it holds, 15 % of a one-query request
// (BENCHMARKS.md, rounds 2 and 4). So the requests of an isolate share a line: the first entry of a
// burst waits BURST_MS in its request's waitUntil, and the line written then holds every entry since.
let burst: RequestLogEntry[] = [];

/**
 * A line of several entries: `{requests: [...]}`, as Workers Logs stores it. Where the runtime prints the line as text
 * (wrangler dev's terminal), the text is its JSON: laid out by Node's util.inspect instead, in the isolate, the lines
 * took 5 to 10 % of a read's time in the Worker (BENCHMARKS.md, round 9).
 */
class BurstLine {
  constructor(readonly requests: RequestLogEntry[]) {}

  [Symbol.for("nodejs.util.inspect.custom")]() {
    return JSON.stringify(this);
  }
}

function writeBurst() {
  const entries = burst;
  burst = [];
  // One entry is logged as itself, a plain object, so that Workers Logs indexes its fields; several as `requests`.
  console.log(entries.length === 1 ? entries[0] : new BurstLine(entries));
}

/**
 * Gives every request an id (the caller's `X-Request-Id` when it matches the pattern, else a new UUID), echoes it
 * on the response, errors included, and logs its entry after the response, in the line of its burst (see above).
 * How long a request took and how it ended are in the invocation's own log.
 */
// The caller, set further in on routes that take a key (`RouteEnv`), is read after the answer.
export const requestLog = createMiddleware<AppEnv & { Variables: { caller?: RequestCaller } }>(async (c, next) => {
  const given = c.req.header(REQUEST_ID_HEADER);
  const requestId = given !== undefined && REQUEST_ID_PATTERN.test(given) ? given : crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  setAnswerHeaders(c, { [REQUEST_ID_HEADER]: requestId });
  burst.push({
    request_id: requestId,
    method: c.req.method,
    // Middleware is registered for every method ("ALL"); a route's own handlers carry its method.
    route:
      matchedRoutes(c)
        .filter((route) => route.method !== "ALL")
        .at(-1)?.path ?? null,
    status: c.res.status,
    user_id: c.get("caller")?.userId ?? null,
  });
  if (burst.length >= BURST_ENTRIES) {
    writeBurst();
  } else if (burst.length === 1) {
    const waiting = burst;
    c.executionCtx.waitUntil(
      scheduler.wait(BURST_MS).then(() => {
        if (burst === waiting) writeBurst();
      }),
    );
  }
});
