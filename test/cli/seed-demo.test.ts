/**
 * The demo seed (`npm run db:seed`) as an operator runs it, then the README's demo values against `wrangler dev`.
 * The values are written out here, not imported: the README documents them literally, and src/cli/seed-demo.ts
 * runs the seed when imported.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configuredBucketedSince } from "../../src/cli/database";
import { bucketOfId, newId } from "../../src/db/buckets";
import { applyMigrations, type DevServer, startDev } from "../support/wrangler";
import {
  admin,
  api,
  closeDatabases,
  expectCliError,
  makeTempDir,
  query,
  queryDirectory,
  queryShard,
  type RunResult,
  removeTempDir,
  seedDemo,
  UUID,
} from "./helpers";

const DEMO_KEY = "localdev.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const DEMO_APP_ID = "00000000-0000-7000-8000-000000000005";
const DEMO_USER_ID = "00000000-0000-7000-8000-000000000001";
const DEMO_ORGANIZATION_ID = "00000000-0000-7000-8000-000000000002";
const DEMO_WORKSPACE_ID = "00000000-0000-7000-8000-000000000003";
const DEMO_PROJECT_ID = "00000000-0000-7000-8000-000000000004";
// The demo user's second organization: bucket 512 (0x200), SHARD_1's by wrangler.toml's SHARD_MAP.
const SECOND_ORGANIZATION_ID = "01a21526-e400-7000-8000-000000000200";
const SECOND_WORKSPACE_ID = "01a21526-e400-7000-8000-000000001200";
const SECOND_PROJECT_ID = "01a21526-e400-7000-8000-000000002200";

const USERS = "SELECT id, username, email, created_at FROM users ORDER BY id";
const DIRECTORY_MEMBERSHIPS = "SELECT user_id, organization_id FROM memberships ORDER BY user_id, organization_id";

const COUNTS = `SELECT
  (SELECT COUNT(*) FROM users) AS users,
  (SELECT COUNT(*) FROM organizations) AS organizations,
  (SELECT COUNT(*) FROM organization_members) AS organization_members,
  (SELECT COUNT(*) FROM workspaces) AS workspaces,
  (SELECT COUNT(*) FROM projects) AS projects,
  (SELECT COUNT(*) FROM api_keys) AS api_keys,
  (SELECT COUNT(*) FROM apps) AS apps,
  (SELECT COUNT(*) FROM environments) AS environments,
  (SELECT COUNT(*) FROM app_variants) AS app_variants,
  (SELECT COUNT(*) FROM app_variant_revisions) AS app_variant_revisions,
  (SELECT COUNT(*) FROM deployments) AS deployments,
  (SELECT COUNT(*) FROM environment_revisions) AS environment_revisions,
  (SELECT COUNT(*) FROM events) AS events`;

// What SHARD_1 holds after the seed: the second organization, its owner's membership, workspace and project, and the
// demo user's row.
const SECOND_SHARD_COUNTS = {
  users: 1,
  organizations: 1,
  organization_members: 1,
  workspaces: 1,
  projects: 1,
  api_keys: 0,
  apps: 0,
  environments: 0,
  app_variants: 0,
  app_variant_revisions: 0,
  deployments: 0,
  environment_revisions: 0,
  events: 0,
};

/** The lines the seed writes itself (wrangler's own output aside). */
const seedLines = (result: RunResult) => result.stderr.split("\n").filter((line) => /^(demo data|directory filled)/.test(line));

let dir: string;
let worker: DevServer;
let firstRun: RunResult;

beforeAll(async () => {
  dir = await makeTempDir("seed");
  await applyMigrations(dir);
  firstRun = await seedDemo("--persist-to", dir);
  worker = await startDev({ name: "service", persistTo: dir, readyPath: "/health" });
});

afterAll(async () => {
  await closeDatabases();
  await worker?.stop();
  await removeTempDir(dir);
});

