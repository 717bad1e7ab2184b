import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { BUCKETS, bucketedSince, bucketOfId, bucketOfPrefix, LEGACY_BUCKET } from "../../src/db/buckets";
import { allShards, type ShardName, shardNamed, shardNameOf } from "../../src/db/pool";
import { type Instruments, instrumentD1 } from "./instrumented-d1";

/*
 * The tests' view of the pool of D1 databases (docs/SHARDING.md): the directory (env.DIRECTORY) and the shards. A
 * test reaches the shard holding a row through an id of it, never a shard by name, so that where ids place their
 * organizations can change without touching the tests.
 */

/** The names of every shard of the pool, by number. */
export const allShardNames = (): ShardName[] => allShards(env);

/** Every shard of the pool (the Worker's SHARD_<n> bindings), by number. */
export const shards = (): D1Database[] => allShards(env).map((name) => shardNamed(env, name));

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The bucket of what `id` names (docs/SHARDING.md §2): an id the service made (an organization's, or of anything in
 * one, its users' included), or an API key or its prefix.
 */
export const bucketFor = (id: string): number =>
  UUID.test(id) ? bucketOfId(id, bucketedSince(env)) : bucketOfPrefix(id.split(".")[0]);

/** The name of the shard holding what `id` names (`bucketFor`). */
export const shardNameFor = (id: string): ShardName => shardNameOf(env, bucketFor(id));

/** The buckets of the shard named `shard`. */
const bucketsOf = (shard: ShardName) =>
  Array.from({ length: BUCKETS }, (_, bucket) => bucket).filter((b) => shardNameOf(env, b) === shard);

let placed = 0;
/** The next organization placed without a shard named goes to the first shard again, as at the start of a file. */
export function placeFromFirstShard(): void {
  placed = 0;
}

/**
 * A bucket for a new organization of the fixtures: on the shard named `shard`, else on each shard in turn (so that every
 * test file places organizations on every shard, and a routing mistake in any route fails a test); at random among
 * that shard's buckets, never the legacy one (made only by the seed, and by requests before BUCKETED_SINCE).
 */
export function bucketForNewOrganization(shard?: ShardName): number {
  const on = shard ?? allShards(env)[placed++ % allShards(env).length];
  const buckets = bucketsOf(on).filter((bucket) => bucket !== LEGACY_BUCKET);
  return buckets[Math.floor(Math.random() * buckets.length)];
}

/** The shard holding what `id` names (`shardNameFor`): where a test reads or writes its rows with plain SQL. */
export const databaseOf = (id: string): D1Database => shardNamed(env, shardNameFor(id));

/** A request's `bindings` that put `db` (an instrumented D1) in the place of the shard holding what `id` names. */
export const inPlaceOfShardFor = (id: string, db: D1Database): Partial<Env> => ({ [shardNameFor(id)]: db });

/** `sql`'s count (a column `n`) on each shard, summed: a count over the whole pool. */
export async function countOnShards(sql: string, ...values: unknown[]): Promise<number> {
  const counts = await Promise.all(
    shards().map((db) =>
      db
        .prepare(sql)
        .bind(...values)
        .first<number>("n"),
    ),
  );
  return counts.reduce<number>((sum, count) => sum + (count ?? 0), 0);
}

/** The rows of `sql` on every shard, shard after shard. */
export async function rowsOnShards<Row = Record<string, unknown>>(sql: string, ...values: unknown[]): Promise<Row[]> {
  const results = await Promise.all(
    shards().map((db) =>
      db
        .prepare(sql)
        .bind(...values)
        .all<Row>(),
    ),
  );
  return results.flatMap((result) => result.results);
}

/**
 * Every shard instrumented alike (instrumented-d1.ts), and the directory counted: `bindings`, a request's, whichever
 * database it reaches, and the round trips each has seen so far, by binding name.
 */
export function countedShards(instruments: Instruments = {}) {
  const counted = [
    ...allShards(env).map((name) => ({ name, ...instrumentD1(shardNamed(env, name), instruments) })),
    { name: "DIRECTORY", ...instrumentD1(env.DIRECTORY) },
  ];
  return {
    bindings: Object.fromEntries(counted.map(({ name, db }) => [name, db])) as Partial<Env>,
    trips: (): Record<string, number> => Object.fromEntries(counted.map(({ name, counter }) => [name, counter.trips])),
  };
}

/** Every shard instrumented alike (`countedShards`), as a request's `bindings`. */
export const instrumentedShards = (instruments: Instruments = {}): Partial<Env> => countedShards(instruments).bindings;

/** A SHARD_MAP over four shards: SHARD_2 and SHARD_3 hold a bucket each, the rest is as wrangler.toml's. */
export const FOUR_SHARD_MAP = "SHARD_0=0-511 SHARD_1=512-1021 SHARD_2=1022 SHARD_3=1023";

/**
 * A request's (or a cron's, a queue batch's) `bindings` declaring a pool of four shards: SHARD_0 and SHARD_1 as
 * wrangler.toml has them, and two more databases (test/vitest.config.ts), migrated, as SHARD_2 and SHARD_3, with
 * FOUR_SHARD_MAP; `open` shards take new organizations. The Worker keeps a pool per SHARD_MAP value, so FOUR_SHARD_MAP is
 * only ever given with these bindings.
 */
export async function fourShardPool(open = "SHARD_0 SHARD_1 SHARD_2 SHARD_3"): Promise<Partial<Env>> {
  const spares = { SHARD_2: env.TEST_SPARE_SHARD_2, SHARD_3: env.TEST_SPARE_SHARD_3 };
  for (const db of Object.values(spares)) await applyD1Migrations(db, env.TEST_SHARD_MIGRATIONS);
  return { ...spares, SHARD_MAP: FOUR_SHARD_MAP, OPEN_SHARDS: open } as Partial<Env>;
}
