/**
 * `npm run admin -- directory fill [--check]` (docs/SHARDING.md §6 steps 2–3) as an operator runs it, on a local pool
 * populated through the CLI, wrangler dev's HTTP API and plain SQL (2,500 users more, so that the shard is read over
 * several pages), then broken with SQL one way at a time and repaired. The pool of wrangler.toml has two shards, and
 * everything here is made on SHARD_0 (the CLI writes there; the Worker's writes follow the key, homed there): SHARD_1 is
 * read, and empty. The conflicts a second copy of a user would bring (disagreeing with the directory's) are made in the
 * directory.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configuredBucketedSince } from "../../src/cli/database";
import { bucketOfId, newId } from "../../src/db/buckets";
import { applyMigrations, type DevServer, startDev } from "../support/wrangler";
import {
  admin,
  api,
  closeDatabases,
  expectJsonObject,
  makeTempDir,
  query,
  queryDirectory,
  type RunResult,
  removeTempDir,
} from "./helpers";

const BULK_USERS = 2_500;
const USERS = "SELECT id, username, email, created_at FROM users ORDER BY id";
const MEMBERSHIPS = "SELECT user_id, organization_id FROM organization_members ORDER BY user_id, organization_id";
const DIRECTORY_USERS = "SELECT id, username, email, created_at, pending_until FROM users ORDER BY id";
const DIRECTORY_MEMBERSHIPS = "SELECT user_id, organization_id FROM memberships ORDER BY user_id, organization_id";
// The tables whose ids carry their organization's bucket; api_keys' prefixes are checked on the same rows.
const IDS = `SELECT ${[
  "organizations",
  "workspaces",
  "projects",
  "apps",
  "app_variants",
  "app_variant_revisions",
  "environments",
  "deployments",
  "environment_revisions",
  "invitations",
  "events",
  "webhooks",
  "api_keys",
]
  .map((table) => `(SELECT COUNT(*) FROM ${table})`)
  .join(" + ")} AS ids`;

let dir: string;
let worker: DevServer;
let since: number;
const made: Record<string, any> = {};

const fill = (...args: string[]) => admin(dir, "directory", "fill", ...args);

/** Exit 1, nothing on stdout, and exactly these lines after `error: <what>: <count> found`. */
function expectDisagreements(result: RunResult, what: string, lines: string[], count = lines.length): void {
  expect([result.code, result.stdout]).toEqual([1, ""]);
  expect(result.stderr).toBe(`error: ${what}: ${count} found\n${lines.map((line) => `  ${line}\n`).join("")}`);
}

const checkFailed = "directory fill --check failed";

