import { beforeAll, describe, expect, it } from "vitest";
import { apps, bareKey, configs, deployments } from "../client";
import { type Account, createAccount, createAppVia, createTeam, expectError, FORBIDDEN, issueKey } from "../fixtures";
import { databaseProblems, snapshot } from "../harness";

/*
 * Deploying and reverting over HTTP: POST /variants/configs/deploy, /environments/deploy and
 * /configs/deployment/{id}/revert, with If-Match against the environment record's ETag.
 */

let owner: Account;
let admin: Account;
let editor: Account;
let viewer: Account;
let outsider: Account;
let appId: string;

/** What these tests read of a config answer and of a record: the platform's shapes, as they are once deployed. */
interface Config {
  params: Record<string, unknown>;
  variant_ref: { slug: string; version: number; id: string };
  environment_ref: { slug: string; version: number; id: string } | null;
  environment_lifecycle: { updated_by: string; updated_by_id: string } | null;
}

interface RevisionsRecord {
  revision: number;
  deployed_variant_name: string | null;
  deployed_app_variant_revision_id: string | null;
  revisions: { id: string; revision: number; modified_by: string; deployed_app_variant_revision: string }[];
}

const record = async (environment: string) =>
  (await (await apps.revisions({ key: owner.key }, appId, environment)).json()) as RevisionsRecord;

const etagOf = async (environment: string) =>
  (await apps.revisions({ key: owner.key }, appId, environment)).headers.get("ETag") ?? "";

/** Commits params as the next revision of config `name` (added first when missing); the revision's config. */
async function commit(name: string, params: Record<string, unknown>): Promise<Config> {
  const ref = { application_ref: { id: appId }, variant_ref: { slug: name } };
  await configs.call(bareKey(owner.key), "add", ref);
  const response = await configs.call(bareKey(owner.key), "commit", { ...ref, params });
  expect(response.status).toBe(200);
  return (await response.json()) as Config;
}

beforeAll(async () => {
  [owner, admin, editor, viewer, outsider] = await Promise.all(Array.from({ length: 5 }, () => createAccount()));
  const team = await createTeam(owner, [
    [admin, "workspace_admin"],
    [editor, "editor"],
    [viewer, "viewer"],
  ]);
  appId = await createAppVia(owner.key, { app_name: "deployed", organization_id: team.organizationId });
  owner.key = await issueKey(owner.userId, team.projectId);
});

it("lets an admin and an editor deploy and revert, each recorded as who did it", async () => {
  await commit("by-role", { role: true });
  for (const member of [admin, editor]) {
    const deployed = await deployments.deployConfig(bareKey(member.key), {
      variant_ref: { slug: "by-role" },
      environment_ref: { slug: "development" },
      application_ref: { id: appId },
    });
    expect(deployed.status).toBe(200);
    const { environment_ref } = (await deployed.json()) as Config;
    const reverted = await deployments.revert(bareKey(member.key), String(environment_ref?.id));
    expect(reverted.status).toBe(200);
    const entries = (await record("development")).revisions.slice(-2);
    expect(entries.map((entry) => entry.modified_by)).toEqual([member.username, member.username]);
  }
});

