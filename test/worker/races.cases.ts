import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  DEFAULT_ENVIRONMENTS,
  deploy,
  getRevisions,
  postApp,
  send,
} from "./fixtures";
import { databaseProblems, rowCounts } from "./harness";
import { instrumentD1 } from "./instrumented-d1";
import { databaseOf, inPlaceOfShardFor, rowsOnShards } from "./pool";

/*
 * Concurrent requests (all started before any is answered) against the real D1: the database, not a prior read,
 * settles every race. Requests go through the Worker's fetch handler, concurrently within this isolate; D1 runs
 * each statement or batch as one transaction.
 */

let owner: Account;
let team: Awaited<ReturnType<typeof createTeam>>;

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {});
  owner = await createAccount();
  team = await createTeam(owner);
});

afterAll(() => {
  vi.restoreAllMocks();
});

const create = (body: object) => postApp(owner.key, body);
const read = (appId: string, environment: string) => getRevisions(owner.key, appId, environment);

interface RevisionsRecord {
  name: string;
  app_id: string;
  project_id: string;
  deployed_app_variant_id: string | null;
  deployed_variant_name: string | null;
  deployed_app_variant_revision_id: string | null;
  revision: number;
  revisions: { id: string; revision: number; deployed_app_variant_revision: string | null }[];
}

describe("concurrent creates", () => {
  it("50 creates of one name in one project: exactly one 200 and 49 × 409, one app with its three environments", async () => {
    const before = await rowCounts();
    const responses = await Promise.all(Array.from({ length: 50 }, () => create({ app_name: "contested" })));
    const bodies = await Promise.all(responses.map((response) => response.json()));
    const statuses = responses.map((response) => response.status);

    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(49);
    const winner = bodies[statuses.indexOf(200)] as { app_id: string; app_name: string };
    expect(winner.app_name).toBe("contested");
    for (const body of bodies.filter((_, i) => statuses[i] === 409))
      expect(body).toEqual({ detail: "App with the same name already exists" });

    const { results } = await databaseOf(owner.projectId)
      .prepare("SELECT id FROM apps WHERE project_id = ? AND name = 'contested'")
      .bind(owner.projectId)
      .all();
    expect(results).toEqual([{ id: winner.app_id }]);
    const after = await rowCounts();
    expect([after.apps - before.apps, after.environments - before.environments]).toEqual([1, 3]);
    expect((await read(winner.app_id, "production")).status).toBe(200);
  });

  it("the same name raced in two projects: one 200 in each", async () => {
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        create(i % 2 === 0 ? { app_name: "twice" } : { app_name: "twice", organization_id: team.organizationId }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(2);
    expect(statuses.filter((status) => status === 409)).toHaveLength(38);
    const results = await rowsOnShards<{ project_id: string }>("SELECT project_id FROM apps WHERE name = 'twice'");
    expect(results.map((row) => row.project_id).sort()).toEqual([owner.projectId, team.projectId].sort());
  });

  it("200 creates of distinct names: 200 apps and 600 environments, every one readable through GET", async () => {
    const before = await rowCounts();
    const names = Array.from({ length: 200 }, (_, i) => `parallel-${i}`);
    const responses = await Promise.all(names.map((app_name) => create({ app_name })));
    expect(responses.map((response) => response.status)).toEqual(names.map(() => 200));
    const created = (await Promise.all(responses.map((response) => response.json()))) as { app_id: string; app_name: string }[];
    expect(created.map((app) => app.app_name)).toEqual(names);
    expect(new Set(created.map((app) => app.app_id)).size).toBe(200);

    const after = await rowCounts();
    expect([after.apps - before.apps, after.environments - before.environments]).toEqual([200, 600]);

    const reads = await Promise.all(
      created.flatMap((app) =>
        DEFAULT_ENVIRONMENTS.map(async (name) => [app.app_id, name, await read(app.app_id, name)] as const),
      ),
    );
    expect(reads).toHaveLength(600);
    for (const [appId, name, response] of reads) {
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        name,
        app_id: appId,
        project_id: owner.projectId,
        deployed_app_variant_id: null,
        deployed_variant_name: null,
        deployed_app_variant_revision_id: null,
        deployed_variant_archived: false,
        revision: 0,
        revisions: [],
        organization_id: owner.organizationId,
        workspace_id: owner.workspaceId,
      });
    }
    expect(await databaseProblems()).toEqual([]);
  });
});

