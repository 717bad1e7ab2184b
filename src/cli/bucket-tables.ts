/**
 * The tables a bucket move copies (docs/SHARDING.md §1, §5), and what is done to each: copied, verified, deleted.
 *
 * Every table's rows of the buckets are found by the table's path up to its organization (§1's table) and copied in
 * foreign-key order, a page of PAGE_ROWS rows at a time in key order (directory.ts's keyset pages), each page written as
 * JSON bound to one parameter per statement (`json_each`, within D1's 100 parameters and 100 KB a statement). A row is
 * read as `t.*` and written by position (`value ->> N`, the table's column order), so verify, which hashes `t.*` as read
 * on both shards, also catches a column this module would not copy. Rows are copied as they are, keys included: every
 * key of a table copied is global (a UUID, or made of them), never one a shard mints (a rowid; migrations/0016), which
 * would meet the destination's own rows under the same key. The one rowid read, environments' (their order), is
 * not copied but kept: they are copied in its order.
 */
import { createHash } from "node:crypto";
import type { ShardName } from "../db/pool";
import { type Sql, sql, type Values } from "../db/sql";
import { retryTransient } from "./database";
import { jsonChunks, PAGE_ROWS, type Pages, pagesOf } from "./directory";

type Row = Record<string, unknown>;

/** The buckets a command names, bound as :bucket_from and :bucket_to. */
export interface BucketRange {
  bucket_from: number;
  bucket_to: number;
}

/** A shard of the pool, as the move names and opens it. */
export interface Shard {
  name: ShardName;
  db: D1Database;
}

/** A table's keyset: the values naming a key before every row, and those naming a row's key. */
interface Keyset {
  first: Values;
  after: (row: Row) => Values;
}

