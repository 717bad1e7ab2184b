import { beforeAll, describe, expect, it } from "vitest";
import { apps, bareKey, configs, deployments, registry, variants } from "../client";
import {
  type Account,
  type ConfigOutput,
  createAccount,
  createAppVia,
  createTeam,
  deploy,
  expectError,
  expectJson,
  FORBIDDEN,
  issueKey,
  parseKeepingNumbers,
  send,
} from "../fixtures";
import { changes, databaseProblems, expectEvents, snapshot } from "../harness";
import { shardNameFor } from "../pool";

/*
 * The registry as the platform's older SDK calls it (docs/LEGACY-API.md, "The rest of the registry"): GET and POST
 * /configs, GET /configs/deployment/{id}, GET /bases, POST /variants/from-base, PUT /variants/{id}/parameters and
 * DELETE /variants/{id}, each with the bare key in Authorization, paths, queries and bodies as its client sends them.
 */

let owner: Account;
let editor: Account;
let viewer: Account;
let outsider: Account;
let team: Awaited<ReturnType<typeof createTeam>>;

interface RegistryConfig {
  config_name: string;
  current_version: number;
  parameters: Record<string, unknown>;
}
interface AppVariant {
  variant_id: string;
  config_name: string;
  revision: number;
  parameters: Record<string, unknown>;
}
interface EnvironmentRecord {
  revision: number;
  deployed_app_variant_revision_id: string | null;
  revisions: { id: string; revision: number; deployed_app_variant_revision: string | null; deployment: string | null }[];
}

async function productionOf(appId: string) {
  return expectJson<EnvironmentRecord>(await apps.revisions(bareKey(owner.key), appId, "production"));
}

async function variantsOf(appId: string) {
  return expectJson<AppVariant[]>(await apps.variants(bareKey(owner.key), appId));
}

async function variantNamed(appId: string, configName: string) {
  const variant = (await variantsOf(appId)).find((each) => each.config_name === configName);
  if (!variant) throw new Error(`no variant ${configName}`);
  return variant;
}

/** A fresh app of the team, made by the owner. */
let appsMade = 0;
const newApp = () => createAppVia(owner.key, { app_name: `registry-${++appsMade}`, organization_id: team.organizationId });

beforeAll(async () => {
  [owner, editor, viewer, outsider] = [
    await createAccount(),
    await createAccount(),
    await createAccount(),
    await createAccount(),
  ];
  team = await createTeam(owner, [
    [editor, "editor"],
    [viewer, "viewer"],
  ]);
  editor.key = await issueKey(editor.userId, team.projectId);
  viewer.key = await issueKey(viewer.userId, team.projectId);
});

