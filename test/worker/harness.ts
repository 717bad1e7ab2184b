import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { DEFAULT_ENVIRONMENTS } from "./fixtures";
import { shards } from "./pool";

/**
 * Shared by the fuzz, injection and race tests: whole-pool checks read with plain SQL on the real D1 databases (every
 * shard, and the directory), so that whatever the requests did, what is left behind is judged on its own.
 */

/** Every table the migrations make on a shard, parents first. */
export const TABLES = [
  "users",
  "organizations",
  "events",
  "organization_members",
  "workspaces",
  "projects",
  "api_keys",
  "invitations",
  "apps",
  "app_variants",
  "app_variant_revisions",
  "environments",
  "deployments",
  "environment_revisions",
  "environment_protections",
  "change_requests",
  "change_request_reviews",
  "environment_splits",
  "split_verdicts",
  "idempotency_keys",
  "idempotency_key_requests",
  "webhooks",
  "webhook_deliveries",
  "webhook_attempts",
  "bucket_fences",
  "fence_trips",
] as const;
export type Table = (typeof TABLES)[number];

/** Every table of the directory (migrations-directory/), as snapshots name them. */
const DIRECTORY_TABLES = ["directory.users", "directory.memberships", "directory.bucket_moves"] as const;
type DirectoryTable = (typeof DIRECTORY_TABLES)[number];
const directoryTable = (table: DirectoryTable) => table.slice("directory.".length);

/** Every foreign key of the schema: [child table, column, parent table, parent column]. */
export const FOREIGN_KEYS: readonly (readonly [Table, string, Table, string])[] = [
  ["events", "organization_id", "organizations", "id"],
  ["organization_members", "organization_id", "organizations", "id"],
  ["organization_members", "user_id", "users", "id"],
  ["workspaces", "organization_id", "organizations", "id"],
  ["projects", "workspace_id", "workspaces", "id"],
  ["api_keys", "user_id", "users", "id"],
  ["api_keys", "project_id", "projects", "id"],
  ["invitations", "organization_id", "organizations", "id"],
  ["invitations", "workspace_id", "workspaces", "id"],
  ["invitations", "invited_by", "users", "id"],
  ["invitations", "accepted_by", "users", "id"],
  ["apps", "project_id", "projects", "id"],
  ["apps", "created_by", "users", "id"],
  ["app_variants", "app_id", "apps", "id"],
  ["app_variant_revisions", "variant_id", "app_variants", "id"],
  ["app_variant_revisions", "modified_by", "users", "id"],
  ["environments", "app_id", "apps", "id"],
  ["environments", "deployed_app_variant_id", "app_variants", "id"],
  ["environments", "deployed_app_variant_revision_id", "app_variant_revisions", "id"],
  ["deployments", "environment_id", "environments", "id"],
  ["deployments", "app_variant_revision_id", "app_variant_revisions", "id"],
  ["deployments", "deployed_by", "users", "id"],
  ["environment_revisions", "environment_id", "environments", "id"],
  ["environment_revisions", "modified_by", "users", "id"],
  ["environment_revisions", "deployed_app_variant_revision_id", "app_variant_revisions", "id"],
  ["environment_revisions", "deployment_id", "deployments", "id"],
  ["environment_protections", "project_id", "projects", "id"],
  ["environment_protections", "updated_by", "users", "id"],
  ["change_requests", "app_id", "apps", "id"],
  ["change_requests", "variant_revision_id", "app_variant_revisions", "id"],
  ["change_requests", "revert_to_revision_id", "environment_revisions", "id"],
  ["change_requests", "author_id", "users", "id"],
  ["change_requests", "scheduled_by", "users", "id"],
  ["change_requests", "applied_by", "users", "id"],
  ["change_request_reviews", "change_request_id", "change_requests", "id"],
  ["change_request_reviews", "reviewer_id", "users", "id"],
  ["environment_splits", "environment_id", "environments", "id"],
  ["environment_splits", "base_environment_revision_id", "environment_revisions", "id"],
  ["environment_splits", "candidate_revision_id", "app_variant_revisions", "id"],
  ["environment_splits", "started_by", "users", "id"],
  ["split_verdicts", "split_id", "environment_splits", "id"],
  ["webhooks", "organization_id", "organizations", "id"],
  ["webhook_deliveries", "webhook_id", "webhooks", "id"],
  ["webhook_deliveries", "event_id", "events", "id"],
  ["webhook_attempts", "delivery_id", "webhook_deliveries", "id"],
];

