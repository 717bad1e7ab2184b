import { beforeAll, describe, expect, it } from "vitest";
import { takesDryRun } from "../../src/http/route";
import { ROUTES } from "../../src/routes";
import { splitApp, splitPath, startSplit } from "./apps/split-fixtures";
import {
  type Account,
  addMember,
  createAccount,
  createAppVia,
  createOrganizationVia,
  createTeamWithKeys,
  expectJson,
  getRevisions,
  type IssuedInvitation,
  invite,
  issueKey,
  joinAsNewUser,
  send,
} from "./fixtures";
import { changes, fingerprint, rowCounts, snapshot } from "./harness";
import { databaseOf } from "./pool";
import { newInbox, subscribe } from "./webhooks/webhook-fixtures";

/*
 * `?dry_run=true` on the four deploy and revert routes (docs/CHANGE-REQUESTS.md §6): the answer the call would give,
 * errors included, writing nothing (no revision, event or Idempotency-Key claim); on success, what would change. Each
 * success is followed by the real call, which must do what the dry-run said; each refusal is compared with the real
 * call's.
 */

const FIRST = { temperature: 0.7, model: "a" };
const SECOND = { temperature: 0.2, model: "a" };

let owner: Account;
let keys: Awaited<ReturnType<typeof createTeamWithKeys>>;
let editorKey: string;
let appId: string;
let variantId: string;
/** The config revisions of main committed with FIRST (0), then SECOND (1). */
const committed: { id: string; version: number }[] = [];
let stagingFirstId: string;
let productionFirstId: string;

/** A POST as the owner unless `key` says otherwise, with `?dry_run=` `dryRun` unless null. */
interface Call {
  path: string;
  body?: unknown;
  key?: string;
  headers?: Record<string, string>;
}
const post = ({ path, body, key, headers }: Call, dryRun: string | null) =>
  send("POST", dryRun === null ? path : `${path}?dry_run=${dryRun}`, { key: key ?? keys.ownerKey, body, headers });
const answerOf = async (response: Response) => ({ status: response.status, body: await response.json() });

const configDeploy = (which: number, environment: string): Call => ({
  path: "/variants/configs/deploy",
  body: {
    application_ref: { id: appId },
    variant_ref: { slug: "main", version: committed[which]?.version ?? 99 },
    environment_ref: { slug: environment },
  },
});
const environmentDeploy = (environment: string): Call => ({
  path: "/environments/deploy",
  body: { environment_name: environment, variant_id: variantId },
});
const revert = (environmentRevisionId: string): Call => ({ path: `/configs/deployment/${environmentRevisionId}/revert` });
const currentDeploy = (which: number, environment: string): Call => ({
  path: "/applications/revisions/deploy",
  body: {
    application_ref: { id: appId },
    application_variant_ref: { slug: "main" },
    application_revision_ref: { version: String(committed[which]?.version ?? 99) },
    environment_ref: { slug: environment },
  },
});

/** A config revision of main as a dry-run names it. */
const revision = (which: number) => ({
  variant_revision_id: committed[which].id,
  config_name: "main",
  revision: committed[which].version,
});
/** The diff of the temperature from FIRST's to SECOND's, or back. */
const temperature = (from: number, to: number) => ({
  identical: false,
  coarse: false,
  patch: [{ op: "replace", path: "/params/temperature", value: to }],
  changes: [{ path: "/params/temperature", op: "replace", from, to }],
});

/** The environment's record: its ETag and revisions. */
async function record(environment: string) {
  const response = await getRevisions(keys.ownerKey, appId, environment);
  const body = await expectJson<{ revisions: { id: string; revision: number; deployed_app_variant_revision: string }[] }>(
    response,
  );
  return { etag: response.headers.get("ETag"), revisions: body.revisions };
}

/** The dry-run's answer and ETag, checked to have written nothing. */
async function dryRun(call: Call) {
  const before = await rowCounts();
  const response = await post(call, "true");
  const body = await expectJson<Record<string, unknown>>(response);
  expect(await rowCounts()).toEqual(before);
  return { body, etag: response.headers.get("ETag") };
}

beforeAll(async () => {
  owner = await createAccount();
  keys = await createTeamWithKeys(owner);
  const editor = await createAccount();
  await addMember(keys.team.organizationId, editor.userId, "editor");
  editorKey = await issueKey(editor.userId, keys.team.projectId);
  appId = await createAppVia(keys.ownerKey, { app_name: "dry" });
  const main = { application_ref: { id: appId }, variant_ref: { slug: "main" } };
  await expectJson(await send("POST", "/variants/configs/add", { key: keys.ownerKey, body: main }));
  for (const params of [FIRST, SECOND]) {
    const commit = await send("POST", "/variants/configs/commit", { key: keys.ownerKey, body: { ...main, params } });
    const { variant_ref } = await expectJson<{ variant_ref: { id: string; version: number } }>(commit);
    committed.push({ id: variant_ref.id, version: variant_ref.version });
  }
  const variant = await databaseOf(appId)
    .prepare("SELECT variant_id AS id FROM app_variant_revisions WHERE id = ?")
    .bind(committed[0].id)
    .first<{ id: string }>();
  variantId = String(variant?.id);
  for (const environment of ["staging", "production"]) await expectJson(await post(configDeploy(0, environment), null));
  stagingFirstId = (await record("staging")).revisions[0].id;
  productionFirstId = (await record("production")).revisions[0].id;
  // Production is protected; owners may bypass it.
  await databaseOf(appId)
    .prepare(
      `INSERT INTO environment_protections (project_id, environment, protected, bypass_roles) VALUES (?, 'production', 1, '["owner"]')`,
    )
    .bind(keys.team.projectId)
    .run();
});