describe("GET /configs (configs.get_config): what an environment runs, or a config's latest revision", () => {
  let appId: string;
  beforeAll(async () => {
    appId = await newApp();
    expect(
      (
        await registry.saveConfig(bareKey(owner.key), {
          base_id: appId,
          config_name: "main",
          parameters: { t: 1 },
          overwrite: false,
        })
      ).status,
    ).toBe(200);
    expect(
      (await registry.putParameters(bareKey(owner.key), (await variantNamed(appId, "main")).variant_id, { t: 2 })).status,
    ).toBe(200);
    await deploy(appId, "staging", "main", owner);
    expect(
      (await registry.putParameters(bareKey(owner.key), (await variantNamed(appId, "main")).variant_id, { t: 3 })).status,
    ).toBe(200);
  });

  it("answers what the environment runs, with the variant revision's number, to any role", async () => {
    for (const key of [owner.key, viewer.key]) {
      const response = await registry.getConfig(bareKey(key), { base_id: appId, environment_name: "staging" });
      expect(await expectJson<RegistryConfig>(response)).toEqual({
        config_name: "main",
        current_version: 2,
        parameters: { t: 2 },
      });
      // Its shard's entry alone (conditional-get.test.ts checks the header's whole value).
      expect(response.headers.get("x-d1-bookmark")).toMatch(new RegExp(`^${shardNameFor(appId)}:[0-9a-f]{8}-[0-9a-f-]+$`));
      expect(response.headers.get("Cache-Control")).toBe("no-store");
    }
  });

  it("answers a config's latest revision by name; the environment wins when both are named", async () => {
    expect(await expectJson(await registry.getConfig(bareKey(viewer.key), { base_id: appId, config_name: "main" }))).toEqual({
      config_name: "main",
      current_version: 3,
      parameters: { t: 3 },
    });
    const both = await registry.getConfig(bareKey(viewer.key), {
      base_id: appId,
      config_name: "main",
      environment_name: "staging",
    });
    expect(await expectJson<RegistryConfig>(both)).toMatchObject({ current_version: 2 });
  });

  it("404 when the environment runs nothing, or there is no such environment, config or app, or the caller cannot see it", async () => {
    for (const [key, query] of [
      [owner.key, { base_id: appId, environment_name: "production" }],
      [owner.key, { base_id: appId, environment_name: "qa" }],
      [owner.key, { base_id: appId, config_name: "absent" }],
      [owner.key, { base_id: "01900000-0000-7000-8000-000000000000", environment_name: "production" }],
      [outsider.key, { base_id: appId, config_name: "main" }],
    ] as const) {
      await expectError(await registry.getConfig(bareKey(key), query), 404, "Config not found.");
    }
  });

  it("422 without environment_name or config_name, and for a base_id that is not a UUID", async () => {
    expect(await expectJson(await registry.getConfig(bareKey(owner.key), { base_id: appId }), 422)).toEqual({
      detail: [
        {
          loc: ["query", "environment_name"],
          msg: "Value error, environment_name or config_name is required",
          type: "value_error",
        },
      ],
    });
    expect(
      await expectJson(await registry.getConfig(bareKey(owner.key), { base_id: "app", environment_name: "production" }), 422),
    ).toEqual({
      detail: [{ loc: ["query", "base_id"], msg: "Input should be a valid UUID", type: "uuid_parsing" }],
    });
  });

  it("401 without a live key", async () => {
    await expectError(
      await registry.getConfig(bareKey(`${owner.key.slice(0, 9)}x`), { base_id: appId, config_name: "main" }),
      401,
      "Unauthorized",
    );
  });
});

