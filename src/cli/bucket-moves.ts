/**
 * `bucket move | finish | delete | abort` (docs/SHARDING.md §5, §7d): a range of buckets of organizations moved from
 * the shard SHARD_MAP gives them to another, with their writes fenced meanwhile. What is copied, and how, is
 * bucket-tables.ts's; this is the commands' flow: their options, the fences on both shards, and the directory's
 * `bucket_moves` row, which records how far a move went: `copying` (fenced, copy under way or stopped), `copied`
 * (verified), `finished`, `deleted`, `aborted`.
 */
import { BUCKETS } from "../db/buckets";
import { readShardMap, type ShardName } from "../db/pool";
import { sql } from "../db/sql";
import { assertKnownTables, type BucketRange, copyRows, deleteRows, holdsRows, type Shard, verifyCopy } from "./bucket-tables";
import { type DatabasePool, retryTransient } from "./database";
import { UsageError } from "./run-cli";

/** What an operator gives a bucket command: --buckets, --to, and the SHARD_MAP deployed when not wrangler.toml's. */
export interface BucketOptions {
  buckets?: string;
  to?: string;
  shardMap?: string;
}

const FENCES = sql<{ bucket: number; state: string }>(
  "SELECT bucket, state FROM bucket_fences WHERE bucket BETWEEN :bucket_from AND :bucket_to ORDER BY bucket",
);
/**
 * Fences every bucket of the range with :state, replacing what fenced it before; with :keep set, a bucket already fenced
 * keeps its fence (a move back's destination keeps `moved`, which it goes back to on an abort).
 */
const SET_FENCES = sql(`WITH RECURSIVE range (bucket) AS
  (SELECT :bucket_from UNION ALL SELECT bucket + 1 FROM range WHERE bucket < :bucket_to)
  INSERT INTO bucket_fences (bucket, state) SELECT bucket, :state FROM range WHERE true
  ON CONFLICT (bucket) DO UPDATE SET state = excluded.state, since = excluded.since WHERE NOT :keep`);
/** Lifts the range's fences in :state (null: whatever their state). */
const LIFT_FENCES = sql(
  "DELETE FROM bucket_fences WHERE bucket BETWEEN :bucket_from AND :bucket_to AND state = coalesce(:state, state)",
);

interface Move {
  bucket_from: number;
  bucket_to: number;
  source: ShardName;
  destination: ShardName;
  state: "copying" | "copied" | "finished" | "deleted" | "aborted";
}

const MOVES_OVERLAPPING = sql<Move>(`SELECT bucket_from, bucket_to, source, destination, state FROM bucket_moves
  WHERE bucket_from <= :bucket_to AND bucket_to >= :bucket_from`);
const START_MOVE = sql(`INSERT INTO bucket_moves (bucket_from, bucket_to, source, destination, state)
  VALUES (:bucket_from, :bucket_to, :source, :destination, 'copying')
  ON CONFLICT (bucket_from, bucket_to) DO UPDATE SET source = excluded.source, destination = excluded.destination,
    state = excluded.state, checksums = NULL, started_at = excluded.started_at, updated_at = excluded.updated_at`);
const SET_MOVE_STATE = sql(`UPDATE bucket_moves SET state = :state, checksums = coalesce(:checksums, checksums),
  updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE bucket_from = :bucket_from AND bucket_to = :bucket_to`);

const BUCKETS_OPTION = /^(\d{1,4})(?:-(\d{1,4}))?$/;

/** --buckets B or B-C, inclusive, within 0..1023. */
function bucketRange(value: string | undefined): BucketRange {
  const [, first, last] = BUCKETS_OPTION.exec(value?.trim() ?? "") ?? [];
  if (first === undefined) throw new UsageError("--buckets must be a bucket or a range of buckets, e.g. 600 or 600-609");
  const range = { bucket_from: Number(first), bucket_to: Number(last ?? first) };
  if (range.bucket_from > range.bucket_to || range.bucket_to >= BUCKETS)
    throw new UsageError(`--buckets: buckets are 0-${BUCKETS - 1}, first to last`);
  return range;
}

const described = ({ bucket_from, bucket_to }: BucketRange) =>
  bucket_from === bucket_to ? `bucket ${bucket_from}` : `buckets ${bucket_from}-${bucket_to}`;

/** The shard named by --to, a declared one. */
function shardOption(pool: DatabasePool, name: string | undefined): Shard {
  if (!name) throw new UsageError("--to is required");
  const shard = pool.shards.find((declared) => declared.name === name);
  if (!shard) throw new UsageError(`--to: ${name} is no shard of the pool (${pool.shards.map((s) => s.name).join(", ")})`);
  return shard;
}