/**
 * The foreign keys the migrations declare (`col TYPE ... REFERENCES parent (col)`), to keep FOREIGN_KEYS complete. A
 * table rebuilt the SQLite way (CREATE TABLE t_next, DROP TABLE t, ALTER TABLE t_next RENAME TO t: migration 0006)
 * declares its keys under its final name; a dropped table's keys are gone.
 */
export function declaredForeignKeys(): string[] {
  const declared = new Map<string, string[]>();
  for (const migration of env.TEST_SHARD_MIGRATIONS) {
    for (const statement of migration.queries) {
      const dropped = /DROP TABLE (?:IF EXISTS )?(\w+)/.exec(statement)?.[1];
      if (dropped) declared.delete(dropped);
      const [, from, to] = /ALTER TABLE (\w+) RENAME TO (\w+)/.exec(statement) ?? [];
      if (from && to) {
        declared.set(to, declared.get(from) ?? []);
        declared.delete(from);
      }
      const table = /CREATE TABLE (\w+)/.exec(statement)?.[1];
      if (!table) continue;
      const keys: string[] = [];
      for (const [, column, parent, parentColumn] of statement.matchAll(
        /^\s*(\w+)\s+\w+[^,\n]*?REFERENCES\s+(\w+)\s*\((\w+)\)/gm,
      )) {
        keys.push(`${column} -> ${parent}.${parentColumn}`);
      }
      declared.set(table, keys);
    }
  }
  return [...declared].flatMap(([table, keys]) => keys.map((key) => `${table}.${key}`)).sort();
}

export const describeForeignKey = ([table, column, parent, parentColumn]: (typeof FOREIGN_KEYS)[number]) =>
  `${table}.${column} -> ${parent}.${parentColumn}`;

/** Each table's rows, summed over the shards. */
export async function rowCounts(): Promise<Record<Table, number>> {
  const counts = await Promise.all(
    shards().map((db) => db.batch<{ n: number }>(TABLES.map((table) => db.prepare(`SELECT COUNT(*) AS n FROM ${table}`)))),
  );
  return Object.fromEntries(
    TABLES.map((table, i) => [table, counts.reduce((sum, results) => sum + results[i].results[0].n, 0)]),
  ) as Record<Table, number>;
}

type Row = Record<string, unknown>;
/** Each shard table's rows on every shard (shard after shard), and each directory table's. */
export type Snapshot = Record<Table | DirectoryTable, Row[]>;

/**
 * Columns no request's effect is judged by: a key's last use is written after the answer of its first request in an
 * hour (src/auth/require-api-key.ts), whatever the request did. keys.test.ts checks it on its own.
 */
const BOOKKEEPING: Partial<Record<Table, string[]>> = { api_keys: ["last_used_at"] };

function withoutBookkeeping(table: Table, row: Row): Row {
  const left = { ...row };
  for (const column of BOOKKEEPING[table] ?? []) delete left[column];
  return left;
}

/** Of each table: its primary key columns as the schema declares them (for ORDER BY), and its compared columns. */
interface TableSchema {
  order: string;
  columns: string;
}

/** Each table's schema, read once per list of tables (every shard has the same). */
const schemas = new Map<string, Promise<TableSchema[]>>();

function schemaOf(db: D1Database, tables: readonly string[]): Promise<TableSchema[]> {
  const known = schemas.get(tables.join());
  if (known) return known;
  const read = db
    .batch<{ name: string; pk: number }>(
      tables.map((table) => db.prepare("SELECT name, pk FROM pragma_table_info(?) ORDER BY cid").bind(table)),
    )
    .then((results) =>
      results.map(({ results: columns }, i) => ({
        // A table without a declared primary key (fence_trips) is ordered by its rowid.
        order:
          columns
            .filter((column) => column.pk > 0)
            .sort((a, b) => a.pk - b.pk)
            .map((column) => column.name)
            .join(", ") || "rowid",
        columns: columns
          .map((column) => column.name)
          .filter((column) => !BOOKKEEPING[tables[i] as Table]?.includes(column))
          .join(", "),
      })),
    );
  schemas.set(tables.join(), read);
  return read;
}

/** Rows of each of `tables` of `db`, each table ordered by its primary key. */
async function tableRows(db: D1Database, tables: readonly string[]): Promise<Row[][]> {
  const schema = await schemaOf(db, tables);
  const results = await db.batch(tables.map((table, i) => db.prepare(`SELECT * FROM ${table} ORDER BY ${schema[i].order}`)));
  return results.map((result) => result.results as Row[]);
}