describe("POST /configs (configs.save_config)", () => {
  it("makes a new config at revision 1 holding the parameters, deploying nothing", async () => {
    const appId = await newApp();
    const before = await snapshot();
    const response = await registry.saveConfig(bareKey(editor.key), {
      base_id: appId,
      config_name: "fresh",
      parameters: { a: [1, { b: null }] },
      overwrite: true,
    });
    expect(await expectJson(response)).toBeNull();
    const changed = changes(before, await snapshot());
    // Its event names the config and revision made.
    const { app_variants, app_variant_revisions, ...others } = expectEvents(changed, {
      type: "config.added",
      app_id: appId,
      actor_user_id: editor.userId,
      data: {
        app_id: appId,
        config_name: "fresh",
        variant_id: changed.app_variants?.added[0]?.id,
        revision: 1,
        revision_id: changed.app_variant_revisions?.added[0]?.id,
      },
    });
    expect(app_variants?.added).toEqual([expect.objectContaining({ app_id: appId, name: "fresh", removed_at: null })]);
    expect(app_variant_revisions?.added).toEqual([
      expect.objectContaining({ revision: 1, params: '{"a":[1,{"b":null}]}', url: "", modified_by: editor.userId }),
    ]);
    expect(others).toEqual({});
  });

  it("over a taken name with overwrite: commits the next revision, then deploys it to production as any deploy", async () => {
    const appId = await newApp();
    await registry.saveConfig(bareKey(owner.key), {
      base_id: appId,
      config_name: "main",
      parameters: { v: 1 },
      overwrite: false,
    });
    const { variant_id } = await variantNamed(appId, "main");
    const url = "https://llm.example.com/main";
    const committed = { application_ref: { id: appId }, variant_ref: { slug: "main" }, params: { v: 1 }, url };
    expect((await configs.call(bareKey(owner.key), "commit", committed)).status).toBe(200);
    for (const v of [2, 3]) {
      expect(
        await expectJson(
          await registry.saveConfig(bareKey(editor.key), {
            base_id: appId,
            config_name: "main",
            parameters: { v },
            overwrite: true,
          }),
        ),
      ).toBeNull();
    }
    expect((await variantNamed(appId, "main")).revision).toBe(4);
    // The url is kept: the older SDK's calls carry none.
    const deployed = await expectJson<ConfigOutput>(
      await configs.call(bareKey(owner.key), "fetch", { application_ref: { id: appId } }),
    );
    expect(deployed).toMatchObject({ url, params: { v: 3 }, variant_ref: { version: 4 } });
    const record = await productionOf(appId);
    expect(record.revision).toBe(2);
    expect(record.revisions.map((revision) => revision.revision)).toEqual([1, 2]);
    expect(record.revisions.every((revision) => revision.deployment !== null)).toBe(true);
    // The older SDK's Agenta.get_config(base_id, "production") now reads it.
    expect(
      await expectJson(await registry.getConfig(bareKey(viewer.key), { base_id: appId, environment_name: "production" })),
    ).toEqual({
      config_name: "main",
      current_version: 4,
      parameters: { v: 3 },
    });
    const revisions = await expectJson<{ revision: number }[]>(await variants.revisions(bareKey(owner.key), variant_id));
    expect(revisions.map((revision) => revision.revision)).toEqual([1, 2, 3, 4]);
  });

  it("over a taken name without overwrite: 400 in the platform's words, nothing written; unless its params are still {}", async () => {
    const appId = await newApp();
    await registry.saveConfig(bareKey(owner.key), {
      base_id: appId,
      config_name: "kept",
      parameters: { keep: true },
      overwrite: false,
    });
    const before = await snapshot();
    await expectError(
      await registry.saveConfig(bareKey(owner.key), {
        base_id: appId,
        config_name: "kept",
        parameters: { keep: false },
        overwrite: false,
      }),
      400,
      "Config name already exists. Please use a different name or set overwrite to True.",
    );
    expect(changes(before, await snapshot())).toEqual({});

    expect(
      (await configs.call(bareKey(owner.key), "add", { application_ref: { id: appId }, variant_ref: { slug: "empty" } })).status,
    ).toBe(200);
    expect(
      await expectJson(
        await registry.saveConfig(bareKey(owner.key), {
          base_id: appId,
          config_name: "empty",
          parameters: { x: 1 },
          overwrite: false,
        }),
      ),
    ).toBeNull();
    expect(
      await expectJson(await registry.getConfig(bareKey(owner.key), { base_id: appId, environment_name: "production" })),
    ).toEqual({
      config_name: "empty",
      current_version: 2,
      parameters: { x: 1 },
    });
  });

  it("ignores If-Match, and replays a retry with the same Idempotency-Key without writing again", async () => {
    const appId = await newApp();
    await registry.saveConfig(bareKey(owner.key), { base_id: appId, config_name: "main", parameters: {}, overwrite: false });
    const body = { base_id: appId, config_name: "main", parameters: { n: 1 }, overwrite: true };
    const headers = { "Idempotency-Key": `save-${appId}`, "If-Match": '"stale"' };
    const first = await registry.saveConfig(bareKey(owner.key), body, { headers });
    expect(await expectJson(first)).toBeNull();
    const before = await snapshot();
    const retry = await registry.saveConfig(bareKey(owner.key), body, { headers });
    expect(await expectJson(retry)).toBeNull();
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(changes(before, await snapshot())).toEqual({});
    expect((await productionOf(appId)).revision).toBe(1);
  });

  it("keeps every number as sent", async () => {
    const appId = await newApp();
    const text = `{"base_id": "${appId}", "config_name": "exact", "overwrite": false, "parameters": {"id": 9007199254740993, "x": 1.0, "big": 1e400}}`;
    const response = await send("POST", "/configs", {
      authorization: owner.key,
      rawBody: text,
      headers: { "Content-Type": "application/json" },
    });
    expect(response.status).toBe(200);
    const read = await registry.getConfig(bareKey(owner.key), { base_id: appId, config_name: "exact" });
    expect(parseKeepingNumbers(await read.text()).parameters).toEqual({
      id: { number: "9007199254740993" },
      x: { number: "1.0" },
      big: { number: "1e400" },
    });
  });

  it("403 for a viewer, 404 for an app the caller cannot see, 422 for bad bodies; nothing written", async () => {
    const appId = await newApp();
    const before = await snapshot();
    const body = { base_id: appId, config_name: "main", parameters: {}, overwrite: true };
    await expectError(await registry.saveConfig(bareKey(viewer.key), body), 403, FORBIDDEN);
    await expectError(await registry.saveConfig(bareKey(outsider.key), body), 404, "App not found");
    for (const [bad, loc, type] of [
      [{ ...body, base_id: "not-a-uuid" }, "base_id", "uuid_parsing"],
      [{ ...body, parameters: [1] }, "parameters", "dict_type"],
      [{ ...body, parameters: "{}" }, "parameters", "dict_type"],
      [{ ...body, overwrite: undefined }, "overwrite", "missing"],
      [{ ...body, config_name: "" }, "config_name", "string_too_short"],
    ] as const) {
      const detail = (
        await expectJson<{ detail: { loc: string[]; type: string }[] }>(await registry.saveConfig(bareKey(owner.key), bad), 422)
      ).detail;
      expect(detail.map(({ loc, type }) => ({ loc, type }))).toEqual([{ loc: ["body", loc], type }]);
    }
    expect(changes(before, await snapshot())).toEqual({});
  });
});

