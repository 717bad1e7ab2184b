import { type BucketRef, bucketOfPrefix, CALLER_KEY, LEGACY_BUCKET } from "./buckets";
import { isFenceTrip, type Queryable } from "./d1";
import type { ShardName } from "./pool";
import { type Role, WRITER_ROLES } from "./roles";
import { named, type Results, type Sql, type Statement, type Statements, sql, type Values } from "./sql";

/** last_used_at is kept to the hour: a key's use is written at most once an hour. */
const KEY_USE_RESOLUTION_MS = 3_600_000;

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
  SELECT user_id, project_id, read_only, last_used_at FROM api_keys
   WHERE key_hash = :caller_key AND +prefix = :caller_prefix AND revoked_at IS NULL AND :vouched_user_id IS NULL
     AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  UNION ALL
  SELECT id, NULL, 0, NULL FROM users WHERE :caller_prefix IS NULL AND id = :caller_key
  UNION ALL
  SELECT :vouched_user_id, :vouched_project_id, :vouched_read_only, :vouched_last_used_at WHERE :vouched_user_id IS NOT NULL),
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

/** What the database found of a live key: whose it is, and when its use was last recorded. */
export interface LiveKey {
  user_id: string;
  last_used_at: string | null;
}

const KEY_CHECK = sql<LiveKey>(`WITH ${CALLER_CTE} SELECT user_id, last_used_at FROM caller`);

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
   SELECT c.user_id, c.project_id, c.read_only, c.last_used_at, u.username, u.email, u.created_at,
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

/**
 * The fence guard (docs/SHARDING.md §5): a fence on :bucket, whatever its state, puts a row in fence_trips, whose
 * trigger aborts the whole batch (`isFenceTrip`), so that a write to a bucket being moved commits nothing; so does the
 * bucket of the key row read here (:key_bucket; none for a vouched key) moved away from this shard: that row is a copy
 * left behind.
 */
const FENCE_GUARD = sql(
  "INSERT INTO fence_trips SELECT bucket FROM bucket_fences WHERE bucket = :bucket OR (bucket = :key_bucket AND state = 'moved')",
);

/**
 * The fence guard of a batch written with no caller (the admin CLI's account changes, the fixtures' and the seed's):
 * its first statement, refusing the batch whole while `bucket` is fenced on this shard, whatever the fence's state.
 */
export const fenceGuard = (db: Queryable, bucket: number): Statement<unknown> =>
  FENCE_GUARD.bind(db, { bucket, key_bucket: null });

/**
 * A read's guard (docs/SHARDING.md §5): the read's bucket, or that of the key row read here (:key_bucket), moved away
 * from this shard, whose rows here are a copy left behind (an isolate still on the old SHARD_MAP): the read is refused
 * (`BucketMovedError`). A key vouched for by its home reads no key row here, whatever this shard fences of its bucket.
 */
const MOVED_GUARD = sql<{ moved: number }>(
  "SELECT 1 AS moved FROM bucket_fences WHERE state = 'moved' AND bucket IN (:bucket, :key_bucket)",
);

/**
 * The buckets whose rows on this shard a list leaves out (docs/SHARDING.md §5): a copy being made (`incoming`) or one
 * left behind (`moved`); the organization is listed by the shard that answers for it.
 */
export const COPIED_BUCKETS = "(SELECT bucket FROM bucket_fences WHERE state IN ('incoming', 'moved'))";

/** A read of a bucket moved away from the shard asked: answered 503, as a fenced write. */
export class BucketMovedError extends Error {
  constructor() {
    super("bucket moved away from this shard");
  }
}

/**
 * The way to D1 as a caller: every batch it runs begins with the key check, in the same round trip, and fails
 * with `UnknownApiKeyError` (writing nothing) when the key is not live. `found` hears what each check found (null:
 * not live; undefined: the batch failed). Reads take this; writes take `CallerWriteDb`. Where the database comes
 * from is decided by whoever makes the handle (src/http/d1-session.ts for requests, the admin CLI for operators),
 * nowhere else.
 */
