import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { recordKeyUse } from "../db/accounts";
import { CALLER_KEY } from "../db/buckets";
import { Caller } from "../db/caller";
import { shardNamed } from "../db/pool";
import { type CallerEnv, readAs } from "../http/d1-session";
import { handleError, tooManyRequests, unauthorized } from "../http/errors";
import { type KeyCheck, RequestCaller, shardToRecordKeyUse } from "../http/request-caller";
import { hashApiKey, parseAuthorization } from "./api-keys";

/** Replaces the answer with this error's; headers already set (CORS, request id) are kept. */
async function answerWith<E extends { Bindings: Env }>(c: Context<E>, error: Error) {
  c.res = await handleError(error, c);
}

/** The client's address, which the per-address limits count on. */
const clientAddress = (c: Context) => c.req.header("CF-Connecting-IP") ?? "unknown";

/** Counts a failed authentication against the client's address; past its budget, the answer becomes a 429. */
async function countAuthFailure<E extends { Bindings: Env }>(c: Context<E>) {
  if (!(await c.env.AUTH_FAILURE_RATE_LIMITER.limit({ key: clientAddress(c) })).success) {
    await answerWith(c, tooManyRequests());
    c.res.headers.delete("WWW-Authenticate");
  }
}

/**
 * The request's key check, as its batches found it, else (the handler answered without one) checked here by a batch
 * of its own, whose failure (a 401, a 503) becomes the answer.
 */
async function keyCheckOf(c: Context<CallerEnv>, caller: RequestCaller): Promise<KeyCheck | undefined> {
  if (caller.keyCheck === undefined) await readAs(c, [CALLER_KEY], (db) => db.batch({})).catch((error) => answerWith(c, error));
  return caller.keyCheck;
}

const logKeyUseFailure = () => console.warn(JSON.stringify({ level: "warn", message: "key use not recorded" }));

/**
 * The one way in for a caller: a route opts in by naming this middleware. It parses and hashes the key (401 when
 * missing or malformed) and gives the handler `c.var.caller`, through which alone the handler reaches D1
 * (`readAs`, `writeAs`): every batch checks the key together with the data (an unknown key is a 401 there). A
 * request whose handler answered without such a batch (it failed first, or needed no data) has its key checked here
 * before the answer goes out, whatever the answer: a bad key is a 401 whatever else happened. Rate limits: per key
 * (429), and per client address for failed authentications (429 instead of 401). The key's last use is recorded
 * after the answer, at most hourly, on the shard that found it (`shardToRecordKeyUse`).
 */
export const requireApiKey = createMiddleware<CallerEnv>(async (c, next) => {
  const parsed = parseAuthorization(c.req.header("Authorization"));
  if (!parsed) {
    await answerWith(c, unauthorized());
  } else {
    const keyHash = await hashApiKey(parsed.key);
    if (!(await c.env.KEY_RATE_LIMITER.limit({ key: keyHash })).success) throw tooManyRequests();
    const caller = new RequestCaller(Caller.withKey(parsed.prefix, keyHash));
    c.set("caller", caller);
    await next();
    const check = await keyCheckOf(c, caller);
    // After the answer, so that no request waits on it; a failure costs only the record of one use.
    const keyShard = shardToRecordKeyUse(check);
    if (keyShard) c.executionCtx.waitUntil(recordKeyUse(shardNamed(c.env, keyShard), keyHash).catch(logKeyUseFailure));
  }
  if (c.res.status === 401) await countAuthFailure(c);
});

/**
 * For a route open to callers without a key (accepting an invitation): an empty or absent Authorization is no key,
 * and the route reaches D1 as `Caller.nobody`. Keyless requests are limited per client address (429), as no key's
 * budget counts them.
 */
export const optionalApiKey = createMiddleware<CallerEnv>(async (c, next) => {
  if ((c.req.header("Authorization") ?? "").trim() !== "") return requireApiKey(c, next);
  if (!(await c.env.KEYLESS_RATE_LIMITER.limit({ key: clientAddress(c) })).success) throw tooManyRequests();
  c.set("caller", new RequestCaller(Caller.nobody));
  return next();
});
