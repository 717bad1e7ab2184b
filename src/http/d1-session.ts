import type { Context } from "hono";
import { type BucketRef, LEGACY_BUCKET } from "../db/buckets";
import type { CallerDb, CallerWriteDb, RequestCaller } from "../db/caller";
import { type Queryable, retryReadOnce } from "../db/d1";
import { allShards, isShardName, type ShardName, shardNamed, shardNameOf, shardOf } from "../db/pool";
import { handOff } from "../webhooks/hand-off";
import { requestBucket } from "./request-bucket";

/**
 * D1 read-replication bookmarks, sent back whole by clients so that they read their own writes: one entry per shard,
 * `SHARD_<n>:<D1's bookmark>`, joined by commas (docs/SHARDING.md §4).
 */
export const BOOKMARK_HEADER = "x-d1-bookmark";

/** D1's bookmark format; anything else a client sends is dropped rather than passed to D1. */
const D1_BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;
/** An entry naming its shard; one that names none is a bare bookmark, the format before shards: SHARD_0's. */
const NAMED_ENTRY = /^(SHARD_(?:0|[1-9]\d*)):(.*)$/;
const BARE_BOOKMARK_SHARD: ShardName = "SHARD_0";

/** Bookmarks by shard, at most one each. */
type Bookmarks = Map<ShardName, string>;

/** Keeps the later of `bookmark` and the one `bookmarks` holds for `shard`: D1's bookmarks sort by time. */
function keepLater(bookmarks: Bookmarks, shard: ShardName, bookmark: string) {
  const known = bookmarks.get(shard);
  if (known === undefined || bookmark > known) bookmarks.set(shard, bookmark);
}

/** The client's well-formed entries of declared shards; malformed ones and unknown shards' are dropped. */
function sentBookmarks(env: Env, header: string | undefined): Bookmarks {
  const sent: Bookmarks = new Map();
  for (const text of (header ?? "").split(",")) {
    const entry = text.trim();
    const named = NAMED_ENTRY.exec(entry);
    const [shard, bookmark] = named ? [named[1], named[2].toLowerCase()] : [BARE_BOOKMARK_SHARD, entry.toLowerCase()];
    if (D1_BOOKMARK.test(bookmark) && isShardName(env, shard)) keepLater(sent, shard, bookmark);
  }
  return sent;
}

/** A request's bookmarks: the client's, and those its sessions answered (each shard's latest). */
interface RequestBookmarks {
  sent: Bookmarks;
  reached: Bookmarks;
}

/** By request: read from its header on its first session. */
const requestBookmarks = new WeakMap<Request, RequestBookmarks>();

function bookmarksOf<E extends { Bindings: Env }>(c: Context<E>): RequestBookmarks {
  let bookmarks = requestBookmarks.get(c.req.raw);
  if (!bookmarks) {
    bookmarks = { sent: sentBookmarks(c.env, c.req.header(BOOKMARK_HEADER)), reached: new Map() };
    requestBookmarks.set(c.req.raw, bookmarks);
  }
  return bookmarks;
}

/** The header answered: by shard number, each reached shard's bookmark, and the client's entries of the others. */
const answeredBookmarks = (env: Env, { sent, reached }: RequestBookmarks) =>
  allShards(env)
    .flatMap((shard) => {
      const bookmark = reached.get(shard) ?? sent.get(shard);
      return bookmark ? [`${shard}:${bookmark}`] : [];
    })
    .join(",");

/** What a route's context must carry to reach D1: the request's caller (requireApiKey, optionalApiKey). */
export type CallerEnv = { Bindings: Env; Variables: { caller: RequestCaller } };

/**
 * Until requests are routed by the ids and key prefixes they carry (docs/SHARDING.md §3.1, milestone 3), every request,
 * and every key's last use, goes to the shard of the legacy bucket, which holds everything made before buckets.
 */
const REQUEST_BUCKET = LEGACY_BUCKET;

/** The shard holding the caller's key, where its last use is recorded (see REQUEST_BUCKET). */
export const keyShard = <E extends { Bindings: Env }>(c: Context<E>) => shardOf(c.env, REQUEST_BUCKET);

/**
 * Runs `work` in a D1 session of the request's shard that starts at the client's entry for that shard, or at `start`;
 * answers the bookmarks (`answeredBookmarks`). The one place a request's database and bookmark are chosen: an entry is
 * only ever passed to its own shard.
 */
async function inSession<E extends { Bindings: Env }, T>(
  c: Context<E>,
  start: "first-primary" | "first-unconstrained",
  work: (session: Queryable, shard: ShardName) => Promise<T>,
): Promise<T> {
  const bookmarks = bookmarksOf(c);
  const shard = shardNameOf(c.env, REQUEST_BUCKET);
  const session = shardNamed(c.env, shard).withSession(bookmarks.sent.get(shard) ?? start);
  const result = await work(session, shard);
  const bookmark = session.getBookmark();
  if (bookmark) {
    keepLater(bookmarks.reached, shard, bookmark);
    c.header(BOOKMARK_HEADER, answeredBookmarks(c.env, bookmarks));
  }
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