export class CallerDb {
  constructor(
    protected readonly db: Queryable,
    readonly caller: Caller,
    private readonly found: (key: LiveKey | null | undefined) => void = () => {},
    /** The bucket a read is routed by, whose move away refuses it (MOVED_GUARD); null: a read spanning buckets. */
    readonly routedBucket: number | null = null,
  ) {}

  /** The statement with `values`, and the caller's own for :caller_prefix and :caller_key. */
  statement<Row>(query: Sql<Row>, values: Values = {}): Statement<Row> {
    return query.bind(this.db, values, this.caller.values);
  }

  /** Runs the statements in one batch behind the key check (and MOVED_GUARD): their results by name. */
  async batch<S extends Statements>(statements: S): Promise<Results<S>> {
    if (this.routedBucket === null) {
      const { results, from } = await this.run(statements);
      return named(statements, results, from);
    }
    const { results, from } = await this.run(statements, [this.statement(MOVED_GUARD, { bucket: this.routedBucket })]);
    if (results[from - 1].results.length > 0) throw new BucketMovedError();
    return named(statements, results, from);
  }

  /**
   * The batch's results, the statements' from index `from` (after the key check's and the `guards`', which run right
   * after it in the same transaction). Nobody has no key to check: the guards and statements run alone. A batch D1
   * refused whole (a UNIQUE violation, say) still counts as checked: its writes select from `caller`, so an unknown
   * key writes nothing and breaks no constraint. A fence's refusal does not: it refuses whatever the key, so the key
   * is left to its own check (requireApiKey), and a bad key is still a 401.
   */
  protected async run(statements: Statements, guards: Statement<unknown>[] = []): Promise<{ results: D1Result[]; from: number }> {
    const keyed = this.caller !== Caller.nobody;
    const ahead = keyed ? [this.statement(KEY_CHECK), ...guards] : guards;
    let results: D1Result[];
    try {
      results = await this.db.batch([...ahead, ...Object.values(statements)]);
    } catch (error) {
      if (keyed && !isFenceTrip(error)) this.found(undefined);
      throw error;
    }
    if (keyed) {
      const key = (results[0].results[0] as LiveKey | undefined) ?? null;
      this.found(key);
      if (!key) throw new UnknownApiKeyError();
    }
    return { results, from: ahead.length };
  }
}

/**
 * A `CallerDb` for writes: every batch it runs (an Idempotency-Key's claim and look-up included) carries the fence
 * guard for `bucket` right after the key check, so that none commits while that bucket is fenced (docs/SHARDING.md
 * §5); what a batch committed for webhooks (the `event_to_deliver` its event statements return, EVENT_HANDOFF) goes
 * to `handOff` as soon as the batch returns; reads never look for it. `bucket`: that of the organization the write's
 * rows belong to, which every id it mints carries (src/db/buckets.ts's newId).
 */
export class CallerWriteDb extends CallerDb {
  constructor(
    db: Queryable,
    caller: Caller,
    readonly bucket: number,
    private readonly handOff: (events: string[]) => void,
    found?: (key: LiveKey | null | undefined) => void,
    /** For a key homed on another shard (`Caller.vouched`): the key's own writes there (its Idempotency-Keys' requests). */
    readonly home: CallerWriteDb | null = null,
  ) {
    super(db, caller, found);
  }

  override async batch<S extends Statements>(statements: S): Promise<Results<S>> {
    const { results, from } = await this.run(statements, [this.statement(FENCE_GUARD, { bucket: this.bucket })]);
    const events = eventsToDeliver(results);
    if (events.length > 0) this.handOff(events);
    return named(statements, results, from);
  }
}

