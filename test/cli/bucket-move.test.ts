/**
 * `npm run admin -- bucket move | finish | delete | abort` (docs/SHARDING.md §5) as an operator runs them, beside a
 * `wrangler dev` serving the same local pool. An organization is placed on SHARD_1 (wrangler dev with OPEN_SHARDS =
 * SHARD_1) and given rows in every table through the API with a key homed in its bucket; its bucket then moves to
 * SHARD_0 while a loop creates apps in it, across the map's switch (a second wrangler dev with the new SHARD_MAP, as a
 * deploy) and finish: every app answered 2xx is on SHARD_0 afterwards. Before that, a first move is stopped by verify
 * and aborted; after it, the old rows are deleted, and a move back is run twice and aborted.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/auth/api-keys";
import { configuredBucketedSince } from "../../src/cli/database";
import { bucketOfId, newId } from "../../src/db/buckets";
import { keepIdleConnections } from "../support/loopback-keep-alive";
import { applyMigrations, type DevServer, startDev } from "../support/wrangler";
import { admin, api, closeDatabases, expectCliError, makeTempDir, queryDirectory, queryShard, removeTempDir } from "./helpers";

let dir: string;
let receiver: Server;
/** The wrangler dev serving the API: the old map's, then the new map's. */
let worker: DevServer;
let bucket: number;
/** wrangler.toml's SHARD_MAP with the bucket given to SHARD_0. */
let newMap: string;
let key: string;
let organizationId: string;
/** The mover's personal organization, on SHARD_0 (the move's destination). */
let personalOrganizationId: string;
let appId: string;
/** The owner's key, homed on SHARD_0 (their own organization's), and its request kept in the moving organization. */
let ownerKey: string;
let keptAcross: { app_id: string };
/** An app of the moving organization whose environments' ids sort otherwise than they were made (as legacy ids may). */
const unordered = { appId: "", environments: ["development", "staging", "production"] };
const environmentsInOrder = (shard: string) =>
  queryShard<{ name: string }>(dir, shard, `SELECT name FROM environments WHERE app_id = '${unordered.appId}' ORDER BY rowid`);
const ACROSS = { "Idempotency-Key": "across" };
const acrossRequest = () => ({ app_name: "kept-across", organization_id: organizationId });
/** Every table of a shard with rows of the organization (all but the fences'). */
let tables: string[];

const HOOK_VARS = { WEBHOOKS_ALLOW_LOCAL: "true" };
const TABLES = `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'
  AND name NOT IN ('d1_migrations', 'bucket_fences', 'fence_trips') ORDER BY name`;

const bucketCommand = (command: string, ...args: string[]) => admin(dir, "bucket", command, "--buckets", `${bucket}`, ...args);
const rowsOf = (shard: string, table: string) => queryShard(dir, shard, `SELECT * FROM ${table}`);
/** Every table's rows on the shard, each table's sorted by its rows' JSON. */
async function contents(shard: string): Promise<Record<string, string[]>> {
  const all: Record<string, string[]> = {};
  for (const table of tables) all[table] = (await rowsOf(shard, table)).map((row) => JSON.stringify(row)).sort();
  return all;
}
/** What deleting all of `rows` reports: each table's rows, but users (kept) and members (gone with their organization). */
const deletedCounts = (rows: Record<string, string[]>) =>
  Object.fromEntries(
    tables.filter((table) => table !== "users" && table !== "organization_members").map((table) => [table, rows[table].length]),
  );
const fences = (shard: string) => queryShard(dir, shard, "SELECT bucket, state FROM bucket_fences ORDER BY bucket");
/**
 * The admin CLI's writes to the organization, routed by wrangler.toml's SHARD_MAP (the bucket on SHARD_1): each refused
 * as fenced, exit code 1. What they would have written is checked by the caller (the shard's contents unchanged).
 */