describe("concurrent deployments", () => {
  const VARIANTS = ["main", "canary", "beta"];

  it("30 deployments at once to one environment, mixing variants: revisions 1..30, each exactly once", async () => {
    const appId = await createAppVia(owner.key, { app_name: "deployed-30" });
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => deploy(appId, "production", VARIANTS[i % 3], owner)));

    const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
    expect(results.map((result) => result.revision).sort((a, b) => a - b)).toEqual(range(30));
    expect(new Set(results.map((result) => result.revisionId)).size).toBe(30);

    // In the database: 30 environment revisions numbered 1..30, 30 deployments, the counter at 30; each deploys
    // its config's one revision (a deployment makes no variant revision), added once however many raced to add it.
    const environment = await databaseOf(appId)
      .prepare("SELECT id, revision, deployed_app_variant_revision_id FROM environments WHERE app_id = ? AND name = 'production'")
      .bind(appId)
      .first<{ id: string; revision: number; deployed_app_variant_revision_id: string }>();
    expect(environment?.revision).toBe(30);
    const { results: revisions } = await databaseOf(appId)
      .prepare(
        "SELECT revision, deployed_app_variant_revision_id AS variantRevision FROM environment_revisions WHERE environment_id = ? ORDER BY revision",
      )
      .bind(environment!.id)
      .all<{ revision: number; variantRevision: string }>();
    expect(revisions.map((row) => row.revision)).toEqual(range(30));
    expect(new Set(revisions.map((row) => row.variantRevision)).size).toBe(3);
    const deployments = await databaseOf(appId)
      .prepare("SELECT COUNT(*) AS n FROM deployments WHERE environment_id = ?")
      .bind(environment!.id)
      .first<{ n: number }>();
    expect(deployments?.n).toBe(30);
    const { results: variantRevisions } = await databaseOf(appId)
      .prepare(
        `SELECT v.name, r.revision FROM app_variants v JOIN app_variant_revisions r ON r.variant_id = v.id WHERE v.app_id = ? ORDER BY v.name, r.revision`,
      )
      .bind(appId)
      .all<{ name: string; revision: number }>();
    for (const name of VARIANTS) {
      expect(
        variantRevisions.filter((row) => row.name === name).map((row) => row.revision),
        name,
      ).toEqual([1]);
    }
    expect(variantRevisions).toHaveLength(3);
    // The environment points at what its last revision deployed.
    expect(environment?.deployed_app_variant_revision_id).toBe(revisions[29].variantRevision);

    // And through the API: the same history, oldest first.
    const response = await read(appId, "production");
    expect(response.status).toBe(200);
    const record = (await response.json()) as RevisionsRecord;
    expect(record.revision).toBe(30);
    expect(record.revisions.map((entry) => entry.revision)).toEqual(range(30));
    expect(record.revisions.map((entry) => entry.deployed_app_variant_revision)).toEqual(
      revisions.map((row) => row.variantRevision),
    );
    expect(record.deployed_app_variant_revision_id).toBe(revisions[29].variantRevision);
    expect(VARIANTS.map((name) => `app.${name}`)).toContain(record.deployed_variant_name);
    expect(await databaseProblems()).toEqual([]);
  });

  it("deployments raced across the three environments of one app number each environment on its own", async () => {
    const appId = await createAppVia(owner.key, { app_name: "deployed-everywhere" });
    await Promise.all(Array.from({ length: 24 }, (_, i) => deploy(appId, DEFAULT_ENVIRONMENTS[i % 3], VARIANTS[i % 2], owner)));
    for (const name of DEFAULT_ENVIRONMENTS) {
      const record = (await (await read(appId, name)).json()) as RevisionsRecord;
      expect(record.revisions.map((entry) => entry.revision)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    }
    expect(await databaseProblems()).toEqual([]);
  });

  it("the database itself refuses an environment revision out of sequence, and a duplicate variant revision", async () => {
    const appId = await createAppVia(owner.key, { app_name: "unique-revisions" });
    await deploy(appId, "staging", "main", owner);
    const environment = await databaseOf(appId)
      .prepare("SELECT id FROM environments WHERE app_id = ? AND name = 'staging'")
      .bind(appId)
      .first<{ id: string }>();
    const before = await rowCounts();

    // What a writer working from a stale read would do: insert revision 1 again; or skip a number.
    for (const revision of [1, 3]) {
      await expect(
        databaseOf(appId)
          .prepare("INSERT INTO environment_revisions (id, environment_id, revision, modified_by) VALUES (?, ?, ?, ?)")
          .bind(crypto.randomUUID(), environment!.id, revision, owner.userId)
          .run(),
      ).rejects.toThrow(/environment revision out of sequence/);
    }
    // The same for a variant's revisions.
    await expect(
      databaseOf(appId)
        .prepare(
          "INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by) SELECT ?, id, 1, ? FROM app_variants WHERE app_id = ? AND name = 'main'",
        )
        .bind(crypto.randomUUID(), owner.userId, appId)
        .run(),
    ).rejects.toThrow(/UNIQUE constraint failed: app_variant_revisions\.variant_id, app_variant_revisions\.revision/);
    // And a stale writer's whole batch rolls back: the environment's counter does not move either.
    await expect(
      databaseOf(appId).batch([
        databaseOf(appId).prepare("UPDATE environments SET revision = revision + 1 WHERE id = ?").bind(environment!.id),
        databaseOf(appId)
          .prepare("INSERT INTO environment_revisions (id, environment_id, revision, modified_by) VALUES (?, ?, 1, ?)")
          .bind(crypto.randomUUID(), environment!.id, owner.userId),
      ]),
    ).rejects.toThrow(/environment revision out of sequence/);
    expect(await rowCounts()).toEqual(before);
    const record = (await (await read(appId, "staging")).json()) as RevisionsRecord;
    expect([record.revision, record.revisions.map((entry) => entry.revision)]).toEqual([1, [1]]);
  });

  it("the database itself refuses a second app of one name in a project: UNIQUE (project_id, name)", async () => {
    const appId = await createAppVia(owner.key, { app_name: "unique-name" });
    await expect(
      databaseOf(owner.projectId)
        .prepare("INSERT INTO apps (id, project_id, name, created_by) VALUES (?, ?, 'unique-name', ?)")
        .bind(crypto.randomUUID(), owner.projectId, owner.userId)
        .run(),
    ).rejects.toThrow(/UNIQUE constraint failed: apps\.project_id, apps\.name/);
    const results = await rowsOnShards("SELECT id FROM apps WHERE name = 'unique-name'");
    expect(results).toEqual([{ id: appId }]);
  });
});

