/**
 * The benchmark's data, as one SQL file per shard for `wrangler d1 execute SHARD_<n> --local --persist-to DIR --file F`,
 * applied after the migrations. Bulk rows come from recursive CTEs, so SQLite makes them itself and loading takes
 * seconds. Everything below is on SHARD_0 (its ids are from before BUCKETED_SINCE and its key prefixes legacy: bucket
 * 0), but the across organization, on SHARD_1.
 *
 * One user, `bench`, owns five organizations, each with its default workspace and default project, and has
 * KEYS_PER_PROJECT API keys naming each project (the key's project is where `POST /apps` puts an app that names no
 * target). The service limits requests per key (wrangler.toml, [[ratelimits]]), so the bench spreads its requests
 * over many keys, as traffic from many clients would be: the limiter is still consulted on every request.
 *   read   personal organization, the apps with a deployment history (see below)
 *   post   empty project, target of the main POST scenario
 *   keyed  empty project, target of the POST scenario with an Idempotency-Key
 *   empty  empty project, baseline of the POST scale scenario
 *   full   project holding 100,000 apps (each with its three environments, at revision 0)
 *
 * A second user, `bench-events`, owns three more organizations, set up alike, with KEYS_PER_PROJECT keys each (a
 * user of their own, so that `GET /organizations` of the first user reads the same five organizations as before):
 *   quiet   DEPLOY_APPS apps like the bench-deploy ones (bench-quiet-001…), and no webhook: deploy, no webhooks
 *   hooked  DEPLOY_APPS apps like them (bench-hooked-001…): deploy, three webhooks (the scenario's check subscribes
 *           them through POST /webhooks, pointing at the bench's receiver, test/bench/receiver.ts)
 *   audit   AUDIT_EVENTS events (the audit log, GET /events, first page and deep page), no apps
 *
 * Every app with a history has its three environments and one variant, `main`, whose revisions hold params and a
 * url (migrations/0003); each entry of an environment's history is a deployment of one of those revisions. The
 * histories are inserted as the service's own deployments leave them, through the database's checks
 * (migrations/0004): environment revisions 1, 2, ... in order, each the environment's next number, each moving the
 * environment's pointers (the trigger does it; nothing is patched afterwards).
 *   bench-get-20      production at revision 20 (GET of a record, config fetch by environment); variant `main`
 *                     with 20 revisions
 *   bench-get-10000   production at revision 10,000 (GET of a large record) and staging at revision 10,000
 *                     (deploy into a long history); `main` with 10,000 revisions
 *   bench-deploy-001… DEPLOY_APPS apps whose staging is at revision 20 (deploy into a short history: each request
 *                     deploys into the next of them, so that each history stays short during the run); `main` with 20
 *   bench-save-20     production at revision 20 and `main` with 20 revisions (the older SDK's save over a taken
 *                     name, POST /configs with overwrite: each request commits `main` and deploys it to production;
 *                     an app of its own, so that no read scenario sees its production move)
 *
 * On SHARD_1 (wrangler.toml SHARD_MAP), the across organization, in bucket ACROSS_BUCKET, owned by `bench`: its default
 * workspace and project, and KEYS_PER_PROJECT keys of that project whose prefixes carry the bucket (src/db/buckets.ts
 * `newKeyPrefix`), with a copy of `bench`'s user row (same id, username, email and created_at, as the service keeps
 * copies, docs/SHARDING.md §1). Such a key reading the read organization's apps on SHARD_0 is a request across shards:
 * the key checked on its home shard first, then the read on SHARD_0 with the key vouched for (§3.2), two round trips
 * where the read organization's own keys take one.
 */
import { createHash, randomBytes, randomInt } from "node:crypto";
import { bucketOfPrefix, LEGACY_BUCKET, newKeyPrefix, PREFIX_ALPHABET } from "../../src/db/buckets";