async function expectCliWritesRefused(): Promise<void> {
  const [{ project }] = await queryShard<{ project: string }>(
    dir,
    "SHARD_1",
    `SELECT p.id AS project FROM projects p JOIN workspaces w ON w.id = p.workspace_id WHERE w.organization_id = '${organizationId}'`,
  );
  const mover = ["--email", "mover@example.com"];
  for (const command of [
    ["key", "revoke", "--prefix", key.split(".")[0]],
    ["key", "create", ...mover, "--project", project],
    ["org", "add-member", "--org", organizationId, "--email", "helper@example.com", "--role", "viewer"],
    ["org", "set-role", "--org", organizationId, ...mover, "--role", "owner"],
    ["org", "remove-member", "--org", organizationId, ...mover],
    ["deploy", "--app", appId, "--env", "staging", "--variant", "main", ...mover],
  ]) {
    const refused = await admin(dir, ...command);
    expectCliError(
      refused,
      /^error: the organization's bucket is fenced on the shard SHARD_MAP gives it; nothing was written\./m,
    );
    expect(refused.code, command.join(" ")).toBe(1);
  }
}
const moves = () => queryDirectory(dir, "SELECT bucket_from, bucket_to, source, destination, state FROM bucket_moves");

type Method = "GET" | "POST" | "PUT" | "DELETE";
/** Sends as `as`; its answer must be 200. */
async function okAs(as: string, method: Method, path: string, body?: unknown, headers?: Record<string, string>) {
  const answer = await api(worker, method, path, as, body, headers);
  expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(200);
  return answer.body;
}
/** Sends as the moving organization's key; its answer must be 200. */
const ok = (method: Method, path: string, body?: unknown, headers?: Record<string, string>) =>
  okAs(key, method, path, body, headers);

/**
 * Gives the organization rows in every table, through the API with `as`, a key acting in it by default: a webhook
 * hearing deploys (a delivery and its attempt), an app with variants, revisions, environments and deployments (one
 * variant deployed, then replaced and removed; one archived while deployed), an Idempotency-Key claim, protection
 * settings, an invitation, a change request and a review of it, a split and a verdict it accepted. Its app's id.
 */
async function fillEveryTable(as: string, organization: string, shard: string): Promise<string> {
  const [{ workspace, project }] = await queryShard<{ workspace: string; project: string }>(
    dir,
    shard,
    `SELECT w.id AS workspace, p.id AS project FROM workspaces w JOIN projects p ON p.workspace_id = w.id
      WHERE w.organization_id = '${organization}' ORDER BY p.id LIMIT 1`,
  );
  const { port } = receiver.address() as AddressInfo;
  const hook = { url: `http://127.0.0.1:${port}/hook`, events: ["environment.deployed"], organization_id: organization };
  await okAs(as, "POST", "/webhooks", hook);
  const app = (await okAs(as, "POST", "/apps", { app_name: "moving" }, { "Idempotency-Key": "first" })).app_id;
  const main = { application_ref: { id: app }, variant_ref: { slug: "main" } };
  await okAs(as, "POST", "/variants/configs/add", main);
  await okAs(as, "POST", "/variants/configs/commit", { ...main, params: { a: 1 } });
  await okAs(as, "POST", "/variants/configs/deploy", { ...main, environment_ref: { slug: "production" } });
  const based = { base_id: app, new_variant_name: "v", parameters: { n: 1 } };
  const gone = await okAs(as, "POST", "/variants/from-base", { ...based, new_config_name: "gone" });
  const kept = await okAs(as, "POST", "/variants/from-base", { ...based, new_config_name: "kept" });
  await okAs(as, "POST", "/environments/deploy", { environment_name: "staging", variant_id: gone.variant_id });
  await okAs(as, "POST", "/environments/deploy", { environment_name: "staging", variant_id: kept.variant_id });
  await okAs(as, "DELETE", `/variants/${gone.variant_id}`);
  await okAs(as, "POST", `/applications/variants/${kept.variant_id}/archive`);
  await okAs(as, "PUT", `/projects/${project}/environments/development/protection`, { required_approvals: 2 });
  // A split of development, and a verdict it accepted (its webhook-id kept).
  await okAs(as, "POST", "/variants/configs/deploy", { ...main, environment_ref: { slug: "development" } });
  const split = await okAs(as, "PUT", `/apps/${app}/environments/development/split`, {
    candidate: { variant_ref: { slug: "main", version: 1 } },
    weight: 500,
  });
  const verdict = JSON.stringify({ verdict: "hold", reason: "moving" });
  const at = new Date();
  await okAs(as, "POST", `/apps/${app}/environments/development/split/verdicts`, JSON.parse(verdict), {
    "webhook-id": "msg_moving",
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new StandardWebhook(split.verdict_secret).sign("msg_moving", at, verdict),
  });
  await okAs(as, "POST", `/organizations/${organization}/workspaces/${workspace}/invite`, [
    { email: "invited@example.com", roles: ["viewer"] },
  ]);
  const [{ deployed_app_variant_revision_id: proposed }] = await queryShard<{ deployed_app_variant_revision_id: string }>(
    dir,
    shard,
    `SELECT deployed_app_variant_revision_id FROM environments WHERE app_id = '${app}' AND name = 'production'`,
  );
  const request = { app_id: app, environment: "production", variant_revision_id: proposed, title: "Moved along" };
  const changeRequest = await okAs(as, "POST", "/change-requests", request);
  await okAs(as, "POST", `/change-requests/${changeRequest.id}/reviews`, { kind: "comment", comment: "Moves with its bucket." });
  return app;
}

