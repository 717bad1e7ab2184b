import { beforeAll, describe, expect, it } from "vitest";
import { applicationVariants, current, deployments } from "../client";
import {
  type Account,
  createAccount,
  createAppVia,
  expectError,
  expectJson,
  legacyConfig,
  type Revision,
  send,
  storedRevision,
} from "../fixtures";

/*
 * POST /applications/revisions/retrieve as today's SDK calls it (docs/CURRENT-SDK-API.md, call 10), over what the
 * legacy API wrote: ConfigManager.get_from_registry by environment (with and without environment_version) and by
 * variant, and VariantManager.list's read per variant.
 */

let account: Account;
let appId: string;
let mainId: string;
let otherId: string;
const RUNS_NOTHING = "Environment revision does not contain application references for the requested key.";

/** Deploys a revision of `main` to an environment through the legacy API. */
const legacyDeploy = async (environment: string, version: number) =>
  expectJson(
    await deployments.deployConfig(
      { key: account.key },
      { application_ref: { id: appId }, variant_ref: { slug: "main", version }, environment_ref: { slug: environment } },
    ),
  );

const byEnvironment = (environment_ref: Record<string, string>, key = "registry.revision") => ({
  resolve: true,
  environment_ref,
  key,
});

beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "registry" });
  mainId = await legacyConfig(account.key, appId, "main", { temperature: 0.2 }, { temperature: 0.7, model: "m" });
  otherId = await legacyConfig(account.key, appId, "other", { prompt: "p" });
  // production: revision 1 runs main's revision 2, revision 2 runs main's revision 3.
  await legacyDeploy("production", 2);
  await legacyDeploy("production", 3);
});

describe("ConfigManager.get_from_registry by environment", () => {
  it("answers what the app's environment runs now, every field the SDK reads", async () => {
    const answer = await expectJson(await current.retrieve({ key: account.key }, byEnvironment({ slug: "production" })));
    expect(answer).toEqual({ count: 1, application_revision: await storedRevision(mainId, 3) });
  });

  it("honours environment_version: revision N of that app's environment, as GET /apps/{id}/revisions/{env} numbers it", async () => {
    const history = await expectJson<{ revisions: { revision: number; deployed_app_variant_revision: string }[] }>(
      await send("GET", `/apps/${appId}/revisions/production`, { key: account.key }),
    );
    expect(history.revisions.map(({ revision }) => revision)).toEqual([1, 2]);
    for (const [version, variantRevision] of [
      ["1", 2],
      ["2", 3],
    ] as const) {
      const answer = await current.retrieve({ key: account.key }, byEnvironment({ slug: "production", version }));
      expect(await expectJson(answer)).toEqual({ count: 1, application_revision: await storedRevision(mainId, variantRevision) });
    }
  });

  it("is a 404 with the platform's text wherever it finds nothing: the SDK raises it, never runs with an empty config", async () => {
    for (const body of [
      // That environment revision of the app runs nothing, or there is no such revision.
      byEnvironment({ slug: "production", version: "3" }),
      byEnvironment({ slug: "production", version: "0" }),
      byEnvironment({ slug: "staging" }),
      // No such app (get_from_registry(app_slug="typo", environment_slug="production")), or no such environment.
      byEnvironment({ slug: "production" }, "typo.revision"),
      byEnvironment({ slug: "qa" }),
      // An environment id that is not this environment's.
      byEnvironment({ slug: "production", id: crypto.randomUUID() }),
    ]) {
      await expectError(await current.retrieve({ key: account.key }, body), 404, RUNS_NOTHING);
    }
  });

  it("takes the environment's id as POST /simple/environments/query answers it", async () => {
    const { environments } = await expectJson<{ environments: { id: string }[] }>(
      await current.queryEnvironments({ key: account.key }, { environment: { slug: "production" } }),
    );
    const answer = await current.retrieve({ key: account.key }, byEnvironment({ slug: "production", id: environments[0].id }));
    expect(await expectJson(answer)).toEqual({ count: 1, application_revision: await storedRevision(mainId, 3) });
  });

  it("follows a legacy deploy at once: what it deployed is what retrieve answers next", async () => {
    await legacyDeploy("development", 1);
    const answer = await current.retrieve({ key: account.key }, byEnvironment({ slug: "development" }));
    expect(await expectJson(answer)).toEqual({ count: 1, application_revision: await storedRevision(mainId, 1) });
  });
});