/** The events a write batch's results name for delivery (EVENT_HANDOFF). */
function eventsToDeliver(results: D1Result[]): string[] {
  const events: string[] = [];
  for (const { results: rows } of results) {
    if (rows.length === 0 || !("event_to_deliver" in (rows[0] as object))) continue;
    for (const row of rows as { event_to_deliver: string | null }[]) {
      if (row.event_to_deliver) events.push(row.event_to_deliver);
    }
  }
  return events;
}

/**
 * A request's caller and what its batches found of its key: it makes the request's handles (src/http/d1-session.ts)
 * and tells `requireApiKey` whether the key still needs its own check when the answer is ready, and on which shard
 * the key was found (where its use is recorded).
 */
export class RequestCaller {
  /** Whether a batch with the key check has been sent (it checks the key, whatever else happens to it). */
  private sent = false;

  /** The live key, once a batch has found it. */
  private key: LiveKey | null = null;

  /** The shard whose check found the key live. */
  private foundOn: ShardName | null = null;

  /** The bucket the key was looked for in on the home that vouched for it (`keyHomes`, src/http/d1-session.ts). */
  private homeBucket: number | null = null;

  /** The key as its home shard vouched for it, once one has (`vouchedOn`): the caller of batches on other shards. */
  vouched: Caller | null = null;

  constructor(readonly caller: Caller) {}

  /** Hears what the key checks of batches on `shard` found (null: not live; undefined: the batch failed). */
  private foundBy(shard: ShardName) {
    return (key: LiveKey | null | undefined) => {
      this.sent = true;
      if (key === undefined) return;
      this.key = key;
      if (key && this.vouched === null) this.foundOn = shard;
    };
  }

  /**
   * Records what the key check of `shard`, the key's home, finds (`check`): null, the key is not live there. Sent, it
   * counts as checked even if it fails (requireApiKey does not check again).
   */
  async vouchedOn({ shard, bucket }: { shard: ShardName; bucket: number }, check: Promise<Vouch | null>) {
    this.sent = true;
    const vouch = await check;
    this.key = vouch;
    if (vouch) {
      this.foundOn = shard;
      this.homeBucket = bucket;
      this.vouched = Caller.vouched(this.caller, vouch);
    }
  }

  /**
   * A read handle on `shard` as `caller` (the request's own, or its key vouched for: `vouched`), of `bucket` (null: a
   * read spanning buckets).
   */
  reader(db: Queryable, shard: ShardName, caller: Caller, bucket: number | null): CallerDb {
    return new CallerDb(db, caller, this.foundBy(shard), bucket);
  }

  /** A write handle on `shard` as `caller`, of `bucket`; with a vouched caller, `home` is the key's home shard's handle. */
  writer(
    db: Queryable,
    shard: ShardName,
    bucket: number,
    handOff: (events: string[]) => void,
    caller: Caller,
    home: CallerWriteDb | null = null,
  ) {
    return new CallerWriteDb(db, caller, bucket, handOff, this.foundBy(shard), home);
  }

  /** The shard whose check found the key live and the bucket it was looked for in there: the key's home. */
  get home(): { shard: ShardName; bucket: number } | null {
    return this.foundOn === null || this.homeBucket === null ? null : { shard: this.foundOn, bucket: this.homeBucket };
  }

  /** Whether a batch has checked the key (nobody has no key to check). */
  get checked(): boolean {
    return this.sent || this.caller === Caller.nobody;
  }

  /** The key's user, once a batch has found it live. */
  get userId(): string | null {
    return this.key?.user_id ?? null;
  }

  /**
   * The shard whose check found the key live, when its use should be recorded there: its last recorded use is over an
   * hour old; else null.
   */
  get shardToRecordKeyUse(): ShardName | null {
    if (!this.key || this.caller.prefix === null || this.foundOn === null) return null;
    const stale = this.key.last_used_at === null || Date.parse(this.key.last_used_at) < Date.now() - KEY_USE_RESOLUTION_MS;
    return stale ? this.foundOn : null;
  }
}