describe("a dry-run's success: what the call then does", () => {
  it("POST /variants/configs/deploy: the revision, its diff from what runs, the current ETag to deploy it with", async () => {
    const before = await record("staging");
    const dry = await dryRun(configDeploy(1, "staging"));
    expect(dry.body).toEqual({
      dry_run: true,
      app_id: appId,
      environment: "staging",
      kind: "deploy",
      next_environment_revision: 2,
      current: { environment_revision: 1, ...revision(0) },
      proposed: revision(1),
      diff: temperature(FIRST.temperature, SECOND.temperature),
    });
    expect(dry.etag).toBe(before.etag);
    const real = await expectJson<{ variant_ref: { id: string }; environment_ref: { version: number } }>(
      await post({ ...configDeploy(1, "staging"), headers: { "If-Match": String(dry.etag) } }, null),
    );
    expect([real.environment_ref.version, real.variant_ref.id]).toEqual([2, committed[1].id]);
  });

  it("POST /environments/deploy to an environment that runs nothing: revision 0, the whole document added", async () => {
    const dry = await dryRun(environmentDeploy("development"));
    expect(dry.body).toEqual({
      dry_run: true,
      app_id: appId,
      environment: "development",
      kind: "deploy",
      next_environment_revision: 1,
      current: { environment_revision: 0, variant_revision_id: null, config_name: null, revision: null },
      proposed: revision(1),
      diff: {
        identical: false,
        coarse: false,
        patch: [{ op: "replace", path: "", value: { config_name: "main", params: SECOND, url: "" } }],
        changes: [{ path: "", op: "replace", from: null, to: { config_name: "main", params: SECOND, url: "" } }],
      },
    });
    // dry_run=false is the call itself.
    expect(await expectJson(await post(environmentDeploy("development"), "false"))).toBeNull();
    const deployed = (await record("development")).revisions.map((r) => [r.revision, r.deployed_app_variant_revision]);
    expect(deployed).toEqual([[1, committed[1].id]]);
  });

  it("POST /configs/deployment/{id}/revert: kind revert, back to what that revision deployed", async () => {
    const dry = await dryRun(revert(stagingFirstId));
    expect(dry.body).toEqual({
      dry_run: true,
      app_id: appId,
      environment: "staging",
      kind: "revert",
      next_environment_revision: 3,
      current: { environment_revision: 2, ...revision(1) },
      proposed: revision(0),
      diff: temperature(SECOND.temperature, FIRST.temperature),
    });
    await expectJson(await post(revert(stagingFirstId), null));
    expect((await record("staging")).revisions.at(-1)).toMatchObject({
      revision: 3,
      deployed_app_variant_revision: committed[0].id,
    });
  });

  it("POST /applications/revisions/deploy (today's SDK)", async () => {
    const dry = await dryRun(currentDeploy(1, "staging"));
    expect(dry.body).toEqual({
      dry_run: true,
      app_id: appId,
      environment: "staging",
      kind: "deploy",
      next_environment_revision: 4,
      current: { environment_revision: 3, ...revision(0) },
      proposed: revision(1),
      diff: temperature(FIRST.temperature, SECOND.temperature),
    });
    const real = await expectJson<{ application_revision: { id: string } }>(await post(currentDeploy(1, "staging"), null));
    expect(real.application_revision.id).toBe(committed[1].id);
    expect((await record("staging")).revisions.at(-1)).toMatchObject({
      revision: 4,
      deployed_app_variant_revision: committed[1].id,
    });
  });

  it("claims no Idempotency-Key: the call with the same key afterwards is a first request, not a replay", async () => {
    const call = { ...configDeploy(0, "development"), headers: { "Idempotency-Key": "dry-then-real" } };
    await dryRun(call);
    const real = await post(call, null);
    expect([real.status, real.headers.get("Idempotent-Replayed")]).toEqual([200, null]);
    const retry = await post(call, null);
    expect([retry.status, retry.headers.get("Idempotent-Replayed")]).toEqual([200, "true"]);
  });

  it("passes a protected environment with a bypass from a role allowed it, writing nothing (no bypass event)", async () => {
    const dry = await dryRun({ ...configDeploy(1, "production"), headers: { "Protection-Bypass": "hotfix" } });
    expect(dry.body).toMatchObject({ environment: "production", current: revision(0), proposed: revision(1) });
  });
});