describe("ConfigManager.get_from_registry by variant, then the workflow fallback", () => {
  const byVariant = (version?: string) => ({
    resolve: true,
    application_ref: { slug: "registry" },
    application_variant_ref: { slug: "main" },
    ...(version && { application_revision_ref: { version } }),
  });

  it("answers the latest revision, or the version asked for", async () => {
    expect(await expectJson(await current.retrieve({ key: account.key }, byVariant()))).toEqual({
      count: 1,
      application_revision: await storedRevision(mainId, 3),
    });
    expect(await expectJson(await current.retrieve({ key: account.key }, byVariant("2")))).toEqual({
      count: 1,
      application_revision: await storedRevision(mainId, 2),
    });
  });

  it("a revision without parameters sends the SDK to /workflows/revisions/retrieve, which answers it in workflow names", async () => {
    const answer = await expectJson<{ application_revision: Revision }>(
      await current.retrieve({ key: account.key }, byVariant("1")),
    );
    expect(answer.application_revision.data.parameters).toEqual({});
    const workflow = await current.retrieveWorkflow(
      { key: account.key },
      {
        resolve: true,
        workflow_ref: { slug: "registry" },
        workflow_variant_ref: { slug: "main" },
        workflow_revision_ref: { version: "1" },
      },
    );
    const { application_id, application_slug, application_variant_id, application_variant_slug, ...shared } =
      await storedRevision(mainId, 1);
    expect(await expectJson(workflow)).toEqual({
      count: 1,
      workflow_revision: {
        ...shared,
        workflow_id: application_id,
        workflow_slug: application_slug,
        workflow_variant_id: application_variant_id,
        workflow_variant_slug: application_variant_slug,
      },
    });
  });

  it("an app ref alone naming no app is a 404 the SDK raises, not {count: 0} it would run as an empty config", async () => {
    for (const application_ref of [{ slug: "typo" }, { id: crypto.randomUUID() }]) {
      await expectError(
        await current.retrieve({ key: account.key }, { resolve: true, application_ref }),
        404,
        "Application revision not found.",
      );
    }
  });

  it("get_from_registry(app_slug=...) of an app with nothing committed: {count: 0} through both calls, the SDK's empty config", async () => {
    const bare = await createAppVia(account.key, { app_name: "registry-bare" });
    const drafted = await createAppVia(account.key, { app_name: "registry-drafted" });
    await expectJson(await applicationVariants.add(account, { application_variant: { application_id: drafted, slug: "draft" } }));
    for (const slug of ["registry-bare", "registry-drafted"]) {
      // Exactly what the SDK sends: its refs not given are null; then its fallback, nulls left out.
      const sent = { resolve: true, application_ref: { slug }, application_variant_ref: null, application_revision_ref: null };
      expect(await expectJson(await current.retrieve({ key: account.key }, sent))).toEqual({ count: 0 });
      const fallback = await current.retrieveWorkflow({ key: account.key }, { resolve: true, workflow_ref: { slug } });
      expect(await expectJson(fallback)).toEqual({ count: 0 });
    }
    for (const id of [bare, drafted]) {
      expect(await expectJson(await current.retrieve({ key: account.key }, { resolve: true, application_ref: { id } }))).toEqual({
        count: 0,
      });
    }
  });

  it("an app ref alone naming another organization's app is the 404 of an app that does not exist", async () => {
    const stranger = await createAccount();
    await createAppVia(stranger.key, { app_name: "registry-theirs" });
    const theirs = await createAppVia(stranger.key, { app_name: "registry-theirs-by-id" });
    for (const application_ref of [{ slug: "registry-theirs" }, { id: theirs }]) {
      await expectError(
        await current.retrieve({ key: account.key }, { resolve: true, application_ref }),
        404,
        "Application revision not found.",
      );
    }
  });

  it("a variant that does not exist is {count: 0} through both calls, and the SDK's variant lookup finds none: it raises", async () => {
    const slugs = { resolve: true, application_ref: { slug: "typo" }, application_variant_ref: { slug: "main" } };
    for (const body of [
      slugs,
      { ...slugs, application_ref: { slug: "registry" }, application_variant_ref: { slug: "typo" } },
      { ...slugs, application_ref: { slug: "registry" }, application_variant_ref: { id: crypto.randomUUID() } },
      { application_revision_ref: { id: crypto.randomUUID() } },
    ]) {
      expect(await expectJson(await current.retrieve({ key: account.key }, body))).toEqual({ count: 0 });
    }
    const workflow = await current.retrieveWorkflow(
      { key: account.key },
      { resolve: true, workflow_ref: { slug: "typo" }, workflow_variant_ref: { slug: "main" } },
    );
    expect(await expectJson(workflow)).toEqual({ count: 0 });
    // What the SDK's _resolve_variant reads next, then raises "Variant ... not found.".
    for (const application_refs of [[{ slug: "typo" }], [{ slug: "registry" }]]) {
      const query = await applicationVariants.query(account, { application_refs, application_variant: { slug: "typo" } });
      expect(await expectJson(query)).toEqual({ count: 0, application_variants: [] });
    }
    expect(await expectJson(await applicationVariants.get(account, crypto.randomUUID()))).toEqual({ count: 0 });
  });

  it('answers 200 {"count": 0} for a version that does not exist, through both calls', async () => {
    expect(await expectJson(await current.retrieve({ key: account.key }, byVariant("9")))).toEqual({ count: 0 });
    const workflow = await current.retrieveWorkflow(
      { key: account.key },
      { workflow_ref: { slug: "registry" }, workflow_variant_ref: { slug: "main" }, workflow_revision_ref: { version: "9" } },
    );
    expect(await expectJson(workflow)).toEqual({ count: 0 });
  });

  it("an app ref alone is its oldest variant, at its latest revision; a revision id is that revision", async () => {
    const alone = await current.retrieve({ key: account.key }, { application_ref: { id: appId } });
    expect(await expectJson(alone)).toEqual({ count: 1, application_revision: await storedRevision(mainId, 3) });
    const second = await storedRevision(mainId, 2);
    const byId = await current.retrieve({ key: account.key }, { application_revision_ref: { id: second.id } });
    expect(await expectJson(byId)).toEqual({ count: 1, application_revision: second });
  });
});

describe("VariantManager.list: a retrieve per variant", () => {
  it("answers each variant's latest revision, named by the app's slug and the variant's id and slug", async () => {
    const listed = [];
    for (const [id, slug] of [
      [mainId, "main"],
      [otherId, "other"],
    ]) {
      const body = { resolve: true, application_ref: { slug: "registry" }, application_variant_ref: { id, slug } };
      listed.push(await expectJson(await current.retrieve({ key: account.key }, body)));
    }
    expect(listed).toEqual([
      { count: 1, application_revision: await storedRevision(mainId, 3) },
      { count: 1, application_revision: await storedRevision(otherId, 2) },
    ]);
  });
});
