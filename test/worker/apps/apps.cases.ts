import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  createAccount,
  createAppVia,
  createLayeredTeam,
  createTeam,
  deploy,
  expectError,
  FORBIDDEN,
  issueKey,
  send,
} from "../fixtures";
import { databaseProblems, rowCounts, snapshot } from "../harness";
import { countOnShards } from "../pool";

/* GET /apps, PATCH /apps/{app_id}, DELETE /apps/{app_id}: as the platform's client calls them (bare key). */

let owner: Account;
let viewer: Account;
let outsider: Account;
let team: Awaited<ReturnType<typeof createTeam>>;

beforeAll(async () => {
  [owner, viewer, outsider] = [await createAccount(), await createAccount(), await createAccount()];
  team = await createTeam(owner, [[viewer, "viewer"]]);
});

const listApps = (key: string, query = "") => send("GET", `/apps${query}`, { authorization: key });
const rename = (key: string, appId: string, body: unknown) => send("PATCH", `/apps/${appId}`, { authorization: key, body });
const remove = (key: string, appId: string) => send("DELETE", `/apps/${appId}`, { authorization: key });

describe("GET /apps", () => {
  it("lists the key's project's apps oldest first, with when each was last changed", async () => {
    const account = await createAccount();
    const ids = [];
    for (const name of ["first", "second", "third"]) ids.push(await createAppVia(account.key, { app_name: name }));
    const response = await listApps(account.key);
    expect(response.status).toBe(200);
    const apps = (await response.json()) as { app_id: string; app_name: string; updated_at: string }[];
    expect(apps.map((app) => app.app_id)).toEqual(ids);
    expect(apps.map((app) => app.app_name)).toEqual(["first", "second", "third"]);
    for (const app of apps) {
      expect(Object.keys(app).sort()).toEqual(["app_id", "app_name", "updated_at"]);
      expect(app.updated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
  });

  it("filters by exact name (NFC), and answers [] when nothing matches", async () => {
    const account = await createAccount();
    const cafe = await createAppVia(account.key, { app_name: "caf\u00e9" });
    await createAppVia(account.key, { app_name: "Caf\u00e9 2" });
    const matched = await listApps(account.key, `?app_name=${encodeURIComponent("cafe\u0301")}`);
    expect(((await matched.json()) as { app_id: string }[]).map((app) => app.app_id)).toEqual([cafe]);
    for (const name of ["CAF\u00c9", "caf", "%"]) {
      const none = await listApps(account.key, `?app_name=${encodeURIComponent(name)}`);
      expect(await none.json(), name).toEqual([]);
    }
  });

  it("lists a workspace's default project when given one the caller can see, and [] for one they cannot", async () => {
    const inTeam = await createAppVia(owner.key, { app_name: "team-listed", organization_id: team.organizationId });
    const byViewer = await listApps(viewer.key, `?workspace_id=${team.workspaceId}`);
    expect(((await byViewer.json()) as { app_id: string }[]).map((app) => app.app_id)).toContain(inTeam);
    expect(await (await listApps(outsider.key, `?workspace_id=${team.workspaceId}`)).json()).toEqual([]);
  });

  it("lists the workspace's default project only, found by its flag: not its oldest project, nor its newest", async () => {
    const layered = await createLayeredTeam(owner);
    for (const [i, workspace] of layered.workspaces.entries()) {
      const [older, newer] = workspace.otherProjectIds;
      const inProject = (projectId: string, name: string) =>
        createAppVia(owner.key, { app_name: `${name}-${i}`, project_id: projectId });
      const inDefault = await inProject(workspace.defaultProjectId, "in-default");
      await inProject(older, "in-older");
      await inProject(newer, "in-newer");
      const listed = (await (await listApps(owner.key, `?workspace_id=${workspace.id}`)).json()) as { app_id: string }[];
      expect(listed.map((app) => app.app_id)).toEqual([inDefault]);
    }
  });

  it("answers 422 for a workspace_id that is not a UUID, and 401 without a live key", async () => {
    const response = await listApps(owner.key, "?workspace_id=nope");
    expect(response.status).toBe(422);
    expect(((await response.json()) as { detail: { loc: unknown[] }[] }).detail[0].loc).toEqual(["query", "workspace_id"]);
    expect((await send("GET", "/apps")).status).toBe(401);
  });
});

describe("PATCH /apps/{app_id}", () => {
  it("renames the app, NFC-normalised, and moves its updated_at", async () => {
    const appId = await createAppVia(owner.key, { app_name: "old-name" });
    const [before] = (await (await listApps(owner.key, "?app_name=old-name")).json()) as { updated_at: string }[];
    const response = await rename(owner.key, appId, { app_name: "cafe\u0301-renamed" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ app_id: appId, app_name: "caf\u00e9-renamed" });
    const [after] = (await (await listApps(owner.key, `?app_name=${encodeURIComponent("caf\u00e9-renamed")}`)).json()) as {
      app_id: string;
      updated_at: string;
    }[];
    expect(after.app_id).toBe(appId);
    expect(after.updated_at > before.updated_at).toBe(true);
  });

  it("answers 409 for a name taken in the project, 403 for a viewer, 404 for an outsider; renaming nothing then", async () => {
    const appId = await createAppVia(owner.key, { app_name: "keeps-its-name", organization_id: team.organizationId });
    await createAppVia(owner.key, { app_name: "taken", organization_id: team.organizationId });
    const before = await snapshot();
    await expectError(await rename(owner.key, appId, { app_name: "taken" }), 409, "App with the same name already exists");
    await expectError(await rename(viewer.key, appId, { app_name: "by-viewer" }), 403, FORBIDDEN);
    await expectError(await rename(outsider.key, appId, { app_name: "by-outsider" }), 404, "App not found");
    await expectError(await rename(owner.key, crypto.randomUUID(), { app_name: "ghost" }), 404, "App not found");
    expect(await snapshot()).toEqual(before);
  });

  it("validates the name as a create does (422) and the path (422)", async () => {
    const appId = await createAppVia(owner.key, { app_name: "validated" });
    for (const body of [{}, { app_name: "" }, { app_name: " " }, { app_name: "a\nb" }, { app_name: 3 }]) {
      expect((await rename(owner.key, appId, body)).status, JSON.stringify(body)).toBe(422);
    }
    expect((await rename(owner.key, "not-a-uuid", { app_name: "x" })).status).toBe(422);
  });

  it("keeps the name when renamed to itself", async () => {
    const appId = await createAppVia(owner.key, { app_name: "same" });
    expect(await (await rename(owner.key, appId, { app_name: "same" })).json()).toEqual({ app_id: appId, app_name: "same" });
  });
});

describe("DELETE /apps/{app_id}", () => {
  it("deletes the app and everything under it in one go; a second DELETE is 404", async () => {
    const appId = await createAppVia(owner.key, { app_name: "doomed" });
    await deploy(appId, "production", "main", owner);
    await deploy(appId, "staging", "other", owner);
    const before = await rowCounts();

    const response = await remove(owner.key, appId);
    expect(response.status).toBe(200);
    expect(await response.json()).toBeNull();

    const after = await rowCounts();
    expect(before.apps - after.apps).toBe(1);
    expect(before.environments - after.environments).toBe(3);
    expect(before.environment_revisions - after.environment_revisions).toBe(2);
    expect(before.deployments - after.deployments).toBe(2);
    expect(before.app_variants - after.app_variants).toBe(2);
    expect(before.app_variant_revisions - after.app_variant_revisions).toBe(2);
    await expectError(await remove(owner.key, appId), 404, "App not found");
    await expectError(await send("GET", `/apps/${appId}/environments`, { key: owner.key }), 404, "App not found");
    expect(await databaseProblems()).toEqual([]);
  });

  it("refuses a viewer (403) and an outsider (404), deleting nothing", async () => {
    const appId = await createAppVia(owner.key, { app_name: "survivor", organization_id: team.organizationId });
    const before = await snapshot();
    await expectError(await remove(viewer.key, appId), 403, FORBIDDEN);
    await expectError(await remove(outsider.key, appId), 404, "App not found");
    expect(await snapshot()).toEqual(before);
  });

  it("frees the name for a new app", async () => {
    const key = await issueKey(owner.userId, owner.projectId);
    const appId = await createAppVia(key, { app_name: "reborn" });
    expect((await remove(key, appId)).status).toBe(200);
    expect(await createAppVia(key, { app_name: "reborn" })).not.toBe(appId);
    expect(await countOnShards("SELECT COUNT(*) AS n FROM apps WHERE name = 'reborn'")).toBe(1);
  });
});
