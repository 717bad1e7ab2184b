import { bucketOfPrefix } from "./buckets";
import type { Queryable } from "./d1";
import { BucketMovedError } from "./fences";
import { sql, type Values } from "./sql";

/**
 * Who is asking: a request's API key (its prefix and the SHA-256, hex, of the whole key), not yet checked; the same
 * key vouched for by its home shard (`vouched`); an operator (the admin CLI) acting as a user; or nobody (a route open
 * without a key). Statements see it as `:caller_prefix`, `:caller_key` and the `:vouched_*` values (CALLER_CTE).
 */
export class Caller {
  /** What CALLER_CTE binds. */
  readonly values: Values;

  private constructor(
    readonly prefix: string | null,
    readonly keyHash: string | null,
    operatorUserId: string | null,
    readonly vouch: Vouch | null = null,
  ) {
    this.values = {
      caller_prefix: prefix,
      caller_key: keyHash ?? operatorUserId,
      vouched_user_id: vouch?.user_id ?? null,
      vouched_project_id: vouch?.project_id ?? null,
      vouched_read_only: vouch?.read_only ?? null,
      vouched_last_used_at: vouch?.last_used_at ?? null,
      vouched_expires_at: vouch?.expires_at ?? null,
      vouched_username: vouch?.username ?? null,
      vouched_email: vouch?.email ?? null,
      vouched_created_at: vouch?.created_at ?? null,
      // The bucket of the key row this shard reads: none for a key vouched for by its home, whose row is not read here.
      key_bucket: prefix === null || vouch !== null ? null : bucketOfPrefix(prefix),
    };
  }

  static withKey(prefix: string, keyHash: string): Caller {
    return new Caller(prefix, keyHash, null);
  }

  /**
   * The key `keyed` found live by the key check of its home shard (`vouch`), for a batch on another shard, which holds
   * no row of that key (docs/SHARDING.md §3.2); never built from a request's input, only from that check's answer.
   */
  static vouched(keyed: Caller, vouch: Vouch): Caller {
    return new Caller(keyed.prefix, keyed.keyHash, null, vouch);
  }

  /** An operator acting as this user, with the user's roles; never built from a request. */
  static operatorAs(userId: string): Caller {
    return new Caller(null, null, userId);
  }

  /** No key: CALLER_CTE finds no one, and there is no key to check (its batches run without the check). */
  static readonly nobody = new Caller(null, null, null);
}

/** The presented key is unknown, wrong, expired or revoked. */
export class UnknownApiKeyError extends Error {
  constructor() {
    super("unknown API key");
  }
}

/**
 * The live key matching :caller_prefix and :caller_key (its hash): a fragment to embed as a CTE named `caller`,
 * so that a request's key check rides in the same statement as its data. The lookup goes through the hash's index
 * only (`+prefix` keeps SQLite off the prefix index): an unknown prefix costs exactly what a wrong secret costs,
 * and a hash lookup leaks nothing about stored keys, whatever the timing. An operator (`Caller.operatorAs`)
 * binds no prefix and a user id as :caller_key; a request always has a prefix, so it can never take that branch.
 * A key homed on another shard (`Caller.vouched`) is what its home shard's check found, bound as the `:vouched_*`
 * values; a request never binds them from its input. It also defines `membership`: the caller's organizations with
 * the role the request acts in (`role`), which is `viewer` for a read-only key whatever the user's role, and the role
 * it reads in (`read_role`: the user's, for a read-only key reads what its user reads); membership is always this
 * shard's own. Every access check goes through it.
 */
export const CALLER_CTE = `caller AS (
  SELECT user_id, project_id, read_only, last_used_at, expires_at FROM api_keys
   WHERE key_hash = :caller_key AND +prefix = :caller_prefix AND revoked_at IS NULL AND :vouched_user_id IS NULL
     AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  UNION ALL
  SELECT id, NULL, 0, NULL, NULL FROM users WHERE :caller_prefix IS NULL AND id = :caller_key
  UNION ALL
  SELECT :vouched_user_id, :vouched_project_id, :vouched_read_only, :vouched_last_used_at, :vouched_expires_at WHERE :vouched_user_id IS NOT NULL),
membership AS (
  SELECT organization_id, CASE WHEN (SELECT read_only FROM caller) = 1 THEN 'viewer' ELSE role END AS role,
         role AS read_role
    FROM organization_members WHERE user_id = (SELECT user_id FROM caller))`;

/**
 * The vouched caller's user row (`Caller.vouched`), copied to this shard when absent (docs/SHARDING.md §1: a user's
 * id, username, email and created_at never change, so a copy is never stale): the start of a statement that goes
 * before those that make the caller a member here, to be completed with `AND` the condition they are made under.
 */
export const COPY_VOUCHED_USER = `INSERT OR IGNORE INTO users (id, username, email, created_at)
  SELECT :vouched_user_id, :vouched_username, :vouched_email, :vouched_created_at WHERE :vouched_user_id IS NOT NULL`;

/**
 * What the database found of a live key: whose it is, when its use was last recorded, and when it expires (a cached
 * answer is refused from that instant: src/http/edge-cache.ts).
 */
export interface LiveKey {
  user_id: string;
  last_used_at: string | null;
  expires_at: string | null;
}

export const KEY_CHECK = sql<LiveKey>(`WITH ${CALLER_CTE} SELECT user_id, last_used_at, expires_at FROM caller`);

/**
 * What a key's home shard vouches for, for a request on another shard (docs/SHARDING.md §3.2): the key's user, project
 * and read-only flag, when its use was last recorded, and the user's row (id, username, email and created_at never
 * change), which a shard where the user has none yet copies (an invitation's accept).
 */
export interface Vouch extends LiveKey {
  project_id: string;
  read_only: number;
  username: string;
  email: string;
  created_at: string;
}

const VOUCH = sql<Vouch & { moved: number }>(
  `WITH ${CALLER_CTE}
   SELECT c.user_id, c.project_id, c.read_only, c.last_used_at, c.expires_at, u.username, u.email, u.created_at,
          EXISTS (SELECT 1 FROM bucket_fences WHERE bucket = :key_bucket AND state = 'moved') AS moved
     FROM caller c JOIN users u ON u.id = c.user_id`,
);

/**
 * The key check alone, on the key's home shard: what it vouches for, or null when the key is not live there. One
 * round trip; `caller` must be a key's (`Caller.withKey`). A key whose bucket moved away from this shard is a copy
 * left behind: refused (`BucketMovedError`).
 */
export async function vouchFor(db: Queryable, caller: Caller): Promise<Vouch | null> {
  const found = await VOUCH.bind(db, {}, caller.values).first<Vouch & { moved: number }>();
  if (!found) return null;
  const { moved, ...vouch } = found;
  if (moved) throw new BucketMovedError();
  return vouch;
}
