import { v5 as uuidv5 } from "uuid";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { apps, current } from "../client";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  expectError,
  expectJson,
  FORBIDDEN,
  issueKey,
  legacyConfig,
  type Revision,
  storedRevision,
} from "../fixtures";
import { expectEvents, expectRowCounts, Tracker } from "../harness";

/*
 * POST /applications/revisions/deploy as DeploymentManager.deploy calls it (docs/CURRENT-SDK-API.md: 10, then 14, then
 * 15), over one history with the legacy API: a deploy through it is the next revision of that app's environment in
 * GET /apps/{app_id}/revisions/{environment_name}.
 */

let owner: Account;
let appId: string;
let mainId: string;
let tracker: Tracker;

type History = { revision: number; revisions: { revision: number; deployed_app_variant_revision: string }[] };

beforeAll(async () => {
  owner = await createAccount();
  appId = await createAppVia(owner.key, { app_name: "deployed" });
  mainId = await legacyConfig(owner.key, appId, "main", { temperature: 0.2 }, { temperature: 0.5 });
});
beforeEach(async () => {
  tracker = await Tracker.start();
});

const deployBody = (version: string | null, environment = "staging") => ({
  application_ref: { id: appId, slug: "deployed" },
  application_variant_ref: { id: mainId, slug: "main" },
  ...(version && { application_revision_ref: { version } }),
  environment_ref: { slug: environment },
});