describe("a dry-run's refusals: the call's own, nothing written", () => {
  const stale = { "If-Match": '"00000000-0000-7000-8000-000000000000.1"' };
  const bypass = { "Protection-Bypass": "hotfix" };
  const cases: [string, () => Call, number][] = [
    ["configs/deploy, a viewer", () => ({ ...configDeploy(1, "staging"), key: keys.viewerKey }), 403],
    ["configs/deploy, a read-only key", () => ({ ...configDeploy(1, "staging"), key: keys.readOnlyKey }), 403],
    ["configs/deploy, another organization's member", () => ({ ...configDeploy(1, "staging"), key: keys.outsider.key }), 404],
    ["configs/deploy, no such environment", () => configDeploy(1, "qa"), 404],
    ["configs/deploy, no such revision", () => configDeploy(5, "staging"), 404],
    ["configs/deploy, a stale If-Match", () => ({ ...configDeploy(1, "staging"), headers: stale }), 412],
    ["configs/deploy, a protected environment", () => configDeploy(1, "production"), 409],
    [
      "configs/deploy, a bypass by a role not allowed it",
      () => ({ ...configDeploy(1, "production"), key: editorKey, headers: bypass }),
      403,
    ],
    ["environments/deploy, a viewer", () => ({ ...environmentDeploy("staging"), key: keys.viewerKey }), 403],
    ["environments/deploy, no such environment", () => environmentDeploy("qa"), 404],
    ["environments/deploy, a protected environment", () => environmentDeploy("production"), 409],
    ["revert, a viewer", () => ({ ...revert(stagingFirstId), key: keys.viewerKey }), 403],
    ["revert, no such revision", () => revert("00000000-0000-7000-8000-000000000000"), 404],
    ["revert, a stale If-Match", () => ({ ...revert(stagingFirstId), headers: stale }), 412],
    ["revert, a protected environment", () => revert(productionFirstId), 409],
    ["applications/revisions/deploy, a viewer", () => ({ ...currentDeploy(1, "staging"), key: keys.viewerKey }), 403],
    ["applications/revisions/deploy, no such revision", () => currentDeploy(5, "staging"), 404],
    ["applications/revisions/deploy, a protected environment", () => currentDeploy(1, "production"), 409],
  ];

  it.each(cases)("%s", async (_name, call, status) => {
    const before = await rowCounts();
    const dry = await answerOf(await post(call(), "true"));
    expect(await rowCounts()).toEqual(before);
    const real = await answerOf(await post(call(), null));
    expect(await rowCounts()).toEqual(before);
    expect(dry).toEqual(real);
    expect(dry.status).toBe(status);
  });

  it("answers 422 in the validation shape for a dry_run that is not true or false", async () => {
    const before = await rowCounts();
    for (const call of [
      configDeploy(1, "staging"),
      environmentDeploy("staging"),
      revert(stagingFirstId),
      currentDeploy(1, "staging"),
    ]) {
      expect(await answerOf(await post(call, "yes"))).toEqual({
        status: 422,
        body: { detail: [{ loc: ["query", "dry_run"], msg: expect.any(String), type: expect.any(String) }] },
      });
    }
    expect(await rowCounts()).toEqual(before);
  });
});

