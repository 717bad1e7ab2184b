/**
 * `directory fill [--check]` (docs/SHARDING.md §6 steps 2–3): the directory filled from the shards' users and
 * memberships, and the check that it holds them all and that every id agrees with its organization's bucket (§2).
 *
 * Large tables are read in pages of PAGE_ROWS rows in key order (a keyset: each page starts after the last key of
 * the one before, an index range whatever the table's size; the first after the empty string, which every id follows), and a page is written to the directory as JSON bound to
 * a single parameter (`json_each`): D1 allows 100 bound parameters and 100,000 bytes of SQL per statement, so a
 * parameter per value would cap a statement at 25 users, while one JSON parameter of at most STATEMENT_BYTES holds
 * hundreds, within the statement limit even were bound values counted in it. 1,000 rows a page keeps a page's JSON
 * near 100 KB (one or two statements of one batch) and 100,000 users at 100 pages, two round trips each.
 */
import { bucketOfId, bucketOfPrefix } from "../db/buckets";
import { type Sql, sql, type Values } from "../db/sql";
import { type DatabasePool, retryTransient } from "./database";

/** Rows read per page. */
export const PAGE_ROWS = 1000;
/** Most bytes of the JSON one statement binds: under D1's 100,000-byte statement limit. */
const STATEMENT_BYTES = 90_000;
/** Disagreements a failed check or fill lists; the rest are counted. */
const LISTED = 50;

/** What went wrong, named row by row: at most LISTED of them, and how many in all. */
export class DisagreementsError extends Error {
  constructor(what: string, disagreements: string[]) {
    const listed = disagreements.slice(0, LISTED).map((line) => `  ${line}`);
    const more = disagreements.length > LISTED ? [`  ... and ${disagreements.length - LISTED} more`] : [];
    super([`${what}: ${disagreements.length} found`, ...listed, ...more].join("\n"));
  }
}

/**
 * A table read in pages: `select` answers the :page_rows rows after the key its `after_*` values name, in key order;
 * `first` names a key before every row (empty strings), `after` the key of a row.
 */
export interface Pages<Row> {
  select: Sql<Row>;
  first: Values;
  after: (row: Row) => Values;
}

/** Every row of a table, page by page. */
export async function* pagesOf<Row>(db: D1Database, table: Pages<Row>): AsyncGenerator<Row[]> {
  let after = table.first;
  for (;;) {
    const { results } = await retryTransient(() => table.select.bind(db, { ...after, page_rows: PAGE_ROWS }).all<Row>());
    if (results.length > 0) yield results;
    if (results.length < PAGE_ROWS) return;
    after = table.after(results[results.length - 1]);
  }
}

/** `items` as JSON arrays of at most STATEMENT_BYTES each (one item is never split). */
export function jsonChunks(items: unknown[]): string[] {
  const chunks: string[] = [];
  let texts: string[] = [];
  let bytes = 2;
  const encoder = new TextEncoder();
  for (const item of items) {
    const text = JSON.stringify(item);
    const size = encoder.encode(text).length + 1;
    if (texts.length > 0 && bytes + size > STATEMENT_BYTES) {
      chunks.push(`[${texts.join(",")}]`);
      [texts, bytes] = [[], 2];
    }
    texts.push(text);
    bytes += size;
  }
  if (texts.length > 0) chunks.push(`[${texts.join(",")}]`);
  return chunks;
}

interface User {
  id: string;
  username: string;
  email: string;
  created_at: string;
}

interface Membership {
  user_id: string;
  organization_id: string;
}

const USERS: Pages<User> = {
  select: sql<User>("SELECT id, username, email, created_at FROM users WHERE id > :after_id ORDER BY id LIMIT :page_rows"),
  first: { after_id: "" },
  after: (user) => ({ after_id: user.id }),
};

const MEMBERSHIPS: Pages<Membership> = {
  select: sql<Membership>(
    `SELECT user_id, organization_id FROM organization_members
      WHERE (user_id, organization_id) > (:after_user_id, :after_organization_id)
      ORDER BY user_id, organization_id LIMIT :page_rows`,
  ),
  first: { after_user_id: "", after_organization_id: "" },
  after: (membership) => ({ after_user_id: membership.user_id, after_organization_id: membership.organization_id }),
};

