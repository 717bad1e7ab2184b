/**
 * `bucket move | finish | delete | abort` (docs/SHARDING.md §5, §7d): a range of buckets of organizations moved from
 * the shard SHARD_MAP gives them to another, with their writes fenced meanwhile.
 *
 * Every table's rows of the buckets are found by the table's path up to its organization (§1's table) and copied in
 * foreign-key order, a page of PAGE_ROWS rows at a time in key order (directory.ts's keyset pages), each page written as
 * JSON bound to one parameter per statement (`json_each`, within D1's 100 parameters and 100 KB a statement). A row is
 * read as `t.*` and written by position (`value ->> N`, the table's column order), so verify, which hashes `t.*` as read
 * on both shards, also catches a column this module would not copy. The directory's `bucket_moves` row records how far a
 * move went: `copying` (fenced, copy under way or stopped), `copied` (verified), `finished`, `deleted`, `aborted`.
 */
import { createHash } from "node:crypto";
import { BUCKETS } from "../db/buckets";
import { readShardMap, type ShardName } from "../db/pool";
import { type Sql, sql, type Values } from "../db/sql";
import { type DatabasePool, retryTransient } from "./database";
import { jsonChunks, PAGE_ROWS, type Pages, pagesOf } from "./directory";
import { UsageError } from "./run-cli";

type Row = Record<string, unknown>;

/** The buckets a command names, bound as :bucket_from and :bucket_to. */
interface BucketRange {
  bucket_from: number;
  bucket_to: number;
}

/** What an operator gives a bucket command: --buckets, --to, and the SHARD_MAP deployed when not wrangler.toml's. */
export interface BucketOptions {
  buckets?: string;
  to?: string;
  shardMap?: string;
}

/** A table's keyset: the values naming a key before every row, and those naming a row's key. */
interface Keyset {
  first: Values;
  after: (row: Row) => Values;
}

const BY_TEXT_ID: Keyset = { first: { after_0: "" }, after: (row) => ({ after_0: row.id as string }) };
const BY_INTEGER_ID: Keyset = { first: { after_0: -1 }, after: (row) => ({ after_0: row.id as number }) };
const byPair = (first: string, second: string, secondFirst: string | number): Keyset => ({
  first: { after_0: "", after_1: secondFirst },
  after: (row) => ({ after_0: row[first] as string, after_1: row[second] as string | number }),
});
/** The Idempotency-Key tables' keyset: the API key's hash, the key, and the bucket (their primary key, migrations/0013). */
const BY_KEY_AND_BUCKET: Keyset = {
  first: { after_0: "", after_1: "", after_2: -1 },
  after: (row) => ({ after_0: row.key_hash as string, after_1: row.idempotency_key as string, after_2: row.bucket as number }),
};

interface BucketTable {
  name: string;
  /** A page of the buckets' rows (`t.*`), in key order after the keyset's values; the same order on both shards. */
  select: Sql<Row>;
  keyset: Keyset;
  /** Writes :rows, a JSON array of rows, each the array of its columns in the table's order. */
  insert: Sql;
  /** Run with every page of the source's rows again once all tables are copied (columns a trigger would refuse earlier). */
  settle?: Sql;
  /** Deletes a page of the buckets' rows (null: never deleted, or deleted by its parent's cascade). */
  remove: Sql | null;
}