const sleep = (ms: number) => new Promise((resolveLater) => setTimeout(resolveLater, ms));

/** Waits (at most 60 s: a request may take seconds on a loaded machine) until `done` holds. */
async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 60_000; !(await done()); ) {
    if (Date.now() > deadline) throw new Error(`waited 60 s for ${what}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  dir = await makeTempDir("bucket-move");
  await applyMigrations(dir);
  // A delivery lost on a stale connection is retried 5 s later; two in a row put the retry a minute away.
  receiver = keepIdleConnections(createServer((request, response) => request.resume().on("end", () => response.end("ok"))));
  await new Promise<void>((listening) => receiver.listen(0, "127.0.0.1", listening));
  const owner = (await admin(dir, "user", "create", "--email", "mover@example.com", "--shard", "SHARD_0")).json;
  personalOrganizationId = owner.organization_id;
  ownerKey = (await admin(dir, "key", "create", "--email", "mover@example.com")).json.key;
  // A user homed on SHARD_0 only: the CLI making them a member on SHARD_1 would copy their row there.
  expect((await admin(dir, "user", "create", "--email", "helper@example.com", "--shard", "SHARD_0")).code).toBe(0);
  // New organizations go to SHARD_1 (the owner's key is homed on SHARD_0, which is not open).
  worker = await startDev({
    name: "old map",
    persistTo: dir,
    readyPath: "/health",
    vars: { ...HOOK_VARS, OPEN_SHARDS: "SHARD_1" },
  });
  const made = (await api(worker, "POST", "/organizations", ownerKey, { name: "Moving", owner: owner.user_id })).body;
  organizationId = made.id;
  bucket = bucketOfId(organizationId, await configuredBucketedSince());
  expect(bucket).toBeGreaterThanOrEqual(512);
  newMap = [
    "SHARD_0=0-511",
    ...(bucket > 512 ? [`SHARD_1=512-${bucket - 1}`] : []),
    `SHARD_0=${bucket}`,
    ...(bucket < 1023 ? [`SHARD_1=${bucket + 1}-1023`] : []),
  ].join(" ");
  key = (await api(worker, "POST", `/keys?workspace_id=${made.workspaces[0]}`, ownerKey)).body;

  // Rows in every table, of the moving organization on SHARD_1 and of the mover's own on SHARD_0 (the destination):
  // each shard mints its own keys where it does (webhook attempts' once had a rowid), and the move must not meet them.
  appId = await fillEveryTable(key, organizationId, "SHARD_1");
  await fillEveryTable(ownerKey, personalOrganizationId, "SHARD_0");
  // Lists of an app's environments follow the order they were made in (their rowid), not their ids'.
  const [{ project, user }] = await queryShard<{ project: string; user: string }>(
    dir,
    "SHARD_1",
    `SELECT project_id AS project, created_by AS user FROM apps WHERE id = '${appId}'`,
  );
  unordered.appId = newId(bucket);
  const descendingIds = unordered.environments.map(() => newId(bucket)).reverse();
  await queryShard(
    dir,
    "SHARD_1",
    `INSERT INTO apps (id, project_id, name, created_by) VALUES ('${unordered.appId}', '${project}', 'unordered', '${user}')`,
    ...unordered.environments.map(
      (name, i) => `INSERT INTO environments (id, app_id, name) VALUES ('${descendingIds[i]}', '${unordered.appId}', '${name}')`,
    ),
  );
  expect((await environmentsInOrder("SHARD_1")).map(({ name }) => name)).toEqual(unordered.environments);
  // The collision a tenant builds on purpose (the README's demo: one key, organizations on both shards): the owner's key
  // uses one Idempotency-Key in the moving organization, then for another request in its own on SHARD_0 (one request
  // per key: a 422); and its claim of that key from the day before is still on SHARD_0, expired but not yet swept (the
  // hourly run). The move must copy the moving bucket's claim beside it.
  const across = await api(worker, "POST", "/apps", ownerKey, acrossRequest(), ACROSS);
  expect(across.status).toBe(200);
  keptAcross = across.body;
  const reused = await api(worker, "POST", "/apps", ownerKey, { app_name: "kept-at-home" }, ACROSS);
  expect([reused.status, reused.body.detail[0].loc]).toEqual([422, ["header", "Idempotency-Key"]]);
  const ownBucket = bucketOfId(owner.user_id, await configuredBucketedSince());
  await queryShard(
    dir,
    "SHARD_0",
    `INSERT INTO idempotency_keys (key_hash, idempotency_key, fingerprint, result_id, bucket, expires_at)
     VALUES ('${await hashApiKey(ownerKey)}', 'across', 'POST /apps yesterday', 'yesterday', ${ownBucket}, '2000-01-01T00:00:00.000Z')`,
  );
  // Every delivery ended (the queue's consumer writes its attempt later, on a loaded machine seconds later), so that no
  // table changes under a test after this.
  for (const shard of ["SHARD_0", "SHARD_1"])
    await until(`the deploys' deliveries to be attempted on ${shard}`, async () => {
      const deliveries = await rowsOf(shard, "webhook_deliveries");
      return deliveries.length > 0 && deliveries.every((row) => row.status !== "pending");
    });
  tables = (await queryShard<{ name: string }>(dir, "SHARD_1", TABLES)).map(({ name }) => name);
}, 300_000); // two organizations' rows in every table, through wrangler dev