// A chunk of users is bound as JSON [[id, username, email, created_at], ...]; of memberships, [[user_id, organization_id], ...].
const CHUNK_USERS = `SELECT value ->> 0 AS id, value ->> 1 AS username, value ->> 2 AS email, value ->> 3 AS created_at
  FROM json_each(:chunk)`;
const INSERT_USERS = sql(`INSERT OR IGNORE INTO users (id, username, email, created_at) ${CHUNK_USERS}`);
/** The directory's users that a chunk's users are, or clash with (email: NOCASE, as the directory's UNIQUE). */
const DIRECTORY_USERS_OF_CHUNK = sql<User>(`WITH chunk AS (${CHUNK_USERS})
  SELECT id, username, email, created_at FROM users
   WHERE id IN (SELECT id FROM chunk) OR email IN (SELECT email FROM chunk) OR username IN (SELECT username FROM chunk)`);
const CHUNK_MEMBERSHIPS = "SELECT value ->> 0 AS user_id, value ->> 1 AS organization_id FROM json_each(:chunk)";
const INSERT_MEMBERSHIPS = sql(`INSERT OR IGNORE INTO memberships (user_id, organization_id) ${CHUNK_MEMBERSHIPS}`);
const DIRECTORY_MEMBERSHIPS_OF_CHUNK = sql<Membership>(`SELECT user_id, organization_id FROM memberships
  WHERE (user_id, organization_id) IN (${CHUNK_MEMBERSHIPS})`);

const userRow = (user: User) => [user.id, user.username, user.email, user.created_at];
/** SQLite's NOCASE: ASCII letters only. */
const foldCase = (text: string) => text.replace(/[A-Z]/g, (letter) => letter.toLowerCase());
const describeUser = (user: User) =>
  `username ${JSON.stringify(user.username)}, email ${JSON.stringify(user.email)}, created_at ${user.created_at}`;

/**
 * Why the directory's rows `found` do not hold `user` of `shard` as it is: its id with other values, or another id
 * with its email or username. None: the directory holds it.
 */
function userDisagreements(shard: string, user: User, found: User[]): string[] {
  const named = `${shard} users ${user.id}`;
  const same = found.find((row) => row.id === user.id);
  if (same) {
    const agrees = same.username === user.username && same.email === user.email && same.created_at === user.created_at;
    return agrees ? [] : [`${named}: ${shard} has ${describeUser(user)}; the directory has ${describeUser(same)}`];
  }
  const clashes = found.filter(
    (row) => row.id !== user.id && (foldCase(row.email) === foldCase(user.email) || row.username === user.username),
  );
  if (clashes.length === 0) return [`${named}: missing from the directory`];
  return clashes.map((row) => {
    const what = foldCase(row.email) === foldCase(user.email) ? `email ${row.email}` : `username ${row.username}`;
    return `${named}: the directory's user ${row.id} has the same ${what}`;
  });
}

/** What a fill added: on one shard, or in all. */
type Added = {
  users_added: number;
  memberships_added: number;
};

/** What a check read: on one shard, or in all. */
type Checked = {
  users: number;
  memberships: number;
  ids: number;
};

/** Each count summed over the shards'. */
function total<Counts extends Record<string, number>>(shards: Record<string, Counts>, zero: Counts): Counts {
  const sums: Record<string, number> = { ...zero };
  for (const counts of Object.values(shards)) for (const field of Object.keys(sums)) sums[field] += counts[field];
  return sums as Counts;
}

/**
 * Adds every shard's users and memberships the directory lacks (INSERT OR IGNORE: idempotent). A user whose id the
 * directory holds with other values, or whose email or username another id holds there, stops the fill after its
 * page, naming each (nothing is guessed; what was added is correct and stays).
 */