/** Each table's rows as `t`, joined up to their organization `o` (the Idempotency-Key tables carry their bucket themselves). */
const UP_FROM_PROJECT = "JOIN workspaces w ON w.id = p.workspace_id JOIN organizations o ON o.id = w.organization_id";
const UP_FROM_APP = `JOIN projects p ON p.id = a.project_id ${UP_FROM_PROJECT}`;
const UP_FROM_ENVIRONMENT = `JOIN environments e ON e.id = t.environment_id JOIN apps a ON a.id = e.app_id ${UP_FROM_APP}`;
const FROM = {
  organizations: "organizations t JOIN organizations o ON o.id = t.id",
  organization_members: "organization_members t JOIN organizations o ON o.id = t.organization_id",
  workspaces: "workspaces t JOIN organizations o ON o.id = t.organization_id",
  projects: "projects t JOIN workspaces w ON w.id = t.workspace_id JOIN organizations o ON o.id = w.organization_id",
  environment_protections: `environment_protections t JOIN projects p ON p.id = t.project_id ${UP_FROM_PROJECT}`,
  api_keys: `api_keys t JOIN projects p ON p.id = t.project_id ${UP_FROM_PROJECT}`,
  apps: `apps t JOIN projects p ON p.id = t.project_id ${UP_FROM_PROJECT}`,
  app_variants: `app_variants t JOIN apps a ON a.id = t.app_id ${UP_FROM_APP}`,
  app_variant_revisions: `app_variant_revisions t JOIN app_variants v ON v.id = t.variant_id JOIN apps a ON a.id = v.app_id
    ${UP_FROM_APP}`,
  environments: `environments t JOIN apps a ON a.id = t.app_id ${UP_FROM_APP}`,
  deployments: `deployments t ${UP_FROM_ENVIRONMENT}`,
  environment_revisions: `environment_revisions t ${UP_FROM_ENVIRONMENT}`,
  change_requests: `change_requests t JOIN apps a ON a.id = t.app_id ${UP_FROM_APP}`,
  change_request_reviews: `change_request_reviews t JOIN change_requests cr ON cr.id = t.change_request_id JOIN apps a ON a.id = cr.app_id
    ${UP_FROM_APP}`,
  invitations: "invitations t JOIN organizations o ON o.id = t.organization_id",
  events: "events t JOIN organizations o ON o.id = t.organization_id",
  webhooks: "webhooks t JOIN organizations o ON o.id = t.organization_id",
  webhook_deliveries:
    "webhook_deliveries t JOIN webhooks h ON h.id = t.webhook_id JOIN organizations o ON o.id = h.organization_id",
  webhook_attempts: `webhook_attempts t JOIN webhook_deliveries d ON d.id = t.delivery_id JOIN webhooks h ON h.id = d.webhook_id
    JOIN organizations o ON o.id = h.organization_id`,
} as const;
const IN_BUCKETS = "o.bucket BETWEEN :bucket_from AND :bucket_to";
const PAGE_BY_ID = "AND t.id > :after_0 ORDER BY t.id LIMIT :page_rows";

/**
 * Whether the user `t` is one the buckets' rows reference (by a foreign key to users): copied with them, never deleted
 * (§1). Each subquery's `t` is its own table's. ORs of IN rather than a UNION: D1 allows few terms in a compound SELECT.
 */
const REFERENCED_USER = `t.id IN (SELECT t.user_id FROM ${FROM.organization_members} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.user_id FROM ${FROM.api_keys} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.created_by FROM ${FROM.apps} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.modified_by FROM ${FROM.app_variant_revisions} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.deployed_by FROM ${FROM.deployments} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.modified_by FROM ${FROM.environment_revisions} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.invited_by FROM ${FROM.invitations} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.accepted_by FROM ${FROM.invitations} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.updated_by FROM ${FROM.environment_protections} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.author_id FROM ${FROM.change_requests} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.scheduled_by FROM ${FROM.change_requests} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.applied_by FROM ${FROM.change_requests} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.reviewer_id FROM ${FROM.change_request_reviews} WHERE ${IN_BUCKETS})`;

// A row's columns by position, from the JSON array each row is bound as.
const COLUMNS_4 = "value ->> 0, value ->> 1, value ->> 2, value ->> 3";
const COLUMNS_5 = `${COLUMNS_4}, value ->> 4`;
const COLUMNS_6 = `${COLUMNS_5}, value ->> 5`;
const COLUMNS_7 = `${COLUMNS_6}, value ->> 6`;
const COLUMNS_8 = `${COLUMNS_7}, value ->> 7`;
const COLUMNS_10 = `${COLUMNS_8}, value ->> 8, value ->> 9`;
const COLUMNS_11 = `${COLUMNS_10}, value ->> 10`;
const COLUMNS_12 = `${COLUMNS_11}, value ->> 11`;
const COLUMNS_15 = `${COLUMNS_12}, value ->> 12, value ->> 13, value ->> 14`;
const COLUMNS_20 = `${COLUMNS_15}, value ->> 15, value ->> 16, value ->> 17, value ->> 18, value ->> 19`;
const COLUMNS_25 = `${COLUMNS_20}, value ->> 20, value ->> 21, value ->> 22, value ->> 23, value ->> 24`;
const COLUMNS_27 = `${COLUMNS_25}, value ->> 25, value ->> 26`;
const ROWS = "FROM json_each(:rows)";
/** A row for each row a statement inserted or deleted itself: D1's `changes` counts those of its cascades and triggers too. */
const COUNTED = "RETURNING 1";