describe("GET /configs/deployment/{id} (configs.get_config_deployment_revision)", () => {
  it("answers what that environment revision deployed, with the environment revision's number", async () => {
    const appId = await newApp();
    // Variant revisions 1 and 2, then environment revision 1 deploying variant revision 2: the numbers differ.
    await registry.saveConfig(bareKey(owner.key), {
      base_id: appId,
      config_name: "main",
      parameters: { r: 1 },
      overwrite: false,
    });
    await registry.putParameters(bareKey(owner.key), (await variantNamed(appId, "main")).variant_id, { r: 2 });
    const first = await deploy(appId, "production", "main", owner);
    await registry.saveConfig(bareKey(owner.key), { base_id: appId, config_name: "main", parameters: { r: 3 }, overwrite: true });
    expect(await expectJson(await registry.deploymentConfig(bareKey(viewer.key), first.revisionId))).toEqual({
      config_name: "main",
      current_version: 1,
      parameters: { r: 2 },
    });
    const latest = (await productionOf(appId)).revisions[1];
    expect(await expectJson(await registry.deploymentConfig(bareKey(viewer.key), latest.id))).toEqual({
      config_name: "main",
      current_version: 2,
      parameters: { r: 3 },
    });
    await expectError(await registry.deploymentConfig(bareKey(outsider.key), first.revisionId), 404, "Config not found.");
    await expectError(await registry.deploymentConfig(bareKey(owner.key), first.variantId), 404, "Config not found.");
    expect((await registry.deploymentConfig(bareKey(owner.key), "42")).status).toBe(422);
  });
});

describe("GET /bases (bases.list_bases)", () => {
  it("answers the app's one base, or none for another name; 404 for an app the caller cannot see", async () => {
    const appId = await newApp();
    const bases = await registry.getBases(bareKey(viewer.key), { app_id: appId });
    expect(bases.headers.get("Cache-Control")).toBe("no-store");
    expect(await expectJson(bases)).toEqual([{ base_id: appId, base_name: "app" }]);
    expect(await expectJson(await registry.getBases(bareKey(viewer.key), { app_id: appId, base_name: "app" }))).toEqual([
      { base_id: appId, base_name: "app" },
    ]);
    expect(await expectJson(await registry.getBases(bareKey(viewer.key), { app_id: appId, base_name: "other" }))).toEqual([]);
    await expectError(await registry.getBases(bareKey(outsider.key), { app_id: appId }), 404, "App not found");
    expect(
      (await expectJson<{ detail: { loc: string[] }[] }>(await registry.getBases(bareKey(owner.key), {}), 422)).detail,
    ).toEqual([{ loc: ["query", "app_id"], msg: "Field required", type: "missing" }]);
  });
});