describe("npm run db:seed", () => {
  it("seeds a freshly migrated folder: one user with a key and one app with two configs and five deployments", async () => {
    expect(firstRun.code, firstRun.stderr).toBe(0);
    expect(firstRun.stdout).toBe("");
    expect(firstRun.stderr).toMatch(
      /demo data seeded: user, key, app, config main, config experiment, 5 deployments, second organization\n/,
    );
    expect(firstRun.stderr).toMatch(/directory filled: 1 users, 2 memberships added/);
    expect(await query(dir, COUNTS)).toEqual([
      {
        users: 1,
        organizations: 1,
        organization_members: 1,
        workspaces: 1,
        projects: 1,
        api_keys: 1,
        apps: 1,
        environments: 3,
        app_variants: 2,
        app_variant_revisions: 3,
        deployments: 5,
        environment_revisions: 5,
        events: 8,
      },
    ]);
  });

  it("puts the demo user's second organization on SHARD_1, in bucket 512, with the user's row copied there", async () => {
    const since = await configuredBucketedSince();
    expect([SECOND_ORGANIZATION_ID, SECOND_WORKSPACE_ID, SECOND_PROJECT_ID].map((id) => bucketOfId(id, since))).toEqual([
      512, 512, 512,
    ]);
    expect(await queryShard(dir, "SHARD_1", COUNTS)).toEqual([SECOND_SHARD_COUNTS]);
    expect(await queryShard(dir, "SHARD_1", "SELECT id, name, is_personal, bucket FROM organizations")).toEqual([
      { id: SECOND_ORGANIZATION_ID, name: "demo-second", is_personal: 0, bucket: 512 },
    ]);
    expect(await queryShard(dir, "SHARD_1", "SELECT organization_id, user_id, role FROM organization_members")).toEqual([
      { organization_id: SECOND_ORGANIZATION_ID, user_id: DEMO_USER_ID, role: "owner" },
    ]);
    expect(
      await queryShard(
        dir,
        "SHARD_1",
        `SELECT w.id AS workspace_id, w.organization_id, w.is_default AS workspace_is_default, p.id AS project_id,
                p.is_default AS project_is_default
           FROM workspaces w JOIN projects p ON p.workspace_id = w.id`,
      ),
    ).toEqual([
      {
        workspace_id: SECOND_WORKSPACE_ID,
        organization_id: SECOND_ORGANIZATION_ID,
        workspace_is_default: 1,
        project_id: SECOND_PROJECT_ID,
        project_is_default: 1,
      },
    ]);
    // The same row as SHARD_0's, created_at included.
    expect(await queryShard(dir, "SHARD_1", USERS)).toEqual(await query(dir, USERS));
  });

  it("fills the directory with the demo user and both memberships (directory fill)", async () => {
    expect(await queryDirectory(dir, "SELECT id, username, email, pending_until FROM users")).toEqual([
      { id: DEMO_USER_ID, username: "demo", email: "demo@example.com", pending_until: null },
    ]);
    expect(await queryDirectory(dir, DIRECTORY_MEMBERSHIPS)).toEqual([
      { user_id: DEMO_USER_ID, organization_id: DEMO_ORGANIZATION_ID },
      { user_id: DEMO_USER_ID, organization_id: SECOND_ORGANIZATION_ID },
    ]);
  });

  it("leaves a directory that directory fill --check passes, on both shards", async () => {
    // The ids checked: every row COUNTS counts on each shard but the user and the membership (31 on SHARD_0, 3 on SHARD_1).
    const checked = { SHARD_0: { users: 1, memberships: 1, ids: 31 }, SHARD_1: { users: 1, memberships: 1, ids: 3 } };
    expect((await admin(dir, "directory", "fill", "--check")).json).toEqual({
      shards: checked,
      users: 2,
      memberships: 2,
      ids: 34,
      disagreements: 0,
    });
  });

  it("runs again without error and changes nothing", async () => {
    const state = async () => [
      await query(dir, COUNTS),
      await queryShard(dir, "SHARD_1", COUNTS),
      await queryShard(dir, "SHARD_1", USERS),
      await queryDirectory(dir, "SELECT * FROM users ORDER BY id"),
      await queryDirectory(dir, DIRECTORY_MEMBERSHIPS),
    ];
    const before = await state();
    const second = await seedDemo("--persist-to", dir);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/demo data already present/);
    expect(second.stderr).toMatch(/directory filled: 0 users, 0 memberships added/);
    expect(await state()).toEqual(before);
  });

  it("refuses --remote with a non-zero exit and a message", async () => {
    expectCliError(await seedDemo("--remote"), /local only/);
  });

  it("refuses a folder with no migrations applied, telling to apply them", async () => {
    const empty = await makeTempDir("seed-unmigrated");
    try {
      expectCliError(await seedDemo("--persist-to", empty), new RegExp(`apply the migrations.*--persist-to ${empty}`));
    } finally {
      await removeTempDir(empty);
    }
  });

  it("refuses, and writes nothing there, when the demo email belongs to another user on SHARD_1", async () => {
    const other = await makeTempDir("seed-taken-on-shard-1");
    try {
      await applyMigrations(other);
      await queryShard(
        other,
        "SHARD_1",
        `INSERT INTO users (id, username, email) VALUES ('${newId(512)}', 'someone', 'demo@example.com')`,
      );
      const before = await queryShard(other, "SHARD_1", COUNTS);
      expectCliError(await seedDemo("--persist-to", other), /demo values are taken/);
      expect(await queryShard(other, "SHARD_1", COUNTS)).toEqual(before);
    } finally {
      await closeDatabases();
      await removeTempDir(other);
    }
  });

  it("refuses, and writes nothing, when the demo email already belongs to another user", async () => {
    const other = await makeTempDir("seed-taken");
    try {
      await applyMigrations(other);
      expect(
        (await admin(other, "user", "create", "--email", "demo@example.com", "--username", "someone", "--shard", "SHARD_0")).code,
      ).toBe(0);
      const before = await query(other, COUNTS);
      expectCliError(await seedDemo("--persist-to", other), /demo values are taken/);
      expect(await query(other, COUNTS)).toEqual(before);
    } finally {
      await closeDatabases();
      await removeTempDir(other);
    }
  });
});