describe("concurrent config writes", () => {
  const configCall = (action: string, body: unknown) => send("POST", `/variants/configs/${action}`, { key: owner.key, body });

  it("20 commits at once to one config: revisions 2..21, each exactly once, each with its own params", async () => {
    const appId = await createAppVia(owner.key, { app_name: "committed-20" });
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "main" } };
    expect((await configCall("add", ref)).status).toBe(200);
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => configCall("commit", { ...ref, params: { i } })));
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(200));
    const configs = (await Promise.all(responses.map((response) => response.json()))) as {
      params: { i: number };
      variant_ref: { version: number };
    }[];
    expect(configs.map((config) => config.variant_ref.version).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 2),
    );
    // Every commit is one revision holding its own params: the answer and the row agree.
    const { results } = await databaseOf(appId)
      .prepare(
        `SELECT r.revision, r.params FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id
        WHERE v.app_id = ? ORDER BY r.revision`,
      )
      .bind(appId)
      .all<{ revision: number; params: string }>();
    expect(results.map((row) => row.revision)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    for (const config of configs) {
      expect(JSON.parse(results[config.variant_ref.version - 1].params)).toEqual(config.params);
    }
    expect(await databaseProblems()).toEqual([]);
  });

  it("20 commits at once on top of the same version: exactly one 200, 19 × 409", async () => {
    const appId = await createAppVia(owner.key, { app_name: "optimistic-20" });
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "main", version: 1 } };
    expect((await configCall("add", { ...ref, variant_ref: { slug: "main" } })).status).toBe(200);
    const statuses = (
      await Promise.all(Array.from({ length: 20 }, (_, i) => configCall("commit", { ...ref, params: { i } })))
    ).map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(19);
    const count = await databaseOf(appId)
      .prepare("SELECT COUNT(*) AS n FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id WHERE v.app_id = ?")
      .bind(appId)
      .first("n");
    expect(count).toBe(2);
  });

  it("10 adds of one config name at once: one 200 and 9 × 400 Config already exists.", async () => {
    const appId = await createAppVia(owner.key, { app_name: "added-10" });
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => configCall("add", { application_ref: { id: appId }, variant_ref: { slug: "same" } })),
    );
    expect(responses.map((response) => response.status).sort()).toEqual([200, ...Array(9).fill(400)]);
    expect(
      await databaseOf(appId).prepare("SELECT COUNT(*) AS n FROM app_variants WHERE app_id = ?").bind(appId).first("n"),
    ).toBe(1);
  });
});