describe("POST /variants/from-base (variants.add_variant_from_base_and_config)", () => {
  it("makes a config whose revision 1 holds the parameters, answered as its AppVariant; new_variant_name is ignored", async () => {
    const appId = await newApp();
    const response = await registry.fromBase(bareKey(editor.key), {
      base_id: appId,
      new_variant_name: "ignored-name",
      new_config_name: "from-base",
      parameters: { model: "m", temperature: 0.5 },
    });
    const variant = await expectJson<Record<string, unknown>>(response);
    const listed = await variantNamed(appId, "from-base");
    expect(variant).toEqual(listed);
    expect(variant).toMatchObject({
      app_id: appId,
      variant_name: "app.from-base",
      project_id: team.projectId,
      base_name: "app",
      base_id: appId,
      config_name: "from-base",
      revision: 1,
      parameters: { model: "m", temperature: 0.5 },
      uri: null,
      modified_by_id: editor.userId,
    });
    await expectError(
      await registry.fromBase(bareKey(editor.key), {
        base_id: appId,
        new_variant_name: "x",
        new_config_name: "from-base",
        parameters: {},
      }),
      400,
      "Config already exists.",
    );
  });

  it("403 for a viewer, 404 for an app the caller cannot see or that does not exist; nothing written", async () => {
    const appId = await newApp();
    const before = await snapshot();
    const body = { base_id: appId, new_variant_name: "v", new_config_name: "c", parameters: {} };
    await expectError(await registry.fromBase(bareKey(viewer.key), body), 403, FORBIDDEN);
    await expectError(await registry.fromBase(bareKey(outsider.key), body), 404, "App not found");
    await expectError(
      await registry.fromBase(bareKey(owner.key), { ...body, base_id: "01900000-0000-7000-8000-000000000000" }),
      404,
      "App not found",
    );
    expect((await registry.fromBase(bareKey(owner.key), { ...body, parameters: null })).status).toBe(422);
    expect(changes(before, await snapshot())).toEqual({});
  });
});

describe("PUT /variants/{id}/parameters (variants.update_variant_parameters)", () => {
  it("commits the parameters as the variant's next revision: they replace the latest's", async () => {
    const appId = await newApp();
    await registry.saveConfig(bareKey(owner.key), {
      base_id: appId,
      config_name: "main",
      parameters: { a: 1, b: 2 },
      overwrite: false,
    });
    const { variant_id } = await variantNamed(appId, "main");
    expect(await expectJson(await registry.putParameters(bareKey(editor.key), variant_id, { b: 3 }))).toBeNull();
    expect(await expectJson(await registry.getConfig(bareKey(owner.key), { base_id: appId, config_name: "main" }))).toEqual({
      config_name: "main",
      current_version: 2,
      parameters: { b: 3 },
    });
    expect((await productionOf(appId)).revision).toBe(0);
  });

  it("403 for a viewer, 404 for a variant the caller cannot see or that does not exist, 422 for parameters not an object", async () => {
    const appId = await newApp();
    await registry.saveConfig(bareKey(owner.key), { base_id: appId, config_name: "main", parameters: {}, overwrite: false });
    const { variant_id } = await variantNamed(appId, "main");
    const before = await snapshot();
    await expectError(await registry.putParameters(bareKey(viewer.key), variant_id, { x: 1 }), 403, FORBIDDEN);
    await expectError(await registry.putParameters(bareKey(outsider.key), variant_id, { x: 1 }), 404, "Variant not found");
    await expectError(await registry.putParameters(bareKey(owner.key), appId, { x: 1 }), 404, "Variant not found");
    expect((await registry.putParameters(bareKey(owner.key), variant_id, [1])).status).toBe(422);
    expect((await registry.putParameters(bareKey(owner.key), "nope", {})).status).toBe(422);
    expect(changes(before, await snapshot())).toEqual({});
  });
});