describe("the documented demo values, with wrangler dev serving the seeded folder", () => {
  it("the demo key lists the demo app's development environment: revision 3 with three entries", async () => {
    const response = await api(worker, "GET", `/apps/${DEMO_APP_ID}/revisions/development`, DEMO_KEY);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      name: "development",
      app_id: DEMO_APP_ID,
      project_id: DEMO_PROJECT_ID,
      workspace_id: DEMO_WORKSPACE_ID,
      organization_id: DEMO_ORGANIZATION_ID,
      deployed_variant_name: "app.main",
      revision: 3,
    });
    expect(response.body.revisions).toHaveLength(3);
    expect(response.body.revisions.map((entry: { revision: number }) => entry.revision)).toEqual([1, 2, 3]);
    for (const entry of response.body.revisions) expect(entry.modified_by).toBe("demo");
  });

  it("the demo key lists production at revision 1", async () => {
    const response = await api(worker, "GET", `/apps/${DEMO_APP_ID}/revisions/production`, DEMO_KEY);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      name: "production",
      app_id: DEMO_APP_ID,
      revision: 1,
      deployed_variant_name: "app.main",
    });
    expect(response.body.revisions).toHaveLength(1);
  });

  it("the demo key is the demo user's: it creates apps in the demo project", async () => {
    const response = await api(worker, "POST", "/apps", DEMO_KEY, { app_name: "from-the-readme" });
    expect(response.status).toBe(200);
    expect(response.body.app_name).toBe("from-the-readme");
    expect(response.body.app_id).toMatch(UUID);
    const [row] = await query<{ project_id: string; created_by: string }>(
      dir,
      `SELECT project_id, created_by FROM apps WHERE id = '${response.body.app_id}'`,
    );
    expect(row).toEqual({ project_id: DEMO_PROJECT_ID, created_by: DEMO_USER_ID });
  });

  it("a start after the demo app was deleted and production protected: the app made again, up to the refused deployment", async () => {
    expect((await api(worker, "DELETE", `/apps/${DEMO_APP_ID}`, DEMO_KEY)).status).toBe(200);
    const protection = { protected: true };
    const protectedBy = await api(
      worker,
      "PUT",
      `/projects/${DEMO_PROJECT_ID}/environments/production/protection`,
      DEMO_KEY,
      protection,
    );
    expect(protectedBy.status, JSON.stringify(protectedBy.body)).toBe(200);
    const refused =
      "demo data not redone: the deployment of main to production and those after it (the environment is protected: a change request deploys there)";

    const first = await seedDemo("--persist-to", dir);
    expect([first.code, seedLines(first)]).toEqual([
      0,
      [
        "demo data seeded: app, config main, config experiment, 4 deployments",
        refused,
        "directory filled: 0 users, 0 memberships added",
      ],
    ]);
    const again = await seedDemo("--persist-to", dir);
    expect([again.code, seedLines(again)]).toEqual([
      0,
      ["demo data already present", refused, "directory filled: 0 users, 0 memberships added"],
    ]);
    const environments = await query(
      dir,
      `SELECT name, revision FROM environments WHERE app_id = '${DEMO_APP_ID}' ORDER BY name`,
    );
    expect(environments).toEqual([
      { name: "development", revision: 3 },
      { name: "production", revision: 0 },
      { name: "staging", revision: 1 },
    ]);
  }, 300_000); // two seeds beside wrangler dev
});
