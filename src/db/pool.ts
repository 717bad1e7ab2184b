/*
 * The pool of D1 shards (docs/SHARDING.md): each organization lives in one of BUCKETS buckets, and [vars] SHARD_MAP
 * says which shard (a `SHARD_<n>` D1 binding) holds each bucket, e.g. "SHARD_0=0-511 SHARD_1=512-1023".
 */
import { atRandom, BUCKETS } from "./buckets";

/** A shard's binding name. */
export type ShardName = `SHARD_${number}`;

const SHARD_NAME = /^SHARD_(0|[1-9]\d*)$/;
const ENTRY = /^(SHARD_\d+)=(\d+)(?:-(\d+))?$/;

interface Pool {
  /** The shard of each bucket, by bucket. */
  shardByBucket: ShardName[];
  /** Every shard the Worker declares, by number (those without buckets too: one just added, or emptied by moves). */
  shards: ShardName[];
  /** The buckets of each shard that takes new organizations (OPEN_SHARDS), by shard. */
  openBuckets: Map<ShardName, number[]>;
}

/** Why a SHARD_MAP is refused; its message names the fault in the value, nothing else. */
class ShardMapError extends Error {}

/** The Worker's D1 binding by name (undefined when it declares none of that name). */
const bindingNamed = (env: Env, name: string) =>
  (env as unknown as Record<string, D1Database | undefined>)[name] as D1Database | undefined;

const isD1Binding = (value: unknown) => typeof (value as D1Database | undefined)?.withSession === "function";

/** The declared shards: every `SHARD_<n>` D1 binding, by number (SHARD_MAP or not: the admin CLI's `directory fill`). */
export function declaredShards(env: Env): ShardName[] {
  return (Object.keys(env).filter((name) => SHARD_NAME.test(name) && isD1Binding(bindingNamed(env, name))) as ShardName[]).sort(
    (a, b) => Number(a.slice(6)) - Number(b.slice(6)),
  );
}

/** "3-7" or "3", for messages. */
const range = (first: number, last: number) => (first === last ? `${first}` : `${first}-${last}`);

/**
 * OPEN_SHARDS checked: declared shards, space-separated. The buckets of each that SHARD_MAP gives buckets (one given
 * none yet, a shard just added, takes none); none of them, or unset, or empty: every shard's.
 */
function parseOpenShards(value: string | undefined, shardByBucket: ShardName[], shards: ShardName[]): Map<ShardName, number[]> {
  const bucketsOf = new Map<ShardName, number[]>();
  shardByBucket.forEach((shard, bucket) => {
    bucketsOf.set(shard, [...(bucketsOf.get(shard) ?? []), bucket]);
  });
  const open = new Map<ShardName, number[]>();
  for (const name of (value ?? "").trim().split(/\s+/).filter(Boolean)) {
    if (!shards.includes(name as ShardName))
      throw new ShardMapError(`OPEN_SHARDS names ${name}, which is no D1 binding of the Worker`);
    const buckets = bucketsOf.get(name as ShardName);
    if (buckets) open.set(name as ShardName, buckets);
  }
  return open.size > 0 ? open : bucketsOf;
}

/** SHARD_MAP's value checked: names of declared shards with inclusive ranges that name every bucket exactly once. */
function parseShardMap(value: string, shards: ShardName[], openShards?: string): Pool {
  const entries = value.trim().split(/\s+/).filter(Boolean);
  if (entries.length === 0) throw new ShardMapError("SHARD_MAP is empty");
  const shardByBucket: (ShardName | undefined)[] = Array.from({ length: BUCKETS }, () => undefined);
  for (const entry of entries) {
    const [, name, firstText, lastText] = ENTRY.exec(entry) ?? [];
    if (!name) throw new ShardMapError(`SHARD_MAP entry "${entry}" is not SHARD_<n>=<first>-<last>`);
    if (!shards.includes(name as ShardName))
      throw new ShardMapError(`SHARD_MAP names ${name}, which is no D1 binding of the Worker`);
    const [first, last] = [Number(firstText), Number(lastText ?? firstText)];
    if (first > last || last >= BUCKETS) {
      throw new ShardMapError(`SHARD_MAP entry "${entry}": buckets are 0-${BUCKETS - 1}, first to last`);
    }
    for (let bucket = first; bucket <= last; bucket++) {
      const named = shardByBucket[bucket];
      if (named) throw new ShardMapError(`SHARD_MAP names bucket ${bucket} twice (${named}, ${name})`);
      shardByBucket[bucket] = name as ShardName;
    }
  }
  const missing = shardByBucket.indexOf(undefined);
  if (missing === -1) {
    return {
      shardByBucket: shardByBucket as ShardName[],
      shards,
      openBuckets: parseOpenShards(openShards, shardByBucket as ShardName[], shards),
    };
  }
  let last = missing;
  while (last + 1 < BUCKETS && shardByBucket[last + 1] === undefined) last++;
  throw new ShardMapError(`SHARD_MAP names no shard for bucket ${range(missing, last)}`);
}

