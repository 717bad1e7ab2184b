/**
 * The benchmark's data, as one SQL file for `wrangler d1 execute DB --local --persist-to DIR --file F`, applied
 * after the migrations. Bulk rows come from recursive CTEs, so SQLite makes them itself and loading takes seconds.
 *
 * One user, `bench`, owns four organizations, each with its default workspace and default project, and has
 * KEYS_PER_PROJECT API keys naming each project (the key's project is where `POST /apps` puts an app that names no
 * target). The service limits requests per key (wrangler.toml, [[ratelimits]]), so the bench spreads its requests
 * over many keys, as traffic from many clients would be: the limiter is still consulted on every request.
 *   read   personal organization: app `bench-get-20` (production at revision 20) and `bench-get-10k`
 *          (production at revision 10,000), each with its three environments, variant `main`, variant
 *          revisions, deployments and environment revisions; development and staging at revision 0
 *   post   empty project, target of the main POST scenario
 *   empty  empty project, baseline of the POST scale scenario
 *   full   project holding 100,000 apps (each with its three environments, at revision 0)
 */
import { createHash, randomBytes, randomInt } from "node:crypto";

/** Sizes of the data set. */
export const SMALL_HISTORY = 20;
export const LARGE_HISTORY = 10_000;
export const FULL_PROJECT_APPS = 100_000;
/** Keys per project: enough that none reaches a per-key limit of 600 requests a minute at a few thousand req/s. */
export const KEYS_PER_PROJECT = 128;

export type KeyName = "read" | "post" | "empty" | "full";
const KEY_NAMES: readonly KeyName[] = ["read", "post", "empty", "full"];

export interface BenchKey {
  /** `<8 letters/digits>.<64 lowercase hex>`, sent as `Authorization: ApiKey <key>`. */
  key: string;
  prefix: string;
  /** SHA-256 of the whole key, lowercase hex: what the service stores. */
  hash: string;
  projectId: string;
}

export interface BenchData {
  sql: string;
  userId: string;
  /** KEYS_PER_PROJECT keys for each project. */
  keys: Record<KeyName, BenchKey[]>;
  /** Apps whose production environment has SMALL_HISTORY and LARGE_HISTORY revisions. */
  apps: { small: string; large: string };
  /** Checks run after loading: each query must return exactly `expected` in column `n`. */
  checks: { what: string; sql: string; expected: number }[];
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
} as const;
type Kind = keyof typeof KIND;

const ID_PREFIX = "0195";

export function id(kind: Kind, counter: number): string {
  return `${ID_PREFIX}${KIND[kind].toString(16).padStart(4, "0")}-0000-7000-8000-${counter.toString(16).padStart(12, "0")}`;
}

/** The SQL expression of `id(kind, <counterExpression>)`. */
function sqlId(kind: Kind, counterExpression: string): string {
  return `printf('${ID_PREFIX}%04x-0000-7000-8000-%012x', ${KIND[kind]}, ${counterExpression})`;
}

const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
/** `seconds` seconds before now, in the schema's timestamp format. */
const secondsAgo = (seconds: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', 'now', printf('-%d seconds', ${seconds}))`;

const ENVIRONMENTS = ["development", "staging", "production"] as const;
const PRODUCTION = 2;
/** Environment counters: four per app, leaving room for the app's three. */
const environmentCounter = (appCounter: string | number, index: number) => `(${appCounter}) * 4 + ${index}`;
const environmentId = (appCounter: number, index: number) => id("environment", appCounter * 4 + index);
/** Per-app history counters: revision r of app a is a * 1,000,000 + r. */
const historyCounter = (appCounter: number, revision: string) => `${appCounter} * 1000000 + ${revision}`;

const PREFIX_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A fresh key, hashed as src/auth/api-keys.ts hashes it: SHA-256 of the UTF-8 of the whole key, hex. */
export function newKey(projectId: string): BenchKey {
  const prefix = Array.from({ length: 8 }, () => PREFIX_ALPHABET[randomInt(PREFIX_ALPHABET.length)]).join("");
  const key = `${prefix}.${randomBytes(32).toString("hex")}`;
  return { key, prefix, hash: createHash("sha256").update(key, "utf8").digest("hex"), projectId };
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** An app with its three environments, and a deployment history of `revisions` entries on production. */
function appWithHistory(appCounter: number, projectId: string, name: string, userId: string, revisions: number): string[] {
  const appId = id("app", appCounter);
  const variantId = id("variant", appCounter);
  const production = environmentId(appCounter, PRODUCTION);
  const series = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${revisions})`;
  // Entry i was made (revisions - i) seconds ago: oldest first, the last one now.
  const createdAt = secondsAgo(`${revisions} - i`);
  return [
    `INSERT INTO apps (id, project_id, name, created_by, created_at) VALUES (${quote(appId)}, ${quote(projectId)}, ${quote(name)}, ${quote(userId)}, ${secondsAgo(String(revisions + 60))});`,
    `INSERT INTO environments (id, app_id, name) VALUES ${ENVIRONMENTS.map((env, index) => `(${quote(environmentId(appCounter, index))}, ${quote(appId)}, '${env}')`).join(", ")};`,
    `INSERT INTO app_variants (id, app_id, name) VALUES (${quote(variantId)}, ${quote(appId)}, 'main');`,
    `${series}
INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, created_at)
SELECT ${sqlId("variantRevision", historyCounter(appCounter, "i"))}, ${quote(variantId)}, i, ${quote(userId)}, ${createdAt} FROM n;`,
    `${series}
INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by, created_at)
SELECT ${sqlId("deployment", historyCounter(appCounter, "i"))}, ${quote(production)}, ${sqlId("variantRevision", historyCounter(appCounter, "i"))}, ${quote(userId)}, ${createdAt} FROM n;`,
    `${series}