/** Every row of every table of the pool: each shard table's on every shard, shard after shard, and the directory's. */
export async function snapshot(): Promise<Snapshot> {
  const [directory, ...onShards] = await Promise.all([
    tableRows(env.DIRECTORY, DIRECTORY_TABLES.map(directoryTable)),
    ...shards().map((db) => tableRows(db, TABLES)),
  ]);
  return Object.fromEntries([
    ...TABLES.map((table, i) => [table, onShards.flatMap((rows) => rows[i].map((row) => withoutBookkeeping(table, row)))]),
    ...DIRECTORY_TABLES.map((table, i) => [table, directory[i]]),
  ]) as Snapshot;
}

/** The rows each table gained and lost between two snapshots (a changed row is both); unchanged tables are left out. */
export function changes(
  before: Snapshot,
  after: Snapshot,
): Partial<Record<Table | DirectoryTable, { added: Row[]; removed: Row[] }>> {
  const changed: Partial<Record<Table | DirectoryTable, { added: Row[]; removed: Row[] }>> = {};
  for (const table of [...TABLES, ...DIRECTORY_TABLES]) {
    const [was, is] = [
      new Set(before[table].map((row) => JSON.stringify(row))),
      new Set(after[table].map((row) => JSON.stringify(row))),
    ];
    const added = after[table].filter((row) => !was.has(JSON.stringify(row)));
    const removed = before[table].filter((row) => !is.has(JSON.stringify(row)));
    if (added.length > 0 || removed.length > 0) changed[table] = { added, removed };
  }
  return changed;
}

export type Changes = ReturnType<typeof changes>;

/** Rows added and removed per table (a changed row counts in both). */
export type RowCounts = Partial<Record<Table | DirectoryTable, [added: number, removed: number]>>;

/** Exactly `rows` changed: the counts of rows added and removed, table by table. */
export function expectRowCounts(changed: Changes, rows: RowCounts): void {
  const counts = Object.fromEntries(
    Object.entries(changed).map(([table, { added, removed }]) => [table, [added.length, removed.length]]),
  );
  expect(counts).toEqual(rows);
}

/** The one row of `table` a write added; with `{ orChanged: true }`, or the new version of the one row it changed. */
export function addedRow(changed: Changes, table: Table | DirectoryTable, { orChanged = false } = {}): Row {
  if (!orChanged) expect(changed[table]?.removed).toEqual([]);
  expect(changed[table]?.added).toHaveLength(1);
  return changed[table]!.added[0];
}

/**
 * An event a write must record (docs/EVENTS.md): its type, and what else the test knows of it: columns of its row
 * (null where the event names no workspace, project or app) and keys of its `data` (others may be there too).
 */
export interface ExpectedEvent {
  type: string;
  organization_id?: string;
  workspace_id?: string | null;
  project_id?: string | null;
  app_id?: string | null;
  actor_user_id?: string | null;
  actor_api_key_prefix?: string | null;
  data?: Record<string, unknown>;
}

/** The event of a change to app `appId` of `account`'s own project, made with their key. */
export const eventOfApp = (
  type: string,
  account: { organizationId: string; projectId: string; userId: string },
  appId: string,
  data: Record<string, unknown>,
): ExpectedEvent => ({
  type,
  organization_id: account.organizationId,
  project_id: account.projectId,
  app_id: appId,
  actor_user_id: account.userId,
  data,
});

const EVENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const EVENT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const typeOf = (row: object) => String((row as { type?: unknown }).type);
const byType = <T extends object>(rows: T[]) => [...rows].sort((a, b) => typeOf(a).localeCompare(typeOf(b)));

/**
 * The events a write added must be exactly `expected` (in any order; none: a refused, failed or replayed request
 * records nothing), each a new row (UUIDv7 id, a time, an object as data), none changed or removed: the audit log only
 * grows. Returns the write's other changes, for its own checks.
 */
export function expectEvents<C extends Changes>(changed: C, ...expected: ExpectedEvent[]): Omit<C, "events"> {
  const { events, ...rest } = changed;
  const added = (events?.added ?? []).map((row) => ({ ...row, data: JSON.parse(String(row.data)) as unknown }));
  const wanted = byType(expected).map(({ data, ...columns }) =>
    expect.objectContaining({
      ...columns,
      id: expect.stringMatching(EVENT_ID),
      occurred_at: expect.stringMatching(EVENT_TIME),
      organization_id: columns.organization_id ?? expect.any(String),
      data: data ? expect.objectContaining(data) : expect.any(Object),
    }),
  );
  expect({ added: byType(added), removed: events?.removed ?? [] }, "the events the write recorded").toEqual({
    added: wanted,
    removed: [],
  });
  return rest;
}

