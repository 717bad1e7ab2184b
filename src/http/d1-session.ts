import type { Context } from "hono";
import { type BucketRef, bucketOfPrefix, CALLER_KEY, LEGACY_BUCKET } from "../db/buckets";
import { type Caller, UnknownApiKeyError, vouchFor } from "../db/caller";
import { type Queryable, retryReadOnce } from "../db/d1";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { allShards, isShardName, type ShardName, shardNamed, shardNameOf } from "../db/pool";
import { liveAfter } from "./edge-settings";
import { handOff } from "./hand-off";
import { decidingRef, requestBucket } from "./request-bucket";
import type { RequestCaller } from "./request-caller";

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

/** A request's D1 sessions, one per shard it reaches: the key's home shard's check and the request's batches share it. */
const requestSessions = new WeakMap<Request, Map<ShardName, D1DatabaseSession>>();

/**
 * Requests whose reads confirm a cached answer (src/http/edge-cache.ts): on the primary, whatever bookmark the client
 * sent, as a replica's lag has no bound and the cache's freshness has one.
 */
const primaryReads = new WeakSet<Request>();

export const readFromPrimary = (c: Context) => primaryReads.add(c.req.raw);

/** The bookmarks a request's reads reached, by shard (what a cached answer was read at). */
export const reachedBookmarks = <E extends { Bindings: Env }>(c: Context<E>) => bookmarksOf(c).reached;

/** Whether the client sent a bookmark newer than `reached`'s for the same shard: it asks for what it wrote since. */
export function asksNewerThan<E extends { Bindings: Env }>(c: Context<E>, reached: Bookmarks): boolean {
  for (const [shard, bookmark] of bookmarksOf(c).sent) if (bookmark > (reached.get(shard) ?? bookmark)) return true;
  return false;
}

/** Answers `reached` (a cached answer's) as the request's bookmarks, with the client's of the other shards. */
export function answerBookmarks<E extends { Bindings: Env }>(c: Context<E>, reached: Bookmarks) {
  const bookmarks = bookmarksOf(c);
  for (const [shard, bookmark] of reached) keepLater(bookmarks.reached, shard, bookmark);
  if (bookmarks.reached.size > 0) c.header(BOOKMARK_HEADER, answeredBookmarks(c.env, bookmarks));
}

/** When a request's writes returned (ms), by request: what src/http/edge-cache.ts drops entries and dates changes by. */
const writes = new WeakMap<Request, number>();

export const wroteAt = (c: Context) => writes.get(c.req.raw);

/**
 * The request's session of `shard`, made on first use: it starts at the client's entry for that shard, or at `start`
 * (on the primary for a read that confirms a cached answer: `readFromPrimary`).
 * The one place a request's database and bookmark are chosen: an entry is only ever passed to its own shard.
 */
function sessionOf<E extends { Bindings: Env }>(c: Context<E>, shard: ShardName, start: "first-primary" | "first-unconstrained") {
  let sessions = requestSessions.get(c.req.raw);
  if (!sessions) {
    sessions = new Map();
    requestSessions.set(c.req.raw, sessions);
  }
  let session = sessions.get(shard);
  if (!session) {
    const primary = primaryReads.has(c.req.raw) ? "first-primary" : undefined;
    session = shardNamed(c.env, shard).withSession(primary ?? bookmarksOf(c).sent.get(shard) ?? start);
    sessions.set(shard, session);
  }
  return session;
}

/** Keeps what `shard`'s session answered as that shard's bookmark, and answers the bookmarks (`answeredBookmarks`). */
function keepBookmark<E extends { Bindings: Env }>(c: Context<E>, shard: ShardName) {
  const bookmark = requestSessions.get(c.req.raw)?.get(shard)?.getBookmark();
  if (!bookmark) return;
  const bookmarks = bookmarksOf(c);
  keepLater(bookmarks.reached, shard, bookmark);
  c.header(BOOKMARK_HEADER, answeredBookmarks(c.env, bookmarks));
}

/**
 * Where the caller's key may be, in the order asked (docs/SHARDING.md §2): its prefix's bucket, then, when that is on
 * another shard, the legacy bucket: a key made before buckets has a random prefix, which may look bucketed. None for
 * a request without a key.
 */
type KeyHome = { shard: ShardName; bucket: number };

