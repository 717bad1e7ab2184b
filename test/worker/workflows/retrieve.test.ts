import { beforeAll, describe, expect, it } from "vitest";
import { current, deployments } from "../client";
import { type Account, createAccount, createAppVia, expectError, expectJson, legacyConfig, storedRevision } from "../fixtures";

/*
 * POST /workflows/revisions/retrieve (docs/CURRENT-SDK-API.md, call 11): the SDK's fallback when the application read
 * found no parameters. The same lookup, in workflow names, and always a 200 for what it cannot find.
 */

let owner: Account;
let appId: string;
let mainId: string;

beforeAll(async () => {
  owner = await createAccount();
  appId = await createAppVia(owner.key, { app_name: "flows" });
  mainId = await legacyConfig(owner.key, appId, "main", { step: 1 });
});

/** A revision as a workflow revision: the application names in workflow names. */
const asWorkflow = async (variantId: string, revision: number) => {
  const { application_id, application_slug, application_variant_id, application_variant_slug, ...shared } = await storedRevision(
    variantId,
    revision,
  );
  return {
    ...shared,
    workflow_id: application_id,
    workflow_slug: application_slug,
    workflow_variant_id: application_variant_id,
    workflow_variant_slug: application_variant_slug,
  };
};

describe("POST /workflows/revisions/retrieve", () => {
  it("answers the revision the workflow refs name: by slugs and version, by ids (the latest)", async () => {
    for (const [refs, revision] of [
      [{ workflow_ref: { slug: "flows" }, workflow_variant_ref: { slug: "main" }, workflow_revision_ref: { version: "1" } }, 1],
      [{ workflow_ref: { id: appId }, workflow_variant_ref: { id: mainId, slug: "main" } }, 2],
    ] as const) {
      const answer = await current.retrieveWorkflow({ key: owner.key }, { resolve: true, ...refs });
      expect(await expectJson(answer)).toEqual({ count: 1, workflow_revision: await asWorkflow(mainId, revision) });
    }
  });

  it('answers 200 {"count": 0} where the application read would answer 404 too', async () => {
    await expectJson(
      await deployments.deployConfig(
        { key: owner.key },
        { application_ref: { id: appId }, variant_ref: { slug: "main" }, environment_ref: { slug: "production" } },
      ),
    );
    const body = { resolve: true, environment_ref: { slug: "staging" }, key: "flows.revision" };
    expect((await current.retrieve({ key: owner.key }, body)).status).toBe(404);
    expect(await expectJson(await current.retrieveWorkflow({ key: owner.key }, body))).toEqual({ count: 0 });
    const production = await current.retrieveWorkflow({ key: owner.key }, { ...body, environment_ref: { slug: "production" } });
    expect(await expectJson(production)).toEqual({ count: 1, workflow_revision: await asWorkflow(mainId, 2) });
  });

  it("refuses what names nothing, in the 422's shape", async () => {
    await expectError(await current.retrieveWorkflow({ key: owner.key }, { resolve: true }), 422, [
      {
        loc: ["body", "workflow_ref"],
        msg: "Value error, workflow_ref, workflow_variant_ref.id or workflow_revision_ref.id is required",
        type: "value_error",
      },
    ]);
  });
});
