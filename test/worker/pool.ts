import { env } from "cloudflare:workers";
import { bucketedSince, bucketOfId, bucketOfPrefix } from "../../src/db/buckets";
import { allShards, type ShardName, shardNamed, shardNameOf, shardOf } from "../../src/db/pool";
import { type Instruments, instrumentD1 } from "./instrumented-d1";

/*
 * The tests' view of the pool of D1 databases (docs/SHARDING.md): the directory (env.DIRECTORY) and the shards. A
 * test reaches the shard holding a row through an id of it, never a shard by name, so that where ids place their
 * organizations can change without touching the tests.
 */

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

/** The shard the fixtures make a new organization (with its first user) on: bucket 0's, as every organization's today. */
export const shardForNewOrganization = (): D1Database => shardOf(env, 0);

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

/** Every shard instrumented alike (instrumented-d1.ts), as a request's `bindings`: whichever shard it reaches. */
export const instrumentedShards = (instruments: Instruments = {}): Partial<Env> =>
  Object.fromEntries(allShards(env).map((name) => [name, instrumentD1(shardNamed(env, name), instruments).db]));