const BY_TEXT_ID: Keyset = { first: { after_0: "" }, after: (row) => ({ after_0: row.id as string }) };
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
  environment_splits: `environment_splits t ${UP_FROM_ENVIRONMENT}`,
  split_verdicts: `split_verdicts t JOIN environment_splits s ON s.id = t.split_id JOIN environments e ON e.id = s.environment_id
    JOIN apps a ON a.id = e.app_id ${UP_FROM_APP}`,
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
 * Whether the user `t` is one the buckets' rows reference (by a foreign key to users, or as a request's reviewer): copied with them, never deleted
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
  OR t.id IN (SELECT j.value FROM ${FROM.change_requests} JOIN json_each(t.reviewers) j WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.reviewer_id FROM ${FROM.change_request_reviews} WHERE ${IN_BUCKETS})
  OR t.id IN (SELECT t.started_by FROM ${FROM.environment_splits} WHERE ${IN_BUCKETS})`;

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
const COLUMNS_16 = `${COLUMNS_15}, value ->> 15`;
const COLUMNS_20 = `${COLUMNS_15}, value ->> 15, value ->> 16, value ->> 17, value ->> 18, value ->> 19`;
const COLUMNS_25 = `${COLUMNS_20}, value ->> 20, value ->> 21, value ->> 22, value ->> 23, value ->> 24`;
const COLUMNS_29 = `${COLUMNS_25}, value ->> 25, value ->> 26, value ->> 27, value ->> 28`;
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
    // In the order they were made, their rowid's, which lists of an app's environments follow (ORDER BY e.rowid): copied
    // in it, they keep it on the destination, whose own rowids they get; verify reads both shards in it. A page goes on
    // after the rowid of the last row of the one before, on each shard its own.
    select: sql(`SELECT t.* FROM ${FROM.environments} WHERE ${IN_BUCKETS}
      AND t.rowid > coalesce((SELECT rowid FROM environments WHERE id = :after_0), 0) ORDER BY t.rowid LIMIT :page_rows`),
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
    insert: sql(`INSERT INTO change_requests SELECT ${COLUMNS_29} ${ROWS} ${COUNTED}`),
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
  {
    name: "environment_splits",
    select: sql(`SELECT t.* FROM ${FROM.environment_splits} WHERE ${IN_BUCKETS} ${PAGE_BY_ID}`),
    keyset: BY_TEXT_ID,
    insert: sql(`INSERT INTO environment_splits SELECT ${COLUMNS_16} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM environment_splits
      WHERE id IN (SELECT t.id FROM ${FROM.environment_splits} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
  {
    name: "split_verdicts",
    select: sql(`SELECT t.* FROM ${FROM.split_verdicts} WHERE ${IN_BUCKETS}
      AND (t.split_id, t.webhook_id) > (:after_0, :after_1) ORDER BY t.split_id, t.webhook_id LIMIT :page_rows`),
    keyset: byPair("split_id", "webhook_id", ""),
    insert: sql(`INSERT INTO split_verdicts SELECT value ->> 0, value ->> 1, value ->> 2 ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM split_verdicts WHERE (split_id, webhook_id) IN
      (SELECT t.split_id, t.webhook_id FROM ${FROM.split_verdicts} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
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
    select: sql(`SELECT t.* FROM ${FROM.webhook_attempts} WHERE ${IN_BUCKETS}
      AND (t.delivery_id, t.attempt) > (:after_0, :after_1) ORDER BY t.delivery_id, t.attempt LIMIT :page_rows`),
    keyset: byPair("delivery_id", "attempt", 0),
    insert: sql(`INSERT INTO webhook_attempts SELECT ${COLUMNS_7} ${ROWS} ${COUNTED}`),
    remove: sql(`DELETE FROM webhook_attempts WHERE (delivery_id, attempt) IN
      (SELECT t.delivery_id, t.attempt FROM ${FROM.webhook_attempts} WHERE ${IN_BUCKETS} LIMIT :page_rows) ${COUNTED}`),
  },
];

/** Tables of a shard that are not an organization's: the fences themselves. */
const NOT_MOVED = ["bucket_fences", "fence_trips"];

const SHARD_TABLES = sql<{ name: string }>(
  "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'",
);
const HOLDS_ROWS = sql<{ held: number }>(`SELECT
  EXISTS (SELECT 1 FROM organizations WHERE bucket BETWEEN :bucket_from AND :bucket_to)
  OR EXISTS (SELECT 1 FROM idempotency_keys WHERE bucket BETWEEN :bucket_from AND :bucket_to)
  OR EXISTS (SELECT 1 FROM idempotency_key_requests WHERE bucket BETWEEN :bucket_from AND :bucket_to) AS held`);

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
export async function deleteRows(db: D1Database, range: BucketRange): Promise<Record<string, number>> {
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
export async function assertKnownTables(shard: Shard): Promise<void> {
  const { results } = await retryTransient(() => SHARD_TABLES.bind(shard.db, {}).all<{ name: string }>());
  const known = new Set([...TABLES.map((table) => table.name), ...NOT_MOVED]);
  const unknown = results.map(({ name }) => name).filter((name) => !known.has(name));
  if (unknown.length > 0)
    throw new Error(`${shard.name} has tables the move does not copy (src/cli/bucket-tables.ts): ${unknown.join(", ")}`);
}

/** Whether `db` holds rows of the buckets: an organization of them, or an Idempotency-Key table's row. */
export async function holdsRows(db: D1Database, range: BucketRange): Promise<boolean> {
  const [{ held }] = (await retryTransient(() => HOLDS_ROWS.bind(db, { ...range }).all<{ held: number }>())).results;
  return held === 1;
}

/**
 * Copies the buckets' rows of every table from `source` to `destination`, which holds none of them; then writes what
 * each table settles later. The rows each table's inserts wrote; an error naming the table where one failed.
 */
export async function copyRows(source: Shard, destination: Shard, range: BucketRange): Promise<Record<string, number>> {
  const copied: Record<string, number> = {};
  const failed = (table: BucketTable, error: unknown) =>
    new Error(`copying ${table.name} to ${destination.name} failed (${error instanceof Error ? error.message : error})`);
  for (const table of TABLES) {
    copied[table.name] = await writePages(source.db, destination.db, table, table.insert, range).catch((error) => {
      throw failed(table, error);
    });
  }
  for (const table of TABLES) {
    if (table.settle) {
      await writePages(source.db, destination.db, table, table.settle, range).catch((error) => {
        throw failed(table, error);
      });
    }
  }
  return copied;
}

/** Each table's rows of the buckets, counted and hashed on both shards: the source's, or an error naming the first table differing. */
export async function verifyCopy(
  source: Shard,
  destination: Shard,
  range: BucketRange,
): Promise<Record<string, { rows: number; sha256: string }>> {
  const tables: Record<string, { rows: number; sha256: string }> = {};
  for (const table of TABLES) {
    const [onSource, onDestination] = await Promise.all([digest(source.db, table, range), digest(destination.db, table, range)]);
    if (onSource.rows !== onDestination.rows || onSource.sha256 !== onDestination.sha256) {
      throw new Error(
        `verify failed: ${table.name} has ${onSource.rows} rows (sha256 ${onSource.sha256}) on ${source.name}, ` +
          `${onDestination.rows} (sha256 ${onDestination.sha256}) on ${destination.name}`,
      );
    }
    tables[table.name] = onSource;
  }
  return tables;
}