describe("POST /variants/configs/deploy", () => {
  it("deploys the revision the variant ref names, not the latest, and answers the config through the environment", async () => {
    const second = await commit("main", { v: 2 });
    await commit("main", { v: 3 });
    const response = await deployments.deployConfig(bareKey(owner.key), {
      variant_ref: { slug: "main", version: 2 },
      environment_ref: { slug: "staging" },
      application_ref: { slug: "deployed" },
    });
    expect(response.status).toBe(200);
    const config = (await response.json()) as Config;
    expect(config).toMatchObject({
      params: { v: 2 },
      variant_ref: { slug: "main", version: 2, id: second.variant_ref.id },
      environment_ref: { slug: "staging", version: 1 },
    });
    expect(config.environment_lifecycle).toMatchObject({ updated_by_id: owner.userId });
    // The answer's ETag is the record's new one.
    expect(response.headers.get("ETag")).toBe(await etagOf("staging"));
    const staging = await record("staging");
    expect(staging).toMatchObject({
      revision: 1,
      deployed_variant_name: "app.main",
      deployed_app_variant_revision_id: second.variant_ref.id,
    });
    expect(staging.revisions[0]).toMatchObject({ id: config.environment_ref?.id, modified_by: owner.username });
  });

  it("deploys the latest without a version, by revision id too, to any environment, deployed before or not", async () => {
    const latest = await commit("main", { v: 4 });
    const byName = await deployments.deployConfig(bareKey(owner.key), {
      variant_ref: { slug: "main" },
      environment_ref: { slug: "production" },
      application_ref: { id: appId },
    });
    expect(((await byName.json()) as Config).variant_ref.id).toBe(latest.variant_ref.id);
    const earlier = await configs.call(bareKey(owner.key), "fetch", {
      variant_ref: { slug: "main", version: 1 },
      application_ref: { id: appId },
    });
    const byId = await deployments.deployConfig(bareKey(owner.key), {
      variant_ref: { id: ((await earlier.json()) as Config).variant_ref.id },
      environment_ref: { slug: "production" },
    });
    expect(byId.status).toBe(200);
    expect(((await byId.json()) as Config).environment_ref).toMatchObject({ slug: "production", version: 2 });
  });

  it("deploys by config slug to the environment an environment revision's id names, with no application_ref", async () => {
    const latest = await commit("main", { v: 5 });
    const staging = (await record("staging")).revisions.at(-1)!;
    const response = await deployments.deployConfig(bareKey(owner.key), {
      variant_ref: { slug: "main" },
      environment_ref: { id: staging.id },
    });
    expect(response.status).toBe(200);
    const config = (await response.json()) as Config;
    expect({ variant_ref: config.variant_ref, environment: config.environment_ref?.slug }).toEqual({
      variant_ref: latest.variant_ref,
      environment: "staging",
    });
    expect((await record("staging")).revision).toBe(staging.revision + 1);
  });

  it("refuses a viewer (403), hides the app from an outsider (404), and names what is missing (404): nothing written", async () => {
    const deploy = { variant_ref: { slug: "main" }, environment_ref: { slug: "staging" }, application_ref: { id: appId } };
    const before = await snapshot();
    await expectError(await deployments.deployConfig(bareKey(viewer.key), deploy), 403, FORBIDDEN);
    await expectError(await deployments.deployConfig(bareKey(outsider.key), deploy), 404, "Config not found.");
    await expectError(
      await deployments.deployConfig(bareKey(owner.key), { ...deploy, variant_ref: { slug: "absent" } }),
      404,
      "Config not found.",
    );
    await expectError(
      await deployments.deployConfig(bareKey(owner.key), { ...deploy, environment_ref: { slug: "qa" } }),
      404,
      "App environment not found",
    );
    expect((await deployments.deployConfig(bareKey(owner.key), { ...deploy, environment_ref: null })).status).toBe(422);
    expect(await snapshot()).toEqual(before);
  });
});