describe("DELETE /variants/{id} (variants.remove_variant): history is never rewritten", () => {
  let appId: string;
  let removed: { variantId: string; revisionId: string; environmentRevisionId: string };

  beforeAll(async () => {
    appId = await newApp();
    await registry.saveConfig(bareKey(owner.key), {
      base_id: appId,
      config_name: "old",
      parameters: { generation: 1 },
      overwrite: false,
    });
    const deployed = await deploy(appId, "production", "old", owner);
    const config = await expectJson<ConfigOutput>(
      await configs.call(bareKey(owner.key), "fetch", { application_ref: { id: appId }, variant_ref: { slug: "old" } }),
    );
    removed = { variantId: deployed.variantId, revisionId: config.variant_ref.id, environmentRevisionId: deployed.revisionId };
  });

  it("409 while an environment runs one of its revisions, naming it; nothing written", async () => {
    const before = await snapshot();
    await expectError(
      await registry.removeVariant(bareKey(owner.key), removed.variantId),
      409,
      "Variant is deployed to production: deploy another variant there first, then remove this one",
    );
    expect(changes(before, await snapshot())).toEqual({});
  });

  it("403 for a viewer, 404 for an outsider or an unknown id", async () => {
    await expectError(await registry.removeVariant(bareKey(viewer.key), removed.variantId), 403, FORBIDDEN);
    await expectError(await registry.removeVariant(bareKey(outsider.key), removed.variantId), 404, "Variant not found");
    await expectError(await registry.removeVariant(bareKey(owner.key), appId), 404, "Variant not found");
  });

  it("once nothing runs it: 200 null; it leaves lists and lookups, its name is free, its revisions stay in history", async () => {
    await deploy(appId, "production", "new", owner);
    const before = await snapshot();
    expect(await expectJson(await registry.removeVariant(bareKey(editor.key), removed.variantId))).toBeNull();
    const { app_variants, ...others } = expectEvents(changes(before, await snapshot()), {
      type: "config.removed",
      app_id: appId,
      actor_user_id: editor.userId,
      data: { app_id: appId, config_name: "old", variant_id: removed.variantId },
    });
    expect(others).toEqual({});
    expect(app_variants?.removed).toHaveLength(1);
    expect(app_variants?.added).toEqual([
      expect.objectContaining({ id: removed.variantId, removed_name: "old", removed_at: expect.any(String) }),
    ]);

    // Gone wherever the variant is named, by name or by id.
    expect((await variantsOf(appId)).map((variant) => variant.config_name)).toEqual(["new"]);
    await expectError(await variants.get(bareKey(owner.key), removed.variantId), 404, "Variant not found");
    await expectError(await variants.revisions(bareKey(owner.key), removed.variantId), 404, "Variant not found");
    await expectError(await variants.revision(bareKey(owner.key), removed.variantId, 1), 404, "Variant not found");
    await expectError(
      await registry.getConfig(bareKey(owner.key), { base_id: appId, config_name: "old" }),
      404,
      "Config not found.",
    );
    await expectError(
      await configs.call(bareKey(owner.key), "fetch", { application_ref: { id: appId }, variant_ref: { slug: "old" } }),
      404,
      "Config not found.",
    );
    await expectError(await registry.putParameters(bareKey(owner.key), removed.variantId, {}), 404, "Variant not found");
    await expectError(await registry.removeVariant(bareKey(owner.key), removed.variantId), 404, "Variant not found");

    // History still reads it, under the name it had.
    const history = await productionOf(appId);
    expect(history.revisions[0]).toMatchObject({
      id: removed.environmentRevisionId,
      deployed_app_variant_revision: removed.revisionId,
    });
    expect(await expectJson(await registry.deploymentConfig(bareKey(owner.key), removed.environmentRevisionId))).toEqual({
      config_name: "old",
      current_version: 1,
      parameters: { generation: 1 },
    });
    const byRevision = await expectJson<ConfigOutput>(
      await configs.call(bareKey(owner.key), "fetch", { variant_ref: { id: removed.revisionId } }),
    );
    expect(byRevision).toMatchObject({
      variant_ref: { slug: "old", version: 1, id: removed.revisionId },
      params: { generation: 1 },
    });

    // The name is free again: a new variant, at revision 1.
    expect(
      await expectJson(
        await registry.saveConfig(bareKey(owner.key), {
          base_id: appId,
          config_name: "old",
          parameters: { generation: 2 },
          overwrite: false,
        }),
      ),
    ).toBeNull();
    const reborn = await variantNamed(appId, "old");
    expect(reborn.variant_id).not.toBe(removed.variantId);
    expect(reborn).toMatchObject({ revision: 1, parameters: { generation: 2 } });
    expect(await databaseProblems()).toEqual([]);
  });

  it("a removed variant's revisions are never deployed again: by revision id, by variant id, or by reverting to them", async () => {
    const before = await snapshot();
    const message = "This revision belongs to a removed variant, which cannot be deployed again: deploy another config";
    await expectError(
      await deployments.deployConfig(bareKey(owner.key), {
        variant_ref: { id: removed.revisionId },
        environment_ref: { slug: "staging" },
      }),
      409,
      message,
    );
    await expectError(await deployments.revert(bareKey(owner.key), removed.environmentRevisionId), 409, message);
    await expectError(
      await deployments.deployEnvironment(bareKey(owner.key), { environment_name: "staging", variant_id: removed.variantId }),
      404,
      "Variant not found",
    );
    expect(changes(before, await snapshot())).toEqual({});
  });
});