describe("the dry-runs of a delete and of a save that deploys, past a protected production", () => {
  const bypass = { "Protection-Bypass": "hotfix" };
  const request = (method: string, path: string, options: { key?: string; body?: unknown; headers?: Record<string, string> }) =>
    send(method, path, { key: options.key ?? keys.ownerKey, body: options.body, headers: options.headers });

  it("DELETE /apps/{app_id}?dry_run=true: what the delete would remove, with the owner's bypass; nothing written", async () => {
    const doomed = await createAppVia(keys.ownerKey, { app_name: "dry-doomed" });
    const main = { application_ref: { id: doomed }, variant_ref: { slug: "main" } };
    await expectJson(await request("POST", "/variants/configs/add", { body: main }));
    await expectJson(await request("POST", "/variants/configs/commit", { body: { ...main, params: FIRST } }));
    for (const environment of ["staging", "production"]) {
      const body = { ...main, environment_ref: { slug: environment } };
      await expectJson(await request("POST", "/variants/configs/deploy", { body, headers: bypass }));
    }
    const path = `/apps/${doomed}`;
    const before = await snapshot();
    // Refused as the delete would be: production is protected, and an editor may not bypass it.
    for (const [options, status] of [
      [{}, 409],
      [{ key: editorKey, headers: bypass }, 403],
    ] as const) {
      const dry = await answerOf(await request("DELETE", `${path}?dry_run=true`, options));
      expect(dry).toEqual(await answerOf(await request("DELETE", path, options)));
      expect(dry.status).toBe(status);
    }
    const dry = await request("DELETE", `${path}?dry_run=true`, { headers: bypass });
    expect(await expectJson(dry)).toEqual({
      dry_run: true,
      app_id: doomed,
      app_name: "dry-doomed",
      kind: "delete",
      configs: 1,
      environments: [
        // Revision 2: the add made revision 1 ({}), the commit revision 2.
        { environment: "production", environment_revision: 1, config_name: "main", revision: 2, protected: true },
        { environment: "staging", environment_revision: 1, config_name: "main", revision: 2, protected: false },
      ],
    });
    expect(changes(before, await snapshot())).toEqual({});
    // The delete then does what its dry-run said.
    expect(await expectJson(await request("DELETE", path, { headers: bypass }))).toBeNull();
    expect(await answerOf(await request("DELETE", `${path}?dry_run=true`, { headers: bypass }))).toMatchObject({ status: 404 });
  });

  it("POST /configs?dry_run=true: the revision an overwrite would make and its deploy to production; nothing written", async () => {
    const production = await record("production");
    const [running] = production.revisions.slice(-1);
    const save = { base_id: appId, config_name: "main", parameters: { ...FIRST, temperature: 0.5 }, overwrite: true };
    const before = await snapshot();
    const dry = await request("POST", "/configs?dry_run=true", { body: save, headers: bypass });
    expect(await expectJson(dry)).toEqual({
      dry_run: true,
      app_id: appId,
      config_name: "main",
      kind: "save",
      revision: committed[1].version + 1,
      deploy: {
        environment: "production",
        next_environment_revision: running.revision + 1,
        current: { environment_revision: running.revision, ...revision(0) },
        diff: temperature(FIRST.temperature, 0.5),
      },
    });
    expect(changes(before, await snapshot())).toEqual({});
    // The save then does what its dry-run said: main's next revision, deployed to production.
    expect(await expectJson(await request("POST", "/configs", { body: save, headers: bypass }))).toBeNull();
    const after = (await record("production")).revisions.slice(-1)[0];
    const stored = await databaseOf(appId)
      .prepare("SELECT revision FROM app_variant_revisions WHERE id = ?")
      .bind(after.deployed_app_variant_revision)
      .first<{ revision: number }>();
    expect([after.revision, stored?.revision]).toEqual([running.revision + 1, committed[1].version + 1]);
  });

  it("POST /configs?dry_run=true of a new config: its revision 1, no deploy", async () => {
    const before = await snapshot();
    const save = { base_id: appId, config_name: "dry-fresh", parameters: SECOND, overwrite: false };
    expect(await expectJson(await request("POST", "/configs?dry_run=true", { body: save }))).toEqual({
      dry_run: true,
      app_id: appId,
      config_name: "dry-fresh",
      kind: "save",
      revision: 1,
      deploy: null,
    });
    expect(changes(before, await snapshot())).toEqual({});
  });

  it("DELETE /variants/{variant_id}?dry_run=true: what the removal would remove, or the 409 of a config that runs", async () => {
    const body = { base_id: appId, new_variant_name: "v", new_config_name: "dry-removable", parameters: { n: 1 } };
    const { variant_id } = await expectJson<{ variant_id: string }>(await request("POST", "/variants/from-base", { body }));
    const path = `/variants/${variant_id}`;
    const before = await snapshot();
    expect(await expectJson(await request("DELETE", `${path}?dry_run=true`, {}))).toEqual({
      dry_run: true,
      variant_id,
      app_id: appId,
      config_name: "dry-removable",
      kind: "delete",
      revisions: 1,
    });
    const viewer = await answerOf(await request("DELETE", `${path}?dry_run=true`, { key: keys.viewerKey }));
    expect(viewer).toEqual(await answerOf(await request("DELETE", path, { key: keys.viewerKey })));
    expect(viewer.status).toBe(403);
    expect(changes(before, await snapshot())).toEqual({});
    expect(await expectJson(await request("DELETE", path, {}))).toBeNull();
    // main runs in staging: refused as the removal is.
    const running = `/variants/${variantId}`;
    const dry = await answerOf(await request("DELETE", `${running}?dry_run=true`, {}));
    expect(dry).toEqual(await answerOf(await request("DELETE", running, {})));
    expect(dry.status).toBe(409);
  });

  it("DELETE /webhooks/{webhook_id}?dry_run=true: the webhook it would delete, as GET answers it; nothing written", async () => {
    const hook = await subscribe(keys.ownerKey, {
      organization_id: keys.team.organizationId,
      url: newInbox(),
      events: ["app.created"],
    });
    const path = `/webhooks/${hook.id}`;
    const webhook = await expectJson(await request("GET", path, {}));
    const before = await snapshot();
    expect(await expectJson(await request("DELETE", `${path}?dry_run=true`, {}))).toEqual({
      dry_run: true,
      kind: "delete",
      webhook,
    });
    const viewer = await answerOf(await request("DELETE", `${path}?dry_run=true`, { key: keys.viewerKey }));
    expect(viewer).toEqual(await answerOf(await request("DELETE", path, { key: keys.viewerKey })));
    expect(viewer.status).toBe(403);
    expect(changes(before, await snapshot())).toEqual({});
    expect(await expectJson(await request("DELETE", path, {}))).toBeNull();
    expect((await request("DELETE", `${path}?dry_run=true`, {})).status).toBe(404);
  });

  it("DELETE /keys/{key_prefix}?dry_run=true: the key it would revoke, as GET /keys lists it; nothing written", async () => {
    const prefix = (await issueKey(owner.userId, keys.team.projectId)).split(".")[0];
    const path = `/keys/${prefix}`;
    const listed = await expectJson<{ prefix: string }[]>(await request("GET", "/keys", {}));
    const before = await snapshot();
    expect(await expectJson(await request("DELETE", `${path}?dry_run=true`, {}))).toEqual({
      dry_run: true,
      kind: "delete",
      key: listed.find((key) => key.prefix === prefix),
    });
    // Refused as the delete is: a read-only key deletes none; another user's key is not found.
    for (const [options, status] of [
      [{ key: keys.readOnlyKey }, 403],
      [{ key: keys.viewerKey }, 404],
    ] as const) {
      const dry = await answerOf(await request("DELETE", `${path}?dry_run=true`, options));
      expect(dry).toEqual(await answerOf(await request("DELETE", path, options)));
      expect(dry.status).toBe(status);
    }
    expect(changes(before, await snapshot())).toEqual({});
    expect(await expectJson(await request("DELETE", path, {}))).toEqual({ prefix, revoked_at: expect.any(String) });
    expect((await request("DELETE", `${path}?dry_run=true`, {})).status).toBe(404);
  });

  describe("DELETE /workspaces/{workspace_id}/roles and /users?dry_run=true: what the member would lose", () => {
    const roles = (email: string, role: string) =>
      `/workspaces/${keys.team.workspaceId}/roles?email=${email}&org_id=${keys.team.organizationId}&role=${role}`;
    const users = (email: string) =>
      `/workspaces/${keys.team.workspaceId}/users?email=${email}&org_id=${keys.team.organizationId}`;
    /** The dry-run's answer, the harness showing it wrote nothing. */
    async function dryDelete(path: string, key = keys.ownerKey) {
      const before = await snapshot();
      const answer = await answerOf(await request("DELETE", `${path}&dry_run=true`, { key }));
      expect(changes(before, await snapshot())).toEqual({});
      return answer;
    }

    it("roles: the member as they are and the role unassigning takes; then the call makes them a viewer", async () => {
      const member = await joinAsNewUser(keys.ownerKey, keys.team.organizationId, keys.team.workspaceId, "deployment_manager");
      const now = { id: member.userId, email: member.email, username: expect.any(String), role: "deployment_manager" };
      const answer = { dry_run: true, kind: "delete", member: now, roles_lost: ["deployment_manager"], keys_revoked: 0 };
      expect(await dryDelete(roles(member.email, "deployment_manager"))).toEqual({ status: 200, body: answer });
      // Another role than theirs: nothing to lose, and the call changes nothing.
      expect(await dryDelete(roles(member.email, "editor"))).toEqual({ status: 200, body: { ...answer, roles_lost: [] } });
      expect(await expectJson(await request("DELETE", roles(member.email, "editor"), {}))).toEqual(now);
      expect(await expectJson(await request("DELETE", roles(member.email, "deployment_manager"), {}))).toEqual({
        ...now,
        role: "viewer",
      });
    });

    it("users: the member, their role and the keys removal revokes; then the call removes them and revokes those", async () => {
      const member = await joinAsNewUser(keys.ownerKey, keys.team.organizationId, keys.team.workspaceId, "editor");
      const dry = await dryDelete(users(member.email));
      expect(dry).toEqual({
        status: 200,
        body: {
          dry_run: true,
          kind: "delete",
          member: { id: member.userId, email: member.email, username: expect.any(String), role: "editor" },
          roles_lost: ["editor"],
          keys_revoked: 1,
        },
      });
      expect((await request("GET", "/keys", { key: member.key })).status).toBe(200);
      const workspace = await expectJson<{ members: { user: { email: string } }[] }>(
        await request("DELETE", users(member.email), {}),
      );
      expect(workspace.members.map(({ user }) => user.email)).not.toContain(member.email);
      expect((await request("GET", "/keys", { key: member.key })).status).toBe(401);
    });

    const ownerEmail = () => `${owner.username}@example.com`;
    it.each<[string, () => string, string | undefined, number]>([
      ["roles, the last owner", () => roles(ownerEmail(), "owner"), undefined, 409],
      ["users, the last owner", () => users(ownerEmail()), undefined, 409],
      ["roles, a viewer", () => roles(ownerEmail(), "owner"), "viewer", 403],
      ["users, a viewer", () => users(ownerEmail()), "viewer", 403],
      ["users, no such member", () => users("nobody@example.com"), undefined, 404],
      ["roles, another organization's member", () => roles(ownerEmail(), "owner"), "outsider", 404],
    ])("refused as the call is: %s", async (_name, path, who, status) => {
      const key = who === "viewer" ? keys.viewerKey : who === "outsider" ? keys.outsider.key : keys.ownerKey;
      const dry = await dryDelete(path(), key);
      expect(dry).toEqual(await answerOf(await request("DELETE", path(), { key })));
      expect(dry.status).toBe(status);
    });
  });

  const save = (overwrite: boolean): Call => ({
    path: "/configs",
    body: { base_id: appId, config_name: "main", parameters: SECOND, overwrite },
  });
  it.each<[string, () => Call, number]>([
    ["an overwrite of a protected production, without a bypass", () => save(true), 409],
    ["a bypass by a role not allowed it", () => ({ ...save(true), key: editorKey, headers: bypass }), 403],
    ["a viewer", () => ({ ...save(true), key: keys.viewerKey, headers: bypass }), 403],
    ["a name taken, without overwrite", () => save(false), 400],
    ["no such app", () => ({ path: "/configs", body: { ...(save(true).body as object), base_id: committed[0].id } }), 404],
  ])("POST /configs?dry_run=true refused as the save is: %s", async (_name, call, status) => {
    const before = await rowCounts();
    const dry = await answerOf(await post(call(), "true"));
    expect(await rowCounts()).toEqual(before);
    expect(dry).toEqual(await answerOf(await post(call(), null)));
    expect(await rowCounts()).toEqual(before);
    expect(dry.status).toBe(status);
  });
});

