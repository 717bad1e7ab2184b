import { v5 as uuidv5 } from "uuid";
import { beforeAll, describe, expect, it } from "vitest";
import { current, deployments, simpleApplications } from "../client";
import { type Account, createAccount, createAppVia, expectJson, legacyConfig, storedRevision } from "../fixtures";
import { databaseOf } from "../pool";

/*
 * POST /simple/environments/query (docs/CURRENT-SDK-API.md, call 15): the key's project's environments, one per name,
 * each saying per app what it runs; the SDK reads it after every deploy and raises when it is empty.
 */

let owner: Account;
let firstApp: string;
let secondApp: string;
let firstMain: string;
let secondMain: string;

const legacyDeploy = async (appId: string, environment: string) =>
  expectJson(
    await deployments.deployConfig(
      { key: owner.key },
      { application_ref: { id: appId }, variant_ref: { slug: "main" }, environment_ref: { slug: environment } },
    ),
  );

beforeAll(async () => {
  owner = await createAccount();
  firstApp = await createAppVia(owner.key, { app_name: "first" });
  secondApp = await createAppVia(owner.key, { app_name: "second" });
  firstMain = await legacyConfig(owner.key, firstApp, "main", { a: 1 });
  secondMain = await legacyConfig(owner.key, secondApp, "main");
  await legacyDeploy(firstApp, "production");
  await legacyDeploy(firstApp, "production");
  await legacyDeploy(secondApp, "production");
});

type Environments = { count: number; environments: Record<string, unknown>[] };

const referenceTo = async (appId: string, appName: string, variantId: string, revision: number) => {
  const stored = await storedRevision(variantId, revision);
  return {
    [`${appName}.revision`]: {
      application: { id: appId, slug: appName },
      application_variant: { id: variantId, slug: "main" },
      application_revision: { id: stored.id, slug: stored.slug, version: String(revision) },
    },
  };
};

describe("POST /simple/environments/query", () => {
  it("answers one environment per name of the project, each with what every app runs, whole", async () => {
    const answer = await expectJson<Environments>(await current.queryEnvironments({ key: owner.key }, {}));
    const latest = await databaseOf(secondApp)
      .prepare(
        `SELECT er.revision, er.created_at, er.modified_by FROM environment_revisions er JOIN environments e ON e.id = er.environment_id
        WHERE e.app_id = ? AND e.name = 'production' ORDER BY er.revision DESC LIMIT 1`,
      )
      .bind(secondApp)
      .first<{ revision: number; created_at: string; modified_by: string }>();
    const firstMade = await databaseOf(firstApp).prepare(
      "SELECT MIN(created_at) AS at FROM environments WHERE name = ? AND app_id IN (?, ?)",
    );
    const madeAt = async (name: string) => (await firstMade.bind(name, firstApp, secondApp).first<{ at: string }>())?.at;
    const empty = async (name: string) => ({
      id: uuidv5(name, owner.projectId),
      slug: name,
      name,
      flags: { is_guarded: false },
      data: { references: {} },
      created_at: await madeAt(name),
    });
    expect(answer).toEqual({
      count: 3,
      environments: [
        await empty("development"),
        await empty("staging"),
        {
          id: uuidv5("production", owner.projectId),
          slug: "production",
          name: "production",
          flags: { is_guarded: false },
          data: {
            references: {
              ...(await referenceTo(firstApp, "first", firstMain, 2)),
              ...(await referenceTo(secondApp, "second", secondMain, 1)),
            },
          },
          // The latest deployment of the name in the project: second's production, at its revision 1.
          version: String(latest?.revision),
          created_at: latest?.created_at,
          updated_at: latest?.created_at,
          updated_by_id: latest?.modified_by,
        },
      ],
    });
  });

  it("filters by environment.slug and by environment_refs (slug or id); an id is the same on every read", async () => {
    const production = uuidv5("production", owner.projectId);
    const bySlug = await expectJson<Environments>(
      await current.queryEnvironments(
        { key: owner.key },
        { environment: { slug: "production" }, environment_refs: [{ slug: "production" }] },
      ),
    );
    const byId = await expectJson<Environments>(
      await current.queryEnvironments({ key: owner.key }, { environment_refs: [{ id: production }] }),
    );
    expect(bySlug.environments.map(({ id }) => id)).toEqual([production]);
    expect(byId).toEqual(bySlug);
    const none = await current.queryEnvironments({ key: owner.key }, { environment: { slug: "qa" } });
    expect(await expectJson(none)).toEqual({ count: 0, environments: [] });
  });

  it("shows only the key's project: another account's environments are not there, nor are its ids the same", async () => {
    const other = await createAccount();
    await createAppVia(other.key, { app_name: "first" });
    const answer = await expectJson<Environments>(
      await current.queryEnvironments({ key: other.key }, { environment: { slug: "production" } }),
    );
    expect(answer.environments).toEqual([
      expect.objectContaining({ id: uuidv5("production", other.projectId), data: { references: {} } }),
    ]);
    expect(answer.environments[0].id).not.toBe(uuidv5("production", owner.projectId));
  });

  it("leaves archived apps out of the references (their environments keep running them)", async () => {
    await expectJson(await simpleApplications.archive(owner, secondApp));
    const answer = await expectJson<Environments>(
      await current.queryEnvironments({ key: owner.key }, { environment: { slug: "production" } }),
    );
    expect(answer.environments[0].data).toEqual({ references: await referenceTo(firstApp, "first", firstMain, 2) });
  });
});
