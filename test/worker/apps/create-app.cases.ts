import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  countRows,
  createAccount,
  createAppVia,
  createLayeredTeam,
  createTeam,
  FORBIDDEN,
  getRevisions,
  issueKey,
  type LayeredWorkspace,
  postApp,
  send,
} from "../fixtures";
import { countOnShards, databaseOf, shardNameFor } from "../pool";

let account: Account;
beforeAll(async () => {
  account = await createAccount();
});

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("POST /apps", () => {
  it("answers 200 with the new app's id and name, and creates its three environments", async () => {
    const response = await postApp(account.key, { app_name: "billing" });
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
    const body = (await response.json()) as { app_id: string; app_name: string };
    expect(Object.keys(body).sort()).toEqual(["app_id", "app_name"]);
    expect(body.app_name).toBe("billing");
    expect(body.app_id).toMatch(UUID_V7);

    const environments = await databaseOf(body.app_id)
      .prepare("SELECT name, revision FROM environments WHERE app_id = ? ORDER BY name")
      .bind(body.app_id)
      .all();
    expect(environments.results).toEqual([
      { name: "development", revision: 0 },
      { name: "production", revision: 0 },
      { name: "staging", revision: 0 },
    ]);
  });

  it("puts the app in the key's project when the body names no target", async () => {
    const { app_id } = (await (await postApp(account.key, { app_name: "in-default" })).json()) as { app_id: string };
    const record = (await (await getRevisions(account.key, app_id, "staging")).json()) as Record<string, unknown>;
    expect(record.project_id).toBe(account.projectId);
    expect(record.workspace_id).toBe(account.workspaceId);
    expect(record.organization_id).toBe(account.organizationId);
  });

  it("gives time-ordered ids", async () => {
    const first = (await (await postApp(account.key, { app_name: "order-1" })).json()) as { app_id: string };
    const second = (await (await postApp(account.key, { app_name: "order-2" })).json()) as { app_id: string };
    expect(first.app_id < second.app_id).toBe(true);
  });

  it("ignores unknown body fields and accepts explicit nulls", async () => {
    const response = await postApp(account.key, {
      app_name: "extra-fields",
      project_id: null,
      workspace_id: null,
      organization_id: null,
      template: "chat",
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ app_name: "extra-fields" });
  });

  it("also answers on /apps/ with a trailing slash", async () => {
    const response = await send("POST", "/apps/", { key: account.key, body: { app_name: "trailing-slash" } });
    expect(response.status).toBe(200);
  });

  it("answers 409 for a name already taken in the project, and creates nothing", async () => {
    expect((await postApp(account.key, { app_name: "taken" })).status).toBe(200);
    const [apps, environments] = [await countRows("apps"), await countRows("environments")];
    const response = await postApp(account.key, { app_name: "taken" });
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({ detail: "App with the same name already exists" });
    expect([await countRows("apps"), await countRows("environments")]).toEqual([apps, environments]);
  });

  it("treats names that differ only in Unicode normalisation as the same name, and stores the NFC form", async () => {
    const composed = "caf\u00e9"; // é as one code point
    const decomposed = "cafe\u0301"; // e + combining acute accent
    const first = await postApp(account.key, { app_name: decomposed });
    expect(first.status).toBe(200);
    expect(((await first.json()) as { app_name: string }).app_name).toBe(composed);
    const second = await postApp(account.key, { app_name: composed });
    expect(second.status).toBe(409);
  });

  it("allows the same name in two projects", async () => {
    const other = await createAccount();
    expect((await postApp(account.key, { app_name: "shared-name" })).status).toBe(200);
    expect((await postApp(other.key, { app_name: "shared-name" })).status).toBe(200);
  });

  it("gives exactly one 200 and otherwise 409 for concurrent creates of one name", async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, () => postApp(account.key, { app_name: "race" })));
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, ...Array(9).fill(409)]);
    expect(await countOnShards("SELECT COUNT(*) AS n FROM apps WHERE name = 'race'")).toBe(1);
  });
});