describe("concurrent deploys over HTTP", () => {
  const deployBody = (appId: string) => ({
    variant_ref: { slug: "main" },
    environment_ref: { slug: "production" },
    application_ref: { id: appId },
  });
  const deployOver = (appId: string, headers: Record<string, string> = {}) =>
    send("POST", "/variants/configs/deploy", { key: owner.key, body: deployBody(appId), headers });

  async function appWithMain(name: string) {
    const appId = await createAppVia(owner.key, { app_name: name });
    const added = await send("POST", "/variants/configs/add", {
      key: owner.key,
      body: { application_ref: { id: appId }, variant_ref: { slug: "main" } },
    });
    expect(added.status).toBe(200);
    return appId;
  }

  it("20 deploys with the same If-Match: exactly one succeeds, 19 get 412, one new revision exists", async () => {
    const appId = await appWithMain("if-match-20");
    const etag = (await read(appId, "production")).headers.get("ETag") ?? "";
    const statuses = (await Promise.all(Array.from({ length: 20 }, () => deployOver(appId, { "If-Match": etag })))).map(
      (response) => response.status,
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 412)).toHaveLength(19);
    const record = (await (await read(appId, "production")).json()) as RevisionsRecord;
    expect(record.revisions.map((entry) => entry.revision)).toEqual([1]);
  });

  it("30 deploys without If-Match: 30 gapless revisions", async () => {
    const appId = await appWithMain("deployed-over-http-30");
    const statuses = (await Promise.all(Array.from({ length: 30 }, () => deployOver(appId)))).map((response) => response.status);
    expect(statuses).toEqual(Array(30).fill(200));
    const record = (await (await read(appId, "production")).json()) as RevisionsRecord;
    expect(record.revision).toBe(30);
    expect(record.revisions.map((entry) => entry.revision)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(await databaseProblems()).toEqual([]);
  });
});