export async function fillDirectory(pool: DatabasePool): Promise<Added & { shards: Record<string, Added> }> {
  const shards: Record<string, Added> = {};
  for (const { name, db } of pool.shards) {
    const added: Added = { users_added: 0, memberships_added: 0 };
    for await (const users of pagesOf(db, USERS)) {
      const chunks = jsonChunks(users.map(userRow));
      const results = await retryTransient(() =>
        pool.directory.batch<User>(
          chunks.flatMap((chunk) => [
            INSERT_USERS.bind(pool.directory, { chunk }),
            DIRECTORY_USERS_OF_CHUNK.bind(pool.directory, { chunk }),
          ]),
        ),
      );
      const found = results.filter((_, i) => i % 2 === 1).flatMap((result) => result.results);
      added.users_added += results.filter((_, i) => i % 2 === 0).reduce((sum, result) => sum + result.meta.changes, 0);
      const disagreements = users.flatMap((user) => userDisagreements(name, user, found));
      if (disagreements.length > 0)
        throw new DisagreementsError("the directory cannot take these users as they are", disagreements);
    }
    for await (const memberships of pagesOf(db, MEMBERSHIPS)) {
      const chunks = jsonChunks(memberships.map((membership) => [membership.user_id, membership.organization_id]));
      const results = await retryTransient(() =>
        pool.directory.batch(chunks.map((chunk) => INSERT_MEMBERSHIPS.bind(pool.directory, { chunk }))),
      );
      added.memberships_added += results.reduce((sum, result) => sum + result.meta.changes, 0);
    }
    shards[name] = added;
  }
  return { shards, ...total(shards, { users_added: 0, memberships_added: 0 }) };
}

interface BucketedRow {
  id: string;
  prefix: string | null;
  organization_id: string;
  organization_bucket: number;
}

// A page of a table whose ids carry their organization's bucket: the table as `t`, joined up to its organization `o`.
const BUCKETED_ROW = "SELECT t.id AS id, NULL AS prefix, o.id AS organization_id, o.bucket AS organization_bucket";
const BUCKETED_PAGE = "WHERE t.id > :after_id ORDER BY t.id LIMIT :page_rows";
const UP_FROM_PROJECT = "JOIN workspaces w ON w.id = p.workspace_id JOIN organizations o ON o.id = w.organization_id";
const UP_FROM_APP = `JOIN projects p ON p.id = a.project_id ${UP_FROM_PROJECT}`;

/** docs/SHARDING.md §1's tables of an organization whose ids newId mints (webhook deliveries' are SQL-made v4). */
const BUCKETED_TABLES = {
  organizations: sql<BucketedRow>(`${BUCKETED_ROW} FROM organizations t JOIN organizations o ON o.id = t.id ${BUCKETED_PAGE}`),
  workspaces: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM workspaces t JOIN organizations o ON o.id = t.organization_id ${BUCKETED_PAGE}`,
  ),
  projects: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM projects t JOIN workspaces w ON w.id = t.workspace_id JOIN organizations o ON o.id = w.organization_id
     ${BUCKETED_PAGE}`,
  ),
  apps: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM apps t JOIN projects p ON p.id = t.project_id ${UP_FROM_PROJECT} ${BUCKETED_PAGE}`,
  ),
  app_variants: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM app_variants t JOIN apps a ON a.id = t.app_id ${UP_FROM_APP} ${BUCKETED_PAGE}`,
  ),
  app_variant_revisions: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM app_variant_revisions t JOIN app_variants v ON v.id = t.variant_id JOIN apps a ON a.id = v.app_id
     ${UP_FROM_APP} ${BUCKETED_PAGE}`,
  ),
  environments: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM environments t JOIN apps a ON a.id = t.app_id ${UP_FROM_APP} ${BUCKETED_PAGE}`,
  ),
  deployments: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM deployments t JOIN environments e ON e.id = t.environment_id JOIN apps a ON a.id = e.app_id
     ${UP_FROM_APP} ${BUCKETED_PAGE}`,
  ),
  environment_revisions: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM environment_revisions t JOIN environments e ON e.id = t.environment_id JOIN apps a ON a.id = e.app_id
     ${UP_FROM_APP} ${BUCKETED_PAGE}`,
  ),
  invitations: sql<BucketedRow>(
    `${BUCKETED_ROW} FROM invitations t JOIN organizations o ON o.id = t.organization_id ${BUCKETED_PAGE}`,
  ),
  events: sql<BucketedRow>(`${BUCKETED_ROW} FROM events t JOIN organizations o ON o.id = t.organization_id ${BUCKETED_PAGE}`),
  webhooks: sql<BucketedRow>(`${BUCKETED_ROW} FROM webhooks t JOIN organizations o ON o.id = t.organization_id ${BUCKETED_PAGE}`),
  // Its prefix carries the bucket too.
  api_keys: sql<BucketedRow>(
    `SELECT t.id AS id, t.prefix AS prefix, o.id AS organization_id, o.bucket AS organization_bucket
       FROM api_keys t JOIN projects p ON p.id = t.project_id ${UP_FROM_PROJECT} ${BUCKETED_PAGE}`,
  ),
} as const;