beforeAll(async () => {
  dir = await makeTempDir("directory");
  await applyMigrations(dir);
  since = await configuredBucketedSince();
  for (const [email, username] of [
    ["alice@example.com", "alice"],
    ["bob@example.com", "bob"],
    ["carol@example.com", "carol"],
  ]) {
    made[username] = expectJsonObject(
      await admin(dir, "user", "create", "--email", email, "--username", username, "--shard", "SHARD_0"),
      ["user_id", "username", "organization_id", "workspace_id", "project_id"],
    );
  }
  made.acme = (await admin(dir, "org", "create", "--name", "Acme", "--owner", "alice@example.com", "--shard", "SHARD_0")).json;
  for (const email of ["bob@example.com", "carol@example.com"]) {
    expect(
      (await admin(dir, "org", "add-member", "--org", made.acme.organization_id, "--email", email, "--role", "editor")).code,
    ).toBe(0);
  }
  const key = (await admin(dir, "key", "create", "--email", "alice@example.com", "--project", made.acme.project_id)).json.key;
  worker = await startDev({ name: "directory", persistTo: dir, readyPath: "/health", vars: { WEBHOOKS_ALLOW_LOCAL: "true" } });
  // An app (with its variant, environments, revisions and events), an invitation and a webhook, minted by the Worker.
  const app = await api(worker, "POST", "/apps", key, { app_name: "support-bot" });
  expect(app.status).toBe(200);
  made.appId = app.body.app_id;
  const invited = await api(
    worker,
    "POST",
    `/organizations/${made.acme.organization_id}/workspaces/${made.acme.workspace_id}/invite`,
    key,
    [{ email: "dan@example.com", roles: ["viewer"] }],
  );
  expect(invited.status, JSON.stringify(invited.body)).toBe(200);
  const webhook = await api(worker, "POST", "/webhooks", key, {
    url: "http://127.0.0.1:9/hook",
    events: ["*"],
    organization_id: made.acme.organization_id,
  });
  expect(webhook.status, JSON.stringify(webhook.body)).toBe(200);
  // Users made with legacy ids (time 0: bucket 0) and members of Acme, as many as take the shard over three pages.
  await query(
    dir,
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${BULK_USERS})
     INSERT INTO users (id, username, email) SELECT printf('00000000-0000-7000-8000-%012d', i), 'bulk' || i, 'bulk' || i || '@example.com' FROM n`,
    `INSERT INTO organization_members (organization_id, user_id, role)
     SELECT '${made.acme.organization_id}', id, 'viewer' FROM users WHERE username LIKE 'bulk%'`,
  );
});

afterAll(async () => {
  await closeDatabases();
  await worker?.stop();
  await removeTempDir(dir);
});

/** The shard's users but those `user create` made, which it claims in the directory itself (docs/SHARDING.md §3.3). */
const notMadeByTheCli = async () =>
  (await query<{ id: string; username: string }>(dir, USERS)).filter(
    ({ username }) => !["alice", "bob", "carol"].includes(username),
  );

describe("directory fill", () => {
  it("--check before any fill names every user and membership the directory lacks: 50 listed, and a count", async () => {
    const [users, memberships] = [await notMadeByTheCli(), await query(dir, MEMBERSHIPS)];
    const firstUsers = users.slice(0, 50).map(({ id }) => `SHARD_0 users ${id}: missing from the directory`);
    const count = users.length + memberships.length;
    expectDisagreements(await fill("--check"), checkFailed, [...firstUsers, `... and ${count - 50} more`], count);
  });

  it("copies every user and membership of the shard into the directory, saying how many", async () => {
    const [users, memberships] = [await query(dir, USERS), await query(dir, MEMBERSHIPS)];
    expect(users).toHaveLength(BULK_USERS + 3);
    const added = { users_added: (await notMadeByTheCli()).length, memberships_added: memberships.length };
    expect(expectJsonObject(await fill(), ["shards", "users_added", "memberships_added"])).toEqual({
      shards: { SHARD_0: added, SHARD_1: { users_added: 0, memberships_added: 0 } },
      ...added,
    });
    expect(await queryDirectory(dir, DIRECTORY_USERS)).toEqual(users.map((user) => ({ ...user, pending_until: null })));
    expect(await queryDirectory(dir, DIRECTORY_MEMBERSHIPS)).toEqual(memberships);
  });

  it("run again, adds nothing and changes nothing", async () => {
    const before = [await queryDirectory(dir, DIRECTORY_USERS), await queryDirectory(dir, DIRECTORY_MEMBERSHIPS)];
    const none = { users_added: 0, memberships_added: 0 };
    expect((await fill()).json).toEqual({ shards: { SHARD_0: none, SHARD_1: none }, ...none });
    expect([await queryDirectory(dir, DIRECTORY_USERS), await queryDirectory(dir, DIRECTORY_MEMBERSHIPS)]).toEqual(before);
  });

  it("--check passes: it says what it read, and writes nothing", async () => {
    const before = await queryDirectory(dir, DIRECTORY_USERS);
    const [{ ids }] = await query<{ ids: number }>(dir, IDS);
    const checked = { users: (await query(dir, USERS)).length, memberships: (await query(dir, MEMBERSHIPS)).length, ids };
    expect(expectJsonObject(await fill("--check"), ["shards", "users", "memberships", "ids", "disagreements"])).toEqual({
      shards: { SHARD_0: checked, SHARD_1: { users: 0, memberships: 0, ids: 0 } },
      ...checked,
      disagreements: 0,
    });
    expect(await queryDirectory(dir, DIRECTORY_USERS)).toEqual(before);
  });
});

describe("directory fill --check finds every id that disagrees with its organization's bucket", () => {
  it("an organization whose bucket is not its id's: it, its workspace and its project are named", async () => {
    const org = (await admin(dir, "org", "create", "--name", "Misplaced", "--owner", "bob@example.com", "--shard", "SHARD_0"))
      .json;
    // The CLI does not write the directory yet (docs/SHARDING.md §8, milestone 5): its owner's membership is filled.
    expect((await fill()).json).toMatchObject({ users_added: 0, memberships_added: 1 });
    const bucket = bucketOfId(org.organization_id, since);
    const stored = (bucket + 1) % 1024;
    await query(dir, `UPDATE organizations SET bucket = ${stored} WHERE id = '${org.organization_id}'`);
    expectDisagreements(await fill("--check"), checkFailed, [
      `SHARD_0 organizations ${org.organization_id}: its id's bucket is ${bucket}, organizations.bucket is ${stored}`,
      `SHARD_0 workspaces ${org.workspace_id}: bucket ${bucket}, its organization ${org.organization_id}'s is ${stored}`,
      `SHARD_0 projects ${org.project_id}: bucket ${bucket}, its organization ${org.organization_id}'s is ${stored}`,
    ]);
    await query(dir, `UPDATE organizations SET bucket = ${bucket} WHERE id = '${org.organization_id}'`);
    expect((await fill("--check")).code).toBe(0);
  });

  it("an app id minted in another bucket than its organization's", async () => {
    const bucket = bucketOfId(made.acme.organization_id, since);
    const strayId = newId((bucket + 1) % 1024);
    await query(
      dir,
      `INSERT INTO apps (id, project_id, name, created_by) VALUES ('${strayId}', '${made.acme.project_id}', 'stray', '${made.alice.user_id}')`,
    );
    expectDisagreements(await fill("--check"), checkFailed, [
      `SHARD_0 apps ${strayId}: bucket ${(bucket + 1) % 1024}, its organization ${made.acme.organization_id}'s is ${bucket}`,
    ]);
    await query(dir, `DELETE FROM apps WHERE id = '${strayId}'`);
    expect((await fill("--check")).code).toBe(0);
  });

  it("a membership missing from the directory; a fill adds it back", async () => {
    const { user_id, organization_id } = made.carol;
    await queryDirectory(dir, `DELETE FROM memberships WHERE user_id = '${user_id}' AND organization_id = '${organization_id}'`);
    expectDisagreements(await fill("--check"), checkFailed, [
      `SHARD_0 organization_members (user ${user_id}, organization ${organization_id}): missing from the directory`,
    ]);
    expect((await fill()).json).toMatchObject({ users_added: 0, memberships_added: 1 });
    expect((await fill("--check")).code).toBe(0);
  });
});

