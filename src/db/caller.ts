import type { Queryable } from "./d1";

/**
 * Who is asking: the key a request presented (its prefix and the SHA-256, hex, of the whole key), not yet
 * checked. The database checks it inside each query's own round trip (see `batchAsCaller`), which then records
 * whose key it is.
 */
export class Caller {
  /** The key's user, once the database has found the key live; null until then. */
  userId: string | null = null;

  constructor(
    readonly prefix: string,
    readonly keyHash: string,
  ) {}
}

/** The presented key is unknown, wrong, expired or revoked. */
export class UnknownApiKeyError extends Error {
  constructor() {
    super("unknown API key");
  }
}

/**
 * The live key matching ?1 (prefix) and ?2 (key hash): a fragment to embed as a CTE named `caller`, so that a
 * request's key check rides in the same statement as its data. The lookup goes through the hash's index only
 * (`+prefix` keeps SQLite off the prefix index): an unknown prefix costs exactly what a wrong secret costs,
 * and a hash lookup leaks nothing about stored keys, whatever the timing.
 */
export const CALLER_CTE = `caller AS (
  SELECT user_id, project_id FROM api_keys
   WHERE key_hash = ?2 AND +prefix = ?1 AND revoked_at IS NULL
     AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`;

/**
 * Runs the statements in one batch (one round trip, one transaction) behind the key check, and records the
 * caller's user. Statements see the key as ?1 and ?2 (embed CALLER_CTE); those that write must select from
 * `caller`, so that an unknown key writes nothing. Throws `UnknownApiKeyError` when the key is not live; the statements' results otherwise.
 */
export async function batchAsCaller<T = Record<string, unknown>>(
  db: Queryable,
  caller: Caller,
  statements: D1PreparedStatement[],
): Promise<D1Result<T>[]> {
  const [found, ...results] = await db.batch<T>([
    db.prepare(`WITH ${CALLER_CTE} SELECT user_id FROM caller`).bind(caller.prefix, caller.keyHash),
    ...statements,
  ]);
  const userId = (found.results[0] as { user_id: string } | undefined)?.user_id;
  if (!userId) throw new UnknownApiKeyError();
  caller.userId = userId;
  return results;
}

/** Checks the key alone (one round trip), for requests that failed before reaching their own query. */
export async function verifyCaller(db: Queryable, caller: Caller): Promise<void> {
  await batchAsCaller(db, caller, []);
}