describe("If-Match", () => {
  const deploy = () => ({
    variant_ref: { slug: "main" },
    environment_ref: { slug: "development" },
    application_ref: { id: appId },
  });

  it("deploys when the environment is still as the ETag says, or with *", async () => {
    const etag = await etagOf("development");
    const first = await deployments.deployConfig(bareKey(owner.key), deploy(), { headers: { "If-Match": etag } });
    expect(first.status).toBe(200);
    expect(first.headers.get("ETag")).not.toBe(etag);
    expect(
      (await deployments.deployConfig(bareKey(owner.key), deploy(), { headers: { "If-Match": first.headers.get("ETag") ?? "" } }))
        .status,
    ).toBe(200);
    expect((await deployments.deployConfig(bareKey(owner.key), deploy(), { headers: { "If-Match": "*" } })).status).toBe(200);
  });

  it("answers 412 and writes nothing when it has moved on, or for a tag that is not one of its states", async () => {
    const stale = await etagOf("development");
    expect((await deployments.deployConfig(bareKey(owner.key), deploy())).status).toBe(200);
    const before = await snapshot();
    for (const tag of [stale, `W/${await etagOf("development")}`, await etagOf("staging"), '"garbage"']) {
      await expectError(
        await deployments.deployConfig(bareKey(owner.key), deploy(), { headers: { "If-Match": tag } }),
        412,
        "The environment has changed since the ETag given in If-Match: read it again, then retry",
      );
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe("POST /environments/deploy", () => {
  it("deploys the variant's latest revision and answers null", async () => {
    const latest = await commit("other", { o: 1 });
    const variants = (await (await apps.variants({ key: owner.key }, appId)).json()) as {
      variant_id: string;
      config_name: string;
    }[];
    const variantId = variants.find((variant) => variant.config_name === "other")?.variant_id;
    const response = await deployments.deployEnvironment(bareKey(owner.key), {
      environment_name: "staging",
      variant_id: variantId,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toBeNull();
    expect(await record("staging")).toMatchObject({
      deployed_variant_name: "app.other",
      deployed_app_variant_revision_id: latest.variant_ref.id,
    });
    await expectError(
      await deployments.deployEnvironment(bareKey(owner.key), { environment_name: "staging", variant_id: crypto.randomUUID() }),
      404,
      "Variant not found",
    );
    await expectError(
      await deployments.deployEnvironment(bareKey(owner.key), { environment_name: "qa", variant_id: variantId }),
      404,
      "App environment not found",
    );
    await expectError(
      await deployments.deployEnvironment(bareKey(viewer.key), { environment_name: "staging", variant_id: variantId }),
      403,
      FORBIDDEN,
    );
  });
});

describe("POST /configs/deployment/{id}/revert", () => {
  it("makes a new revision that deploys again what that revision deployed; fetch by environment then serves it", async () => {
    const first = await commit("reverted", { r: 1 });
    const deployAs = (version: number) =>
      deployments.deployConfig(bareKey(owner.key), {
        variant_ref: { slug: "reverted", version },
        environment_ref: { slug: "production" },
        application_ref: { id: appId },
      });
    const good = (await (await deployAs(first.variant_ref.version)).json()) as Config;
    await commit("reverted", { r: 2 });
    expect((await deployAs(first.variant_ref.version + 1)).status).toBe(200);
    const before = await record("production");

    const response = await deployments.revert(bareKey(owner.key), String(good.environment_ref?.id));
    expect(response.status).toBe(200);
    expect(await response.json()).toBe("Environment was reverted to deployment revision successful");

    const after = await record("production");
    expect(after.revision).toBe(before.revision + 1);
    expect(after.revisions.map((entry) => entry.revision)).toEqual([
      ...before.revisions.map((entry) => entry.revision),
      after.revision,
    ]);
    expect(after.revisions.at(-1)).toMatchObject({
      modified_by: owner.username,
      deployed_app_variant_revision: first.variant_ref.id,
    });
    expect(after.deployed_app_variant_revision_id).toBe(first.variant_ref.id);
    const fetched = await configs.call(bareKey(owner.key), "fetch", {
      environment_ref: { slug: "production" },
      application_ref: { id: appId },
    });
    expect((await fetched.json()) as Config).toMatchObject({ params: { r: 1 }, environment_ref: { version: after.revision } });
  });

  it("takes If-Match, refuses a viewer, and answers 404 for a revision the caller cannot see", async () => {
    const [entry] = (await record("production")).revisions;
    await expectError(
      await deployments.revert(bareKey(owner.key), entry.id, { headers: { "If-Match": '"x"' } }),
      412,
      "The environment has changed since the ETag given in If-Match: read it again, then retry",
    );
    expect(
      (await deployments.revert(bareKey(owner.key), entry.id, { headers: { "If-Match": await etagOf("production") } })).status,
    ).toBe(200);
    await expectError(await deployments.revert(bareKey(viewer.key), entry.id), 403, FORBIDDEN);
    await expectError(await deployments.revert(bareKey(outsider.key), entry.id), 404, "Deployment revision not found");
    await expectError(await deployments.revert(bareKey(owner.key), crypto.randomUUID()), 404, "Deployment revision not found");
    expect((await deployments.revert(bareKey(owner.key), "not-a-uuid")).status).toBe(422);
  });
});

it("leaves every environment's history gapless and its record on its last revision", async () => {
  expect(await databaseProblems()).toEqual([]);
});