/**
 * Every table of a shard but the fences' (migrations/0012), in foreign-key order. Two columns are written later than
 * their rows, as migrations/0003's and 0005's triggers require: an environment starts at revision 0 deploying nothing,
 * and its revisions, inserted in order, move it where it is (environment_follows_its_revisions); a variant's removed_at
 * and archived_at come after them (`settle`), since a revision that once deployed it may not deploy it once removed or
 * archived. Events come before webhooks, so that inserting them fans out no delivery (events_fan_out).
 */
const TABLES: BucketTable[] = [
  {
    name: "users",
    select: sql(`SELECT t.* FROM users t WHERE (${REFERENCED_USER}) ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT OR IGNORE INTO users SELECT ${COLUMNS_4} ${ROWS} ${COUNTED}`),
    remove: null,
  },
  {
    name: "organizations",
    select: sql(`SELECT t.* FROM ${FROM.organizations} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO organizations SELECT ${COLUMNS_8} ${ROWS} ${COUNTED}`),
    // Its members go with it (ON DELETE CASCADE): removed one by one, the last owner could not be (migrations/0006).
    remove: sql(
      `DELETE FROM organizations WHERE id IN (SELECT t.id FROM ${FROM.organizations} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "organization_members",
    select: sql(`SELECT t.* FROM ${FROM.organization_members} WHERE ${IN_BUCKETS}
      AND (t.organization_id, t.user_id) > (:after_0, :after_1) ORDER BY t.organization_id, t.user_id LIMIT :page_rows`),
    keyset: byPair("organization_id", "user_id", ""),
    insert: sql(`INSERT INTO organization_members SELECT ${COLUMNS_4} ${ROWS} ${COUNTED}`),
    remove: null,
  },
  {
    name: "workspaces",
    select: sql(`SELECT t.* FROM ${FROM.workspaces} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO workspaces SELECT ${COLUMNS_8} ${ROWS} ${COUNTED}`),
    remove: sql(
      `DELETE FROM workspaces WHERE id IN (SELECT t.id FROM ${FROM.workspaces} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "projects",
    select: sql(`SELECT t.* FROM ${FROM.projects} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO projects SELECT ${COLUMNS_5} ${ROWS} ${COUNTED}`),
    remove: sql(
      `DELETE FROM projects WHERE id IN (SELECT t.id FROM ${FROM.projects} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "environment_protections",
    select: sql(`SELECT t.* FROM ${FROM.environment_protections} WHERE ${IN_BUCKETS}
      AND (t.project_id, t.environment) > (:after_0, :after_1) ORDER BY t.project_id, t.environment LIMIT :page_rows`),
    keyset: byPair("project_id", "environment", ""),
    insert: sql(`INSERT INTO environment_protections SELECT ${COLUMNS_10} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM environment_protections WHERE (project_id, environment) IN
      (SELECT t.project_id, t.environment FROM ${FROM.environment_protections} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "api_keys",
    select: sql(`SELECT t.* FROM ${FROM.api_keys} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO api_keys SELECT ${COLUMNS_10} ${ROWS} ${COUNTED}`),
    remove: sql(
      `DELETE FROM api_keys WHERE id IN (SELECT t.id FROM ${FROM.api_keys} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "apps",
    select: sql(`SELECT t.* FROM ${FROM.apps} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO apps SELECT ${COLUMNS_7} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM apps WHERE id IN (SELECT t.id FROM ${FROM.apps} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "app_variants",
    select: sql(`SELECT t.* FROM ${FROM.app_variants} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    // id, app_id, name, created_at, removed_at (later), removed_name, archived_at (later)
    insert: sql(`INSERT INTO app_variants SELECT ${COLUMNS_4}, NULL, value ->> 5, NULL ${ROWS} ${COUNTED}`),
    settle: sql(`UPDATE app_variants SET removed_at = r.value ->> 4, archived_at = r.value ->> 6
      FROM json_each(:rows) r WHERE app_variants.id = r.value ->> 0`),
    remove: sql(
      `DELETE FROM app_variants WHERE id IN (SELECT t.id FROM ${FROM.app_variants} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "app_variant_revisions",
    select: sql(`SELECT t.* FROM ${FROM.app_variant_revisions} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO app_variant_revisions SELECT ${COLUMNS_10} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM app_variant_revisions
      WHERE id IN (SELECT t.id FROM ${FROM.app_variant_revisions} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "environments",
    select: sql(`SELECT t.* FROM ${FROM.environments} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    // id, app_id, name, revision (0), deployed_app_variant_id and _revision_id (none), created_at: its revisions move it.
    insert: sql(
      `INSERT INTO environments SELECT value ->> 0, value ->> 1, value ->> 2, 0, NULL, NULL, value ->> 6 ${ROWS} ${COUNTED}`,
    ),
    remove: sql(
      `DELETE FROM environments WHERE id IN (SELECT t.id FROM ${FROM.environments} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "deployments",
    select: sql(`SELECT t.* FROM ${FROM.deployments} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO deployments SELECT ${COLUMNS_5} ${ROWS} ${COUNTED}`),
    remove: sql(
      `DELETE FROM deployments WHERE id IN (SELECT t.id FROM ${FROM.deployments} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "environment_revisions",
    // In each environment's order (its UNIQUE (environment_id, revision)): the order they can be inserted in.
    select: sql(`SELECT t.* FROM ${FROM.environment_revisions} WHERE ${IN_BUCKETS}
      AND (t.environment_id, t.revision) > (:after_0, :after_1) ORDER BY t.environment_id, t.revision LIMIT :page_rows`),
    keyset: byPair("environment_id", "revision", -1),
    insert: sql(`INSERT INTO environment_revisions SELECT ${COLUMNS_7} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM environment_revisions
      WHERE id IN (SELECT t.id FROM ${FROM.environment_revisions} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "change_requests",
    select: sql(`SELECT t.* FROM ${FROM.change_requests} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO change_requests SELECT ${COLUMNS_27} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM change_requests
      WHERE id IN (SELECT t.id FROM ${FROM.change_requests} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "change_request_reviews",
    select: sql(`SELECT t.* FROM ${FROM.change_request_reviews} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO change_request_reviews SELECT ${COLUMNS_7} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM change_request_reviews
      WHERE id IN (SELECT t.id FROM ${FROM.change_request_reviews} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
  // Keyed by their bucket too, the Idempotency-Key tables' rows of the buckets never meet the destination's own, whatever
  // keys tenants used where (docs/SHARDING.md §7e).
  {
    name: "idempotency_keys",
    select: sql(`SELECT t.* FROM idempotency_keys t WHERE t.bucket BETWEEN :bucket_from AND :bucket_to
      AND (t.key_hash, t.idempotency_key, t.bucket) > (:after_0, :after_1, :after_2)
      ORDER BY t.key_hash, t.idempotency_key, t.bucket LIMIT :page_rows`),
    keyset: BY_KEY_AND_BUCKET,
    insert: sql(`INSERT INTO idempotency_keys SELECT ${COLUMNS_7} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM idempotency_keys WHERE (key_hash, idempotency_key, bucket) IN
      (SELECT key_hash, idempotency_key, bucket FROM idempotency_keys WHERE bucket BETWEEN :bucket_from AND :bucket_to
        LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "idempotency_key_requests",
    select: sql(`SELECT t.* FROM idempotency_key_requests t WHERE t.bucket BETWEEN :bucket_from AND :bucket_to
      AND (t.key_hash, t.idempotency_key, t.bucket) > (:after_0, :after_1, :after_2)
      ORDER BY t.key_hash, t.idempotency_key, t.bucket LIMIT :page_rows`),
    keyset: BY_KEY_AND_BUCKET,
    insert: sql(`INSERT INTO idempotency_key_requests SELECT ${COLUMNS_6} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM idempotency_key_requests WHERE (key_hash, idempotency_key, bucket) IN
      (SELECT key_hash, idempotency_key, bucket FROM idempotency_key_requests WHERE bucket BETWEEN :bucket_from AND :bucket_to
        LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "invitations",
    select: sql(`SELECT t.* FROM ${FROM.invitations} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO invitations SELECT ${COLUMNS_15} ${ROWS} ${COUNTED}`),
    remove: sql(
      `DELETE FROM invitations WHERE id IN (SELECT t.id FROM ${FROM.invitations} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "events",
    select: sql(`SELECT t.* FROM ${FROM.events} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO events SELECT ${COLUMNS_11} ${ROWS} ${COUNTED}`),
    remove: sql(
      `DELETE FROM events WHERE id IN (SELECT t.id FROM ${FROM.events} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "webhooks",
    select: sql(`SELECT t.* FROM ${FROM.webhooks} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO webhooks SELECT ${COLUMNS_15} ${ROWS} ${COUNTED}`),
    remove: sql(
      `DELETE FROM webhooks WHERE id IN (SELECT t.id FROM ${FROM.webhooks} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`,
    ),
  },
  {
    name: "webhook_deliveries",
    select: sql(`SELECT t.* FROM ${FROM.webhook_deliveries} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO webhook_deliveries SELECT ${COLUMNS_12} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM webhook_deliveries
      WHERE id IN (SELECT t.id FROM ${FROM.webhook_deliveries} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "webhook_attempts",
    select: sql(`SELECT t.* FROM ${FROM.webhook_attempts} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_INTEGER_ID,
    insert: sql(`INSERT INTO webhook_attempts SELECT ${COLUMNS_7} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM webhook_attempts
      WHERE id IN (SELECT t.id FROM ${FROM.webhook_attempts} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
];

/** Tables of a shard that are not an organization's: the fences themselves. */
const NOT_MOVED = ["bucket_fences", "fence_trips"];

const SHARD_TABLES = sql<{ name: string }>(
  "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'",
);
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
const HOLDS_ROWS = sql<{ held: number }>(`SELECT
  EXISTS (SELECT 1 FROM organizations WHERE bucket BETWEEN :bucket_from AND :bucket_to)
  OR EXISTS (SELECT 1 FROM idempotency_keys WHERE bucket BETWEEN :bucket_from AND :bucket_to)
  OR EXISTS (SELECT 1 FROM idempotency_key_requests WHERE bucket BETWEEN :bucket_from AND :bucket_to) AS held`);

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
function shardOption(pool: DatabasePool, name: string | undefined): { name: ShardName; db: D1Database } {
  if (!name) throw new UsageError("--to is required");
  const shard = pool.shards.find((declared) => declared.name === name);
  if (!shard) throw new UsageError(`--to: ${name} is no shard of the pool (${pool.shards.map((s) => s.name).join(", ")})`);
  return shard;
}

/** The one shard the SHARD_MAP read (--shard-map, else wrangler.toml's) gives every bucket of the range. */
function mappedShard(pool: DatabasePool, options: BucketOptions, range: BucketRange): { name: ShardName; db: D1Database } {
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

/** The buckets' rows of `table` on `db`, page by page. */
const rowsOf = (db: D1Database, table: BucketTable, range: BucketRange) => {
  const pages: Pages<Row> = {
    select: table.select,
    first: { ...range, ...table.keyset.first },
    after: (row) => ({ ...range, ...table.keyset.after(row) }),
  };
  return pagesOf(db, pages);
};

/** Runs `statement` with every page of the source's rows of `table` on the destination; the rows it returned. */
async function writePages(source: D1Database, destination: D1Database, table: BucketTable, statement: Sql, range: BucketRange) {
  let changed = 0;
  for await (const rows of rowsOf(source, table, range)) {
    const chunks = jsonChunks(rows.map((row) => Object.values(row)));
    const results = await retryTransient(() =>
      destination.batch(chunks.map((chunk) => statement.bind(destination, { rows: chunk }))),
    );
    changed += results.reduce((sum, result) => sum + result.results.length, 0);
  }
  return changed;
}

/** A table's rows of the buckets on one shard: how many, and the SHA-256 of each row's `t.*` as JSON, one a line, in order. */
async function digest(db: D1Database, table: BucketTable, range: BucketRange): Promise<{ rows: number; sha256: string }> {
  const hash = createHash("sha256");
  let rows = 0;
  for await (const page of rowsOf(db, table, range)) {
    for (const row of page) hash.update(`${JSON.stringify(row)}\n`);
    rows += page.length;
  }
  return { rows, sha256: hash.digest("hex") };
}

/** Deletes the buckets' rows on `db`, children first; the rows each table lost (organization_members: by cascade). */
async function deleteRows(db: D1Database, range: BucketRange): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const table of [...TABLES].reverse()) {
    const remove = table.remove;
    if (!remove) continue;
    deleted[table.name] = 0;
    for (;;) {
      const { results } = await retryTransient(() => remove.bind(db, { ...range, page_rows: PAGE_ROWS }).all());
      if (results.length === 0) break;
      deleted[table.name] += results.length;
    }
  }
  return deleted;
}

/** Stops unless every table of the shard is one this module copies or leaves alone on purpose. */
async function assertKnownTables(shard: { name: ShardName; db: D1Database }): Promise<void> {
  const { results } = await retryTransient(() => SHARD_TABLES.bind(shard.db, {}).all<{ name: string }>());
  const known = new Set([...TABLES.map((table) => table.name), ...NOT_MOVED]);
  const unknown = results.map(({ name }) => name).filter((name) => !known.has(name));
  if (unknown.length > 0)
    throw new Error(`${shard.name} has tables the move does not copy (src/cli/bucket-moves.ts): ${unknown.join(", ")}`);
}

/** Stops, naming the shard, unless each of its fences on the range is in `allowed`. */
async function assertFences(shard: { name: ShardName; db: D1Database }, range: BucketRange, allowed: string[]) {
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
    const [{ held }] = (await retryTransient(() => HOLDS_ROWS.bind(destination.db, { ...range }).all<{ held: number }>()))
      .results;
    if (held) throw new UsageError(`${destination.name} holds rows of ${described(range)} already`);
    await retryTransient(() =>
      START_MOVE.bind(pool.directory, { ...range, source: source.name, destination: destination.name }).run(),
    );
  }
  await fenceIncoming(destination.db, range);
  await setFences(source.db, range, "moving");
  // Whatever a stopped run left on the destination (nothing else of the buckets is there: checked above) goes first.
  if (resuming) await deleteRows(destination.db, range);
  const copied: Record<string, number> = {};
  const stopped = (table: BucketTable, error: unknown) =>
    new Error(
      `copying ${table.name} to ${destination.name} failed (${error instanceof Error ? error.message : error}); the fences stay: ` +
        "run bucket move again, or bucket abort",
    );
  for (const table of TABLES) {
    copied[table.name] = await writePages(source.db, destination.db, table, table.insert, range).catch((error) => {
      throw stopped(table, error);
    });
  }
  for (const table of TABLES) {
    if (table.settle) {
      await writePages(source.db, destination.db, table, table.settle, range).catch((error) => {
        throw stopped(table, error);
      });
    }
  }

  const tables: Record<string, { copied: number; rows: number; sha256: string }> = {};
  for (const table of TABLES) {
    const [onSource, onDestination] = await Promise.all([digest(source.db, table, range), digest(destination.db, table, range)]);
    if (onSource.rows !== onDestination.rows || onSource.sha256 !== onDestination.sha256) {
      throw new Error(
        `verify failed: ${table.name} has ${onSource.rows} rows (sha256 ${onSource.sha256}) on ${source.name}, ` +
          `${onDestination.rows} (sha256 ${onDestination.sha256}) on ${destination.name}; the fences stay: run bucket move again, or bucket abort`,
      );
    }
    tables[table.name] = { copied: copied[table.name], ...onSource };
  }
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