describe("directory fill stops at a user the directory holds otherwise, naming it, and guesses nothing", () => {
  const refused = "the directory cannot take these users as they are";

  it("the same id with another email", async () => {
    const { user_id } = made.carol;
    await queryDirectory(dir, `UPDATE users SET email = 'carol@elsewhere.example' WHERE id = '${user_id}'`);
    const [carol] = await query<{ created_at: string }>(dir, `SELECT created_at FROM users WHERE id = '${user_id}'`);
    const described = (email: string) => `username "carol", email "${email}", created_at ${carol.created_at}`;
    const line = `SHARD_0 users ${user_id}: SHARD_0 has ${described("carol@example.com")}; the directory has ${described("carol@elsewhere.example")}`;
    expectDisagreements(await fill(), refused, [line]);
    expectDisagreements(await fill("--check"), checkFailed, [line]);
    await queryDirectory(dir, `UPDATE users SET email = 'carol@example.com' WHERE id = '${user_id}'`);
    expect((await fill("--check")).code).toBe(0);
  });

  it("another id with the same email (in another case) or the same username", async () => {
    const { user_id } = made.bob;
    const otherId = newId(0);
    const before = await queryDirectory(dir, DIRECTORY_USERS);
    await queryDirectory(
      dir,
      `DELETE FROM users WHERE id = '${user_id}'`,
      `INSERT INTO users (id, username, email) VALUES ('${otherId}', 'robert', 'BOB@example.com')`,
    );
    const line = `SHARD_0 users ${user_id}: the directory's user ${otherId} has the same email BOB@example.com`;
    expectDisagreements(await fill(), refused, [line]);
    await queryDirectory(dir, `UPDATE users SET username = 'bob', email = 'robert@example.com' WHERE id = '${otherId}'`);
    expectDisagreements(await fill(), refused, [
      `SHARD_0 users ${user_id}: the directory's user ${otherId} has the same username bob`,
    ]);
    await queryDirectory(dir, `DELETE FROM users WHERE id = '${otherId}'`);
    expect((await fill()).json).toMatchObject({ users_added: 1, memberships_added: 0 });
    expect(await queryDirectory(dir, DIRECTORY_USERS)).toEqual(before);
  });
});

it("--check with another command is a usage error", async () => {
  const result = await admin(dir, "key", "revoke", "--prefix", "whatever", "--check");
  expect([result.code, result.stdout, result.stderr]).toEqual([2, "", "error: --check belongs to directory fill only\n"]);
});