/** The one shard the SHARD_MAP read (--shard-map, else wrangler.toml's) gives every bucket of the range. */
function mappedShard(pool: DatabasePool, options: BucketOptions, range: BucketRange): Shard {
  const map = readShardMap(pool.env, options.shardMap ?? pool.env.SHARD_MAP ?? "");
  if (typeof map === "string")
    throw new UsageError(`${options.shardMap === undefined ? "wrangler.toml's " : "--shard-map: "}${map}`);
  const names = new Set(map.slice(range.bucket_from, range.bucket_to + 1));
  if (names.size > 1) throw new UsageError(`SHARD_MAP gives ${described(range)} to several shards (${[...names].join(", ")})`);
  const [name] = names;
  return shardOption(pool, name);
}

const fencesOf = async (db: D1Database, range: BucketRange) =>
  (await retryTransient(() => FENCES.bind(db, { ...range }).all<{ bucket: number; state: string }>())).results;

const setFences = (db: D1Database, range: BucketRange, state: "moving" | "moved") =>
  retryTransient(() => SET_FENCES.bind(db, { ...range, state, keep: 0 }).run());

/** The destination's fences: `incoming` on each bucket it does not fence already (`moved`: a move back's). */
const fenceIncoming = (db: D1Database, range: BucketRange) =>
  retryTransient(() => SET_FENCES.bind(db, { ...range, state: "incoming", keep: 1 }).run());

const liftFences = (db: D1Database, range: BucketRange, state: "moving" | "incoming" | null) =>
  retryTransient(() => LIFT_FENCES.bind(db, { ...range, state }).run());

const setMoveState = (pool: DatabasePool, range: BucketRange, state: Move["state"], checksums: string | null = null) =>
  retryTransient(() => SET_MOVE_STATE.bind(pool.directory, { ...range, state, checksums }).run());

/** The move of exactly this range, and any other unfinished move overlapping it (which this one must not cross). */
async function movesOf(pool: DatabasePool, range: BucketRange): Promise<{ move: Move | undefined; crossing: Move[] }> {
  const { results } = await retryTransient(() => MOVES_OVERLAPPING.bind(pool.directory, { ...range }).all<Move>());
  const same = (move: Move) => move.bucket_from === range.bucket_from && move.bucket_to === range.bucket_to;
  return {
    move: results.find(same),
    crossing: results.filter((move) => !same(move) && (move.state === "copying" || move.state === "copied")),
  };
}

/** The move of exactly this range in one of `states`; else a usage error saying what there is. */
async function recordedMove(pool: DatabasePool, range: BucketRange, states: Move["state"][], command: string): Promise<Move> {
  const { move } = await movesOf(pool, range);
  if (move && states.includes(move.state)) return move;
  const found = move ? `its move to ${move.destination} is ${move.state}` : "no move of them is recorded (bucket_moves)";
  throw new UsageError(`${command} --buckets: ${described(range)}: ${found}`);
}

/** Stops, naming the shard, unless each of its fences on the range is in `allowed`. */
async function assertFences(shard: Shard, range: BucketRange, allowed: string[]) {
  const refused = (await fencesOf(shard.db, range)).filter(({ state }) => !allowed.includes(state));
  if (refused.length > 0) {
    const listed = refused.map(({ bucket, state }) => `${bucket} ${state}`).join(", ");
    throw new UsageError(`${shard.name} has fences on ${described(range)} (${listed}): another move is under way`);
  }
}

/**
 * `bucket move`: fences the destination `incoming`, then the source `moving`, copies the buckets' rows, and verifies
 * them table by table. Run again after a stop, it copies again from a clean destination.
 */