/** A check of a write's changes that first checks its events (`expectEvents`), then the rest with `check`. */
export const withEvents =
  <A extends unknown[]>(check: (changed: Changes, ...more: A) => void, ...expected: ExpectedEvent[]) =>
  (changed: Changes, ...more: A) =>
    check(expectEvents(changed, ...expected), ...more);

/**
 * Everything wrong with the database, as readable lines (empty when all is well):
 * - a row whose foreign key names no row (checked relation by relation with LEFT JOIN ... IS NULL, and by
 *   SQLite's own PRAGMA foreign_key_check);
 * - an app without exactly its three environments (development, staging, production), an environment of
 *   another name;
 * - an environment whose revision counter disagrees with its revision rows (1..n, gapless), or whose deployed
 *   variant belongs to another app;
 * - a variant whose revisions are not 1..n;
 * - an organization without an owner (migration 0006's triggers keep one; this is the second line);
 * - two open invitations (neither accepted nor voided) for one organization and email (emails compared without case);
 * - a live key (not revoked) of a user for a project of an organization they are not a member of: what removing a
 *   member must prevent, by revoking their keys there in the same transaction.
 */
export async function databaseProblems(): Promise<string[]> {
  return (await Promise.all(shards().map(shardProblems))).flat();
}

/** `databaseProblems` of one shard. */
async function shardProblems(db: D1Database): Promise<string[]> {
  const problems: string[] = [];
  const orphanQueries = FOREIGN_KEYS.map(([table, column, parent, parentColumn]) =>
    db.prepare(
      `SELECT COUNT(*) AS n FROM ${table} c LEFT JOIN ${parent} p ON p.${parentColumn} = c.${column}
        WHERE c.${column} IS NOT NULL AND p.${parentColumn} IS NULL`,
    ),
  );
  const expected = [...DEFAULT_ENVIRONMENTS].sort().join(",");
  const checks = [
    // Apps whose environments are not exactly the three defaults.
    db
      .prepare(
        `SELECT id, names FROM (
         SELECT a.id AS id, COALESCE((SELECT group_concat(name, ',') FROM (SELECT name FROM environments WHERE app_id = a.id ORDER BY name)), '') AS names
           FROM apps a)
        WHERE names <> ?`,
      )
      .bind(expected),
    // Environments whose counter is not the number of their revisions, or whose revisions are not 1..n.
    db.prepare(
      `SELECT e.id AS id, e.revision AS revision, COUNT(r.id) AS n, COALESCE(MIN(r.revision), 0) AS lo, COALESCE(MAX(r.revision), 0) AS hi
         FROM environments e LEFT JOIN environment_revisions r ON r.environment_id = e.id
        GROUP BY e.id HAVING n <> e.revision OR hi <> e.revision OR (n > 0 AND lo <> 1)`,
    ),
    // Variants whose revisions are not 1..n.
    db.prepare(
      `SELECT v.id AS id, COUNT(r.id) AS n, COALESCE(MIN(r.revision), 0) AS lo, COALESCE(MAX(r.revision), 0) AS hi
         FROM app_variants v LEFT JOIN app_variant_revisions r ON r.variant_id = v.id
        GROUP BY v.id HAVING hi <> n OR (n > 0 AND lo <> 1)`,
    ),
    // Deployed variant (or its revision) of another app than the environment's.
    db.prepare(
      `SELECT e.id AS id FROM environments e
         LEFT JOIN app_variants v ON v.id = e.deployed_app_variant_id
         LEFT JOIN app_variant_revisions vr ON vr.id = e.deployed_app_variant_revision_id
        WHERE (e.deployed_app_variant_id IS NOT NULL AND v.app_id <> e.app_id)
           OR (e.deployed_app_variant_revision_id IS NOT NULL AND vr.variant_id <> e.deployed_app_variant_id)
           OR ((e.deployed_app_variant_id IS NULL) <> (e.deployed_app_variant_revision_id IS NULL))`,
    ),
    // Environments running a removed variant (DELETE /variants/{id} refuses, and so does every deploy).
    db.prepare(
      `SELECT e.id AS id, v.id AS variant FROM environments e JOIN app_variants v ON v.id = e.deployed_app_variant_id
        WHERE v.removed_at IS NOT NULL`,
    ),
    // Organizations without an owner.
    db.prepare(
      `SELECT o.id AS id FROM organizations o
        WHERE NOT EXISTS (SELECT 1 FROM organization_members WHERE organization_id = o.id AND role = 'owner')`,
    ),
    // More than one open invitation for an organization and email.
    db.prepare(
      `SELECT organization_id, lower(email) AS email, COUNT(*) AS n FROM invitations
        WHERE accepted_at IS NULL AND voided_at IS NULL
        GROUP BY organization_id, lower(email) HAVING n > 1`,
    ),
    // Live keys for a project of an organization their user is not a member of.
    db.prepare(
      `SELECT k.prefix AS prefix, k.user_id AS user_id, w.organization_id AS organization_id
         FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN workspaces w ON w.id = p.workspace_id
        WHERE k.revoked_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM organization_members WHERE organization_id = w.organization_id AND user_id = k.user_id)`,
    ),
  ];
  const results = await db.batch([...orphanQueries, ...checks]);
  FOREIGN_KEYS.forEach((foreignKey, i) => {
    const n = (results[i].results[0] as { n: number }).n;
    if (n > 0) problems.push(`${n} orphan row(s): ${describeForeignKey(foreignKey)}`);
  });
  const [wrongEnvironments, wrongCounters, wrongVariants, crossApp, runningRemoved, ownerless, twiceInvited, strayKeys] = results
    .slice(FOREIGN_KEYS.length)
    .map((result) => result.results);
  for (const row of wrongEnvironments) problems.push(`app without exactly ${expected}: ${JSON.stringify(row)}`);
  for (const row of wrongCounters) problems.push(`environment revisions not 1..revision: ${JSON.stringify(row)}`);
  for (const row of wrongVariants) problems.push(`variant revisions not 1..n: ${JSON.stringify(row)}`);
  for (const row of crossApp) problems.push(`environment deploys another app's variant: ${JSON.stringify(row)}`);
  for (const row of runningRemoved) problems.push(`environment runs a removed variant: ${JSON.stringify(row)}`);
  for (const row of ownerless) problems.push(`organization without an owner: ${JSON.stringify(row)}`);
  for (const row of twiceInvited) problems.push(`more than one open invitation: ${JSON.stringify(row)}`);
  for (const row of strayKeys) problems.push(`live key outside its user's organizations: ${JSON.stringify(row)}`);
  const pragma = await db.prepare("PRAGMA foreign_key_check").all();
  for (const row of pragma.results) problems.push(`PRAGMA foreign_key_check: ${JSON.stringify(row)}`);
  return problems;
}

