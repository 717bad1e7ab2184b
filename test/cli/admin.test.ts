/**
 * The admin CLI (`npm run admin -- ...`) as operators run it, against a temporary --persist-to folder that `wrangler
 * dev` serves at the same time: command lines run in this process (helpers.ts), a success and a usage error as the
 * script's own process too.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bucketOfId, bucketOfPrefix, newId } from "../../src/db/buckets";
import { applyMigrations, type DevServer, startDev } from "../support/wrangler";
import {
  API_KEY,
  admin,
  adminOwnDatabase,
  adminProcess,
  adminRemoteLoggedOut,
  api,
  closeDatabases,
  expectCliError,
  expectJsonObject,
  makeTempDir,
  query,
  queryShard,
  removeTempDir,
  TIMESTAMP,
  UUID,
} from "./helpers";

const USER_FIELDS = ["user_id", "username", "organization_id", "workspace_id", "project_id"];
const ORG_FIELDS = ["organization_id", "workspace_id", "project_id"];
const MEMBER_FIELDS = ["organization_id", "user_id", "role"];
const REMOVED_FIELDS = ["organization_id", "user_id", "revoked_keys"];
const KEY_FIELDS = ["key", "prefix", "user_id", "project_id", "expires_at"];
const REVOKE_FIELDS = ["prefix", "revoked_at"];
const COMMIT_FIELDS = ["app_id", "variant_id", "config_name", "revision", "revision_id", "params", "url"];
const DEPLOY_FIELDS = ["environment", "revision", "revision_id"];

const DAY_MS = 86_400_000;

let dir: string;
let unmigrated: string;
let worker: DevServer;

beforeAll(async () => {
  dir = await makeTempDir("admin");
  unmigrated = await makeTempDir("unmigrated");
  await applyMigrations(dir);
  // Invitations mailed (wrangler dev writes each mail to a file) and their tokens answered, as under `npm run dev`.
  const vars = {
    INVITATION_EMAIL_FROM: "invitations@localhost",
    PUBLIC_BASE_URL: "http://localhost:8787",
    INVITATION_TOKEN_IN_ANSWER: "true",
    // The CLI's writes read back at once, uncached: the bound across the CLI's writes is test/cli/edge-delivery.test.ts's.
    FRESHNESS_BOUND_SECONDS: "0",
  };
  worker = await startDev({ name: "service", persistTo: dir, readyPath: "/health", vars });
});

afterAll(async () => {
  await closeDatabases();
  await worker?.stop();
  await removeTempDir(dir);
  await removeTempDir(unmigrated);
});

describe("each command prints exactly one JSON object and exits 0", () => {
  const made: Record<string, any> = {};

  it("user create --email --username: the user and their personal organization, workspace and project", async () => {
    const user = expectJsonObject(
      // The script itself, as an operator runs it: its JSON alone on stdout, exit 0.
      await adminProcess(dir, "user", "create", "--email", "alice@example.com", "--username", "alice", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    expect(user.username).toBe("alice");
    for (const field of USER_FIELDS.filter((name) => name !== "username")) expect(user[field]).toMatch(UUID);
    expect(new Set([user.user_id, user.organization_id, user.workspace_id, user.project_id]).size).toBe(4);
    made.alice = user;
  });

  it("user create without --username takes the username from the email", async () => {
    const user = expectJsonObject(
      await admin(dir, "user", "create", "--email", "bob.smith@example.com", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    expect(user.username).toBe("bob.smith");
    expect(user.user_id).not.toBe(made.alice.user_id);
    made.bob = user;
  });

  it("org create --name --owner: a new organization with its default workspace and project", async () => {
    const org = expectJsonObject(
      await admin(dir, "org", "create", "--name", "Acme Corp", "--owner", "alice@example.com", "--shard", "SHARD_0"),
      ORG_FIELDS,
    );
    for (const field of ORG_FIELDS) expect(org[field]).toMatch(UUID);
    expect(org.organization_id).not.toBe(made.alice.organization_id);
    expect(org.project_id).not.toBe(made.alice.project_id);
    made.acme = org;
  });

  it("org add-member --org --email --role: admin is workspace_admin", async () => {
    const result = await admin(
      dir,
      "org",
      "add-member",
      "--org",
      made.acme.organization_id,
      "--email",
      "bob.smith@example.com",
      "--role",
      "admin",
    );
    expect(expectJsonObject(result, MEMBER_FIELDS)).toEqual({
      organization_id: made.acme.organization_id,
      user_id: made.bob.user_id,
      role: "workspace_admin",
    });
  });

  it("org set-role --org --email --role: each of the six roles and admin, an owner demoted while another remains", async () => {
    const setRole = (role: string) =>
      admin(dir, "org", "set-role", "--org", made.acme.organization_id, "--email", "bob.smith@example.com", "--role", role);
    for (const [role, stored] of [
      ["owner", "owner"],
      ["workspace_admin", "workspace_admin"],
      ["editor", "editor"],
      ["deployment_manager", "deployment_manager"],
      ["evaluator", "evaluator"],
      ["viewer", "viewer"],
      ["admin", "workspace_admin"],
    ]) {
      expect(expectJsonObject(await setRole(role), MEMBER_FIELDS), role).toEqual({
        organization_id: made.acme.organization_id,
        user_id: made.bob.user_id,
        role: stored,
      });
    }
    const members = await query(
      dir,
      `SELECT user_id, role FROM organization_members WHERE organization_id = '${made.acme.organization_id}' ORDER BY role`,
    );
    expect(members).toEqual([
      { user_id: made.alice.user_id, role: "owner" },
      { user_id: made.bob.user_id, role: "workspace_admin" },
    ]);
  });

  it("user create and org create place each organization in a bucket, which every id and key minted for it carries", async () => {
    // Every id the CLI mints here is newer than BUCKETED_SINCE, so it reads as the bucket it carries.
    const bucketOf = (id: string) => bucketOfId(id, 0);
    const { alice, acme } = made;
    const stored = await query<{ id: string; bucket: number }>(
      dir,
      `SELECT id, bucket FROM organizations WHERE id IN ('${alice.organization_id}', '${acme.organization_id}') ORDER BY created_at`,
    );
    expect(stored).toEqual([alice, acme].map(({ organization_id: id }) => ({ id, bucket: bucketOf(id) })));
    expect([alice.user_id, alice.workspace_id, alice.project_id].map(bucketOf)).toEqual(
      Array(3).fill(bucketOf(alice.organization_id)),
    );
    const placed = bucketOf(acme.organization_id);
    const events = await query<{ id: string }>(dir, `SELECT id FROM events WHERE organization_id = '${acme.organization_id}'`);
    expect(events.length).toBeGreaterThan(0);
    expect(events.map(({ id }) => bucketOf(id))).toEqual(events.map(() => placed));
    const key = expectJsonObject(
      await admin(dir, "key", "create", "--email", "alice@example.com", "--project", acme.project_id),
      KEY_FIELDS,
    );
    expect(bucketOfPrefix(key.prefix)).toBe(placed);
  });

  it("key create --email: a key for the personal project that never expires", async () => {
    const key = expectJsonObject(await admin(dir, "key", "create", "--email", "alice@example.com"), KEY_FIELDS);
    expect(key.key).toMatch(API_KEY);
    expect(key.prefix).toBe(key.key.slice(0, 8));
    expect(key).toMatchObject({ user_id: made.alice.user_id, project_id: made.alice.project_id, expires_at: null });
    made.aliceKey = key;
  });

  it("key create --project --expires-in-days: a key for an organization's project, expiring N days ahead", async () => {
    const before = Date.now();
    const result = await admin(
      dir,
      "key",
      "create",
      "--email",
      "bob.smith@example.com",
      "--project",
      made.acme.project_id,
      "--expires-in-days",
      "30",
    );
    const after = Date.now();
    const key = expectJsonObject(result, KEY_FIELDS);
    expect(key.key).toMatch(API_KEY);
    expect(key.prefix).toBe(key.key.slice(0, 8));
    expect(key.prefix).not.toBe(made.aliceKey.prefix);
    expect(key).toMatchObject({ user_id: made.bob.user_id, project_id: made.acme.project_id });
    expect(key.expires_at).toMatch(TIMESTAMP);
    const expiresAt = Date.parse(key.expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 30 * DAY_MS - 1_000);
    expect(expiresAt).toBeLessThanOrEqual(after + 30 * DAY_MS + 1_000);
    made.bobKey = key;
  });

  it("key revoke --prefix: the prefix and when it was revoked", async () => {
    const before = Date.now();
    const result = await admin(dir, "key", "revoke", "--prefix", made.bobKey.prefix);
    const after = Date.now();
    const revoked = expectJsonObject(result, REVOKE_FIELDS);
    expect(revoked.prefix).toBe(made.bobKey.prefix);
    expect(revoked.revoked_at).toMatch(TIMESTAMP);
    expect(Date.parse(revoked.revoked_at)).toBeGreaterThanOrEqual(before - 5_000);
    expect(Date.parse(revoked.revoked_at)).toBeLessThanOrEqual(after + 5_000);
  });

  it("deploy --app --env --variant --email: revisions 1, 2, 3 on repeated deploys", async () => {
    const created = await api(worker, "POST", "/apps", made.aliceKey.key, { app_name: "deploy-target" });
    expect(created.status).toBe(200);
    const appId: string = created.body.app_id;

    const deployed = [];
    for (const variant of ["main", "canary", "main"]) {
      const result = await admin(
        dir,
        "deploy",
        "--app",
        appId,
        "--env",
        "staging",
        "--variant",
        variant,
        "--email",
        "alice@example.com",
      );
      deployed.push(expectJsonObject(result, DEPLOY_FIELDS));
    }
    expect(deployed.map(({ environment, revision }) => ({ environment, revision }))).toEqual([
      { environment: "staging", revision: 1 },
      { environment: "staging", revision: 2 },
      { environment: "staging", revision: 3 },
    ]);
    for (const { revision_id } of deployed) expect(revision_id).toMatch(UUID);
    expect(new Set(deployed.map(({ revision_id }) => revision_id)).size).toBe(3);

    // The ids printed are the ids of the revisions the service lists.
    const listed = await api(worker, "GET", `/apps/${appId}/revisions/staging`, made.aliceKey.key);
    expect(listed.status).toBe(200);
    expect(listed.body.revision).toBe(3);
    expect(listed.body.revisions.map((entry: { id: string }) => entry.id)).toEqual(
      deployed.map(({ revision_id }) => revision_id),
    );
  });
  it("deploy to a protected environment: exit 1 naming the protection; --bypass-reason from a bypass role deploys", async () => {
    const appId: string = (await api(worker, "POST", "/apps", made.aliceKey.key, { app_name: "guarded-target" })).body.app_id;
    const settings = { protected: true, bypass_roles: ["owner"] };
    const path = `/projects/${made.alice.project_id}/environments/production/protection`;
    expect((await api(worker, "PUT", path, made.aliceKey.key, settings)).status).toBe(200);
    const deploy = (...more: string[]) =>
      admin(dir, "deploy", "--app", appId, "--env", "production", "--variant", "main", "--email", "alice@example.com", ...more);
    const refused = await deploy();
    expectCliError(refused, /environment production of app \S+ is protected: propose the change with POST \/change-requests/);
    expect(refused.code).toBe(1);
    expect(expectJsonObject(await deploy("--bypass-reason", "Hotfix 7"), DEPLOY_FIELDS).revision).toBe(1);
    const bypassed = await api(worker, "GET", "/events?type=environment.protection_bypassed", made.aliceKey.key);
    expect(bypassed.body.events.map((event: { data: object }) => event.data)).toEqual([
      expect.objectContaining({ app_id: appId, environment: "production", reason: "Hotfix 7" }),
    ]);
    expect((await api(worker, "PUT", path, made.aliceKey.key, {})).status).toBe(200);
  });

  it("variant commit --app --name --params: the config's next revisions, which deploy then ships", async () => {
    const created = await api(worker, "POST", "/apps", made.aliceKey.key, { app_name: "committed-from-cli" });
    const appId: string = created.body.app_id;
    const commit = (params: string) =>
      admin(dir, "variant", "commit", "--app", appId, "--name", "main", "--params", params, "--email", "alice@example.com");
    const first = expectJsonObject(await commit('{"temperature": 0.1}'), COMMIT_FIELDS);
    const second = expectJsonObject(await commit('{"temperature": 0.2, "model": "m"}'), COMMIT_FIELDS);
    // The config did not exist: added (revision 1, params {}), then committed.
    expect([first.revision, second.revision]).toEqual([2, 3]);
    expect(second).toMatchObject({ app_id: appId, config_name: "main", params: { temperature: 0.2, model: "m" }, url: "" });

    expectJsonObject(
      await admin(dir, "deploy", "--app", appId, "--env", "production", "--variant", "main", "--email", "alice@example.com"),
      DEPLOY_FIELDS,
    );
    const fetched = await api(worker, "POST", "/variants/configs/fetch", made.aliceKey.key, {
      environment_ref: { slug: "production" },
      application_ref: { id: appId },
    });
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({ params: { temperature: 0.2, model: "m" }, variant_ref: { slug: "main", version: 3 } });
  });

  it.each([
    ["not JSON", ["--params", "{temperature"], /--params must be JSON/],
    ["not an object", ["--params", "[1, 2]"], /--params must be a JSON object/],
    [
      "nested 101 deep",
      ["--params", `{"a":${"[".repeat(100)}${"]".repeat(100)}}`],
      /--params must not nest deeper than 100 levels/,
    ],
    ["a javascript: url", ["--params", "{}", "--url", "javascript:alert(1)"], /--url must be "" or an absolute http/],
  ])("variant commit with %s is refused", async (_, args, message) => {
    const created = await api(worker, "POST", "/apps", made.aliceKey.key, { app_name: `bad-params-${args.join("").length}` });
    const result = await admin(dir, "variant", "commit", "--app", created.body.app_id, "--name", "main", ...args);
    expectCliError(result, message);
  });

  it("variant commit keeps every number as written, or refuses it where Node cannot (no JSON.rawJSON before Node 21)", async () => {
    const created = await api(worker, "POST", "/apps", made.aliceKey.key, { app_name: "exact-numbers" });
    const params = '{"id": 9007199254740993, "one": 1.0, "t": 0.2}';
    const result = await admin(dir, "variant", "commit", "--app", created.body.app_id, "--name", "main", "--params", params);
    if (typeof (JSON as { rawJSON?: unknown }).rawJSON === "function") {
      expectJsonObject(result, COMMIT_FIELDS);
      expect(result.stdout).toContain('"params": {\n    "id": 9007199254740993,\n    "one": 1.0,\n    "t": 0.2\n  }');
    } else {
      expectCliError(result, /--params: the number 9007199254740993 cannot be kept exactly by this runtime/);
    }
  });
});

describe("bad input: non-zero exit, a message on stderr, nothing on stdout", () => {
  let carol: any;
  let dave: any;
  let carolApp: string;
  let countsBefore: unknown;
  const COUNTS = `SELECT (SELECT COUNT(*) FROM users) AS users, (SELECT COUNT(*) FROM organizations) AS organizations,
    (SELECT COUNT(*) FROM organization_members) AS members, (SELECT COUNT(*) FROM api_keys) AS api_keys,
    (SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NOT NULL) AS revoked_keys,
    (SELECT group_concat(member) FROM (SELECT organization_id || ':' || user_id || ':' || role AS member
                                         FROM organization_members ORDER BY 1)) AS roles,
    (SELECT COUNT(*) FROM environment_revisions) AS environment_revisions, (SELECT COUNT(*) FROM app_variants) AS configs,
    (SELECT COUNT(*) FROM events) AS events`;

  beforeAll(async () => {
    carol = expectJsonObject(
      await admin(dir, "user", "create", "--email", "carol@example.com", "--username", "carol", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    dave = expectJsonObject(
      await admin(dir, "user", "create", "--email", "dave@example.com", "--username", "dave", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const key = expectJsonObject(await admin(dir, "key", "create", "--email", "carol@example.com"), KEY_FIELDS);
    const created = await api(worker, "POST", "/apps", key.key, { app_name: "carol-app" });
    expect(created.status).toBe(200);
    carolApp = created.body.app_id;
    countsBefore = await query(dir, COUNTS);
  });

  it("unknown email", async () => {
    expectCliError(await admin(dir, "key", "create", "--email", "nobody@example.com"), /no user with email nobody@example\.com/);
  });

  it.each([
    ["add-member", "superuser"],
    ["add-member", "toString"],
    ["set-role", "Admin"],
  ])("bad role: org %s --role %s", async (command, role) => {
    const result = await admin(
      dir,
      "org",
      command,
      "--org",
      carol.organization_id,
      "--email",
      "dave@example.com",
      "--role",
      role,
    );
    expectCliError(
      result,
      /--role must be one of owner, workspace_admin, editor, deployment_manager, evaluator, viewer \(or admin for workspace_admin\)/,
    );
  });

  it.each([
    ["remove-member", [], /cannot remove carol@example\.com from organization ORG: they are its last owner/],
    ["set-role", ["--role", "viewer"], /cannot make carol@example\.com viewer in organization ORG: they are its last owner/],
    [
      "add-member",
      ["--role", "admin"],
      /cannot make carol@example\.com workspace_admin in organization ORG: they are its last owner/,
    ],
  ])("the last owner cannot be removed or demoted: org %s", async (command, args, message) => {
    const result = await admin(dir, "org", command, "--org", carol.organization_id, "--email", "carol@example.com", ...args);
    expectCliError(result, new RegExp(message.source.replace("ORG", carol.organization_id)));
    expect(result.stderr).toMatch(/an organization keeps at least one owner; make another member an owner first/);
    expect(result.code).toBe(2);
    const left = `SELECT m.role, (SELECT COUNT(*) FROM api_keys WHERE user_id = m.user_id AND revoked_at IS NULL) AS live_keys
      FROM organization_members m WHERE m.organization_id = '${carol.organization_id}'`;
    expect(await query(dir, left)).toEqual([{ role: "owner", live_keys: 1 }]);
  });

  it.each([
    ["set-role", ["--role", "editor"], /dave@example\.com is not a member of organization ORG: add them with org add-member/],
    ["remove-member", [], /dave@example\.com is not a member of organization ORG$/m],
  ])("org %s of a user who is not a member", async (command, args, message) => {
    const result = await admin(dir, "org", command, "--org", carol.organization_id, "--email", "dave@example.com", ...args);
    expectCliError(result, new RegExp(message.source.replace("ORG", carol.organization_id), message.flags));
    expect(result.code).toBe(2);
  });

  it("unknown organization id", async () => {
    const missing = "00000000-0000-7000-8000-00000000dead";
    const result = await admin(dir, "org", "add-member", "--org", missing, "--email", "dave@example.com", "--role", "viewer");
    expectCliError(result, new RegExp(`no organization with id ${missing}`));
  });

  it("unknown app", async () => {
    const missing = "00000000-0000-7000-8000-00000000beef";
    const result = await admin(
      dir,
      "deploy",
      "--app",
      missing,
      "--env",
      "production",
      "--variant",
      "main",
      "--email",
      "carol@example.com",
    );
    expectCliError(result, new RegExp(`no app with id ${missing}`));
  });

  it("unknown environment", async () => {
    const result = await admin(
      dir,
      "deploy",
      "--app",
      carolApp,
      "--env",
      "qa",
      "--variant",
      "main",
      "--email",
      "carol@example.com",
    );
    expectCliError(result, /has no environment qa/);
  });

  it("unknown key prefix", async () => {
    expectCliError(await admin(dir, "key", "revoke", "--prefix", "Zz9Zz9Zz"), /no key with prefix Zz9Zz9Zz/);
  });

  it("duplicate user email, in any letter case", async () => {
    const result = await admin(dir, "user", "create", "--email", "CAROL@example.com", "--username", "carol2");
    expectCliError(result, /already exists/);
  });

  it.each(["0", "2.5"])("bad --expires-in-days %s", async (days) => {
    const result = await admin(dir, "key", "create", "--email", "carol@example.com", "--expires-in-days", days);
    expectCliError(result, /--expires-in-days must be a whole number of days, 1 or more/);
  });

  it("unknown command", async () => {
    expectCliError(await admin(dir, "user", "delete", "--email", "carol@example.com"), /unknown command: user delete/);
  });

  it("unknown flag, run as the script's own process: exit 2, the message and the usage on stderr", async () => {
    const result = await adminProcess(dir, "user", "create", "--email", "erin@example.com", "--colour", "blue");
    expectCliError(result, /Unknown option '--colour'/);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^Usage: npm run --silent admin -- <command>/m);
  });

  it("missing required flag", async () => {
    expectCliError(await admin(dir, "org", "create", "--name", "No Owner Inc"), /--owner is required/);
  });

  it("--remote together with --persist-to", async () => {
    expectCliError(
      await admin(dir, "key", "revoke", "--prefix", "Zz9Zz9Zz", "--remote"),
      /--remote and --persist-to cannot be used together/,
    );
  });

  it("--project naming a project the user is not a member of", async () => {
    const result = await admin(dir, "key", "create", "--email", "carol@example.com", "--project", dave.project_id);
    expectCliError(result, new RegExp(`no project ${dave.project_id} in an organization of carol@example\\.com`));
  });

  it("a folder with no migrations applied: the message says to apply them", async () => {
    const result = await admin(unmigrated, "user", "create", "--email", "frank@example.com");
    expectCliError(result, /apply the migrations/);
  });

  it("deploy by a user who may not write in the app's organization", async () => {
    const result = await admin(
      dir,
      "deploy",
      "--app",
      carolApp,
      "--env",
      "production",
      "--variant",
      "main",
      "--email",
      "dave@example.com",
    );
    expectCliError(
      result,
      /dave@example\.com must be an owner, workspace_admin, editor or deployment_manager of the app's organization to deploy/,
    );
  });

  it("a username already taken, and an empty one", async () => {
    expectCliError(
      await admin(dir, "user", "create", "--email", "new@example.com", "--username", "carol"),
      /username carol is taken/,
    );
    expectCliError(await admin(dir, "user", "create", "--email", "new@example.com", "--username", ""), /--username must be/);
  });

  it("a --persist-to folder that does not exist, which is not created", async () => {
    const missing = join(unmigrated, "typo");
    expectCliError(await admin(missing, "key", "revoke", "--prefix", "Zz9Zz9Zz"), /no such folder/);
    expect(existsSync(missing)).toBe(false);
  });

  it("--remote without Cloudflare credentials, leaving no temporary files", async () => {
    const leftovers = () =>
      readdirSync(tmpdir())
        .filter((name) => name.startsWith("app-management-admin-"))
        .sort();
    const before = leftovers();
    const result = await adminRemoteLoggedOut(unmigrated, "key", "revoke", "--prefix", "Zz9Zz9Zz");
    expectCliError(result, /cannot reach the deployed database.*wrangler login/);
    expect(leftovers()).toEqual(before);
  });

  it("none of the failed commands above wrote anything", async () => {
    expect(await query(dir, COUNTS)).toEqual(countsBefore);
  });
});

describe("every change a command makes is an event, written in the change's batch (docs/EVENTS.md)", () => {
  interface EventRow {
    n: number;
    id: string;
    type: string;
    occurred_at: string;
    organization_id: string;
    workspace_id: string | null;
    project_id: string | null;
    app_id: string | null;
    actor_user_id: string | null;
    actor_username: string | null;
    actor_api_key_prefix: string | null;
    data: string;
  }
  /** The last event row already looked at (events have SQLite's rowid: it grows with each insert). */
  let seen = 0;
  /** The events written since the last call, oldest first, as the audit log shows them (with their app_id). */
  async function newEvents() {
    const rows = await query<EventRow>(
      dir,
      `SELECT rowid AS n, id, type, occurred_at, organization_id, workspace_id, project_id, app_id, actor_user_id,
              actor_username, actor_api_key_prefix, data
         FROM events WHERE rowid > ${seen} ORDER BY rowid`,
    );
    if (rows.length > 0) seen = rows[rows.length - 1].n;
    return rows.map(({ n, actor_user_id, actor_username, actor_api_key_prefix, data, ...event }) => ({
      ...event,
      actor: { user_id: actor_user_id, username: actor_username, api_key_prefix: actor_api_key_prefix },
      data: JSON.parse(data),
    }));
  }
  /** The operator acting as nobody: no user, no key. */
  const NO_ACTOR = { user_id: null, username: null, api_key_prefix: null };
  interface Place {
    organization_id: string;
    workspace_id: string;
    project_id?: string;
    app_id?: string;
  }
  const event = (type: string, place: Place, data: Record<string, unknown>, actor: object = NO_ACTOR) => ({
    id: expect.stringMatching(UUID),
    type,
    occurred_at: expect.stringMatching(TIMESTAMP),
    project_id: null,
    app_id: null,
    ...place,
    actor,
    data,
  });

  let olga: any;
  let pete: any;
  let org: any;
  let orgPlace: Place;

  beforeAll(async () => {
    await newEvents();
  });

  it("user create and org create record none; add-member, set-role, remove-member, key create and key revoke one each", async () => {
    olga = expectJsonObject(
      await admin(dir, "user", "create", "--email", "olga@example.com", "--username", "olga", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    pete = expectJsonObject(
      await admin(dir, "user", "create", "--email", "pete@example.com", "--username", "pete", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    org = expectJsonObject(
      await admin(dir, "org", "create", "--name", "Eventful", "--owner", "olga@example.com", "--shard", "SHARD_0"),
      ORG_FIELDS,
    );
    // No event type names a new user or organization (over HTTP neither records one).
    expect(await newEvents()).toEqual([]);
    orgPlace = { organization_id: org.organization_id, workspace_id: org.workspace_id };
    const member = (data: object) => ({
      email: "pete@example.com",
      user_id: pete.user_id,
      workspace_id: org.workspace_id,
      ...data,
    });
    const petes = ["--org", org.organization_id, "--email", "pete@example.com"];

    expectJsonObject(await admin(dir, "org", "add-member", ...petes, "--role", "editor"), MEMBER_FIELDS);
    expect(await newEvents()).toEqual([event("member.joined", orgPlace, member({ role: "editor" }))]);
    // The same role again changes nothing; another role changes the member's.
    expectJsonObject(await admin(dir, "org", "add-member", ...petes, "--role", "editor"), MEMBER_FIELDS);
    expect(await newEvents()).toEqual([]);
    expectJsonObject(await admin(dir, "org", "add-member", ...petes, "--role", "viewer"), MEMBER_FIELDS);
    expect(await newEvents()).toEqual([
      event("member.role_changed", orgPlace, member({ role: "viewer", previous_role: "editor" })),
    ]);

    expectJsonObject(await admin(dir, "org", "set-role", ...petes, "--role", "admin"), MEMBER_FIELDS);
    expect(await newEvents()).toEqual([
      event("member.role_changed", orgPlace, member({ role: "workspace_admin", previous_role: "viewer" })),
    ]);
    expectJsonObject(await admin(dir, "org", "set-role", ...petes, "--role", "workspace_admin"), MEMBER_FIELDS);
    expect(await newEvents()).toEqual([]);

    const keyPlace = { ...orgPlace, project_id: org.project_id };
    const keyData = (prefix: string) => ({ prefix, user_id: pete.user_id, project_id: org.project_id });
    const key = expectJsonObject(
      await admin(dir, "key", "create", "--email", "pete@example.com", "--project", org.project_id),
      KEY_FIELDS,
    );
    expect(await newEvents()).toEqual([event("api_key.created", keyPlace, keyData(key.prefix))]);
    expectJsonObject(await admin(dir, "key", "revoke", "--prefix", key.prefix), REVOKE_FIELDS);
    expect(await newEvents()).toEqual([event("api_key.deleted", keyPlace, keyData(key.prefix))]);
    // Revoking a revoked key again answers as before, and changes nothing.
    expectJsonObject(await admin(dir, "key", "revoke", "--prefix", key.prefix), REVOKE_FIELDS);
    expect(await newEvents()).toEqual([]);

    // Removal revokes the member's keys there too: one event, member.removed (as over HTTP).
    const live = expectJsonObject(
      await admin(dir, "key", "create", "--email", "pete@example.com", "--project", org.project_id),
      KEY_FIELDS,
    );
    expect(await newEvents()).toEqual([event("api_key.created", keyPlace, keyData(live.prefix))]);
    const removed = expectJsonObject(await admin(dir, "org", "remove-member", ...petes), REMOVED_FIELDS);
    expect(removed.revoked_keys).toEqual([live.prefix]);
    expect(await newEvents()).toEqual([event("member.removed", orgPlace, member({ role: "workspace_admin" }))]);
  });

  it("refused commands record nothing", async () => {
    const olgas = ["--org", org.organization_id, "--email", "olga@example.com"];
    const petes = ["--org", org.organization_id, "--email", "pete@example.com"];
    // The last owner, demoted or removed: the database refuses the change, and its event with it.
    expectCliError(await admin(dir, "org", "set-role", ...olgas, "--role", "viewer"), /last owner/);
    expectCliError(await admin(dir, "org", "add-member", ...olgas, "--role", "editor"), /last owner/);
    expectCliError(await admin(dir, "org", "remove-member", ...olgas), /last owner/);
    expectCliError(await admin(dir, "org", "set-role", ...petes, "--role", "editor"), /is not a member/);
    expectCliError(await admin(dir, "org", "remove-member", ...petes), /is not a member/);
    expectCliError(await admin(dir, "key", "revoke", "--prefix", "Zz9Zz9Zz"), /no key with prefix/);
    expect(await newEvents()).toEqual([]);
  });

  it("variant commit and deploy: config.added, config.committed, environment.deployed, as the user they act as", async () => {
    const olgaKey = expectJsonObject(
      await admin(dir, "key", "create", "--email", "olga@example.com", "--project", org.project_id),
      KEY_FIELDS,
    );
    const created = await api(worker, "POST", "/apps", olgaKey.key, {
      app_name: "evented-app",
      organization_id: org.organization_id,
    });
    expect(created.status).toBe(200);
    const appId: string = created.body.app_id;
    expect((await newEvents()).map(({ type }) => type)).toEqual(["api_key.created", "app.created"]);

    const appPlace = { ...orgPlace, project_id: org.project_id, app_id: appId };
    const asOlga = { user_id: olga.user_id, username: "olga", api_key_prefix: null };
    const app = { app_id: appId, app_name: "evented-app" };
    const firstRevision = async (configName: string) =>
      (
        await query<{ variant_id: string; revision_id: string }>(
          dir,
          `SELECT v.id AS variant_id, r.id AS revision_id FROM app_variants v JOIN app_variant_revisions r ON r.variant_id = v.id
              WHERE v.app_id = '${appId}' AND v.name = '${configName}' AND r.revision = 1`,
        )
      )[0];
    const revision = (config_name: string, variant_id: string, number: number, revision_id: string) => ({
      config_name,
      variant_id,
      revision: number,
      revision_id,
    });
    /** A config event's data: the revision, and its commit message (the CLI takes none). */
    const committed = (config: ReturnType<typeof revision>) => ({ ...app, ...config, message: null });

    // A config that did not exist is added (revision 1), then committed: one event each.
    const commit = (params: string, ...email: string[]) =>
      admin(dir, "variant", "commit", "--app", appId, "--name", "main", "--params", params, ...email);
    const second = expectJsonObject(await commit('{"t": 1}', "--email", "olga@example.com"), COMMIT_FIELDS);
    const main1 = await firstRevision("main");
    expect(await newEvents()).toEqual([
      event("config.added", appPlace, committed(revision("main", main1.variant_id, 1, main1.revision_id)), asOlga),
      event("config.committed", appPlace, committed(revision("main", second.variant_id, 2, second.revision_id)), asOlga),
    ]);
    // Without --email, the operator acts as the app's creator.
    const third = expectJsonObject(await commit('{"t": 2}'), COMMIT_FIELDS);
    const main3 = revision("main", third.variant_id, 3, third.revision_id);
    expect(await newEvents()).toEqual([event("config.committed", appPlace, committed(main3), asOlga)]);

    const deploy = (configName: string) =>
      admin(dir, "deploy", "--app", appId, "--env", "staging", "--variant", configName, "--email", "olga@example.com");
    const first = expectJsonObject(await deploy("main"), DEPLOY_FIELDS);
    const deployed = (number: number, revisionId: string, previous: object | null, current: object) => ({
      ...app,
      environment: "staging",
      environment_revision: number,
      environment_revision_id: revisionId,
      previous,
      current,
      live_everywhere_by: expect.any(String),
    });
    // Live everywhere by wrangler.toml's bound (5 s, no stale-if-error) after the commit, as a deploy through the API.
    const liveAfter = ([deployed]: { occurred_at: string; data: { live_everywhere_by: string } }[]) =>
      Date.parse(deployed.data.live_everywhere_by) - Date.parse(deployed.occurred_at);
    const firstDeploy = await newEvents();
    expect(firstDeploy).toEqual([event("environment.deployed", appPlace, deployed(1, first.revision_id, null, main3), asOlga)]);
    expect(liveAfter(firstDeploy)).toBe(5_000);
    // Deploying a config name the app does not have adds it (its own event), then deploys it.
    const next = expectJsonObject(await deploy("canary"), DEPLOY_FIELDS);
    const canary = await firstRevision("canary");
    const canary1 = revision("canary", canary.variant_id, 1, canary.revision_id);
    expect(await newEvents()).toEqual([
      event("config.added", appPlace, committed(canary1), asOlga),
      event("environment.deployed", appPlace, deployed(2, next.revision_id, main3, canary1), asOlga),
    ]);

    // pete, removed from the organization, may neither deploy nor commit there.
    const byPete = ["--email", "pete@example.com"];
    expectCliError(
      await admin(dir, "deploy", "--app", appId, "--env", "staging", "--variant", "main", ...byPete),
      /pete@example\.com must be/,
    );
    expectCliError(await commit('{"t": 3}', ...byPete), /pete@example\.com must be/);
    expect(await newEvents()).toEqual([]);
  });
});

describe("end to end, with wrangler dev serving the same folder", () => {
  it("commands run at the same time against the folder wrangler dev serves all succeed", async () => {
    // Each command opens the SQLite file in its own workerd (as its own process would), and may find it locked by
    // another: the CLI retries.
    const owner = expectJsonObject(
      await admin(dir, "user", "create", "--email", "gina@example.com", "--username", "gina", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const ownerKey = expectJsonObject(await admin(dir, "key", "create", "--email", "gina@example.com"), KEY_FIELDS);
    const created = await api(worker, "POST", "/apps", ownerKey.key, { app_name: "busy" });
    expect(created.status).toBe(200);
    const keys = await Promise.all([1, 2, 3, 4].map(() => adminOwnDatabase(dir, "key", "create", "--email", "gina@example.com")));
    for (const result of keys) {
      const { key, project_id } = expectJsonObject(result, KEY_FIELDS);
      expect(project_id).toBe(owner.project_id);
      const read = await api(worker, "GET", `/apps/${created.body.app_id}/revisions/production`, key);
      expect(read.status).toBe(200);
    }
  });

  it("a CLI key creates an app, sees a CLI deploy with its username, and is refused once revoked", async () => {
    const erin = expectJsonObject(
      await admin(dir, "user", "create", "--email", "erin@example.com", "--username", "erin", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const { key, prefix } = expectJsonObject(await admin(dir, "key", "create", "--email", "erin@example.com"), KEY_FIELDS);

    const created = await api(worker, "POST", "/apps", key, { app_name: "x" });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body).sort()).toEqual(["app_id", "app_name"]);
    expect(created.body.app_name).toBe("x");
    expect(created.body.app_id).toMatch(UUID);
    const path = `/apps/${created.body.app_id}/revisions/production`;

    const before = await api(worker, "GET", path, key);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({
      name: "production",
      app_id: created.body.app_id,
      project_id: erin.project_id,
      revision: 0,
      revisions: [],
    });

    const deploy = expectJsonObject(
      await admin(
        dir,
        "deploy",
        "--app",
        created.body.app_id,
        "--env",
        "production",
        "--variant",
        "main",
        "--email",
        "erin@example.com",
      ),
      DEPLOY_FIELDS,
    );
    expect(deploy).toMatchObject({ environment: "production", revision: 1 });

    const after = await api(worker, "GET", path, key);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({
      name: "production",
      app_id: created.body.app_id,
      revision: 1,
      deployed_variant_name: "app.main",
    });
    expect(after.body.revisions).toHaveLength(1);
    expect(after.body.revisions[0]).toMatchObject({ id: deploy.revision_id, revision: 1, modified_by: "erin" });
    expect(after.body.revisions[0].deployed_app_variant_revision).toBe(after.body.deployed_app_variant_revision_id);

    expectJsonObject(await admin(dir, "key", "revoke", "--prefix", prefix), REVOKE_FIELDS);
    const revoked = await api(worker, "GET", path, key);
    expect(revoked.status).toBe(401);
  });

  it("org remove-member: the member's keys for every project of the organization stop working, their other keys do not", async () => {
    const henry = expectJsonObject(
      await admin(dir, "user", "create", "--email", "henry@example.com", "--username", "henry", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const ivy = expectJsonObject(
      await admin(dir, "user", "create", "--email", "ivy@example.com", "--username", "ivy", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const org = expectJsonObject(
      await admin(dir, "org", "create", "--name", "Hooli", "--owner", "henry@example.com", "--shard", "SHARD_0"),
      ORG_FIELDS,
    );
    // A second workspace and project of the organization (made over HTTP in time; by SQL here).
    const [workspaceId, projectId] = [randomUUID(), randomUUID()];
    await query(
      dir,
      `INSERT INTO workspaces (id, organization_id, name, is_default) VALUES ('${workspaceId}', '${org.organization_id}', 'Second', 0)`,
      `INSERT INTO projects (id, workspace_id, name, is_default) VALUES ('${projectId}', '${workspaceId}', 'Default', 1)`,
    );
    const member = ["--org", org.organization_id, "--email", "ivy@example.com"];
    expectJsonObject(await admin(dir, "org", "add-member", ...member, "--role", "editor"), MEMBER_FIELDS);
    const key = async (email: string, ...args: string[]) =>
      expectJsonObject(await admin(dir, "key", "create", "--email", email, ...args), KEY_FIELDS);
    const ivyInOrg = await key("ivy@example.com", "--project", org.project_id);
    const ivyInSecond = await key("ivy@example.com", "--project", projectId);
    const ivyOwn = await key("ivy@example.com");
    const henryInOrg = await key("henry@example.com", "--project", org.project_id);
    const app = await api(worker, "POST", "/apps", henryInOrg.key, { app_name: "hooli-app" });
    expect(app.status).toBe(200);
    const path = `/apps/${app.body.app_id}/revisions/production`;
    for (const { key } of [ivyInOrg, ivyInSecond, ivyOwn]) expect((await api(worker, "GET", path, key)).status).toBe(200);

    const removed = await admin(dir, "org", "remove-member", ...member);
    expect(expectJsonObject(removed, REMOVED_FIELDS)).toEqual({
      organization_id: org.organization_id,
      user_id: ivy.user_id,
      revoked_keys: [ivyInOrg.prefix, ivyInSecond.prefix].sort(),
    });

    expect((await api(worker, "GET", path, ivyInOrg.key)).status).toBe(401);
    expect((await api(worker, "GET", "/apps", ivyInSecond.key)).status).toBe(401);
    // Her own key still works, and no longer sees the organization's app.
    expect((await api(worker, "GET", "/apps", ivyOwn.key)).status).toBe(200);
    expect((await api(worker, "GET", path, ivyOwn.key)).status).toBe(404);
    expect((await api(worker, "GET", path, henryInOrg.key)).status).toBe(200);
    expect(
      await query(dir, `SELECT user_id, role FROM organization_members WHERE organization_id = '${org.organization_id}'`),
    ).toEqual([{ user_id: henry.user_id, role: "owner" }]);
  });

  it("org add-member: a viewer can read the org's apps but not create one; re-added as editor, they can", async () => {
    expectJsonObject(
      await admin(dir, "user", "create", "--email", "frank@example.com", "--username", "frank", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const org = expectJsonObject(
      await admin(dir, "org", "create", "--name", "Frankco", "--owner", "frank@example.com", "--shard", "SHARD_0"),
      ORG_FIELDS,
    );
    const frankKey = expectJsonObject(await admin(dir, "key", "create", "--email", "frank@example.com"), KEY_FIELDS).key;
    const grace = expectJsonObject(
      await admin(dir, "user", "create", "--email", "grace@example.com", "--username", "grace", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const graceKey = expectJsonObject(await admin(dir, "key", "create", "--email", "grace@example.com"), KEY_FIELDS).key;

    const app = await api(worker, "POST", "/apps", frankKey, { app_name: "org-app", organization_id: org.organization_id });
    expect(app.status).toBe(200);
    const path = `/apps/${app.body.app_id}/revisions/development`;

    // add-member adds grace, or changes her role when she is one already; it prints what it set.
    const makeGrace = async (role: string) => {
      const result = await admin(
        dir,
        "org",
        "add-member",
        "--org",
        org.organization_id,
        "--email",
        "grace@example.com",
        "--role",
        role,
      );
      expect(expectJsonObject(result, MEMBER_FIELDS)).toEqual({
        organization_id: org.organization_id,
        user_id: grace.user_id,
        role,
      });
    };

    // Not a member yet: the app is not there for grace.
    expect((await api(worker, "GET", path, graceKey)).status).toBe(404);

    await makeGrace("viewer");
    const read = await api(worker, "GET", path, graceKey);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      name: "development",
      app_id: app.body.app_id,
      organization_id: org.organization_id,
      project_id: org.project_id,
    });
    const refused = await api(worker, "POST", "/apps", graceKey, { app_name: "by-grace", organization_id: org.organization_id });
    expect(refused.status).toBe(403);

    await makeGrace("editor");
    const allowed = await api(worker, "POST", "/apps", graceKey, { app_name: "by-grace", organization_id: org.organization_id });
    expect(allowed.status).toBe(200);
    expect(allowed.body.app_name).toBe("by-grace");
  });
});

describe("on the second shard: each command acts on the shard of what it names", () => {
  it("org add-member, key create, set-role and remove-member on an organization of SHARD_1, for a user homed on SHARD_0", async () => {
    // An organization on SHARD_1 (bucket 600), owned by a user homed there: as the Worker makes them on that shard.
    const [owner, organization, workspace, project] = [newId(600), newId(600), newId(600), newId(600)];
    await queryShard(
      dir,
      "SHARD_1",
      `INSERT INTO users (id, username, email) VALUES ('${owner}', 'holly', 'holly@example.com')`,
      `INSERT INTO organizations (id, name, bucket) VALUES ('${organization}', 'On the second shard', 600)`,
      `INSERT INTO organization_members (organization_id, user_id, role) VALUES ('${organization}', '${owner}', 'owner')`,
      `INSERT INTO workspaces (id, organization_id, name, is_default) VALUES ('${workspace}', '${organization}', 'Default', 1)`,
      `INSERT INTO projects (id, workspace_id, name, is_default) VALUES ('${project}', '${workspace}', 'Default', 1)`,
    );
    const ivan = expectJsonObject(
      await admin(dir, "user", "create", "--email", "ivan@example.com", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const membership = (shard: string) =>
      queryShard(
        dir,
        shard,
        `SELECT role FROM organization_members WHERE organization_id = '${organization}' AND user_id = '${ivan.user_id}'`,
      );
    const ivanOnSecondShard = () =>
      queryShard(dir, "SHARD_1", `SELECT id, username, email FROM users WHERE id = '${ivan.user_id}'`);

    const added = await admin(dir, "org", "add-member", "--org", organization, "--email", "ivan@example.com", "--role", "editor");
    expect(expectJsonObject(added, MEMBER_FIELDS)).toEqual({
      organization_id: organization,
      user_id: ivan.user_id,
      role: "editor",
    });
    // Ivan's row copied to SHARD_1 (from the directory), his membership there.
    expect(await ivanOnSecondShard()).toEqual([{ id: ivan.user_id, username: "ivan", email: "ivan@example.com" }]);
    expect(await membership("SHARD_1")).toEqual([{ role: "editor" }]);

    const key = expectJsonObject(
      await admin(dir, "key", "create", "--email", "ivan@example.com", "--project", project),
      KEY_FIELDS,
    );
    expect(bucketOfPrefix(key.prefix)).toBe(600);
    // The Worker takes it: the key is homed on SHARD_1, where the organization is.
    expect((await api(worker, "GET", `/organizations/${organization}`, key.key)).status).toBe(200);

    const demoted = await admin(dir, "org", "set-role", "--org", organization, "--email", "ivan@example.com", "--role", "viewer");
    expect(expectJsonObject(demoted, MEMBER_FIELDS).role).toBe("viewer");
    expect(await membership("SHARD_1")).toEqual([{ role: "viewer" }]);

    const removed = await admin(dir, "org", "remove-member", "--org", organization, "--email", "ivan@example.com");
    expect(expectJsonObject(removed, REMOVED_FIELDS)).toEqual({
      organization_id: organization,
      user_id: ivan.user_id,
      revoked_keys: [key.prefix],
    });
    expect(await membership("SHARD_1")).toEqual([]);
    expect((await api(worker, "GET", `/organizations/${organization}`, key.key)).status).toBe(401);
    expect(await membership("SHARD_0")).toEqual([]);
  });

  it("a user made by an invitation accepted without a key is in the directory: add-member on the other shard finds them", async () => {
    const mia = expectJsonObject(
      await admin(dir, "user", "create", "--email", "mia@example.com", "--shard", "SHARD_0"),
      USER_FIELDS,
    );
    const { key } = expectJsonObject(await admin(dir, "key", "create", "--email", "mia@example.com"), KEY_FIELDS);
    const workspace = `/organizations/${mia.organization_id}/workspaces/${mia.workspace_id}`;
    const invited = await api(worker, "POST", `${workspace}/invite`, key, [{ email: "lena@example.com", roles: ["editor"] }]);
    expect(invited.status).toBe(200);
    // The mailed token alone, as a new person sends it: Lena's user is made on SHARD_0, with the organization.
    const accepted = await fetch(`${worker.url}${workspace}/invite/accept?project_id=${invited.body.project_id}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: invited.body.token }),
    });
    expect(accepted.status).toBe(200);
    const lena = (await accepted.json()) as { user_id: string };
    const elsewhere = expectJsonObject(
      await admin(dir, "org", "create", "--name", "Elsewhere", "--owner", "mia@example.com", "--shard", "SHARD_1"),
      ORG_FIELDS,
    );
    const addLena = () =>
      admin(dir, "org", "add-member", "--org", elsewhere.organization_id, "--email", "lena@example.com", "--role", "viewer");
    // The accept confirms its user in the directory after answering (waitUntil): given up to 5 s.
    let added = await addLena();
    for (let tries = 0; added.code !== 0 && tries < 20; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      added = await addLena();
    }
    expect(expectJsonObject(added, MEMBER_FIELDS)).toEqual({
      organization_id: elsewhere.organization_id,
      user_id: lena.user_id,
      role: "viewer",
    });
  });

  it("user create and org create place on --shard (a shard taking new organizations), else on one of OPEN_SHARDS at random", async () => {
    const june = expectJsonObject(
      await admin(dir, "user", "create", "--email", "june@example.com", "--shard", "SHARD_1"),
      USER_FIELDS,
    );
    expect(bucketOfId(june.organization_id, 0)).toBeGreaterThanOrEqual(512);
    const juneOn = (shard: string) => queryShard(dir, shard, `SELECT username FROM users WHERE id = '${june.user_id}'`);
    expect(await juneOn("SHARD_1")).toEqual([{ username: "june" }]);
    expect(await juneOn("SHARD_0")).toEqual([]);

    const second = expectJsonObject(
      await admin(dir, "org", "create", "--name", "June's", "--owner", "june@example.com", "--shard", "SHARD_1"),
      ORG_FIELDS,
    );
    expect(bucketOfId(second.organization_id, 0)).toBeGreaterThanOrEqual(512);
    // On SHARD_0, June's row copied there with the organization.
    const first = expectJsonObject(
      await admin(dir, "org", "create", "--name", "June's too", "--owner", "june@example.com", "--shard", "SHARD_0"),
      ORG_FIELDS,
    );
    expect(bucketOfId(first.organization_id, 0)).toBeLessThan(512);
    expect(await juneOn("SHARD_0")).toEqual([{ username: "june" }]);
    const owners = (shard: string, organization: string) =>
      queryShard(dir, shard, `SELECT user_id, role FROM organization_members WHERE organization_id = '${organization}'`);
    expect(await owners("SHARD_1", second.organization_id)).toEqual([{ user_id: june.user_id, role: "owner" }]);
    expect(await owners("SHARD_0", first.organization_id)).toEqual([{ user_id: june.user_id, role: "owner" }]);

    // Without --shard, on either shard (OPEN_SHARDS names both) at random: 40 organizations land on both (all on one:
    // 2 chances in 2^40), each on the shard its bucket names.
    const spread: Record<string, string[]> = { SHARD_0: [], SHARD_1: [] };
    for (let i = 0; i < 40; i++) {
      const made = expectJsonObject(
        await admin(dir, "org", "create", "--name", `Spread ${i}`, "--owner", "june@example.com"),
        ORG_FIELDS,
      );
      spread[bucketOfId(made.organization_id, 0) < 512 ? "SHARD_0" : "SHARD_1"].push(made.organization_id);
    }
    for (const [shard, organizations] of Object.entries(spread)) {
      expect(organizations.length, shard).toBeGreaterThan(0);
      const stored = await queryShard<{ id: string }>(
        dir,
        shard,
        `SELECT id FROM organizations WHERE id IN (SELECT value FROM json_each('${JSON.stringify(organizations)}')) ORDER BY id`,
      );
      expect(stored.map(({ id }) => id)).toEqual([...organizations].sort());
    }

    expectCliError(
      await admin(dir, "user", "create", "--email", "kim@example.com", "--shard", "SHARD_7"),
      /--shard must name a shard/,
    );
  });
});