const bucketedPages = (select: Sql<BucketedRow>): Pages<BucketedRow> => ({
  select,
  first: { after_id: "" },
  after: (row) => ({ after_id: row.id }),
});

/** Where a row's id (or key prefix) disagrees with its organization's bucket; for organizations, the stored bucket. */
function bucketDisagreements(shard: string, table: string, row: BucketedRow, since: number): string[] {
  const disagreements: string[] = [];
  const idBucket = bucketOfId(row.id, since);
  if (idBucket !== row.organization_bucket) {
    disagreements.push(
      table === "organizations"
        ? `${shard} organizations ${row.id}: its id's bucket is ${idBucket}, organizations.bucket is ${row.organization_bucket}`
        : `${shard} ${table} ${row.id}: bucket ${idBucket}, its organization ${row.organization_id}'s is ${row.organization_bucket}`,
    );
  }
  if (row.prefix !== null) {
    const prefixBucket = bucketOfPrefix(row.prefix);
    if (prefixBucket !== row.organization_bucket) {
      disagreements.push(
        `${shard} api_keys ${row.id} (prefix ${row.prefix}): bucket ${prefixBucket}, its organization ${row.organization_id}'s is ${row.organization_bucket}`,
      );
    }
  }
  return disagreements;
}

/**
 * Writes nothing. Every shard's users and memberships are in the directory (users with the same values), and every
 * id of an organization's rows (and every key prefix) carries the organization's bucket, which its own id carries
 * too, by `since` (BUCKETED_SINCE, as the Worker reads it). Answers what it checked; else DisagreementsError naming
 * each row.
 */
export async function checkDirectory(
  pool: DatabasePool,
  since: number,
): Promise<Checked & { shards: Record<string, Checked>; disagreements: 0 }> {
  const shards: Record<string, Checked> = {};
  const disagreements: string[] = [];
  for (const { name, db } of pool.shards) {
    const checked: Checked = { users: 0, memberships: 0, ids: 0 };
    for await (const users of pagesOf(db, USERS)) {
      const found = await readChunks<User>(pool.directory, DIRECTORY_USERS_OF_CHUNK, users.map(userRow));
      disagreements.push(...users.flatMap((user) => userDisagreements(name, user, found)));
      checked.users += users.length;
    }
    for await (const memberships of pagesOf(db, MEMBERSHIPS)) {
      const pairs = memberships.map((membership) => [membership.user_id, membership.organization_id]);
      const found = new Set(
        (await readChunks<Membership>(pool.directory, DIRECTORY_MEMBERSHIPS_OF_CHUNK, pairs)).map((row) =>
          JSON.stringify([row.user_id, row.organization_id]),
        ),
      );
      for (const pair of pairs) {
        if (!found.has(JSON.stringify(pair))) {
          disagreements.push(
            `${name} organization_members (user ${pair[0]}, organization ${pair[1]}): missing from the directory`,
          );
        }
      }
      checked.memberships += memberships.length;
    }
    for (const [table, select] of Object.entries(BUCKETED_TABLES)) {
      for await (const rows of pagesOf(db, bucketedPages(select))) {
        disagreements.push(...rows.flatMap((row) => bucketDisagreements(name, table, row, since)));
        checked.ids += rows.length;
      }
    }
    shards[name] = checked;
  }
  if (disagreements.length > 0) throw new DisagreementsError("directory fill --check failed", disagreements);
  return { shards, ...total(shards, { users: 0, memberships: 0, ids: 0 }), disagreements: 0 };
}

/** The rows `select` answers for `items`, bound as JSON chunks, all in one batch. */
async function readChunks<Row>(db: D1Database, select: Sql<Row>, items: unknown[]): Promise<Row[]> {
  const results = await retryTransient(() => db.batch<Row>(jsonChunks(items).map((chunk) => select.bind(db, { chunk }))));
  return results.flatMap((result) => result.results);
}