afterAll(async () => {
  await closeDatabases();
  await worker?.stop();
  receiver?.close();
  await removeTempDir(dir);
});

describe("bucket move refuses, changing nothing", () => {
  it("every table holds rows on both shards: the moving organization's on SHARD_1, others' on SHARD_0", async () => {
    for (const shard of ["SHARD_1", "SHARD_0"]) {
      const counts = await Promise.all(tables.map(async (table) => [table, (await rowsOf(shard, table)).length > 0]));
      expect(Object.fromEntries(counts), shard).toEqual(Object.fromEntries(tables.map((table) => [table, true])));
    }
    expect(tables).toHaveLength(24);
  });

  it("a destination that is the source or no shard, buckets of two shards or none, a move not recorded", async () => {
    const before = [await contents("SHARD_0"), await contents("SHARD_1")];
    const refusals: [string[], RegExp][] = [
      [["move", "--to", "SHARD_1"], new RegExp(`--to: SHARD_MAP gives bucket ${bucket} to SHARD_1 already`)],
      [["move", "--to", "SHARD_7"], /--to: SHARD_7 is no shard of the pool \(SHARD_0, SHARD_1\)/],
      [["move"], /--to is required/],
      [["move", "--to", "SHARD_0", "--shard-map", "SHARD_0=0-1023 SHARD_1=5"], /--shard-map: SHARD_MAP names bucket 5 twice/],
      [["finish", "--to", "SHARD_0"], new RegExp(`bucket ${bucket}: no move of them is recorded`)],
      [["delete"], new RegExp(`bucket ${bucket}: no move of them is recorded`)],
      [["abort"], new RegExp(`bucket ${bucket}: no move of them is recorded`)],
    ];
    for (const [args, message] of refusals) {
      const result = await bucketCommand(args[0], ...args.slice(1));
      expectCliError(result, message);
      expect(result.code).toBe(2);
    }
    for (const [buckets, message] of [
      ["511-512", /SHARD_MAP gives buckets 511-512 to several shards \(SHARD_0, SHARD_1\)/],
      ["9-3", /--buckets: buckets are 0-1023, first to last/],
      ["1024", /--buckets: buckets are 0-1023/],
      ["x", /--buckets must be a bucket or a range of buckets/],
    ] as const) {
      expectCliError(await admin(dir, "bucket", "move", "--buckets", buckets, "--to", "SHARD_0"), message);
    }
    expect([await contents("SHARD_0"), await contents("SHARD_1")]).toEqual(before);
    expect([await fences("SHARD_0"), await fences("SHARD_1"), await moves()]).toEqual([[], [], []]);
  });

  it("a destination holding rows of the bucket, or fencing it otherwise than moved", async () => {
    await queryShard(dir, "SHARD_0", `INSERT INTO organizations (id, name, bucket) VALUES ('stray', 'Stray', ${bucket})`);
    expectCliError(await bucketCommand("move", "--to", "SHARD_0"), new RegExp(`SHARD_0 holds rows of bucket ${bucket} already`));
    await queryShard(dir, "SHARD_0", "DELETE FROM organizations WHERE id = 'stray'");
    await queryShard(dir, "SHARD_0", `INSERT INTO bucket_fences (bucket, state) VALUES (${bucket}, 'incoming')`);
    expectCliError(
      await bucketCommand("move", "--to", "SHARD_0"),
      new RegExp(`SHARD_0 has fences on bucket ${bucket} \\(${bucket} incoming\\): another move is under way`),
    );
    await queryShard(dir, "SHARD_0", "DELETE FROM bucket_fences");
    expect([await fences("SHARD_0"), await fences("SHARD_1"), await moves()]).toEqual([[], [], []]);
  });
});

