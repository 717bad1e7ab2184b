import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, createTeam, deploy, expectJson, send } from "../fixtures";

/*
 * The reads of an app's variants and environments: GET /apps/{app_id}/environments, /apps/{app_id}/variants,
 * /apps/get_variant_by_env, /variants/{variant_id}, /variants/{variant_id}/revisions[/{revision_number}].
 */

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let owner: Account;
let viewer: Account;
let outsider: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let appId: string;

const get = (key: string, path: string) => send("GET", path, { authorization: key });

const commit = (key: string, config: string, params: Record<string, unknown>) =>
  send("POST", "/variants/configs/commit", {
    authorization: key,
    body: { application_ref: { id: appId }, variant_ref: { slug: config }, params },
  });

interface AppVariant {
  app_id: string;
  variant_id: string;
  variant_name: string;
  config_name: string;
  revision: number;
  parameters: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  modified_by_id: string;
}

beforeAll(async () => {
  [owner, viewer, outsider] = [await createAccount(), await createAccount(), await createAccount()];
  team = await createTeam(owner, [[viewer, "viewer"]]);
  appId = await createAppVia(owner.key, { app_name: "variants-read", organization_id: team.organizationId });
  await deploy(appId, "staging", "main", owner);
  await deploy(appId, "development", "draft", owner);
  expect((await commit(owner.key, "main", { temperature: 0.3 })).status).toBe(200);
  expect((await commit(owner.key, "main", { temperature: 0.4, model: "m" })).status).toBe(200);
});

describe("GET /apps/{app_id}/environments", () => {
  it("lists development, staging and production with what each runs, and 404 for an app the caller cannot see", async () => {
    const environments = await expectJson<Record<string, unknown>[]>(await get(viewer.key, `/apps/${appId}/environments`));
    expect(environments.map((environment) => environment.name)).toEqual(["development", "staging", "production"]);
    expect(environments[1]).toMatchObject({
      app_id: appId,
      project_id: team.projectId,
      deployed_variant_name: "app.main",
      revision: 1,
      organization_id: team.organizationId,
      workspace_id: team.workspaceId,
    });
    expect(environments[2]).toMatchObject({
      deployed_app_variant_id: null,
      deployed_variant_name: null,
      deployed_app_variant_revision_id: null,
      revision: 0,
    });
    expect(await expectJson(await get(outsider.key, `/apps/${appId}/environments`), 404)).toEqual({ detail: "App not found" });
  });
});

describe("GET /apps/{app_id}/variants and /variants/{variant_id}", () => {
  it("lists the variants oldest first, each with its latest revision, in the platform's AppVariant shape", async () => {
    const variants = await expectJson<AppVariant[]>(await get(viewer.key, `/apps/${appId}/variants`));
    expect(variants.map((variant) => variant.config_name)).toEqual(["main", "draft"]);
    const [main] = variants;
    expect(main).toEqual({
      app_id: appId,
      app_name: "variants-read",
      variant_id: main.variant_id,
      variant_name: "app.main",
      project_id: team.projectId,
      base_name: "app",
      base_id: appId,
      config_name: "main",
      revision: 3,
      parameters: { temperature: 0.4, model: "m" },
      uri: null,
      created_at: main.created_at,
      updated_at: main.updated_at,
      modified_by_id: owner.userId,
    });
    expect(main.created_at).toMatch(TIMESTAMP);
    expect(main.updated_at >= main.created_at).toBe(true);
    expect(await expectJson(await get(viewer.key, `/variants/${main.variant_id}`))).toEqual(main);
  });

  it("answers 404 for an app or variant the caller cannot see, and [] for an app without variants", async () => {
    const [main] = await expectJson<AppVariant[]>(await get(owner.key, `/apps/${appId}/variants`));
    expect(await expectJson(await get(outsider.key, `/apps/${appId}/variants`), 404)).toEqual({ detail: "App not found" });
    expect(await expectJson(await get(outsider.key, `/variants/${main.variant_id}`), 404)).toEqual({
      detail: "Variant not found",
    });
    expect(await expectJson(await get(owner.key, `/variants/${crypto.randomUUID()}`), 404)).toEqual({
      detail: "Variant not found",
    });
    const empty = await createAppVia(outsider.key, { app_name: "no-variants" });
    expect(await expectJson(await get(outsider.key, `/apps/${empty}/variants`))).toEqual([]);
  });
});

describe("GET /apps/get_variant_by_env", () => {
  it("answers the variant deployed to the environment", async () => {
    const variant = await expectJson<AppVariant>(
      await get(viewer.key, `/apps/get_variant_by_env?app_id=${appId}&environment=staging`),
    );
    expect(variant).toMatchObject({ config_name: "main", revision: 3 });
  });

  it("answers 404 when nothing is deployed, for an unknown environment and an app the caller cannot see; 422 without its query", async () => {
    const nothing = await get(viewer.key, `/apps/get_variant_by_env?app_id=${appId}&environment=production`);
    expect(await expectJson(nothing, 404)).toEqual({ detail: "No variant is deployed to this environment" });
    for (const [key, environment] of [
      [viewer.key, "qa"],
      [outsider.key, "staging"],
    ]) {
      const response = await get(key, `/apps/get_variant_by_env?app_id=${appId}&environment=${environment}`);
      expect(await expectJson(response, 404)).toEqual({ detail: "App environment not found" });
    }
    const missing = await expectJson<{ detail: { loc: unknown[] }[] }>(await get(viewer.key, "/apps/get_variant_by_env"), 422);
    expect(missing.detail.map((issue) => issue.loc)).toEqual([
      ["query", "app_id"],
      ["query", "environment"],
    ]);
  });
});

describe("GET /variants/{variant_id}/revisions", () => {
  it("lists every revision ascending with who made it and its config, and reads one by number", async () => {
    const [main] = await expectJson<AppVariant[]>(await get(owner.key, `/apps/${appId}/variants`));
    const revisions = await expectJson<Record<string, unknown>[]>(
      await get(viewer.key, `/variants/${main.variant_id}/revisions`),
    );
    expect(revisions.map((revision) => revision.revision)).toEqual([1, 2, 3]);
    expect(revisions[1]).toMatchObject({
      modified_by: owner.username,
      config: { config_name: "main", parameters: { temperature: 0.3 } },
    });
    expect(revisions[0].config).toEqual({ config_name: "main", parameters: {} });
    const second = await expectJson(await get(viewer.key, `/variants/${main.variant_id}/revisions/2`));
    expect(second).toEqual(revisions[1]);
  });

  it("answers 404 for a revision or variant that is not there, and 422 for a revision number that is not one", async () => {
    const [main] = await expectJson<AppVariant[]>(await get(owner.key, `/apps/${appId}/variants`));
    for (const number of ["0", "4", "999999999"]) {
      const response = await get(viewer.key, `/variants/${main.variant_id}/revisions/${number}`);
      expect(await expectJson(response, 404)).toEqual({ detail: "Variant revision not found" });
    }
    const hidden = await get(outsider.key, `/variants/${main.variant_id}/revisions/1`);
    expect(await expectJson(hidden, 404)).toEqual({ detail: "Variant not found" });
    for (const number of ["one", "-1", "1.5", "1e3"]) {
      const invalid = await expectJson<{ detail: { loc: unknown[]; type: string }[] }>(
        await get(viewer.key, `/variants/${main.variant_id}/revisions/${number}`),
        422,
      );
      expect(invalid.detail).toEqual([expect.objectContaining({ loc: ["path", "revision_number"], type: "int_parsing" })]);
    }
  });
});