/**
 * The shard of each bucket by the SHARD_MAP `value` (the admin CLI's bucket commands: wrangler.toml's, or the one they
 * are given), or why the value is refused.
 */
export function readShardMap(env: Env, value: string): ShardName[] | string {
  try {
    return parseShardMap(value, declaredShards(env)).shardByBucket;
  } catch (error) {
    if (error instanceof ShardMapError) return error.message;
    throw error;
  }
}

/** Per isolate, by SHARD_MAP's and OPEN_SHARDS' values: the pool, or why a value is refused (logged once). */
const pools = new Map<string, Pool | ShardMapError>();

function readPool(env: Env): Pool | ShardMapError {
  const value = env.SHARD_MAP ?? "";
  const cacheKey = `${value}\n${env.OPEN_SHARDS ?? ""}`;
  let pool = pools.get(cacheKey);
  if (!pool) {
    try {
      pool = parseShardMap(value, declaredShards(env), env.OPEN_SHARDS);
    } catch (error) {
      if (!(error instanceof ShardMapError)) throw error;
      pool = error;
      console.error(
        JSON.stringify({
          level: "error",
          message: "no request can be served: SHARD_MAP or OPEN_SHARDS is invalid",
          reason: error.message,
        }),
      );
    }
    pools.set(cacheKey, pool);
  }
  return pool;
}

/** The pool; a SHARD_MAP refused throws (an internal error: no database can be chosen). */
function pool(env: Env): Pool {
  const read = readPool(env);
  if (read instanceof ShardMapError) throw read;
  return read;
}

/** Whether SHARD_MAP is valid (the reason it is not was logged). */
export const shardMapIsValid = (env: Env) => !(readPool(env) instanceof ShardMapError);

/** The name of the shard holding `bucket`. */
export const shardNameOf = (env: Env, bucket: number): ShardName => pool(env).shardByBucket[bucket];

/** The D1 binding of the shard named `name`, which must be a declared shard. */
export function shardNamed(env: Env, name: ShardName): D1Database {
  const binding = bindingNamed(env, name);
  if (!pool(env).shards.includes(name) || !binding) throw new Error(`${name} is no shard of the pool`);
  return binding;
}

/** The D1 binding of the shard holding `bucket`. */
export const shardOf = (env: Env, bucket: number): D1Database => shardNamed(env, shardNameOf(env, bucket));

/** Every shard the Worker declares, by number: what the crons and the delivery sweep go over. */
export const allShards = (env: Env): ShardName[] => pool(env).shards;

/** Whether `name` is a shard of the pool (a queue message's `shard`, say). */
export const isShardName = (env: Env, name: string): name is ShardName => pool(env).shards.includes(name as ShardName);

/**
 * The buckets a new organization may be placed in (docs/SHARDING.md §2): those of `preferred` (the caller's key's
 * shard, where the organization is then reached in one round trip; the admin CLI's --shard) when it is open, else those
 * of an open shard chosen uniformly at random, so that new organizations spread evenly over the open shards whatever
 * number of buckets SHARD_MAP gives each.
 */
export function placementBuckets(env: Env, preferred: ShardName | null): number[] {
  const { openBuckets } = pool(env);
  const own = preferred === null ? undefined : openBuckets.get(preferred);
  return own ?? atRandom([...openBuckets.values()]);
}

/** The shards taking new organizations (OPEN_SHARDS as checked), in the order it names them. */
export const openShards = (env: Env): ShardName[] => [...pool(env).openBuckets.keys()];