describe("a move whose verify finds a table differing, then aborted", () => {
  const sha256 = "sha256 [0-9a-f]{64}";
  const verifyFailed = (table: string) =>
    new RegExp(
      `^error: verify failed: ${table} has \\d+ rows \\(${sha256}\\) on SHARD_1, \\d+ \\(${sha256}\\) on SHARD_0; ` +
        "the fences stay: run bucket move again, or bucket abort\n$",
    );
  let destinationBefore: Record<string, string[]>;

  it("names the table and stops, the fences kept: users (a copy differing), then apps (a row changed after its copy)", async () => {
    destinationBefore = await contents("SHARD_0");
    const source = await contents("SHARD_1");
    // The mover's row on SHARD_0 (their personal organization's) differs from the source's: the copy leaves a user row it
    // finds (INSERT OR IGNORE), and only verify sees the difference.
    const mover = "email = 'mover@example.com'";
    const [{ username }] = await queryShard<{ username: string }>(dir, "SHARD_0", `SELECT username FROM users WHERE ${mover}`);
    await queryShard(dir, "SHARD_0", `UPDATE users SET username = 'not-the-mover' WHERE ${mover}`);
    const users = await bucketCommand("move", "--to", "SHARD_0");
    expect([users.code, users.stdout]).toEqual([1, ""]);
    expect(users.stderr).toMatch(verifyFailed("users"));
    await queryShard(dir, "SHARD_0", `UPDATE users SET username = '${username}' WHERE ${mover}`);

    // Each app changed on the destination as it is copied; run again, the move copies from scratch and verify stops there.
    await queryShard(
      dir,
      "SHARD_0",
      "CREATE TRIGGER changed_after_copy AFTER INSERT ON apps BEGIN UPDATE apps SET name = NEW.name || ' (changed)' WHERE id = NEW.id; END",
    );
    const apps = await bucketCommand("move", "--to", "SHARD_0");
    await queryShard(dir, "SHARD_0", "DROP TRIGGER changed_after_copy");
    expect([apps.code, apps.stdout]).toEqual([1, ""]);
    expect(apps.stderr).toMatch(verifyFailed("apps"));

    // The bucket is safe: both shards fence it, no write goes through, the source is as it was.
    expect([await fences("SHARD_0"), await fences("SHARD_1")]).toEqual([
      [{ bucket, state: "incoming" }],
      [{ bucket, state: "moving" }],
    ]);
    expect((await moves())[0]).toMatchObject({ source: "SHARD_1", destination: "SHARD_0", state: "copying" });
    expect((await api(worker, "POST", "/apps", key, { app_name: "while-unverified" })).status).toBe(503);
    expect(await contents("SHARD_1")).toEqual(source);
  });

  it("abort: the copy deleted and no fence left on either shard; the key's user is served on the destination", async () => {
    const aborted = await bucketCommand("abort");
    expect(aborted.json).toMatchObject({ source: "SHARD_1", destination: "SHARD_0", state: "aborted" });
    expect([await fences("SHARD_0"), await fences("SHARD_1")]).toEqual([[], []]);
    expect(await contents("SHARD_0")).toEqual(destinationBefore);
    // The key (of the bucket, homed on SHARD_1) reads, writes and lists in the mover's organization on SHARD_0.
    await ok("GET", `/organizations/${personalOrganizationId}`);
    await ok("POST", "/apps", { app_name: "after-first-abort", organization_id: personalOrganizationId });
    await ok("GET", `/events?organization_id=${personalOrganizationId}`);
    await ok("POST", "/apps", { app_name: "after-first-abort" });
  });
});