INSERT INTO environment_revisions (id, environment_id, revision, modified_by, deployed_app_variant_revision_id, deployment_id, created_at)
SELECT ${sqlId("environmentRevision", historyCounter(appCounter, "i"))}, ${quote(production)}, i, ${quote(userId)},
       ${sqlId("variantRevision", historyCounter(appCounter, "i"))}, ${sqlId("deployment", historyCounter(appCounter, "i"))}, ${createdAt} FROM n;`,
    // The environment points at its latest revision, as a deployment through the service leaves it.
    `UPDATE environments SET revision = ${revisions}, deployed_app_variant_id = ${quote(variantId)},
       deployed_app_variant_revision_id = ${quote(id("variantRevision", appCounter * 1_000_000 + revisions))}
 WHERE id = ${quote(production)};`,
  ];
}

export function buildBenchData(): BenchData {
  const userId = id("user", 1);
  const statements: string[] = [
    `INSERT INTO users (id, username, email) VALUES (${quote(userId)}, 'bench', 'bench@example.com');`,
  ];

  const keys = {} as Record<KeyName, BenchKey[]>;
  const prefixes = new Set<string>();
  KEY_NAMES.forEach((name, index) => {
    const n = index + 1;
    const [organizationId, workspaceId, projectId] = [id("organization", n), id("workspace", n), id("project", n)];
    const personal = name === "read";
    keys[name] = [];
    while (keys[name].length < KEYS_PER_PROJECT) {
      const key = newKey(projectId);
      if (prefixes.has(key.prefix)) continue; // api_keys.prefix is UNIQUE
      prefixes.add(key.prefix);
      keys[name].push(key);
    }
    statements.push(
      `INSERT INTO organizations (id, name, is_personal) VALUES (${quote(organizationId)}, ${quote(personal ? "bench" : `bench-${name}`)}, ${personal ? 1 : 0});`,
      `INSERT INTO organization_members (organization_id, user_id, role) VALUES (${quote(organizationId)}, ${quote(userId)}, 'owner');`,
      `INSERT INTO workspaces (id, organization_id, name, is_default) VALUES (${quote(workspaceId)}, ${quote(organizationId)}, 'Default', 1);`,
      `INSERT INTO projects (id, workspace_id, name, is_default) VALUES (${quote(projectId)}, ${quote(workspaceId)}, 'Default', 1);`,
      `INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id) VALUES\n${keys[name]
        .map(
          (key, k) =>
            `  (${quote(id("apiKey", n * 1000 + k))}, ${quote(key.prefix)}, ${quote(key.hash)}, ${quote(userId)}, ${quote(projectId)})`,
        )
        .join(",\n")};`,
    );
  });

  const apps = { small: id("app", 1), large: id("app", 2) };
  statements.push(
    ...appWithHistory(1, keys.read[0].projectId, `bench-get-${SMALL_HISTORY}`, userId, SMALL_HISTORY),
    ...appWithHistory(2, keys.read[0].projectId, `bench-get-${LARGE_HISTORY}`, userId, LARGE_HISTORY),
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

  const production = (appCounter: number) => quote(environmentId(appCounter, PRODUCTION));
  const checks = [
    { what: "users", sql: "SELECT COUNT(*) AS n FROM users", expected: 1 },
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
      what: "apps in the post and empty projects",
      sql: `SELECT COUNT(*) AS n FROM apps WHERE project_id IN (${quote(keys.post[0].projectId)}, ${quote(keys.empty[0].projectId)})`,
      expected: 0,
    },
    { what: "environments", sql: "SELECT COUNT(*) AS n FROM environments", expected: 3 * (FULL_PROJECT_APPS + 2) },
    {
      what: "apps without three environments",
      sql: "SELECT COUNT(*) AS n FROM apps a WHERE (SELECT COUNT(*) FROM environments e WHERE e.app_id = a.id) <> 3",
      expected: 0,
    },
    {
      what: `revisions of ${apps.small} production`,
      sql: `SELECT COUNT(*) AS n FROM environment_revisions WHERE environment_id = ${production(1)}`,
      expected: SMALL_HISTORY,
    },
    {
      what: `revisions of ${apps.large} production`,
      sql: `SELECT COUNT(*) AS n FROM environment_revisions WHERE environment_id = ${production(2)}`,
      expected: LARGE_HISTORY,
    },
    { what: "deployments", sql: "SELECT COUNT(*) AS n FROM deployments", expected: SMALL_HISTORY + LARGE_HISTORY },
    {
      what: "variant revisions",
      sql: "SELECT COUNT(*) AS n FROM app_variant_revisions",
      expected: SMALL_HISTORY + LARGE_HISTORY,
    },
    {
      what: "production environments at their latest revision",
      sql: `SELECT COUNT(*) AS n FROM environments e JOIN app_variant_revisions r ON r.id = e.deployed_app_variant_revision_id
             WHERE e.revision = r.revision AND r.variant_id = e.deployed_app_variant_id
               AND e.revision = (SELECT MAX(revision) FROM environment_revisions WHERE environment_id = e.id)`,
      expected: 2,
    },
    { what: "foreign key violations", sql: "SELECT COUNT(*) AS n FROM pragma_foreign_key_check", expected: 0 },
  ];

  return { sql: `${statements.join("\n")}\n`, userId, keys, apps, checks };
}