function keyHomes<E extends CallerEnv>(c: Context<E>): KeyHome[] {
  const prefix = c.get("caller").caller.prefix;
  if (prefix === null) return [];
  const bucket = bucketOfPrefix(prefix);
  const homes = [{ shard: shardNameOf(c.env, bucket), bucket }];
  const legacy = shardNameOf(c.env, LEGACY_BUCKET);
  if (legacy !== homes[0].shard) homes.push({ shard: legacy, bucket: LEGACY_BUCKET });
  return homes;
}

/**
 * Asks `home` whether the caller's key is live there (one round trip, in the request's session of that shard) and
 * records the answer: the key vouched for, or null.
 */
async function vouchOn<E extends CallerEnv>(c: Context<E>, home: KeyHome, start: "first-primary" | "first-unconstrained") {
  const caller = c.get("caller");
  try {
    await caller.vouchedOn(home, vouchFor(sessionOf(c, home.shard, start), caller.caller));
  } finally {
    keepBookmark(c, home.shard);
  }
  return caller.vouched;
}

/**
 * Runs `work` as the request's caller on the shard holding what `refs` name (docs/SHARDING.md §3): the bucket of the
 * first ref given (`requestBucket`). A key homed on that shard is checked inside `work`'s own batches: one round trip.
 * A key homed elsewhere is first checked on its home shard, once per request, and `work` runs with the key vouched for
 * (§3.2): two round trips. A request that names nothing but the key runs where the key is found. A key not found on
 * its prefix's shard is looked for on the legacy bucket's too (`keyHomes`) before the request is refused.
 */
async function onShard<E extends CallerEnv, T>(
  c: Context<E>,
  refs: BucketRef[],
  start: "first-primary" | "first-unconstrained",
  work: (session: Queryable, shard: ShardName, caller: Caller, bucket: number) => Promise<T>,
): Promise<T> {
  const requestCaller = c.get("caller");
  const run = async (shard: ShardName, bucket: number, caller: Caller) => {
    try {
      return await work(sessionOf(c, shard, start), shard, caller, bucket);
    } finally {
      keepBookmark(c, shard);
    }
  };
  const bucket = requestBucket(c, refs);
  const shard = shardNameOf(c.env, bucket);
  const homes = keyHomes(c);
  if (homes.length === 0) return run(shard, bucket, requestCaller.caller);
  // What the key names by itself (its project) is on the shard holding the key.
  const byKey = decidingRef(refs) === CALLER_KEY;
  if (requestCaller.vouched && !byKey) return run(shard, bucket, requestCaller.vouched);
  for (const home of homes) {
    if (byKey || home.shard === shard) {
      // The key is checked in the batch itself; not found, the next home is asked.
      try {
        return await run(home.shard, byKey ? home.bucket : bucket, requestCaller.caller);
      } catch (error) {
        if (!(error instanceof UnknownApiKeyError) || home === homes[homes.length - 1]) throw error;
        continue;
      }
    }
    const vouched = await vouchOn(c, home, start);
    if (vouched) return run(shard, bucket, vouched);
  }
  throw new UnknownApiKeyError();
}

/**
 * The caller's key vouched for by its home shard (asked once per request, with the legacy-prefix fallback of
 * `keyHomes`), and that home; a key found live on none is refused.
 */
async function vouchedCaller<E extends CallerEnv>(c: Context<E>, start: "first-primary" | "first-unconstrained") {
  const caller = c.get("caller");
  for (const home of keyHomes(c)) {
    if (caller.vouched) break;
    await vouchOn(c, home, start);
  }
  const home = caller.home;
  if (!caller.vouched || !home) throw new UnknownApiKeyError();
  return { vouched: caller.vouched, home: home.shard };
}

/**
 * `read` as `caller` (the key vouched for) in the request's session of `shard`, guarded for `bucket` (null: a read
 * spanning buckets), keeping the shard's bookmark.
 */
async function readVouched<E extends CallerEnv, T>(
  c: Context<E>,
  shard: ShardName,
  caller: Caller,
  bucket: number | null,
  read: (db: CallerDb) => Promise<T>,
): Promise<T> {
  try {
    return await read(c.get("caller").reader(sessionOf(c, shard, "first-unconstrained"), shard, caller, bucket));
  } finally {
    keepBookmark(c, shard);
  }
}

/**
 * A read as the request's caller on every shard, in parallel, for a list that spans the caller's organizations
 * (docs/SHARDING.md §3.1, as decided in §7c): the key is checked on its home shard first (one round trip), then each
 * shard answers for the organizations it holds, its own membership deciding. Retried once, whole, on a transient
 * error; one shard failing fails the list (a list is never partial: a missing shard would look like a removed
 * membership). The answers by shard number.
 */