export async function moveBuckets(pool: DatabasePool, options: BucketOptions): Promise<Record<string, unknown>> {
  const started = Date.now();
  const range = bucketRange(options.buckets);
  const source = mappedShard(pool, options, range);
  const destination = shardOption(pool, options.to);
  if (destination.name === source.name)
    throw new UsageError(`--to: SHARD_MAP gives ${described(range)} to ${source.name} already`);
  const { move, crossing } = await movesOf(pool, range);
  if (crossing.length > 0) {
    const [other] = crossing;
    throw new UsageError(
      `${described(other)} are being moved to ${other.destination} (${other.state}): finish or abort that move first`,
    );
  }
  const resuming = move !== undefined && (move.state === "copying" || move.state === "copied");
  if (resuming && (move.source !== source.name || move.destination !== destination.name)) {
    throw new UsageError(
      `${described(range)} are being moved from ${move.source} to ${move.destination} (${move.state}): finish or abort that move first`,
    );
  }
  await assertKnownTables(source);
  if (!resuming) {
    await assertFences(destination, range, ["moved"]);
    await assertFences(source, range, []);
    if (await holdsRows(destination.db, range))
      throw new UsageError(`${destination.name} holds rows of ${described(range)} already`);
    await retryTransient(() =>
      START_MOVE.bind(pool.directory, { ...range, source: source.name, destination: destination.name }).run(),
    );
  }
  await fenceIncoming(destination.db, range);
  await setFences(source.db, range, "moving");
  // Whatever a stopped run left on the destination (nothing else of the buckets is there: checked above) goes first.
  if (resuming) await deleteRows(destination.db, range);
  // Stopped by a failed copy or verify, the move keeps its fences (writes refused) until run again or aborted.
  const fencesStay = (error: Error) =>
    new Error(`${error.message}; the fences stay: run bucket move again, or bucket abort`, { cause: error });
  const copied = await copyRows(source, destination, range).catch((error) => {
    throw fencesStay(error);
  });
  const verified = await verifyCopy(source, destination, range).catch((error) => {
    throw fencesStay(error);
  });
  const tables = Object.fromEntries(
    Object.entries(verified).map(([table, digest]) => [table, { copied: copied[table], ...digest }]),
  );
  await setMoveState(pool, range, "copied", JSON.stringify(tables));
  return {
    ...range,
    source: source.name,
    destination: destination.name,
    state: "copied",
    seconds: Math.round((Date.now() - started) / 100) / 10,
    tables,
  };
}

/**
 * `bucket finish`: once SHARD_MAP routes the buckets to the destination, fences the source `moved`, then lifts the
 * destination's fences (`incoming`, and a move back's `moved`).
 */
export async function finishMove(pool: DatabasePool, options: BucketOptions): Promise<Record<string, unknown>> {
  const range = bucketRange(options.buckets);
  const destination = shardOption(pool, options.to);
  const move = await recordedMove(pool, range, ["copied", "finished"], "bucket finish");
  if (move.destination !== destination.name)
    throw new UsageError(`--to: ${described(range)} were copied to ${move.destination}, not ${destination.name}`);
  const mapped = mappedShard(pool, options, range);
  if (mapped.name !== destination.name) {
    throw new UsageError(
      `SHARD_MAP gives ${described(range)} to ${mapped.name}: route them to ${destination.name} and deploy first (or give the deployed map with --shard-map)`,
    );
  }
  await setFences(shardOption(pool, move.source).db, range, "moved");
  await liftFences(destination.db, range, null);
  await setMoveState(pool, range, "finished");
  return { ...range, source: move.source, destination: destination.name, state: "finished" };
}

/** `bucket delete`: the buckets' rows deleted on the source of their finished move, which keeps its `moved` fence. */
export async function deleteMovedRows(pool: DatabasePool, options: BucketOptions): Promise<Record<string, unknown>> {
  const range = bucketRange(options.buckets);
  const move = await recordedMove(pool, range, ["finished", "deleted"], "bucket delete");
  const source = shardOption(pool, move.source);
  const fences = await fencesOf(source.db, range);
  if (fences.length !== move.bucket_to - move.bucket_from + 1 || fences.some(({ state }) => state !== "moved"))
    throw new UsageError(`${source.name} has not fenced every bucket of ${described(range)} moved: nothing deleted`);
  if (mappedShard(pool, options, range).name === source.name)
    throw new UsageError(`SHARD_MAP gives ${described(range)} to ${source.name}: nothing deleted`);
  const deleted = await deleteRows(source.db, range);
  await setMoveState(pool, range, "deleted");
  return { ...range, shard: source.name, state: "deleted", deleted };
}

/**
 * `bucket abort`, before finish: the destination's copy deleted, then its `incoming` fences and the source's lifted. The
 * destination is left fenced as before the move: not at all, or `moved` where it is the buckets' old source (a move
 * back), which still turns away an isolate on the map from before they left it.
 */
export async function abortMove(pool: DatabasePool, options: BucketOptions): Promise<Record<string, unknown>> {
  const range = bucketRange(options.buckets);
  const move = await recordedMove(pool, range, ["copying", "copied"], "bucket abort");
  const source = mappedShard(pool, options, range);
  if (source.name !== move.source) {
    throw new UsageError(
      `SHARD_MAP gives ${described(range)} to ${source.name}, not to ${move.source} where they are moved from: too late to abort (bucket finish)`,
    );
  }
  const destination = shardOption(pool, move.destination);
  // The copy goes while still fenced (lists leave it out, writes are refused), then the fences.
  const deleted = await deleteRows(destination.db, range);
  await liftFences(destination.db, range, "incoming");
  await liftFences(source.db, range, "moving");
  await setMoveState(pool, range, "aborted");
  return { ...range, source: move.source, destination: destination.name, state: "aborted", deleted };
}
