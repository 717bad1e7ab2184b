/**
 * `npm run db:migrate` over the pool (docs/SHARDING.md §4), and the upgrade it is for: local state made when the
 * service had one database, bound as DB, is SHARD_0's after the change, with no copy. wrangler keys a local database by
 * its database_id, which SHARD_0 kept.
 */
import { copyFile, mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/auth/api-keys";
import { ROOT } from "../support/processes";
import { type DevServer, d1Query, startDev, wrangler } from "../support/wrangler";
import { admin, api, closeDatabases, makeTempDir, migratePool, queryDirectory, removeTempDir } from "./helpers";

/** The wrangler.toml of before the pool: the one database, bound as DB, with today's name and id. */
const SINGLE_DATABASE_CONFIG = `name = "app-management-service"
compatibility_date = "2026-04-26"

[[d1_databases]]
binding = "DB"
database_name = "app-management"
database_id = "00000000-0000-0000-0000-000000000000"
migrations_dir = "migrations"
`;

/** The migrations of before the pool (up to 0010). */
const BEFORE_THE_POOL = /^00(0\d|10)_.*\.sql$/;

const USER_ID = "00000000-0000-7000-8000-0000000000a1";
const ORGANIZATION_ID = "00000000-0000-7000-8000-0000000000a2";
const WORKSPACE_ID = "00000000-0000-7000-8000-0000000000a3";
const PROJECT_ID = "00000000-0000-7000-8000-0000000000a4";
const KEY = "upgraded.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

const appliedMigrations = async (dir: string, binding: string) =>
  (await d1Query<{ name: string }>(dir, "SELECT name FROM d1_migrations ORDER BY id", { binding })).map(({ name }) => name);

const tablesOf = async (dir: string, binding: string) =>
  (
    await d1Query<{ name: string }>(
      dir,
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name",
      { binding },
    )
  ).map(({ name }) => name);

/** The lines db:migrate itself writes to stderr about its progress (wrangler's output is interleaved). */
const progressLines = (stderr: string) => stderr.split("\n").filter((line) => /^migrat(ing|ed) /.test(line));

const dirs: string[] = [];
let worker: DevServer | undefined;

afterAll(async () => {
  await closeDatabases();
  await worker?.stop();
  for (const dir of dirs) await removeTempDir(dir);
});

async function tempDir(label: string) {
  const dir = await makeTempDir(label);
  dirs.push(dir);
  return dir;
}

describe("a local database made under the DB binding", () => {
  let dir: string;
  let migrated: Awaited<ReturnType<typeof migratePool>>;

  beforeAll(async () => {
    // The single database as it was: migrated to 0010 and holding an account, a key and an Idempotency-Key claim.
    const old = await tempDir("single-database");
    await writeFile(join(old, "wrangler.toml"), SINGLE_DATABASE_CONFIG);
    await mkdir(join(old, "migrations"));
    for (const file of (await readdir(join(ROOT, "migrations"))).filter((name) => BEFORE_THE_POOL.test(name))) {
      await copyFile(join(ROOT, "migrations", file), join(old, "migrations", file));
    }
    dir = join(old, "state");
    const inOldLayout = { cwd: old };
    await wrangler(
      ["d1", "migrations", "apply", "DB", "--local", "--persist-to", dir],
      "migrating the single database",
      inOldLayout,
    );
    const keyHash = await hashApiKey(KEY);
    await wrangler(
      [
        "d1",
        "execute",
        "DB",
        "--local",
        "--persist-to",
        dir,
        "--command",
        `INSERT INTO users (id, username, email) VALUES ('${USER_ID}', 'upgraded', 'upgraded@example.com');
         INSERT INTO organizations (id, name, is_personal) VALUES ('${ORGANIZATION_ID}', 'upgraded', 1);
         INSERT INTO organization_members (organization_id, user_id, role) VALUES ('${ORGANIZATION_ID}', '${USER_ID}', 'owner');
         INSERT INTO workspaces (id, organization_id, name, is_default) VALUES ('${WORKSPACE_ID}', '${ORGANIZATION_ID}', 'Default', 1);
         INSERT INTO projects (id, workspace_id, name, is_default) VALUES ('${PROJECT_ID}', '${WORKSPACE_ID}', 'Default', 1);
         INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id) VALUES ('k1', 'upgraded', '${keyHash}', '${USER_ID}', '${PROJECT_ID}');
         INSERT INTO idempotency_keys (key_hash, idempotency_key, fingerprint, result_id, expires_at)
           VALUES ('${keyHash}', 'before-the-pool', 'f', 'r', '2999-01-01T00:00:00.000Z');`,
      ],
      "filling the single database",
      inOldLayout,
    );
    migrated = await migratePool("--persist-to", dir);
  });

  it("is migrated as SHARD_0 (the migrations it lacked only), after the directory", async () => {
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(progressLines(migrated.stderr)).toEqual([
      "migrating DIRECTORY (1 of 3)",
      "migrating SHARD_0 (2 of 3)",
      "migrating SHARD_1 (3 of 3)",
      "migrated DIRECTORY, SHARD_0, SHARD_1",
    ]);
    const shardMigrations = (await readdir(join(ROOT, "migrations"))).filter((name) => name.endsWith(".sql")).sort();
    expect(await appliedMigrations(dir, "SHARD_0")).toEqual(shardMigrations);
    // SHARD_1 is new: every migration, on an empty database.
    expect(await appliedMigrations(dir, "SHARD_1")).toEqual(shardMigrations);
    expect(await appliedMigrations(dir, "DIRECTORY")).toEqual(["0001_directory.sql"]);
  });

  it("keeps its rows: the Idempotency-Key claim, rebuilt, is in bucket 0", async () => {
    expect(await d1Query(dir, "SELECT idempotency_key, result_id, bucket FROM idempotency_keys")).toEqual([
      { idempotency_key: "before-the-pool", result_id: "r", bucket: 0 },
    ]);
  });

  it("fills the directory from it (directory fill), and passes --check: its legacy ids are bucket 0, as its organization", async () => {
    const added = { users_added: 1, memberships_added: 1 };
    const none = { users_added: 0, memberships_added: 0 };
    expect((await admin(dir, "directory", "fill")).json).toEqual({ shards: { SHARD_0: added, SHARD_1: none }, ...added });
    const [{ created_at }] = await d1Query<{ created_at: string }>(dir, "SELECT created_at FROM users");
    expect(await queryDirectory(dir, "SELECT * FROM users")).toEqual([
      { id: USER_ID, username: "upgraded", email: "upgraded@example.com", created_at, pending_until: null },
    ]);
    expect(await queryDirectory(dir, "SELECT * FROM memberships")).toEqual([
      { user_id: USER_ID, organization_id: ORGANIZATION_ID },
    ]);
    // 4 rows: the organization, its workspace and project, and the key (its id and prefix: the legacy `upgraded`).
    const checked = { users: 1, memberships: 1, ids: 4 };
    expect((await admin(dir, "directory", "fill", "--check")).json).toEqual({
      shards: { SHARD_0: checked, SHARD_1: { users: 0, memberships: 0, ids: 0 } },
      ...checked,
      disagreements: 0,
    });
  });

  it("serves its key and account through SHARD_0 under wrangler dev", async () => {
    worker = await startDev({ name: "upgraded", persistTo: dir, readyPath: "/health" });
    const profile = await api(worker, "GET", "/profile", KEY);
    expect([profile.status, profile.body.id, profile.body.email]).toEqual([200, USER_ID, "upgraded@example.com"]);
  });
});

describe("npm run db:migrate", () => {
  it("migrates the directory first, and stops at the first database that fails, saying which", async () => {
    const dir = await tempDir("failing-migration");
    // A table in the way of the directory's first migration.
    await wrangler(
      ["d1", "execute", "DIRECTORY", "--local", "--persist-to", dir, "--command", "CREATE TABLE memberships (x)"],
      "planting a conflicting table",
    );
    const result = await migratePool("--persist-to", dir);
    expect(result.code).toBe(1);
    // The command's last line says which migration failed, why, and what was not attempted.
    expect(progressLines(result.stderr)).toEqual(["migrating DIRECTORY (1 of 3)"]);
    expect(result.stderr.trimEnd().split("\n").at(-1)).toMatch(
      /^error: migrating DIRECTORY failed \(0001_directory\.sql: .*table memberships already exists.*\); not attempted: SHARD_0, SHARD_1; run the command again once the cause is fixed \(migrations already applied are skipped\)$/,
    );
    expect([await tablesOf(dir, "SHARD_0"), await tablesOf(dir, "SHARD_1")]).toEqual([[], []]);
  });

  it("--remote and --persist-to together is a usage error, and nothing runs", async () => {
    const result = await migratePool("--remote", "--persist-to", "/nonexistent");
    expect([result.code, result.stdout, result.stderr]).toEqual([
      2,
      "",
      "error: --remote and --persist-to cannot be used together\n",
    ]);
  });
});
