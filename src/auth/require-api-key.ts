import { createMiddleware } from "hono/factory";
import { findCaller, type KeyCredentials } from "../db/accounts";
import { ApiError, handleError, unauthorized } from "../http/errors";
import type { AppEnv } from "../types";
import { hashApiKey, parseAuthorization } from "./api-keys";

/** Who is calling, as established by their API key. */
export interface Caller {
  userId: string;
}

// Failures that can happen before a route reaches the statement that checks the key.
const REPORTED_ONLY_TO_KEY_HOLDERS = new Set([413, 415, 422]);

/**
 * Parses and hashes the key (401 when it is missing or malformed) and leaves the lookup to the route, whose one
 * D1 round trip checks the key together with the data. A request that fails before getting there (body limits,
 * validation) has its key checked here instead, so that a bad key is a 401 whatever else is wrong.
 */
export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const parsed = parseAuthorization(c.req.header("Authorization"));
  if (!parsed) throw unauthorized();
  const credentials: KeyCredentials = { prefix: parsed.prefix, keyHash: await hashApiKey(parsed.key) };
  c.set("credentials", credentials);
  await next();
  const failure = c.error;
  if (failure instanceof ApiError && REPORTED_ONLY_TO_KEY_HOLDERS.has(failure.status) && !c.get("caller")) {
    const caller = await findCaller(c.env.DB, credentials);
    if (caller) {
      c.set("caller", { userId: caller.userId });
    } else {
      c.res = undefined;
      c.res = await handleError(unauthorized(), c);
    }
  }
});