/** Set once the rows outgrew one string: the fingerprint is then read row by row (see `fingerprint`). */
let rowByRow = false;

/**
 * Every row of every table of the pool as one string, read in one round trip per database: equal fingerprints mean an
 * unchanged pool. A quarter of the cost of `snapshot()`, for checking request after request that nothing was written.
 */
export async function fingerprint(): Promise<string> {
  const prints = await Promise.all([
    databaseFingerprint(env.DIRECTORY, DIRECTORY_TABLES.map(directoryTable)),
    ...shards().map((db) => databaseFingerprint(db, TABLES)),
  ]);
  return prints.join("\n");
}

/**
 * One database's fingerprint. D1 refuses a string over 2 MB (SQLITE_TOOBIG), which the rows of a deep fuzz run
 * (FUZZ_RUNS=5000) outgrow: from then on, each table's rows come as rows, joined here (slower, and only in such runs).
 */
async function databaseFingerprint(db: D1Database, tables: readonly string[]): Promise<string> {
  const schema = await schemaOf(db, tables);
  if (!rowByRow) {
    const parts = tables.map(
      (table, i) => `'${table}', (SELECT json_group_array(json_array(${schema[i].columns})) FROM ${table})`,
    );
    try {
      const row = await db.prepare(`SELECT json_object(${parts.join(", ")}) AS rows`).first<{ rows: string }>();
      return row?.rows ?? "";
    } catch (error) {
      if (!String(error).includes("SQLITE_TOOBIG")) throw error;
      rowByRow = true;
    }
  }
  const rows = await db.batch<{ row: string }>(
    tables.map((table, i) => db.prepare(`SELECT json_array(${schema[i].columns}) AS row FROM ${table}`)),
  );
  return JSON.stringify(rows.map((table) => table.results.map((result) => result.row)));
}

/**
 * The database as it was after the last `changes()`: each call says what changed since (every row of every table
 * compared), reading the rows again only when the fingerprint says something did.
 */
export class Tracker {
  private constructor(
    public rows: Snapshot,
    private print: string,
  ) {}

  static async start(): Promise<Tracker> {
    return new Tracker(await snapshot(), await fingerprint());
  }

  async changes(): Promise<ReturnType<typeof changes>> {
    const print = await fingerprint();
    if (print === this.print) return {};
    const after = await snapshot();
    const changed = changes(this.rows, after);
    [this.rows, this.print] = [after, print];
    return changed;
  }
}