describe("POST /apps into a workspace or an organization", () => {
  // Three workspaces of three projects each, the defaults in the middle: the default is found by its flag, not its age.
  let layered: Awaited<ReturnType<typeof createLayeredTeam>>;
  beforeAll(async () => {
    layered = await createLayeredTeam(account);
  });

  const projectOf = (appId: string) =>
    databaseOf(appId).prepare("SELECT project_id FROM apps WHERE id = ?").bind(appId).first("project_id");
  const listed = async (key: string, query = "") =>
    ((await (await send("GET", `/apps${query}`, { key })).json()) as { app_id: string }[]).map((app) => app.app_id);

  /** The app is in the workspace's default project: the workspace's list shows it, its other projects' lists do not. */
  async function expectInDefaultProject(appId: string, workspace: LayeredWorkspace) {
    expect(await projectOf(appId)).toBe(workspace.defaultProjectId);
    expect(await listed(account.key, `?workspace_id=${workspace.id}`)).toContain(appId);
    for (const projectId of workspace.otherProjectIds) {
      expect(await listed(await issueKey(account.userId, projectId))).not.toContain(appId);
    }
  }

  it("with workspace_id: that workspace's default project, neither its oldest nor its newest", async () => {
    for (const [i, workspace] of layered.workspaces.entries()) {
      const appId = await createAppVia(account.key, { app_name: `in-workspace-${i}`, workspace_id: workspace.id });
      await expectInDefaultProject(appId, workspace);
    }
  });

  it("with organization_id: its default workspace's default project", async () => {
    const appId = await createAppVia(account.key, { app_name: "in-organization", organization_id: layered.organizationId });
    await expectInDefaultProject(appId, layered.defaultWorkspace);
  });
});

describe("POST /apps naming ids of two of the caller's organizations", () => {
  // The caller's own organization and key on SHARD_0; two teams of theirs, one on each shard; a stranger's on SHARD_1.
  let owner: Account;
  let near: Awaited<ReturnType<typeof createTeam>>;
  let far: Awaited<ReturnType<typeof createTeam>>;
  let strangers: Awaited<ReturnType<typeof createTeam>>;
  beforeAll(async () => {
    owner = await createAccount(undefined, "SHARD_0");
    near = await createTeam(owner, [], "SHARD_0");
    far = await createTeam(owner, [], "SHARD_1");
    strangers = await createTeam(await createAccount(undefined, "SHARD_1"), [], "SHARD_1");
    expect([owner.projectId, near.organizationId, far.organizationId].map(shardNameFor)).toEqual([
      "SHARD_0",
      "SHARD_0",
      "SHARD_1",
    ]);
  });

  const disagreeing = (field: string, target: string) => ({
    detail: [{ loc: ["body", field], msg: `Value error, ${field} does not contain the target ${target}`, type: "value_error" }],
  });

  /** The answer to a create naming these ids, and that it made nothing on any shard. */
  async function refused(app_name: string, ids: Record<string, string>) {
    const response = await postApp(owner.key, { app_name, ...ids });
    expect(await countOnShards("SELECT COUNT(*) AS n FROM apps WHERE name = ?", app_name)).toBe(0);
    return { status: response.status, body: await response.json() };
  }

  it("an organization or workspace that does not contain the target project: 422 naming it, whichever shard it is on", async () => {
    for (const [i, other] of [near, far].entries()) {
      expect(await refused(`apart-${i}`, { project_id: owner.projectId, organization_id: other.organizationId })).toEqual({
        status: 422,
        body: disagreeing("organization_id", "project"),
      });
      expect(await refused(`apart-w-${i}`, { project_id: owner.projectId, workspace_id: other.workspaceId })).toEqual({
        status: 422,
        body: disagreeing("workspace_id", "project"),
      });
      // The target on the other shard, the id that disagrees on the caller's own.
      expect(await refused(`apart-r-${i}`, { project_id: other.projectId, organization_id: owner.organizationId })).toEqual({
        status: 422,
        body: disagreeing("organization_id", "project"),
      });
    }
  });

  it("an organization of another shard the caller is not a member of stays a 403, as on one shard", async () => {
    expect(await refused("theirs", { project_id: owner.projectId, organization_id: strangers.organizationId })).toEqual({
      status: 403,
      body: { detail: FORBIDDEN },
    });
  });
});

