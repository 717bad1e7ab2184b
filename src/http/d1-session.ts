import type { Context } from "hono";
import type { BucketRef } from "../db/buckets";
import type { CallerDb, CallerWriteDb, RequestCaller } from "../db/caller";
import { type Queryable, retryReadOnce } from "../db/d1";
import { type ShardName, shardNamed, shardNameOf, shardOf } from "../db/pool";
import { handOff } from "../webhooks/hand-off";
import { requestBucket } from "./request-bucket";

/** D1 read-replication bookmark: sent back by clients so that they read their own writes. */
export const BOOKMARK_HEADER = "x-d1-bookmark";

/** D1's bookmark format; anything else a client sends is ignored rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/** What a route's context must carry to reach D1: the request's caller (requireApiKey, optionalApiKey). */
export type CallerEnv = { Bindings: Env; Variables: { caller: RequestCaller } };

/**
 * Until requests are routed by the ids they name (docs/SHARDING.md §3.1), every request goes to the shard of bucket 0,
 * which holds everything made before buckets.
 */
const REQUEST_BUCKET = 0;

/**
 * The shard holding the caller's key: bucket 0's until key prefixes carry a bucket (docs/SHARDING.md §2), where its
 * last use is recorded.
 */
export const keyShard = <E extends { Bindings: Env }>(c: Context<E>) => shardOf(c.env, REQUEST_BUCKET);

/**
 * Runs `work` in a D1 session of the request's shard that starts where the client's bookmark says, or at `start`;
 * answers its bookmark. The one place a request's database is chosen.
 */
async function inSession<E extends { Bindings: Env }, T>(
  c: Context<E>,
  start: "first-primary" | "first-unconstrained",
  work: (session: Queryable, shard: ShardName) => Promise<T>,
): Promise<T> {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim().toLowerCase();
  const shard = shardNameOf(c.env, REQUEST_BUCKET);
  const session = shardNamed(c.env, shard).withSession(sent && BOOKMARK.test(sent) ? sent : start);
  const result = await work(session, shard);
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
  inSession(c, "first-primary", (session, shard) =>
    write(c.get("caller").writer(session, requestBucket(c, placedBy), (events: string[]) => handOff(c, { shard, events }))),
  );
