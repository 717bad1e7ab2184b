import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { findCaller, type KeyCredentials } from "../db/accounts";
import { ApiError, handleError, tooManyRequests, unauthorized } from "../http/errors";
import type { AppEnv } from "../types";
import { hashApiKey, parseAuthorization } from "./api-keys";

/** Who is calling, as established by their API key. */
export interface Caller {
  userId: string;
}

// Failures that can happen before a route reaches the statement that checks the key.
const REPORTED_ONLY_TO_KEY_HOLDERS = new Set([413, 415, 422]);

/** Replaces the answer with this error's; headers already set (CORS, request id) are kept. */
async function answerWith(c: Context<AppEnv>, error: ApiError) {
  c.res = await handleError(error, c);
}

/** Requests within the key's budget go on; the key check itself is the route's (see below). */
async function withinKeyBudget(c: Context<AppEnv>, credentials: KeyCredentials) {
  return (await c.env.KEY_RATE_LIMITER.limit({ key: credentials.keyHash })).success;
}

/** Counts a failed authentication against the client's address; past its budget, the answer becomes a 429. */
async function countAuthFailure(c: Context<AppEnv>) {
  const address = c.req.header("CF-Connecting-IP") ?? "unknown";
  if (!(await c.env.AUTH_FAILURE_RATE_LIMITER.limit({ key: address })).success) {
    await answerWith(c, tooManyRequests());
    c.res.headers.delete("WWW-Authenticate");
  }
}

/**
 * Parses and hashes the key (401 when it is missing or malformed) and leaves the lookup to the route, whose one
 * D1 round trip checks the key together with the data. A request that fails before getting there (body limits,
 * validation) has its key checked here instead, so that a bad key is a 401 whatever else is wrong.
 * Rate limits: per key (429), and per client address for failed authentications (429 instead of 401).
 */
export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const parsed = parseAuthorization(c.req.header("Authorization"));
  if (!parsed) {
    await answerWith(c, unauthorized());
  } else {
    const credentials: KeyCredentials = { prefix: parsed.prefix, keyHash: await hashApiKey(parsed.key) };
    c.set("credentials", credentials);
    if (!(await withinKeyBudget(c, credentials))) throw tooManyRequests();
    await next();
    const failure = c.error;
    if (failure instanceof ApiError && REPORTED_ONLY_TO_KEY_HOLDERS.has(failure.status) && !c.get("caller")) {
      const caller = await findCaller(c.env.DB, credentials);
      if (caller) c.set("caller", { userId: caller.userId });
      else await answerWith(c, unauthorized());
    }
  }
  if (c.res.status === 401) await countAuthFailure(c);
});