describe("the older SDK's registry under concurrency", () => {
  const save = (appId: string, i: number) =>
    send("POST", "/configs", {
      authorization: owner.key,
      body: { base_id: appId, config_name: "main", parameters: { i }, overwrite: true },
    });
  /** Variant revision numbers and params of config main, and the variant revision each production revision deploys. */
  async function historyOf(appId: string) {
    const db = databaseOf(appId);
    const [variant, production] = await db.batch<{ revision: number; params: string; deployed: number | null }>([
      db
        .prepare(
          `SELECT r.revision, r.params FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id
          WHERE v.app_id = ? AND v.name = 'main' ORDER BY r.revision`,
        )
        .bind(appId),
      db
        .prepare(
          `SELECT er.revision, vr.revision AS deployed FROM environment_revisions er
           JOIN environments e ON e.id = er.environment_id AND e.app_id = ? AND e.name = 'production'
           JOIN app_variant_revisions vr ON vr.id = er.deployed_app_variant_revision_id ORDER BY er.revision`,
        )
        .bind(appId),
    ]);
    return { variant: variant.results, production: production.results };
  }

  it("20 save_config overwrites of one name at once: 20 gapless revisions, each deployed to production in turn", async () => {
    const appId = await createAppVia(owner.key, { app_name: "saved-20" });
    expect((await save(appId, -1)).status).toBe(200);
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => save(appId, i)));
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(200));
    const { variant, production } = await historyOf(appId);
    expect(variant.map((row) => row.revision)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(
      variant
        .slice(1)
        .map((row) => JSON.parse(row.params).i)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 20 }, (_, i) => i));
    // Production revision n deploys variant revision n + 1: each save deployed what it committed.
    expect(production).toEqual(Array.from({ length: 20 }, (_, i) => ({ revision: i + 1, deployed: i + 2 })));
    expect(await databaseProblems()).toEqual([]);
  });

  it("20 saves of a free name at once: one makes it (deploying nothing), 19 commit over it and deploy", async () => {
    const appId = await createAppVia(owner.key, { app_name: "saved-free-20" });
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => save(appId, i)));
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(200));
    const { variant, production } = await historyOf(appId);
    expect(variant.map((row) => row.revision)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(production).toEqual(Array.from({ length: 19 }, (_, i) => ({ revision: i + 1, deployed: i + 2 })));
    expect(await databaseProblems()).toEqual([]);
  });

  it("a removal racing deploys of the same variant never leaves an environment running a removed variant", async () => {
    const removals: number[] = [];
    for (let round = 0; round < 6; round++) {
      const appId = await createAppVia(owner.key, { app_name: `removal-race-${round}` });
      const { variantId } = await deploy(appId, "development", "gone", owner);
      await deploy(appId, "development", "other", owner);
      const revisionId = (await databaseOf(variantId)
        .prepare("SELECT id FROM app_variant_revisions WHERE variant_id = ?")
        .bind(variantId)
        .first("id")) as string;
      const deploys = ["staging", "production"].flatMap((environment) => [
        send("POST", "/variants/configs/deploy", {
          key: owner.key,
          body: { application_ref: { id: appId }, variant_ref: { slug: "gone" }, environment_ref: { slug: environment } },
        }),
        send("POST", "/variants/configs/deploy", {
          key: owner.key,
          body: { variant_ref: { id: revisionId }, environment_ref: { slug: environment } },
        }),
        send("POST", "/environments/deploy", { key: owner.key, body: { environment_name: environment, variant_id: variantId } }),
      ]);
      // Sent with the deploys, the removal reaches D1 first; every other round it is held until a deploy is answered.
      const gate = round % 2 === 0 ? Promise.resolve() : Promise.race(deploys);
      const { db } = instrumentD1(databaseOf(appId), { beforeTrip: async () => void (await gate) });
      const at = [0, 3, 6][round % 3];
      const racing = [
        ...deploys.slice(0, at),
        send("DELETE", `/variants/${variantId}`, { key: owner.key, bindings: inPlaceOfShardFor(appId, db) }),
      ];
      racing.push(...deploys.slice(at));
      const statuses = (await Promise.all(racing)).map((response) => response.status);
      const [removal] = statuses.splice(at, 1);
      removals.push(removal);
      const running = await databaseOf(appId)
        .prepare("SELECT name FROM environments WHERE app_id = ? AND deployed_app_variant_id = ?")
        .bind(appId, variantId)
        .all<{ name: string }>();
      // Removed: nothing runs it, and no deploy got through after. Refused: a deploy got there first.
      expect(running.results.length > 0).toBe(removal === 409);
      expect([200, 409]).toContain(removal);
      for (const status of statuses) expect([200, 404, 409]).toContain(status);
      expect(await databaseProblems()).toEqual([]);
    }
    // Both orders happened: the race was run, not just one side of it.
    expect(new Set(removals)).toEqual(new Set([200, 409]));
  });
});