/** Sizes of the data set. */
export const SMALL_HISTORY = 20;
export const LARGE_HISTORY = 10_000;
export const FULL_PROJECT_APPS = 100_000;
/** Apps the short-history deploy scenario takes turns on: a few thousand deploys leave each history short. */
export const DEPLOY_APPS = 256;
/** Keys per project: enough that none reaches a per-key limit of 600 requests a minute at a few thousand req/s. */
export const KEYS_PER_PROJECT = 128;
/** Apps with a history (bench-get-20, bench-get-10000, the bench-deploy apps, bench-save-20), and their histories' entries in all. */
export const HISTORY_APPS = 3 + DEPLOY_APPS;
export const HISTORY_ENTRIES = SMALL_HISTORY + 2 * LARGE_HISTORY + DEPLOY_APPS * SMALL_HISTORY + SMALL_HISTORY;
/** bench-diff, in the read project: config main at revisions 1 and 2, about 100 KB each, no deployment. */
export const DIFF_APPS = 1;
/** Entries of bench-diff's params (about 130 bytes each), and how many of them revision 2 changes (one place each). */
const DIFF_ENTRIES = 750;
export const DIFF_CHANGES = 300;
/** Apps of the quiet and of the hooked organization (each: DEPLOY_APPS apps like the bench-deploy ones). */
export const WEBHOOK_SCENARIO_APPS = 2 * DEPLOY_APPS;
/** Every app, and every environment revision, at the start. */
export const TOTAL_APPS = FULL_PROJECT_APPS + HISTORY_APPS + WEBHOOK_SCENARIO_APPS + DIFF_APPS;
export const TOTAL_HISTORY_ENTRIES = HISTORY_ENTRIES + WEBHOOK_SCENARIO_APPS * SMALL_HISTORY;
/** Webhooks the hooked organization's deploys are delivered to. */
export const WEBHOOKS = 3;
/** Events of the audit organization; the deep page starts after the AUDIT_DEEP-th newest; EVENTS_PAGE per page. */
export const AUDIT_EVENTS = 100_000;
export const AUDIT_DEEP = 90_000;
export const EVENTS_PAGE = 50;

/** The organizations of SHARD_0, by the name of their keys' pool. */
const KEY_NAMES = ["read", "post", "keyed", "empty", "full", "quiet", "hooked", "audit"] as const;
/** Their key pools, and that of the across organization (SHARD_1). */
export type KeyName = (typeof KEY_NAMES)[number] | "across";
/** The organizations of the second user, `bench-events` (the others are `bench`'s). */
const SECOND_USER_KEYS: readonly KeyName[] = ["quiet", "hooked", "audit"];

/** The shards the bench data is loaded into (wrangler.toml's local pool). */
export const BENCH_SHARDS = ["SHARD_0", "SHARD_1"] as const;
export type BenchShard = (typeof BENCH_SHARDS)[number];
/** The bucket of the across organization: the first that SHARD_MAP puts on SHARD_1. */
export const ACROSS_BUCKET = 512;

export interface BenchKey {
  /** `<8 letters/digits>.<64 lowercase hex>`, sent as `Authorization: ApiKey <key>`. */
  key: string;
  prefix: string;
  /** SHA-256 of the whole key, lowercase hex: what the service stores. */
  hash: string;
  projectId: string;
}

/** An environment with a history: the app, the environment's id and name, and its revision once loaded. */
export interface HistoryTarget {
  appId: string;
  environmentId: string;
  environment: "production" | "staging";
  revisions: number;
}

/** A query run after loading a shard, which must return exactly `expected` in column `n`. */
export interface DataCheck {
  what: string;
  sql: string;
  expected: number;
}

export interface BenchData {
  /** The SQL loaded into each shard. */
  sql: Record<BenchShard, string>;
  userId: string;
  /** `bench-events`, owner of the quiet, hooked and audit organizations. */
  secondUserId: string;
  /** KEYS_PER_PROJECT keys for each project (those of `across` homed on SHARD_1). */
  keys: Record<KeyName, BenchKey[]>;
  /** Production of bench-get-20 and of bench-get-10000 (GETs, config fetch). */
  get: { small: HistoryTarget; large: HistoryTarget };
  /** Staging of the DEPLOY_APPS bench-deploy apps, and of bench-get-10000 (deploys). */
  deploy: { small: HistoryTarget[]; large: HistoryTarget };
  /** Production of bench-save-20 (POST /configs with overwrite: saves over `main`, each deployed there). */
  save: HistoryTarget;
  /** Staging of the DEPLOY_APPS apps of the quiet organization and of the hooked one (deploy, no webhooks / three). */
  webhooks: { quiet: HistoryTarget[]; hooked: HistoryTarget[]; hookedOrganizationId: string };
  /** The audit organization and its AUDIT_EVENTS events (see `auditEventId`). */
  audit: { organizationId: string };
  /** bench-diff's two config revisions, by id (GET /diff/configs). */
  diff: { from: string; to: string };
  /** Checks run on each shard after loading it. */
  checks: Record<BenchShard, DataCheck[]>;
}

// Ids: lowercase UUID strings, version nibble 7, variant nibble 8, the kind of row in the first group and a
// counter in the last. Built the same way in JS (`id`) and in SQL (`sqlId`), so both sides agree.
const KIND = {
  user: 1,
  organization: 2,
  workspace: 3,
  project: 4,
  apiKey: 5,
  app: 6,
  environment: 7,
  variant: 8,
  variantRevision: 9,
  deployment: 10,
  environmentRevision: 11,
  event: 12,
} as const;
type Kind = keyof typeof KIND;

const ID_PREFIX = "0195";

function id(kind: Kind, counter: number): string {
  return `${ID_PREFIX}${KIND[kind].toString(16).padStart(4, "0")}-0000-7000-8000-${counter.toString(16).padStart(12, "0")}`;
}