describe("POST /apps validation", () => {
  const cases: [string, unknown, { loc: (string | number)[]; type: string }][] = [
    ["app_name missing", {}, { loc: ["body", "app_name"], type: "missing" }],
    ["app_name null", { app_name: null }, { loc: ["body", "app_name"], type: "string_type" }],
    ["app_name a number", { app_name: 42 }, { loc: ["body", "app_name"], type: "string_type" }],
    ["app_name empty", { app_name: "" }, { loc: ["body", "app_name"], type: "string_too_short" }],
    ["app_name blank", { app_name: "   " }, { loc: ["body", "app_name"], type: "value_error" }],
    ["app_name too long", { app_name: "a".repeat(256) }, { loc: ["body", "app_name"], type: "string_too_long" }],
    ["app_name with a newline", { app_name: "two\nlines" }, { loc: ["body", "app_name"], type: "value_error" }],
    ["app_name with a NUL", { app_name: "nul\u0000" }, { loc: ["body", "app_name"], type: "value_error" }],
    ["project_id not a UUID", { app_name: "x", project_id: "p-1" }, { loc: ["body", "project_id"], type: "uuid_parsing" }],
    ["workspace_id a number", { app_name: "x", workspace_id: 7 }, { loc: ["body", "workspace_id"], type: "string_type" }],
    [
      "organization_id not a UUID",
      { app_name: "x", organization_id: "org" },
      { loc: ["body", "organization_id"], type: "uuid_parsing" },
    ],
    ["body an array", [], { loc: ["body"], type: "model_attributes_type" }],
    ["body a string", "billing", { loc: ["body"], type: "model_attributes_type" }],
    ["body null", null, { loc: ["body"], type: "model_attributes_type" }],
  ];

  it.each(cases)("answers 422 when %s, and creates nothing", async (_, body, expected) => {
    const before = await countRows("apps");
    const response = await postApp(account.key, body);
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] };
    expect(detail).toHaveLength(1);
    expect(detail[0]).toMatchObject(expected);
    expect(typeof detail[0].msg).toBe("string");
    expect(detail[0].msg.length).toBeGreaterThan(0);
    expect(await countRows("apps")).toBe(before);
  });

  it("accepts a 255-character name", async () => {
    expect((await postApp(account.key, { app_name: "b".repeat(255) })).status).toBe(200);
  });

  it("lists every faulty field at once", async () => {
    const response = await postApp(account.key, { project_id: "nope", organization_id: 3 });
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: unknown[] }[] };
    expect(detail.map((issue) => issue.loc)).toEqual([
      ["body", "app_name"],
      ["body", "project_id"],
      ["body", "organization_id"],
    ]);
  });

  it("answers 422 json_invalid for malformed JSON", async () => {
    const response = await send("POST", "/apps", {
      key: account.key,
      rawBody: '{"app_name": ',
      headers: { "Content-Type": "application/json" },
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ detail: [{ loc: ["body"], msg: "JSON decode error", type: "json_invalid" }] });
  });

  it("answers 422 missing for an empty body", async () => {
    const response = await send("POST", "/apps", {
      key: account.key,
      rawBody: "",
      headers: { "Content-Type": "application/json" },
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ detail: [{ loc: ["body"], msg: "Field required", type: "missing" }] });
  });

  it("answers 415 for a body that is not application/json", async () => {
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded", undefined]) {
      const response = await send("POST", "/apps", {
        key: account.key,
        rawBody: '{"app_name":"plain"}',
        headers: contentType ? { "Content-Type": contentType } : {},
      });
      expect(response.status).toBe(415);
      expect(((await response.json()) as { detail: string }).detail).toMatch(/application\/json/);
    }
  });

  it("accepts application/json with a charset", async () => {
    const response = await send("POST", "/apps", {
      key: account.key,
      rawBody: '{"app_name":"with-charset"}',
      headers: { "Content-Type": "application/json; charset=utf-8" },
    });
    expect(response.status).toBe(200);
  });

  it("answers 413 for a body over 16 KiB, and creates nothing", async () => {
    const before = await countRows("apps");
    const response = await postApp(account.key, { app_name: "big", padding: "x".repeat(16 * 1024) });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { detail: string }).detail).toMatch(/16384 bytes/);
    expect(await countRows("apps")).toBe(before);
  });

  it("answers 413 for an oversized body sent without Content-Length", async () => {
    const payload = new TextEncoder().encode(JSON.stringify({ app_name: "streamed", padding: "y".repeat(20_000) }));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(payload);
        controller.close();
      },
    });
    const response = await send("POST", "/apps", {
      key: account.key,
      rawBody: stream,
      headers: { "Content-Type": "application/json" },
    });
    expect(response.status).toBe(413);
  });
});