/** Apps the caller (CALLER_CTE) can see, with the caller's role in the app's organization. */
const MEMBER_APPS = `SELECT a.id, a.name, a.project_id, a.created_at, COALESCE(a.updated_at, a.created_at) AS updated_at, m.role
  FROM apps a
  JOIN projects p ON p.id = a.project_id
  JOIN workspaces w ON w.id = p.workspace_id
  JOIN membership m ON m.organization_id = w.organization_id`;

/** The app :app_id as the caller sees it (no row: no such app, or the caller is not a member): a CTE named `app`. */
export const APP_BY_ID_CTE = `app AS (${MEMBER_APPS} WHERE a.id = :app_id)`;

/** The app of variant :variant_id as the caller sees it: a CTE named `app`. */
export const APP_OF_VARIANT_CTE = `app AS (${MEMBER_APPS} WHERE a.id = (SELECT app_id FROM app_variants WHERE id = :variant_id))`;

/**
 * The app a config request names (`refValues`), as the caller sees it: a CTE named `app`. By id (:app_id; a name
 * :app_name given too must be its name), else by name in the key's project only (an archived app is not found by
 * name), else as the app of variant
 * revision :variant_revision_id, of environment revision :environment_revision_id or of variant :variant_id.
 */
export const APP_BY_REF_CTE = `app AS (${MEMBER_APPS}
  WHERE a.id = CASE
    WHEN :app_id IS NOT NULL THEN :app_id
    WHEN :app_name IS NOT NULL THEN (SELECT id FROM apps WHERE project_id = (SELECT project_id FROM caller) AND name = :app_name
                                                               AND archived_at IS NULL)
    ELSE COALESCE(
      (SELECT v.app_id FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id WHERE r.id = :variant_revision_id),
      (SELECT e.app_id FROM environment_revisions er JOIN environments e ON e.id = er.environment_id WHERE er.id = :environment_revision_id),
      (SELECT app_id FROM app_variants WHERE id = :variant_id)) END
    AND (:app_name IS NULL OR a.name = :app_name))`;

/**
 * What APP_BY_REF_CTE resolves the app by, in its order (`BucketRef`s, for the request's bucket): the app id; else its
 * name, in the key's project; else the variant revision, the environment revision, the variant.
 */
export const appRefOrder = (values: {
  app_id: string | null;
  app_name: string | null;
  variant_revision_id: string | null;
  environment_revision_id: string | null;
  variant_id: string | null;
}): BucketRef[] => [
  values.app_id,
  values.app_name === null ? null : CALLER_KEY,
  values.variant_revision_id,
  values.environment_revision_id,
  values.variant_id,
];

/** What a write found: done, nothing the caller can see, or something the caller may only read. */
export type WriteOutcome = "done" | "not_found" | "forbidden";

/**
 * Why a write made nothing, from its batch's `SELECT role FROM app`: the caller may only read there, or there is
 * nothing the caller can write (no row: nothing visible; a writer: what the write names is missing).
 */
export function refusal(role: D1Result<unknown>): "not_found" | "forbidden" {
  const found = role.results[0] as { role: Role } | undefined;
  return found && !WRITER_ROLES.includes(found.role) ? "forbidden" : "not_found";
}

/** The outcome of a batch with a `SELECT role FROM app` and the write (its RETURNING rows). */
export function writeOutcome(role: D1Result<unknown>, written: D1Result<unknown>): WriteOutcome {
  return written.results.length > 0 ? "done" : refusal(role);
}

/**
 * An operator's handle (the admin CLI) acting as `userId` on rows of an organization in `bucket` (by default the
 * legacy one, the seed's and the test fixtures'): the events its writes commit are left to the delivery sweep, which
 * queues what stays pending (the CLI has no queue binding).
 */
export const operatorDb = (db: Queryable, userId: string, bucket = LEGACY_BUCKET) =>
  new CallerWriteDb(db, Caller.operatorAs(userId), bucket, () => {});