/**
 * An id of the across organization's rows (as src/db/buckets.ts `newId(ACROSS_BUCKET)` mints them, but fixed): its
 * time BUCKETED_SINCE's (wrangler.toml, 2026-11-26T00:00:00Z, 0x01a21526e400 ms), from which on ids carry their bucket;
 * the kind of row and a counter, then the bucket in the last three hex digits.
 */
function acrossId(kind: Kind, counter: number): string {
  return `01a21526-e400-7000-8000-${KIND[kind].toString(16).padStart(3, "0")}${counter.toString(16).padStart(6, "0")}${ACROSS_BUCKET.toString(16).padStart(3, "0")}`;
}

/** The SQL expression of `id(kind, <counterExpression>)`. */
function sqlId(kind: Kind, counterExpression: string): string {
  return `printf('${ID_PREFIX}%04x-0000-7000-8000-%012x', ${KIND[kind]}, ${counterExpression})`;
}

/**
 * Event n of the audit organization (1 the oldest, AUDIT_EVENTS the newest): ids grow with n, as UUIDv7s grow with
 * time, and all sort before any UUIDv7 made now.
 */
export const auditEventId = (n: number) => id("event", n);

const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
/** `seconds` seconds before now, in the schema's timestamp format. */
const secondsAgo = (seconds: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', 'now', printf('-%d seconds', ${seconds}))`;

const ENVIRONMENTS = ["development", "staging", "production"] as const;
/** Environment counters: four per app, leaving room for the app's three. */
const environmentCounter = (appCounter: string | number, index: number) => `(${appCounter}) * 4 + ${index}`;
const environmentId = (appCounter: number, name: (typeof ENVIRONMENTS)[number]) =>
  id("environment", appCounter * 4 + ENVIRONMENTS.indexOf(name));
/** Revision r of app a's variant: counter a * 1,000,000 + r. */
const variantRevisionCounter = (appCounter: string, revision: string) => `(${appCounter}) * 1000000 + ${revision}`;
/** Entry r of environment e's history (its deployment and its environment revision): counter e * 100,000 + r. */
const historyCounter = (environment: string, revision: string) => `(${environment}) * 100000 + ${revision}`;

/**
 * The params of variant revision `revision` of the bench's `main` variants, as stored (SQL: `printf` of this
 * template with the revision) and as the service answers them.
 */
const PARAMS_TEMPLATE =
  '{"model":"gpt-4o-mini","temperature":0.2,"max_tokens":512,"prompt":"You are a helpful assistant. Answer in at most three sentences, citing the document you used.","revision":%d}';
export const paramsOf = (revision: number): Record<string, unknown> =>
  JSON.parse(PARAMS_TEMPLATE.replace("%d", String(revision)));
const URL_TEMPLATE = "https://models.example.com/bench/main/%d";
export const urlOf = (revision: number) => URL_TEMPLATE.replace("%d", String(revision));

/**
 * The SQL of bench-diff's params at revision 1 or 2 (too long for one statement as text): DIFF_ENTRIES prompts with a
 * weight each, revision 2 changing DIFF_CHANGES weights; `revision` as in every bench params (the data check counts it).
 */
const diffParams = (revision: 1 | 2) => `(
  WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${DIFF_ENTRIES - 1})
  SELECT json_object('revision', ${revision}, 'model', 'gpt-4o-mini', 'entries', json_group_object(printf('entry-%04d', i),
           json_object('prompt', printf('You are assistant %d. Answer in at most three sentences, citing the document you used.', i),
                       'weight', CASE WHEN ${revision} = 2 AND i % 5 < 2 THEN i + 0.5 ELSE i END, 'tags', json_array('bench', 'diff'))))
    FROM n)`;

/**
 * A key prefix as made before buckets: 8 random characters. One that happens to read as bucketed (once in 14,444,
 * src/db/buckets.ts `bucketOfPrefix`) is drawn again: its key could first be looked for on another shard, a round trip
 * that the other keys of its pool do not pay. 20 draws all reading as bucketed would take odds of 14,444^-20.
 */
function legacyPrefix(): string {
  for (let draw = 0; draw < 20; draw++) {
    const prefix = Array.from({ length: 8 }, () => PREFIX_ALPHABET[randomInt(PREFIX_ALPHABET.length)]).join("");
    if (bucketOfPrefix(prefix) === LEGACY_BUCKET) return prefix;
  }
  throw new Error("20 random key prefixes in a row read as bucketed: is src/db/buckets.ts `bucketOfPrefix` broken?");
}

/**
 * A fresh key, hashed as src/auth/api-keys.ts hashes it: SHA-256 of the UTF-8 of the whole key, hex. Its prefix is a
 * legacy one unless given (`newKeyPrefix(bucket)` for a key homed in a bucket).
 */
export function newKey(projectId: string, prefix = legacyPrefix()): BenchKey {
  const key = `${prefix}.${randomBytes(32).toString("hex")}`;
  return { key, prefix, hash: createHash("sha256").update(key, "utf8").digest("hex"), projectId };
}

export const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Apps `first`..`first + count - 1` with their three environments, variant `main` and the given histories. */
interface HistorySpec {
  first: number;
  count: number;
  projectId: string;
  /** printf pattern of the apps' names, given their number 1..count. */
  name: string;
  /** Revisions of each app's variant `main`. */
  variantRevisions: number;
  /** Entries of each app's environments' histories (entry r deploys variant revision ((r - 1) mod variantRevisions) + 1). */
  histories: Partial<Record<(typeof ENVIRONMENTS)[number], number>>;
}

/**
 * The SQL of the apps of `spec`. Environment revisions are inserted in (app, revision) order, so that each is its
 * environment's next number when the database checks it, and the trigger moves the environment's pointers.
 */
function appsWithHistory(spec: HistorySpec, userId: string): string[] {
  const { first, count, variantRevisions: v } = spec;
  const apps = `a(k) AS (SELECT ${first} UNION ALL SELECT k + 1 FROM a WHERE k < ${first + count - 1})`;
  const series = (n: number) => `n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n})`;
  const statements = [
    `WITH RECURSIVE ${apps}
INSERT INTO apps (id, project_id, name, created_by, created_at)
SELECT ${sqlId("app", "k")}, ${quote(spec.projectId)}, printf(${quote(spec.name)}, k - ${first - 1}), ${quote(userId)}, ${secondsAgo(String(Math.max(v, ...Object.values(spec.histories)) + 120))} FROM a;`,
    `WITH RECURSIVE ${apps}, e(j, name) AS (VALUES ${ENVIRONMENTS.map((env, index) => `(${index}, '${env}')`).join(", ")})
INSERT INTO environments (id, app_id, name)
SELECT ${sqlId("environment", `${environmentCounter("k", 0)} + j`)}, ${sqlId("app", "k")}, e.name FROM a, e ORDER BY k, j;`,
    `WITH RECURSIVE ${apps}
INSERT INTO app_variants (id, app_id, name, created_at) SELECT ${sqlId("variant", "k")}, ${sqlId("app", "k")}, 'main', ${secondsAgo(String(v + 90))} FROM a;`,
    // Revision i was committed (v - i + 60) seconds ago: oldest first, all before the first deployment below.
    `WITH RECURSIVE ${apps}, ${series(v)}
INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params, url, created_at)
SELECT ${sqlId("variantRevision", variantRevisionCounter("k", "i"))}, ${sqlId("variant", "k")}, i, ${quote(userId)},
       printf(${quote(PARAMS_TEMPLATE)}, i), printf(${quote(URL_TEMPLATE)}, i), ${secondsAgo(`${v} - i + 60`)}
  FROM a, n ORDER BY k, i;`,
  ];
  for (const [name, entries] of Object.entries(spec.histories)) {
    const environment = environmentCounter("k", ENVIRONMENTS.indexOf(name as (typeof ENVIRONMENTS)[number]));
    const deployed = sqlId("variantRevision", variantRevisionCounter("k", `((i - 1) % ${v}) + 1`));
    // Entry i was made (entries - i) seconds ago: oldest first, the last one now.
    statements.push(
      `WITH RECURSIVE ${apps}, ${series(entries)}
INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by, created_at)
SELECT ${sqlId("deployment", historyCounter(environment, "i"))}, ${sqlId("environment", environment)}, ${deployed}, ${quote(userId)},
       ${secondsAgo(`${entries} - i`)}
  FROM a, n ORDER BY k, i;`,
      `WITH RECURSIVE ${apps}, ${series(entries)}
INSERT INTO environment_revisions (id, environment_id, revision, modified_by, deployed_app_variant_revision_id, deployment_id, created_at)
SELECT ${sqlId("environmentRevision", historyCounter(environment, "i"))}, ${sqlId("environment", environment)}, i, ${quote(userId)},
       ${deployed}, ${sqlId("deployment", historyCounter(environment, "i"))}, ${secondsAgo(`${entries} - i`)}
  FROM a, n ORDER BY k, i;`,
    );
  }
  return statements;
}

/** A user's row, the same on every shard that holds a copy of it. */
interface UserRow {
  id: string;
  username: string;
  email: string;
  createdAt: string;
}

const insertUser = (user: UserRow) =>
  `INSERT INTO users (id, username, email, created_at) VALUES (${quote(user.id)}, ${quote(user.username)}, ${quote(user.email)}, ${quote(user.createdAt)});`;

const userRowCheck = (user: UserRow): DataCheck => ({
  what: `the user row of ${user.username} (id, username, email, created_at)`,
  sql: `SELECT COUNT(*) AS n FROM users WHERE id = ${quote(user.id)} AND username = ${quote(user.username)}
          AND email = ${quote(user.email)} AND created_at = ${quote(user.createdAt)}`,
  expected: 1,
});

/**
 * KEYS_PER_PROJECT new keys of `projectId`, with prefixes made by `prefix` (default legacy ones), none of them in
 * `taken` (api_keys.prefix is UNIQUE), which gets them.
 */
function keyPool(projectId: string, taken: Set<string>, prefix?: () => string): BenchKey[] {
  const keys: BenchKey[] = [];
  while (keys.length < KEYS_PER_PROJECT) {
    const key = newKey(projectId, prefix?.());
    if (taken.has(key.prefix)) continue;
    taken.add(key.prefix);
    keys.push(key);
  }
  return keys;
}

/** An organization in `bucket`, owned by `owner`, with its default workspace and project, and the project's keys. */
interface OrganizationRows {
  organizationId: string;
  workspaceId: string;
  projectId: string;
  name: string;
  personal: boolean;
  bucket: number;
  owner: string;
  keys: BenchKey[];
  /** The id of the project's key number k. */
  keyId: (k: number) => string;
}

function organizationRows(rows: OrganizationRows): string[] {
  const { organizationId, workspaceId, projectId, owner } = rows;
  return [
    `INSERT INTO organizations (id, name, is_personal, bucket) VALUES (${quote(organizationId)}, ${quote(rows.name)}, ${rows.personal ? 1 : 0}, ${rows.bucket});`,
    `INSERT INTO organization_members (organization_id, user_id, role) VALUES (${quote(organizationId)}, ${quote(owner)}, 'owner');`,
    `INSERT INTO workspaces (id, organization_id, name, is_default) VALUES (${quote(workspaceId)}, ${quote(organizationId)}, 'Default', 1);`,
    `INSERT INTO projects (id, workspace_id, name, is_default) VALUES (${quote(projectId)}, ${quote(workspaceId)}, 'Default', 1);`,
    `INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id) VALUES\n${rows.keys
      .map(
        (key, k) => `  (${quote(rows.keyId(k))}, ${quote(key.prefix)}, ${quote(key.hash)}, ${quote(owner)}, ${quote(projectId)})`,
      )
      .join(",\n")};`,
  ];
}

/**
 * SHARD_1's data: the across organization of `user` (in ACROSS_BUCKET, with its workspace, project and keys, all ids
 * of that bucket) and a copy of the user's row; the keys' prefixes also go into `taken`.
 */
function acrossShard(user: UserRow, taken: Set<string>): { sql: string; keys: BenchKey[]; checks: DataCheck[] } {
  const projectId = acrossId("project", 1);
  const keys = keyPool(projectId, taken, () => newKeyPrefix(ACROSS_BUCKET));
  const statements = [
    insertUser(user),
    ...organizationRows({
      organizationId: acrossId("organization", 1),
      workspaceId: acrossId("workspace", 1),
      projectId,
      name: "bench-across",
      personal: false,
      bucket: ACROSS_BUCKET,
      owner: user.id,
      keys,
      keyId: (k) => acrossId("apiKey", k),
    }),
  ];
  const count = (table: string, where = "") => `SELECT COUNT(*) AS n FROM ${table}${where ? ` WHERE ${where}` : ""}`;
  const checks: DataCheck[] = [
    userRowCheck(user),
    { what: "users", sql: count("users"), expected: 1 },
    {
      what: `organizations, all in bucket ${ACROSS_BUCKET}`,
      sql: count("organizations", `bucket = ${ACROSS_BUCKET}`),
      expected: 1,
    },
    { what: "organizations", sql: count("organizations"), expected: 1 },
    { what: "owner memberships", sql: count("organization_members", "role = 'owner'"), expected: 1 },
    {
      what: "api keys of the across project",
      sql: count("api_keys", `project_id = ${quote(projectId)}`),
      expected: KEYS_PER_PROJECT,
    },
    { what: "foreign key violations", sql: count("pragma_foreign_key_check"), expected: 0 },
  ];
  return { sql: `${statements.join("\n")}\n`, keys, checks };
}

export function buildBenchData(): BenchData {
  const user: UserRow = {
    id: id("user", 1),
    username: "bench",
    email: "bench@example.com",
    createdAt: new Date().toISOString(), // the schema's format, '%Y-%m-%dT%H:%M:%fZ'
  };
  const userId = user.id;
  const secondUserId = id("user", 2);
  const statements: string[] = [
    insertUser(user),
    `INSERT INTO users (id, username, email) VALUES (${quote(secondUserId)}, 'bench-events', 'bench-events@example.com');`,
  ];

  const keys = {} as Record<KeyName, BenchKey[]>;
  const prefixes = new Set<string>();
  KEY_NAMES.forEach((name, index) => {
    const n = index + 1;
    const projectId = id("project", n);
    const personal = name === "read";
    keys[name] = keyPool(projectId, prefixes);
    statements.push(
      ...organizationRows({
        organizationId: id("organization", n),
        workspaceId: id("workspace", n),
        projectId,
        name: personal ? "bench" : `bench-${name}`,
        personal,
        bucket: LEGACY_BUCKET,
        owner: SECOND_USER_KEYS.includes(name) ? secondUserId : userId,
        keys: keys[name],
        keyId: (k) => id("apiKey", n * 1000 + k),
      }),
    );
  });
  const across = acrossShard(user, prefixes);
  keys.across = across.keys;

  const readProject = keys.read[0].projectId;
  const [SMALL_APP, LARGE_APP, FIRST_DEPLOY_APP] = [1, 2, 3];
  const SAVE_APP = FIRST_DEPLOY_APP + DEPLOY_APPS;
  statements.push(
    ...appsWithHistory(
      {
        first: SMALL_APP,
        count: 1,
        projectId: readProject,
        name: `bench-get-${SMALL_HISTORY}`,
        variantRevisions: SMALL_HISTORY,
        histories: { production: SMALL_HISTORY },
      },
      userId,
    ),
    ...appsWithHistory(
      {
        first: LARGE_APP,
        count: 1,
        projectId: readProject,
        name: `bench-get-${LARGE_HISTORY}`,
        variantRevisions: LARGE_HISTORY,
        histories: { production: LARGE_HISTORY, staging: LARGE_HISTORY },
      },
      userId,
    ),
    ...appsWithHistory(
      {
        first: FIRST_DEPLOY_APP,
        count: DEPLOY_APPS,
        projectId: readProject,
        name: "bench-deploy-%03d",
        variantRevisions: SMALL_HISTORY,
        histories: { staging: SMALL_HISTORY },
      },
      userId,
    ),
    ...appsWithHistory(
      {
        first: SAVE_APP,
        count: 1,
        projectId: readProject,
        name: `bench-save-${SMALL_HISTORY}`,
        variantRevisions: SMALL_HISTORY,
        histories: { production: SMALL_HISTORY },
      },
      userId,
    ),
  );
  // bench-diff: revisions 1 and 2 made by the history's SQL, then given their large params. Revision 2 changes one
  // place in DIFF_CHANGES of revision 1's entries, and its `revision` and url.
  const DIFF_APP = 400_001;
  const diff = { from: id("variantRevision", DIFF_APP * 1_000_000 + 1), to: id("variantRevision", DIFF_APP * 1_000_000 + 2) };
  statements.push(
    ...appsWithHistory(
      { first: DIFF_APP, count: 1, projectId: readProject, name: "bench-diff", variantRevisions: 2, histories: {} },
      userId,
    ),
    `UPDATE app_variant_revisions SET params = ${diffParams(1)} WHERE id = ${quote(diff.from)};`,
    `UPDATE app_variant_revisions SET params = ${diffParams(2)} WHERE id = ${quote(diff.to)};`,
  );
  const target = (appCounter: number, environment: "production" | "staging", revisions: number): HistoryTarget => ({
    appId: id("app", appCounter),
    environmentId: environmentId(appCounter, environment),
    environment,
    revisions,
  });
  const get = { small: target(SMALL_APP, "production", SMALL_HISTORY), large: target(LARGE_APP, "production", LARGE_HISTORY) };
  const deploy = {
    small: Array.from({ length: DEPLOY_APPS }, (_, index) => target(FIRST_DEPLOY_APP + index, "staging", SMALL_HISTORY)),
    large: target(LARGE_APP, "staging", LARGE_HISTORY),
  };
  const save = target(SAVE_APP, "production", SMALL_HISTORY);

  // The quiet and the hooked organizations: DEPLOY_APPS apps each, as the bench-deploy apps (staging at revision
  // SMALL_HISTORY), owned by the second user; app counters far from the others'.
  const [FIRST_QUIET_APP, FIRST_HOOKED_APP] = [200_001, 210_001];
  for (const [first, which] of [
    [FIRST_QUIET_APP, "quiet"],
    [FIRST_HOOKED_APP, "hooked"],
  ] as const) {
    statements.push(
      ...appsWithHistory(
        {
          first,
          count: DEPLOY_APPS,
          projectId: keys[which][0].projectId,
          name: `bench-${which}-%03d`,
          variantRevisions: SMALL_HISTORY,
          histories: { staging: SMALL_HISTORY },
        },
        secondUserId,
      ),
    );
  }
  const webhooks = {
    quiet: Array.from({ length: DEPLOY_APPS }, (_, index) => target(FIRST_QUIET_APP + index, "staging", SMALL_HISTORY)),
    hooked: Array.from({ length: DEPLOY_APPS }, (_, index) => target(FIRST_HOOKED_APP + index, "staging", SMALL_HISTORY)),
    hookedOrganizationId: id("organization", KEY_NAMES.indexOf("hooked") + 1),
  };

  // The audit organization's events: event i (1 the oldest) occurred (AUDIT_EVENTS - i) seconds ago, by the second
  // user with the organization's first key; in turn a config commit and a deploy of one of 100 apps (apps the data
  // does not hold: events outlive what they name), with their data as the service writes it (src/core/change-events.sql.ts).
  const auditIndex = KEY_NAMES.indexOf("audit") + 1;
  const audit = { organizationId: id("organization", auditIndex) };
  const auditApp = (i: string) => sqlId("app", `300000 + (${i}) % 100`);
  const revisionData = (i: string) =>
    `'config_name', 'main', 'variant_id', ${sqlId("variant", `300000 + (${i}) % 100`)}, 'revision', (${i}) / 100 + 1,
     'revision_id', ${sqlId("variantRevision", `(300000 + (${i}) % 100) * 1000000 + (${i}) / 100 + 1`)}`;
  statements.push(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${AUDIT_EVENTS})
INSERT INTO events (id, type, occurred_at, organization_id, workspace_id, project_id, app_id, actor_user_id, actor_username,
                    actor_api_key_prefix, data)
SELECT ${sqlId("event", "i")}, CASE WHEN i % 2 = 0 THEN 'config.committed' ELSE 'environment.deployed' END,
       ${secondsAgo(`${AUDIT_EVENTS} - i`)}, ${quote(audit.organizationId)}, ${quote(id("workspace", auditIndex))},
       ${quote(id("project", auditIndex))}, ${auditApp("i")}, ${quote(secondUserId)}, 'bench-events', ${quote(keys.audit[0].prefix)},
       CASE WHEN i % 2 = 0
         THEN json_object('app_id', ${auditApp("i")}, 'app_name', printf('bench-audit-%03d', i % 100), ${revisionData("i")})
         ELSE json_object('app_id', ${auditApp("i")}, 'app_name', printf('bench-audit-%03d', i % 100), 'environment', 'production',
                          'environment_revision', i / 100 + 1, 'environment_revision_id', ${sqlId("environmentRevision", "i")},
                          'previous', json(CASE WHEN i > 100 THEN json_object(${revisionData("i - 100")}) END), 'current', json_object(${revisionData("i")}))
       END
  FROM n;`,
  );

  // The full project: apps 1000 + i, named seed-app-000001..., each with its three environments at revision 0.
  const first = 1000;
  const series = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${FULL_PROJECT_APPS})`;
  statements.push(
    `${series}
INSERT INTO apps (id, project_id, name, created_by, created_at)
SELECT ${sqlId("app", `${first} + i`)}, ${quote(keys.full[0].projectId)}, printf('seed-app-%06d', i), ${quote(userId)}, ${NOW} FROM n;`,
    `${series}, e(j, name) AS (VALUES ${ENVIRONMENTS.map((env, index) => `(${index}, '${env}')`).join(", ")})
INSERT INTO environments (id, app_id, name)
SELECT ${sqlId("environment", `${environmentCounter(`${first} + i`, 0)} + j`)}, ${sqlId("app", `${first} + i`)}, e.name FROM n, e ORDER BY i, j;`,
  );

  const revisionsOf = (environment: string) =>
    `SELECT COUNT(*) AS n FROM environment_revisions WHERE environment_id = ${quote(environment)}`;
  const checks = [
    { what: "users", sql: "SELECT COUNT(*) AS n FROM users", expected: 2 },
    userRowCheck(user),
    {
      what: "owner memberships",
      sql: "SELECT COUNT(*) AS n FROM organization_members WHERE role = 'owner'",
      expected: KEY_NAMES.length,
    },
    { what: "default projects", sql: "SELECT COUNT(*) AS n FROM projects WHERE is_default = 1", expected: KEY_NAMES.length },
    { what: "api keys", sql: "SELECT COUNT(*) AS n FROM api_keys", expected: KEY_NAMES.length * KEYS_PER_PROJECT },
    {
      what: "apps in the full project",
      sql: `SELECT COUNT(*) AS n FROM apps WHERE project_id = ${quote(keys.full[0].projectId)}`,
      expected: FULL_PROJECT_APPS,
    },
    {
      what: "apps in the post, keyed and empty projects",
      sql: `SELECT COUNT(*) AS n FROM apps WHERE project_id IN (${(["post", "keyed", "empty"] as const).map((name) => quote(keys[name][0].projectId)).join(", ")})`,
      expected: 0,
    },
    {
      what: "apps in the read project",
      sql: `SELECT COUNT(*) AS n FROM apps WHERE project_id = ${quote(readProject)}`,
      expected: HISTORY_APPS + DIFF_APPS,
    },
    {
      what: "apps in the quiet and the hooked projects",
      sql: `SELECT COUNT(*) AS n FROM apps WHERE project_id IN (${quote(keys.quiet[0].projectId)}, ${quote(keys.hooked[0].projectId)})`,
      expected: WEBHOOK_SCENARIO_APPS,
    },
    { what: "environments", sql: "SELECT COUNT(*) AS n FROM environments", expected: 3 * TOTAL_APPS },
    {
      what: "apps without three environments",
      sql: "SELECT COUNT(*) AS n FROM apps a WHERE (SELECT COUNT(*) FROM environments e WHERE e.app_id = a.id) <> 3",
      expected: 0,
    },
    { what: `revisions of ${get.small.appId} production`, sql: revisionsOf(get.small.environmentId), expected: SMALL_HISTORY },
    { what: `revisions of ${get.large.appId} production`, sql: revisionsOf(get.large.environmentId), expected: LARGE_HISTORY },
    { what: `revisions of ${deploy.large.appId} staging`, sql: revisionsOf(deploy.large.environmentId), expected: LARGE_HISTORY },
    { what: `revisions of ${save.appId} production`, sql: revisionsOf(save.environmentId), expected: SMALL_HISTORY },
    {
      what: "revisions of the bench-deploy apps' staging",
      sql: `SELECT COUNT(*) AS n FROM environment_revisions er JOIN environments e ON e.id = er.environment_id
             JOIN apps a ON a.id = e.app_id WHERE a.name LIKE 'bench-deploy-%' AND e.name = 'staging'`,
      expected: DEPLOY_APPS * SMALL_HISTORY,
    },
    {
      what: "revisions of the quiet and the hooked apps' staging",
      sql: `SELECT COUNT(*) AS n FROM environment_revisions er JOIN environments e ON e.id = er.environment_id
             JOIN apps a ON a.id = e.app_id WHERE (a.name LIKE 'bench-quiet-%' OR a.name LIKE 'bench-hooked-%') AND e.name = 'staging'`,
      expected: WEBHOOK_SCENARIO_APPS * SMALL_HISTORY,
    },
    { what: "deployments", sql: "SELECT COUNT(*) AS n FROM deployments", expected: TOTAL_HISTORY_ENTRIES },
    { what: "environment revisions", sql: "SELECT COUNT(*) AS n FROM environment_revisions", expected: TOTAL_HISTORY_ENTRIES },
    {
      what: "variant revisions with params and url",
      sql: `SELECT COUNT(*) AS n FROM app_variant_revisions
             WHERE json_extract(params, '$.revision') = revision AND url = printf(${quote(URL_TEMPLATE)}, revision)`,
      expected:
        SMALL_HISTORY + LARGE_HISTORY + (DEPLOY_APPS + WEBHOOK_SCENARIO_APPS) * SMALL_HISTORY + SMALL_HISTORY + 2 * DIFF_APPS,
    },
    {
      // What the trigger of migrations/0004 left: each environment with a history at its last revision, pointing
      // at what that revision deployed.
      what: "environments at their latest revision, pointing at what it deployed",
      sql: `SELECT COUNT(*) AS n FROM environments e
              JOIN environment_revisions er ON er.environment_id = e.id AND er.revision = e.revision
              JOIN app_variant_revisions r ON r.id = er.deployed_app_variant_revision_id
             WHERE e.deployed_app_variant_revision_id = r.id AND e.deployed_app_variant_id = r.variant_id
               AND e.revision = (SELECT MAX(revision) FROM environment_revisions WHERE environment_id = e.id)`,
      expected: 4 + DEPLOY_APPS + WEBHOOK_SCENARIO_APPS,
    },
    {
      what: "environments with a history",
      sql: "SELECT COUNT(*) AS n FROM environments WHERE revision > 0",
      expected: 4 + DEPLOY_APPS + WEBHOOK_SCENARIO_APPS,
    },
    {
      what: "events of the audit organization, ids in the order of their time",
      sql: `SELECT COUNT(*) AS n FROM (
              SELECT e.occurred_at, LAG(e.occurred_at) OVER (ORDER BY e.id) AS before FROM events e
               WHERE e.organization_id = ${quote(audit.organizationId)} AND json_type(e.data) = 'object')
             WHERE before IS NULL OR before < occurred_at`,
      expected: AUDIT_EVENTS,
    },
    { what: "events", sql: "SELECT COUNT(*) AS n FROM events", expected: AUDIT_EVENTS },
    {
      what: "webhooks and their deliveries",
      sql: "SELECT (SELECT COUNT(*) FROM webhooks) + (SELECT COUNT(*) FROM webhook_deliveries) AS n",
      expected: 0,
    },
    { what: "foreign key violations", sql: "SELECT COUNT(*) AS n FROM pragma_foreign_key_check", expected: 0 },
  ];

  return {
    sql: { SHARD_0: `${statements.join("\n")}\n`, SHARD_1: across.sql },
    userId,
    secondUserId,
    keys,
    get,
    deploy,
    save,
    webhooks,
    audit,
    diff,
    checks: { SHARD_0: checks, SHARD_1: across.checks },
  };
}