describe("Idempotency-Key on the older SDK's writes", () => {
  it("from-base and PUT parameters replay a retry's first answer and write nothing; the key used for another body is a 422", async () => {
    const appId = await newApp();
    const body = { base_id: appId, new_variant_name: "v", new_config_name: "keyed", parameters: { k: 1 } };
    const headers = { "Idempotency-Key": `from-base-${appId}` };
    const first = await expectJson<AppVariant>(await registry.fromBase(bareKey(owner.key), body, { headers }));
    let before = await snapshot();
    const retry = await registry.fromBase(bareKey(owner.key), body, { headers });
    expect(await expectJson(retry)).toEqual(first);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(changes(before, await snapshot())).toEqual({});
    expect((await registry.fromBase(bareKey(owner.key), { ...body, new_config_name: "other" }, { headers })).status).toBe(422);

    const put = (parameters: object) =>
      registry.putParameters(bareKey(owner.key), first.variant_id, parameters, {
        headers: { "Idempotency-Key": `put-${appId}` },
      });
    expect(await expectJson(await put({ k: 2 }))).toBeNull();
    before = await snapshot();
    const again = await put({ k: 2 });
    expect(await expectJson(again)).toBeNull();
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(changes(before, await snapshot())).toEqual({});
    expect((await variantNamed(appId, "keyed")).revision).toBe(2);
  });
});

describe("under BASE_PATH=/api, as the older SDK's host/api base URL", () => {
  it("serves the seven calls there", async () => {
    const appId = await newApp();
    // The platform's client under BASE_PATH: the bare key, every path under /api.
    const api = { authorization: owner.key, bindings: { BASE_PATH: "/api" } };
    const save = await send("POST", "/api/configs", {
      ...api,
      body: { base_id: appId, config_name: "main", parameters: { p: 1 }, overwrite: false },
    });
    expect(save.status).toBe(200);
    expect(await expectJson(await send("GET", `/api/configs?base_id=${appId}&config_name=main`, api))).toMatchObject({
      current_version: 1,
    });
    expect(await expectJson(await send("GET", `/api/bases?app_id=${appId}`, api))).toHaveLength(1);
    const made = await expectJson<AppVariant>(
      await send("POST", "/api/variants/from-base", {
        ...api,
        body: { base_id: appId, new_variant_name: "x", new_config_name: "other", parameters: {} },
      }),
    );
    expect(
      (await send("PUT", `/api/variants/${made.variant_id}/parameters`, { ...api, body: { parameters: { q: 1 } } })).status,
    ).toBe(200);
    expect(
      (
        await send("POST", "/api/configs", {
          ...api,
          body: { base_id: appId, config_name: "main", parameters: { p: 2 }, overwrite: true },
        })
      ).status,
    ).toBe(200);
    const record = await expectJson<EnvironmentRecord>(await send("GET", `/api/apps/${appId}/revisions/production`, api));
    expect(await expectJson(await send("GET", `/api/configs/deployment/${record.revisions[0].id}`, api))).toEqual({
      config_name: "main",
      current_version: 1,
      parameters: { p: 2 },
    });
    expect((await send("DELETE", `/api/variants/${made.variant_id}`, api)).status).toBe(200);
    expect((await send("GET", `/configs?base_id=${appId}&config_name=main`, api)).status).toBe(404);
  });
});