describe("a bucket moved while its organization is written to", () => {
  const acknowledged: string[] = [];
  const statuses: number[] = [];
  let oldErrors: string[] = [];
  let racing = true;
  let race: Promise<void>;

  it("move: writes answered 503 with Retry-After, reads 200; the copy equals the source, table by table", async () => {
    // Apps created one after another, as long as the test runs, against whichever wrangler dev serves.
    race = (async () => {
      for (let i = 0; racing; i++) {
        try {
          const answer = await api(worker, "POST", "/apps", key, { app_name: `race-${i}` });
          statuses.push(answer.status);
          if (answer.status === 200) acknowledged.push(answer.body.app_id);
          // Within the key's rate limit (wrangler.toml: 600 a minute).
          await sleep(120);
        } catch {
          await sleep(50); // no answer (a server stopping): nothing acknowledged
        }
      }
    })();
    await until("writes before the move", () => acknowledged.length >= 3);
    const destinationBefore = await contents("SHARD_0");

    const moved = await bucketCommand("move", "--to", "SHARD_0");
    expect(moved.code, moved.stderr).toBe(0);
    const source = await contents("SHARD_1");
    expect(moved.json).toEqual({
      bucket_from: bucket,
      bucket_to: bucket,
      source: "SHARD_1",
      destination: "SHARD_0",
      state: "copied",
      seconds: expect.any(Number),
      tables: Object.fromEntries(
        Object.keys(moved.json.tables).map((table) => [
          table,
          {
            // All but the users the destination has already (the owner's own organization is there).
            copied: source[table].filter((row) => !destinationBefore[table].includes(row)).length,
            rows: source[table].length,
            sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
          },
        ]),
      ),
    });
    expect(Object.keys(moved.json.tables).sort()).toEqual(tables);

    // The destination holds what it held, and every row of the source (users: each once).
    const destination = await contents("SHARD_0");
    for (const table of tables) {
      expect(destination[table], table).toEqual([...new Set([...destinationBefore[table], ...source[table]])].sort());
    }
    // The environments keep the order they were made in (what lists of them follow), not their ids'.
    expect((await environmentsInOrder("SHARD_0")).map(({ name }) => name)).toEqual(unordered.environments);
    expect([await fences("SHARD_0"), await fences("SHARD_1")]).toEqual([
      [{ bucket, state: "incoming" }],
      [{ bucket, state: "moving" }],
    ]);

    const refused = await api(worker, "POST", "/apps", key, { app_name: "refused" });
    expect([refused.status, refused.body, refused.headers.get("retry-after")]).toEqual([
      503,
      { detail: "Service temporarily unavailable" },
      "30",
    ]);
    expect((await api(worker, "GET", "/apps", key)).status).toBe(200);
    await expectCliWritesRefused();
    expect(await contents("SHARD_1")).toEqual(source);
  });

  it("finish refuses while SHARD_MAP still gives the bucket to the source", async () => {
    expectCliError(
      await bucketCommand("finish", "--to", "SHARD_0"),
      new RegExp(`SHARD_MAP gives bucket ${bucket} to SHARD_1: route them to SHARD_0 and deploy first`),
    );
    expect(await fences("SHARD_1")).toEqual([{ bucket, state: "moving" }]);
  });

  it("the new map deployed, then finish: writes go through on the destination, and none answered 2xx is lost", async () => {
    const oldMap = worker;
    worker = await startDev({ name: "new map", persistTo: dir, readyPath: "/health", vars: { ...HOOK_VARS, SHARD_MAP: newMap } });
    oldErrors = oldMap.errorsSince(0);
    await oldMap.stop();
    const refusedSoFar = statuses.length;
    await until("a write refused under the new map", () => statuses.slice(refusedSoFar).includes(503));

    const finished = await bucketCommand("finish", "--to", "SHARD_0", "--shard-map", newMap);
    expect(finished.json).toEqual({
      bucket_from: bucket,
      bucket_to: bucket,
      source: "SHARD_1",
      destination: "SHARD_0",
      state: "finished",
    });
    expect([await fences("SHARD_0"), await fences("SHARD_1")]).toEqual([[], [{ bucket, state: "moved" }]]);
    // The CLI still on the old map: its writes land on the source no more.
    const sourceRows = await contents("SHARD_1");
    await expectCliWritesRefused();
    expect(await contents("SHARD_1")).toEqual(sourceRows);
    const before = acknowledged.length;
    await until("writes after finish", () => acknowledged.length >= before + 3);
    racing = false;
    await race;

    // Locally the CLI and wrangler dev open the same SQLite files, and workerd sets no busy timeout: a write meeting
    // the other's lock fails as an internal error (src/cli/database.ts, retryTransient), answered 500 and not
    // acknowledged. Those are the only answers but 200 and 503, one per such error wrangler dev logged.
    const unhandled = [...oldErrors, ...worker.errorsSince(0)].filter((line) => line.includes('"message":"unhandled error"'));
    expect(unhandled.filter((line) => !/database is locked|internal error/.test(line))).toEqual([]);
    const otherStatuses = statuses.filter((status) => status !== 200 && status !== 503);
    expect(otherStatuses).toEqual(unhandled.map(() => 500));
    const onDestination = await queryShard<{ id: string }>(
      dir,
      "SHARD_0",
      `SELECT id FROM apps WHERE id IN (SELECT value FROM json_each('${JSON.stringify(acknowledged)}')) ORDER BY id`,
    );
    expect(onDestination.map(({ id }) => id)).toEqual([...acknowledged].sort());
    const onSource = (await rowsOf("SHARD_1", "apps")).map((app) => app.id);
    expect(acknowledged.slice(before).filter((id) => onSource.includes(id))).toEqual([]);
  });

  it("a key's request kept across shards before the move is replayed after it, from the destination", async () => {
    const retry = await api(worker, "POST", "/apps", ownerKey, acrossRequest(), ACROSS);
    expect([retry.status, retry.headers.get("Idempotent-Replayed"), retry.body]).toEqual([200, "true", keptAcross]);
    expect(await queryShard(dir, "SHARD_0", `SELECT name FROM apps WHERE id = '${keptAcross.app_id}'`)).toEqual([
      { name: "kept-across" },
    ]);
  });

  it("delete: no row of the bucket is left on the source, which stays fenced moved", async () => {
    const usersBefore = await rowsOf("SHARD_1", "users");
    const before = await contents("SHARD_1");
    const deleted = await bucketCommand("delete", "--shard-map", newMap);
    expect(deleted.code, deleted.stderr).toBe(0);
    const left = await contents("SHARD_1");
    expect(deleted.json).toEqual({
      bucket_from: bucket,
      bucket_to: bucket,
      shard: "SHARD_1",
      state: "deleted",
      deleted: deletedCounts(before),
    });
    expect(left).toEqual({
      ...Object.fromEntries(tables.map((table) => [table, []])),
      users: usersBefore.map((user) => JSON.stringify(user)).sort(),
    });
    expect(await fences("SHARD_1")).toEqual([{ bucket, state: "moved" }]);
    expect(await moves()).toEqual([
      { bucket_from: bucket, bucket_to: bucket, source: "SHARD_1", destination: "SHARD_0", state: "deleted" },
    ]);
  });
});