export const readOnEveryShard = <E extends CallerEnv, T>(c: Context<E>, read: (db: CallerDb) => Promise<T>) =>
  retryReadOnce(async () => {
    const { vouched } = await vouchedCaller(c, "first-unconstrained");
    return Promise.all(allShards(c.env).map((shard) => readVouched(c, shard, vouched, null, read)));
  });

/**
 * A read as the request's caller of what a query names across shards (docs/SHARDING.md §3.1): `parts` (app refs, say),
 * each on the shard of its own ref (`routedBy`; CALLER_KEY: the key's project's). Each shard holding some reads those
 * only (`read`), so that none answers for another's rows (a copy of a bucket being moved, say). All on one shard: as
 * `readAs` (one round trip when the key is homed there). Else as `readOnEveryShard`: the key checked on its home first
 * (where the parts routed by the key are read), then the shards in parallel; retried once, whole, on a transient error;
 * one shard failing fails the read. The answers, one per shard read.
 */
export async function readOnShardsOf<E extends CallerEnv, P, T>(
  c: Context<E>,
  parts: P[],
  routedBy: (part: P) => BucketRef,
  read: (db: CallerDb, parts: P[]) => Promise<T>,
): Promise<T[]> {
  const bucketOf = (part: P) => requestBucket(c, [routedBy(part)]);
  if (new Set(parts.map((part) => shardNameOf(c.env, bucketOf(part)))).size <= 1) {
    return [await readAs(c, parts.map(routedBy), (db) => read(db, parts))];
  }
  return retryReadOnce(async () => {
    const { vouched, home } = await vouchedCaller(c, "first-unconstrained");
    const byShard = new Map<ShardName, P[]>();
    for (const part of parts) {
      const shard = routedBy(part) === CALLER_KEY ? home : shardNameOf(c.env, bucketOf(part));
      byShard.set(shard, [...(byShard.get(shard) ?? []), part]);
    }
    return Promise.all(
      [...byShard].map(([shard, held]) => readVouched(c, shard, vouched, bucketOf(held[0]), (db) => read(db, held))),
    );
  });
}

/**
 * The lists of every shard (`readOnEveryShard`) as one, oldest first: by `created_at`, then by `tiebreak`, each
 * shard's list being in that order already.
 */
export const mergedOldestFirst = <T extends { created_at: string }>(lists: T[][], tiebreak: (row: T) => string): T[] =>
  lists.flat().sort((a, b) => a.created_at.localeCompare(b.created_at) || tiebreak(a).localeCompare(tiebreak(b)));

/**
 * A read as the request's caller on the shard of `routedBy` (what the request names, in the order its SQL resolves
 * them: `requestBucket`), from the nearest replica unless the client's bookmark asks for more; retried once on a
 * transient error. Every batch checks the caller's key in its own round trip.
 */
export const readAs = <E extends CallerEnv, T>(c: Context<E>, routedBy: BucketRef[], read: (db: CallerDb) => Promise<T>) =>
  retryReadOnce(() =>
    onShard(c, routedBy, "first-unconstrained", (session, shard, caller, bucket) =>
      read(c.get("caller").reader(session, shard, caller, bucket)),
    ),
  );

/**
 * A write as the request's caller on the shard of `placedBy` (as `readAs`'s `routedBy`), on the primary; never retried
 * (it may have been applied). The ids it mints carry the bucket of `placedBy`. The events each of its batches commits
 * for webhooks go to the delivery queue after the answer.
 */
export const writeAs = <E extends CallerEnv, T>(c: Context<E>, placedBy: BucketRef[], write: (db: CallerWriteDb) => Promise<T>) =>
  onShard(c, placedBy, "first-primary", async (session, shard, caller, bucket) => {
    const requestCaller = c.get("caller");
    const writer = (db: Queryable, on: ShardName, inBucket: number, as: Caller, home: CallerWriteDb | null = null) =>
      requestCaller.writer(db, on, inBucket, (events: string[]) => handOff(c, { shard: on, events }), as, home, liveAfter(c.env));
    // A key homed elsewhere writes its own rows (its Idempotency-Keys' requests) at its home, as itself.
    const home = caller.vouch ? requestCaller.home : null;
    if (!home) return write(writer(session, shard, bucket, caller));
    try {
      const atHome = writer(sessionOf(c, home.shard, "first-primary"), home.shard, home.bucket, requestCaller.caller);
      return await write(writer(session, shard, bucket, caller, atHome));
    } finally {
      keepBookmark(c, home.shard);
    }
  }).finally(() => writes.set(c.req.raw, Date.now()));
