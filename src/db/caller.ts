import type { Queryable } from "./d1";
import { type Role, WRITER_ROLES } from "./roles";

/** last_used_at is kept to the hour: a key's use is written at most once an hour. */
const KEY_USE_RESOLUTION_MS = 3_600_000;

/**
 * Who is asking: a request's API key, not yet checked, or an operator (the admin CLI) acting as a user. The
 * database checks it inside each query's own round trip (see `batchAsCaller`), which then records whose it is.
 */
export class Caller {
  /** The user, once the database has found the key live (or the operator's user); null until then. */
  userId: string | null = null;

  /** When the key was last recorded as used (null: never, or an operator), once the database has found it. */
  lastUsedAt: string | null = null;

  /** Events this request committed that a webhook may want (EVENT_HANDOFF): handed to the delivery queue after the answer. */
  readonly eventsToDeliver: string[] = [];

  /** Whether a batch with the key check has been sent (it checks the key, whatever else happens to it). */
  queried = false;

  /** What statements bind as ?1 and ?2 for CALLER_CTE. */
  readonly credentials: readonly [prefix: string | null, keyHashOrUserId: string];

  private constructor(prefix: string | null, keyHashOrUserId: string) {
    this.credentials = [prefix, keyHashOrUserId];
  }

  /** The presented key: its prefix and the SHA-256 (hex) of the whole key. */
  static withKey(prefix: string, keyHash: string): Caller {
    return new Caller(prefix, keyHash);
  }

  /** Whether the key's use should be recorded: it was found live, and its last recorded use is over an hour old. */
  get keyUseIsStale(): boolean {
    if (this.credentials[0] === null || this.userId === null) return false;
    return this.lastUsedAt === null || Date.parse(this.lastUsedAt) < Date.now() - KEY_USE_RESOLUTION_MS;
  }

  /** An operator acting as this user, with the user's roles; never built from a request. */
  static operatorAs(userId: string): Caller {
    return new Caller(null, userId);
  }
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
 * and a hash lookup leaks nothing about stored keys, whatever the timing. An operator (`Caller.operatorAs`)
 * binds no prefix and a user id as ?2; a request always has a prefix, so it can never take that branch.
 * It also defines `membership`: the caller's organizations with the role the request acts in (`role`), which is
 * `viewer` for a read-only key whatever the user's role, and the role it reads in (`read_role`: the user's, for a
 * read-only key reads what its user reads). Every access check goes through it.
 */
export const CALLER_CTE = `caller AS (
  SELECT user_id, project_id, read_only, last_used_at FROM api_keys
   WHERE key_hash = ?2 AND +prefix = ?1 AND revoked_at IS NULL
     AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  UNION ALL
  SELECT id, NULL, 0, NULL FROM users WHERE ?1 IS NULL AND id = ?2),
membership AS (
  SELECT organization_id, CASE WHEN (SELECT read_only FROM caller) = 1 THEN 'viewer' ELSE role END AS role,
         role AS read_role
    FROM organization_members WHERE user_id = (SELECT user_id FROM caller))`;

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
  caller.queried = true;
  const [found, ...results] = await db.batch<T>([
    db.prepare(`WITH ${CALLER_CTE} SELECT user_id, last_used_at FROM caller`).bind(...caller.credentials),
    ...statements,
  ]);
  const key = found.results[0] as { user_id: string; last_used_at: string | null } | undefined;
  if (!key) throw new UnknownApiKeyError();
  caller.userId = key.user_id;
  caller.lastUsedAt = key.last_used_at;
  for (const { results: rows } of results) {
    if (rows.length === 0 || !("event_to_deliver" in (rows[0] as object))) continue;
    for (const row of rows as { event_to_deliver: string | null }[]) {
      if (row.event_to_deliver) caller.eventsToDeliver.push(row.event_to_deliver);
    }
  }
  return results;
}

/** Checks the key alone (one round trip), for requests that failed before reaching their own query. */
export async function verifyCaller(db: Queryable, caller: Caller): Promise<void> {
  await batchAsCaller(db, caller, []);
}

/** Apps the caller (CALLER_CTE) can see, with the caller's role in the app's organization. */
const MEMBER_APPS = `SELECT a.id, a.name, a.project_id, a.created_at, COALESCE(a.updated_at, a.created_at) AS updated_at, m.role
  FROM apps a
  JOIN projects p ON p.id = a.project_id
  JOIN workspaces w ON w.id = p.workspace_id
  JOIN membership m ON m.organization_id = w.organization_id`;

/** The app ?3 as the caller sees it (no row: no such app, or the caller is not a member): a CTE named `app`. */
export const APP_BY_ID_CTE = `app AS (${MEMBER_APPS} WHERE a.id = ?3)`;

/** The app of variant ?3 as the caller sees it: a CTE named `app`. */
export const APP_OF_VARIANT_CTE = `app AS (${MEMBER_APPS} WHERE a.id = (SELECT app_id FROM app_variants WHERE id = ?3))`;

/**
 * The app a config request names, as the caller sees it: a CTE named `app`. By id (?3; a name ?4 given too must
 * be its name), else by name (?4) in the key's project only, else as the app of variant revision ?5, of
 * environment revision ?6 or of variant ?12.
 */
export const APP_BY_REF_CTE = `app AS (${MEMBER_APPS}
  WHERE a.id = CASE
    WHEN ?3 IS NOT NULL THEN ?3
    WHEN ?4 IS NOT NULL THEN (SELECT id FROM apps WHERE project_id = (SELECT project_id FROM caller) AND name = ?4)
    ELSE COALESCE(
      (SELECT v.app_id FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id WHERE r.id = ?5),
      (SELECT e.app_id FROM environment_revisions er JOIN environments e ON e.id = er.environment_id WHERE er.id = ?6),
      (SELECT app_id FROM app_variants WHERE id = ?12)) END
    AND (?4 IS NULL OR a.name = ?4))`;

/** What a write found: done, nothing the caller can see, or something the caller may only read. */
export type WriteOutcome = "done" | "not_found" | "forbidden";

/**
 * Why a write made nothing, from its batch's `SELECT role FROM app`: the caller may only read there, or there is
 * nothing the caller can write (no row: nothing visible; a writer: what the write names is missing).
 */
export function refusal(role: D1Result): "not_found" | "forbidden" {
  const found = role.results[0] as { role: Role } | undefined;
  return found && !WRITER_ROLES.includes(found.role) ? "forbidden" : "not_found";
}

/** The outcome of a batch with a `SELECT role FROM app` and the write (its RETURNING rows). */
export function writeOutcome(role: D1Result, written: D1Result): WriteOutcome {
  return written.results.length > 0 ? "done" : refusal(role);
}