describe("a move back, stopped, run again, then aborted", () => {
  it("a stopped copy is redone by the next run; abort deletes the copy and lets writes through on the source", async () => {
    // Another organization's key on SHARD_1 with the moving key's prefix (docs/SHARDING.md R4) stops the copy there.
    const [owner] = await queryShard<{ id: string }>(dir, "SHARD_1", "SELECT id FROM users WHERE email = 'mover@example.com'");
    const clash = [
      "INSERT INTO organizations (id, name, bucket) VALUES ('clash', 'Clash', 5)",
      "INSERT INTO workspaces (id, organization_id, name) VALUES ('clash', 'clash', 'w')",
      "INSERT INTO projects (id, workspace_id, name) VALUES ('clash', 'clash', 'p')",
      `INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id) VALUES ('clash', '${key.split(".")[0]}', 'x', '${owner.id}', 'clash')`,
    ];
    await queryShard(dir, "SHARD_1", ...clash);
    const stopped = await bucketCommand("move", "--to", "SHARD_1", "--shard-map", newMap);
    expect([stopped.code, stopped.stdout]).toEqual([1, ""]);
    expect(stopped.stderr).toMatch(
      /^error: copying api_keys to SHARD_1 failed \(.*UNIQUE constraint failed: api_keys\.prefix.*\); the fences stay: run bucket move again, or bucket abort\n$/,
    );
    // SHARD_1, the bucket's old source, keeps its moved fence (an isolate on the map from before the first move is
    // still turned away there), which is what an abort leaves it.
    expect([await fences("SHARD_0"), await fences("SHARD_1")]).toEqual([
      [{ bucket, state: "moving" }],
      [{ bucket, state: "moved" }],
    ]);
    expect((await moves())[0]).toMatchObject({ source: "SHARD_0", destination: "SHARD_1", state: "copying" });
    expect((await api(worker, "POST", "/apps", key, { app_name: "while-moving-back" })).status).toBe(503);

    await queryShard(dir, "SHARD_1", "DELETE FROM organizations WHERE id = 'clash'");
    const resumed = await bucketCommand("move", "--to", "SHARD_1", "--shard-map", newMap);
    expect(resumed.code, resumed.stderr).toBe(0);
    const again = await bucketCommand("move", "--to", "SHARD_1", "--shard-map", newMap);
    expect(again.json.tables).toEqual(resumed.json.tables);

    const copy = await contents("SHARD_1");
    const aborted = await bucketCommand("abort", "--shard-map", newMap);
    expect(aborted.json).toEqual({
      bucket_from: bucket,
      bucket_to: bucket,
      source: "SHARD_0",
      destination: "SHARD_1",
      state: "aborted",
      deleted: deletedCounts(copy),
    });
    const left = await contents("SHARD_1");
    expect(Object.entries(left).filter(([table, rows]) => table !== "users" && rows.length > 0)).toEqual([]);
    expect([await fences("SHARD_0"), await fences("SHARD_1")]).toEqual([[], [{ bucket, state: "moved" }]]);
    const written = await api(worker, "POST", "/apps", key, { app_name: "after-abort" });
    expect(written.status).toBe(200);
    expect(await queryShard(dir, "SHARD_0", `SELECT name FROM apps WHERE id = '${written.body.app_id}'`)).toEqual([
      { name: "after-abort" },
    ]);
  });
});
