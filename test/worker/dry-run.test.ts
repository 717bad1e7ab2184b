import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  addMember,
  createAccount,
  createAppVia,
  createTeamWithKeys,
  expectJson,
  getRevisions,
  issueKey,
  send,
} from "./fixtures";
import { rowCounts } from "./harness";
import { databaseOf } from "./pool";

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