describe("DeploymentManager.deploy", () => {
  it("reads the revision, deploys it as the environment's next revision, then finds the environment running it", async () => {
    // 10: the SDK's fetch of the variant at the version asked for.
    const fetched = await expectJson<{ application_revision: Revision }>(
      await current.retrieve(
        { key: owner.key },
        {
          resolve: true,
          application_ref: { slug: "deployed" },
          application_variant_ref: { slug: "main" },
          application_revision_ref: { version: "2" },
        },
      ),
    );
    const revision = fetched.application_revision;
    tracker = await Tracker.start();
    // 14: what the SDK sends, from what 10 answered.
    const deployed = await current.deploy(
      { key: owner.key },
      {
        application_ref: { id: revision.application_id, slug: "deployed" },
        application_variant_ref: { id: revision.application_variant_id, slug: "main" },
        application_revision_ref: { version: revision.version },
        environment_ref: { slug: "staging" },
      },
    );
    expect(await expectJson(deployed)).toEqual({ count: 1, application_revision: await storedRevision(mainId, 2) });
    const history = await expectJson<History>(await apps.revisions({ key: owner.key }, appId, "staging"));
    expect(history.revision).toBe(1);
    expect(deployed.headers.get("ETag")).toBe((await apps.revisions({ key: owner.key }, appId, "staging")).headers.get("ETag"));
    const changed = expectEvents(await tracker.changes(), {
      type: "environment.deployed",
      app_id: appId,
      data: {
        environment: "staging",
        environment_revision: 1,
        current: { config_name: "main", variant_id: mainId, revision: 2, revision_id: revision.id },
      },
    });
    expectRowCounts(changed, { deployments: [1, 0], environment_revisions: [1, 0], environments: [1, 1] });
    // 15: the environment, which must not be empty after a good deploy.
    const environments = await expectJson(
      await current.queryEnvironments(
        { key: owner.key },
        { environment: { slug: "staging" }, environment_refs: [{ slug: "staging" }] },
      ),
    );
    expect(environments).toEqual({
      count: 1,
      environments: [
        {
          id: uuidv5("staging", owner.projectId),
          slug: "staging",
          name: "staging",
          flags: { is_guarded: false },
          data: {
            references: {
              "deployed.revision": {
                application: { id: appId, slug: "deployed" },
                application_variant: { id: mainId, slug: "main" },
                application_revision: { id: revision.id, slug: revision.slug, version: "2" },
              },
            },
          },
          version: "1",
          created_at: expect.any(String),
          updated_at: expect.any(String),
          updated_by_id: owner.userId,
        },
      ],
    });
  });

  it("a deploy without a version deploys the latest; GET /apps/{id}/revisions/{env} shows it as the next revision at once", async () => {
    const before = await expectJson<History>(await apps.revisions({ key: owner.key }, appId, "production"));
    const answer = await expectJson(await current.deploy({ key: owner.key }, deployBody(null, "production")));
    expect(answer).toEqual({ count: 1, application_revision: await storedRevision(mainId, 3) });
    const after = await expectJson<History>(await apps.revisions({ key: owner.key }, appId, "production"));
    expect(after.revision).toBe(before.revision + 1);
    expect(after.revisions.at(-1)).toMatchObject({
      revision: before.revision + 1,
      deployed_app_variant_revision: (await storedRevision(mainId, 3)).id,
    });
  });

  it("answers the contract's 404 and 400 texts, nothing written", async () => {
    await expectError(await current.deploy({ key: owner.key }, deployBody("9")), 404, "Application revision not found.");
    await expectError(await current.deploy({ key: owner.key }, deployBody("1", "qa")), 404, "Environment revision not found.");
    await expectError(
      await current.deploy({ key: owner.key }, { ...deployBody("1"), application_ref: { id: crypto.randomUUID() } }),
      404,
      "Application revision not found.",
    );
    const { environment_ref: _, ...noEnvironment } = deployBody("1");
    const { application_ref: __, ...noApp } = deployBody("1");
    for (const body of [noEnvironment, noApp]) {
      await expectError(
        await current.deploy({ key: owner.key }, body),
        400,
        "application_ref and environment_ref (with a slug) are required.",
      );
    }
    expect(await tracker.changes()).toEqual({});
  });

  it("takes If-Match as the legacy deploys do: 412 when the environment moved on, nothing written", async () => {
    const etag = (await apps.revisions({ key: owner.key }, appId, "development")).headers.get("ETag") ?? "";
    await current.deploy({ key: owner.key }, deployBody("1", "development"));
    tracker = await Tracker.start();
    const stale = await current.deploy({ key: owner.key }, deployBody("2", "development"), { headers: { "If-Match": etag } });
    expect(stale.status).toBe(412);
    expect(await tracker.changes()).toEqual({});
  });

  it("naming one app and another app's variant by id deploys nothing: the 404 of no such revision", async () => {
    const otherApp = await createAppVia(owner.key, { app_name: "deployed-other" });
    const theirs = await legacyConfig(owner.key, otherApp, "main", { theirs: true });
    tracker = await Tracker.start();
    const body = {
      application_ref: { id: appId },
      application_variant_ref: { id: theirs },
      environment_ref: { slug: "staging" },
    };
    await expectError(await current.deploy({ key: owner.key }, body), 404, "Application revision not found.");
    expect(await tracker.changes()).toEqual({});
  });

  it("is open to deployment managers, not to viewers or read-only keys; another organization's app is not found", async () => {
    const [manager, viewer, stranger] = [await createAccount(), await createAccount(), await createAccount()];
    const team = await createTeam(owner, [
      [manager, "deployment_manager"],
      [viewer, "viewer"],
    ]);
    const teamApp = await createAppVia(owner.key, { app_name: "team-deployed", organization_id: team.organizationId });
    const teamMain = await legacyConfig(owner.key, teamApp, "main", { a: 1 });
    const body = {
      application_ref: { id: teamApp },
      application_variant_ref: { id: teamMain },
      environment_ref: { slug: "production" },
    };
    const readOnly = await issueKey(owner.userId, owner.projectId, { readOnly: true });
    tracker = await Tracker.start();
    await expectError(await current.deploy({ key: viewer.key }, body), 403, FORBIDDEN);
    await expectError(await current.deploy({ key: readOnly }, body), 403, FORBIDDEN);
    await expectError(await current.deploy({ key: stranger.key }, body), 404, "Application revision not found.");
    expect(await tracker.changes()).toEqual({});
    expect(await expectJson(await current.deploy({ key: manager.key }, body))).toEqual({
      count: 1,
      application_revision: await storedRevision(teamMain, 2),
    });
  });
});