/*
 * Every write the route declarations make (src/routes.ts ROUTES, each method but GET) either answers `?dry_run=true`
 * with what it would do (its query declares dry_run: src/http/route.ts takesDryRun) or refuses dry_run with a 422
 * naming it: sent in each form, to a request the call itself would take, nothing is written either way.
 */
describe("?dry_run on every write of the route declarations", () => {
  const WRITES = ROUTES.map((route) => route.declaration).filter((declaration) => declaration.method !== "get");
  const operation = ({ method, path }: { method: string; path: string }) => `${method.toUpperCase()} ${path}`;
  let app: {
    id: string;
    deletable: string;
    kept: string;
    simple: string;
    simpleVariant: string;
    staging: string;
    split: string;
  };
  let organization: { id: string; workspace: string; hook: string };
  let people: { invited: string; member: string; token: string; project: string; spareKey: string; request: string };

  beforeAll(async () => {
    const key = keys.ownerKey;
    const deletable = await createAppVia(key, { app_name: "dry-deletable" });
    const based = { base_id: appId, new_variant_name: "v", parameters: { n: 1 } };
    const kept = await expectJson<{ variant_id: string }>(
      await send("POST", "/variants/from-base", { key, body: { ...based, new_config_name: "dry-kept" } }),
    );
    const simple = await expectJson<{ application: { id: string } }>(
      await send("POST", "/simple/applications/", { key, body: { application: { slug: "dry-simple", name: "dry-simple" } } }),
    );
    const variantBody = { application_variant: { application_id: simple.application.id, slug: "dry-variant" } };
    const simpleVariant = await expectJson<{ application_variant: { id: string } }>(
      await send("POST", "/applications/variants/", { key, body: variantBody }),
    );
    const environments = await expectJson<{ environments: { id: string }[] }>(
      await send("POST", "/simple/environments/query", { key, body: { environment: { slug: "staging" } } }),
    );
    // An app whose staging runs a split.
    const split = await splitApp(owner, ["staging"], key);
    await startSplit(key, split, "staging");
    app = {
      split,
      id: appId,
      deletable,
      kept: kept.variant_id,
      simple: simple.application.id,
      simpleVariant: simpleVariant.application_variant.id,
      staging: environments.environments[0].id,
    };
    // The webhooks in an organization of their own, subscribed to nothing this walk does: no delivery runs meanwhile.
    const other = await createOrganizationVia(key);
    const hook = await subscribe(key, { organization_id: other.organizationId, url: newInbox(), events: ["app.created"] });
    organization = { id: other.organizationId, workspace: other.workspaceId, hook: hook.id };
    const { organizationId, workspaceId, projectId } = keys.team;
    const invitation = await expectJson<IssuedInvitation>(
      await invite(key, organizationId, workspaceId, `dry-${crypto.randomUUID()}@example.com`, "editor"),
    );
    const member = await joinAsNewUser(key, organizationId, workspaceId, "viewer");
    // A request the owner may apply: development's settings let its author approve it.
    await expectJson(
      await send("PUT", `/projects/${projectId}/environments/development/protection`, {
        key,
        body: { allow_self_approval: true },
      }),
    );
    const request = await expectJson<{ id: string; version: number }>(
      await send("POST", "/change-requests", {
        key,
        body: { app_id: appId, environment: "development", variant_revision_id: committed[0].id, title: "dry" },
      }),
    );
    await expectJson(
      await send("POST", `/change-requests/${request.id}/reviews`, { key, body: { kind: "approve", version: request.version } }),
    );
    people = {
      invited: invitation.email,
      member: member.email,
      token: invitation.token,
      project: invitation.project_id,
      spareKey: (await issueKey(owner.userId, projectId)).split(".")[0],
      request: request.id,
    };
  });

  /** Each write, as a request the call itself would take from the team's owner (path, body). */
  const REQUESTS: Record<string, () => Call> = {
    "POST /variants/configs/deploy": () => configDeploy(1, "staging"),
    "POST /environments/deploy": () => environmentDeploy("staging"),
    "POST /configs/deployment/{deployment_revision_id}/revert": () => revert(stagingFirstId),
    "POST /apps": () => ({ path: "/apps", body: { app_name: "dry-new" } }),
    "PATCH /apps/{app_id}": () => ({ path: `/apps/${app.id}`, body: { app_name: "dry-renamed" } }),
    "DELETE /apps/{app_id}": () => ({ path: `/apps/${app.deletable}` }),
    "POST /variants/configs/fetch": () => ({ path: "/variants/configs/fetch", body: { application_ref: { id: app.id } } }),
    "POST /variants/configs/add": () => ({
      path: "/variants/configs/add",
      body: { application_ref: { id: app.id }, variant_ref: { slug: "dry-added" } },
    }),
    "POST /variants/configs/commit": () => ({
      path: "/variants/configs/commit",
      body: { application_ref: { id: app.id }, variant_ref: { slug: "main" }, params: { n: 2 } },
    }),
    "POST /variants/configs/fork": () => ({
      path: "/variants/configs/fork",
      body: { application_ref: { id: app.id }, variant_ref: { slug: "main" } },
    }),
    "POST /variants/from-base": () => ({
      path: "/variants/from-base",
      body: { base_id: app.id, new_variant_name: "v", new_config_name: "dry-based", parameters: {} },
    }),
    "PUT /variants/{variant_id}/parameters": () => ({ path: `/variants/${app.kept}/parameters`, body: { parameters: { n: 3 } } }),
    "DELETE /variants/{variant_id}": () => ({ path: `/variants/${app.kept}` }),
    // Production is protected: an overwrite deploys there, with the bypass the owner may give.
    "POST /configs": () => ({
      path: "/configs",
      body: { base_id: app.id, config_name: "main", parameters: { n: 4 }, overwrite: true },
      headers: { "Protection-Bypass": "dry" },
    }),
    "POST /simple/applications": () => ({
      path: "/simple/applications/",
      body: { application: { slug: "dry-simple-2", name: "dry-simple-2" } },
    }),
    "POST /simple/applications/query": () => ({ path: "/simple/applications/query", body: {} }),
    "PUT /simple/applications/{application_id}": () => ({
      path: `/simple/applications/${app.simple}`,
      body: { application: { slug: "dry-renamed-simple", name: "dry-renamed-simple" } },
    }),
    "POST /simple/applications/{application_id}/archive": () => ({ path: `/simple/applications/${app.simple}/archive` }),
    "POST /simple/applications/{application_id}/unarchive": () => ({ path: `/simple/applications/${app.simple}/unarchive` }),
    "POST /applications/variants": () => ({
      path: "/applications/variants/",
      body: { application_variant: { application_id: app.simple, slug: "dry-variant-2" } },
    }),
    "POST /applications/variants/query": () => ({
      path: "/applications/variants/query",
      body: { application_refs: [{ id: app.simple }] },
    }),
    "POST /applications/variants/{variant_id}/archive": () => ({ path: `/applications/variants/${app.simpleVariant}/archive` }),
    "POST /applications/variants/{variant_id}/unarchive": () => ({
      path: `/applications/variants/${app.simpleVariant}/unarchive`,
    }),
    "POST /keys": () => ({ path: `/keys?workspace_id=${keys.team.workspaceId}` }),
    "DELETE /keys/{key_prefix}": () => ({ path: `/keys/${people.spareKey}` }),
    "POST /organizations": () => ({ path: "/organizations", body: { name: "dry", owner: owner.userId } }),
    "PUT /organizations/{org_id}": () => ({ path: `/organizations/${organization.id}`, body: { name: "dry" } }),
    "POST /organizations/{org_id}/workspaces": () => ({
      path: `/organizations/${organization.id}/workspaces`,
      body: { name: "dry" },
    }),
    "PUT /organizations/{org_id}/workspaces/{workspace_id}": () => ({
      path: `/organizations/${organization.id}/workspaces/${organization.workspace}`,
      body: { description: "dry" },
    }),
    "POST /organizations/{org_id}/workspaces/{workspace_id}/invite": () => ({
      path: `/organizations/${keys.team.organizationId}/workspaces/${keys.team.workspaceId}/invite`,
      body: [{ email: "dry-invitee@example.com", roles: ["editor"] }],
    }),
    "POST /organizations/{org_id}/workspaces/{workspace_id}/invite/resend": () => ({
      path: `/organizations/${keys.team.organizationId}/workspaces/${keys.team.workspaceId}/invite/resend`,
      body: { email: people.invited },
    }),
    "POST /organizations/{org_id}/workspaces/{workspace_id}/invite/accept": () => ({
      path: `/organizations/${keys.team.organizationId}/workspaces/${keys.team.workspaceId}/invite/accept?project_id=${people.project}`,
      body: { token: people.token },
      key: "",
    }),
    "POST /workspaces/{workspace_id}/roles": () => ({
      path: `/workspaces/${keys.team.workspaceId}/roles`,
      body: { email: people.member, organization_id: keys.team.organizationId, role: "editor" },
    }),
    "DELETE /workspaces/{workspace_id}/roles": () => ({
      path: `/workspaces/${keys.team.workspaceId}/roles?email=${people.member}&org_id=${keys.team.organizationId}&role=viewer`,
    }),
    "DELETE /workspaces/{workspace_id}/users": () => ({
      path: `/workspaces/${keys.team.workspaceId}/users?email=${people.member}&org_id=${keys.team.organizationId}`,
    }),
    "PUT /projects/{project_id}/environments/{environment_name}/protection": () => ({
      path: `/projects/${keys.team.projectId}/environments/staging/protection`,
      body: { protected: true },
    }),
    "POST /webhooks": () => ({
      path: "/webhooks",
      body: { organization_id: organization.id, url: newInbox(), events: ["app.created"] },
    }),
    "PATCH /webhooks/{webhook_id}": () => ({ path: `/webhooks/${organization.hook}`, body: { description: "dry" } }),
    "DELETE /webhooks/{webhook_id}": () => ({ path: `/webhooks/${organization.hook}` }),
    "POST /webhooks/{webhook_id}/rotate-secret": () => ({ path: `/webhooks/${organization.hook}/rotate-secret` }),
    "POST /webhooks/{webhook_id}/test": () => ({ path: `/webhooks/${organization.hook}/test` }),
    // No delivery runs in this walk: the refusal comes before the delivery is looked up.
    "POST /webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver": () => ({
      path: `/webhooks/${organization.hook}/deliveries/${crypto.randomUUID()}/redeliver`,
    }),
    "POST /applications/revisions/retrieve": () => ({
      path: "/applications/revisions/retrieve",
      body: { application_ref: { id: app.id }, application_variant_ref: { slug: "main" } },
    }),
    "POST /applications/revisions/commit": () => ({
      path: "/applications/revisions/commit",
      body: { application_revision: { application_variant_id: app.simpleVariant, data: { parameters: { t: 1 } }, message: "m" } },
    }),
    "POST /applications/revisions/log": () => ({
      path: "/applications/revisions/log",
      body: { application_revisions: { application_variant_id: app.simpleVariant } },
    }),
    "POST /applications/revisions/deploy": () => currentDeploy(1, "staging"),
    "POST /workflows/revisions/retrieve": () => ({
      path: "/workflows/revisions/retrieve",
      body: { workflow_ref: { id: app.id }, workflow_variant_ref: { id: app.kept } },
    }),
    "POST /simple/environments/query": () => ({ path: "/simple/environments/query", body: { environment: { slug: "staging" } } }),
    "POST /simple/environments/{environment_id}/guard": () => ({ path: `/simple/environments/${app.staging}/guard` }),
    "POST /simple/environments/{environment_id}/unguard": () => ({ path: `/simple/environments/${app.staging}/unguard` }),
    "POST /change-requests": () => ({
      path: "/change-requests",
      body: { app_id: app.id, environment: "staging", variant_revision_id: committed[1].id, title: "dry" },
    }),
    "PATCH /change-requests/{change_request_id}": () => ({ path: `/change-requests/${people.request}`, body: { title: "dry" } }),
    "POST /change-requests/{change_request_id}/submit": () => ({ path: `/change-requests/${people.request}/submit` }),
    "POST /change-requests/{change_request_id}/reviews": () => ({
      path: `/change-requests/${people.request}/reviews`,
      body: { kind: "comment", comment: "dry" },
    }),
    "POST /change-requests/{change_request_id}/rebase": () => ({ path: `/change-requests/${people.request}/rebase` }),
    "POST /change-requests/{change_request_id}/cancel": () => ({ path: `/change-requests/${people.request}/cancel` }),
    "POST /change-requests/{change_request_id}/apply": () => ({ path: `/change-requests/${people.request}/apply` }),
    "POST /change-requests/{change_request_id}/schedule": () => ({
      path: `/change-requests/${people.request}/schedule`,
      body: { scheduled_at: new Date(Date.now() + 3_600_000).toISOString() },
    }),
    "POST /change-requests/{change_request_id}/unschedule": () => ({ path: `/change-requests/${people.request}/unschedule` }),
    "PUT /apps/{app_id}/environments/{environment}/split": () => ({
      path: splitPath(app.split, "staging"),
      body: { weight: 20 },
    }),
    "POST /apps/{app_id}/environments/{environment}/split/verdicts": () => ({
      path: splitPath(app.split, "staging", "/verdicts"),
      body: { verdict: "hold", reason: "dry" },
      key: "",
    }),
    "POST /apps/{app_id}/environments/{environment}/split/secret": () => ({ path: splitPath(app.split, "staging", "/secret") }),
    "DELETE /apps/{app_id}/environments/{environment}/split": () => ({ path: splitPath(app.split, "staging", "?outcome=abort") }),
  };

  it("has a request for each write the declarations make, and for nothing else", () => {
    expect(Object.keys(REQUESTS).sort()).toEqual(WRITES.map(operation).sort());
  });

  const withDryRun = (path: string, value: string) => `${path}${path.includes("?") ? "&" : "?"}dry_run=${value}`;
  const refused = {
    detail: [
      {
        loc: ["query", "dry_run"],
        msg: "Extra inputs are not permitted: this operation has no dry-run (nothing was written)",
        type: "extra_forbidden",
      },
    ],
  };
  const invalid = { detail: [{ loc: ["query", "dry_run"], msg: expect.any(String), type: expect.any(String) }] };

  it.each(WRITES.map((declaration) => [operation(declaration), declaration] as const))(
    "%s: honours dry_run as its declaration says, writing nothing",
    async (name, declaration) => {
      const { path, body, key, headers } = REQUESTS[name]();
      const method = declaration.method.toUpperCase();
      const forms = takesDryRun(declaration) ? ["true", "1"] : ["true", "1", "false", ""];
      for (const value of forms) {
        const before = await fingerprint();
        const answer = await answerOf(
          await send(
            method,
            withDryRun(path, value),
            key === "" ? { authorization: "", body } : { key: key ?? keys.ownerKey, body, headers },
          ),
        );
        expect(await fingerprint(), `${name} with dry_run=${value} wrote`).toBe(before);
        if (!takesDryRun(declaration)) expect(answer, `dry_run=${value}`).toEqual({ status: 422, body: refused });
        else if (value === "true") expect(answer, `dry_run=${value}`).toMatchObject({ status: 200, body: { dry_run: true } });
        else expect(answer, `dry_run=${value}`).toEqual({ status: 422, body: invalid });
      }
    },
  );
});
