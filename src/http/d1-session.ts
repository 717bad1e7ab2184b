import type { Context } from "hono";
import type { BucketRef } from "../db/buckets";
import type { CallerDb, CallerWriteDb, RequestCaller } from "../db/caller";
import { type Queryable, retryReadOnce } from "../db/d1";
import { handOff } from "../webhooks/hand-off";
import { requestBucket } from "./request-bucket";

/** D1 read-replication bookmark: sent back by clients so that they read their own writes. */
export const BOOKMARK_HEADER = "x-d1-bookmark";

/** D1's bookmark format; anything else a client sends is ignored rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/** What a route's context must carry to reach D1: the request's caller (requireApiKey, optionalApiKey). */
export type CallerEnv = { Bindings: Env; Variables: { caller: RequestCaller } };

/**
 * Runs `work` in a D1 session that starts where the client's bookmark says, or at `start`; answers its bookmark.
 * The one place a request's database is chosen.
 */
async function inSession<E extends { Bindings: Env }, T>(
  c: Context<E>,
  start: "first-primary" | "first-unconstrained",
  work: (session: Queryable) => Promise<T>,
): Promise<T> {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim().toLowerCase();
  const session = c.env.DB.withSession(sent && BOOKMARK.test(sent) ? sent : start);
  const result = await work(session);
  const bookmark = session.getBookmark();
  if (bookmark) c.header(BOOKMARK_HEADER, bookmark);
  return result;
}

/**
 * A read as the request's caller, from the nearest replica unless the client's bookmark asks for more; retried once
 * on a transient error. Every batch checks the caller's key in its own round trip.
 */
export const readAs = <E extends CallerEnv, T>(c: Context<E>, read: (db: CallerDb) => Promise<T>) =>
  inSession(c, "first-unconstrained", (session) => {
    const db = c.get("caller").reader(session);
    return retryReadOnce(() => read(db));
  });

/**
 * A write as the request's caller, on the primary; never retried (it may have been applied). `placedBy`: what the
 * request names, in the order its SQL resolves them (`requestBucket`): the ids it mints carry that bucket. The events
 * each of its batches commits for webhooks go to the delivery queue after the answer.
 */
export const writeAs = <E extends CallerEnv, T>(c: Context<E>, placedBy: BucketRef[], write: (db: CallerWriteDb) => Promise<T>) =>
  inSession(c, "first-primary", (session) =>
    write(c.get("caller").writer(session, requestBucket(c, placedBy), (events: string[]) => handOff(c, { events }))),
  );
