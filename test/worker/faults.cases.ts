import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, countRows, createAccount, createAppVia, getRevisions, postApp, send } from "./fixtures";
import { snapshot } from "./harness";
import { failTrips, type Instruments, instrumentD1 } from "./instrumented-d1";
import { databaseOf, inPlaceOfShardFor } from "./pool";

// Faults are injected into the real D1: with SQL (a failing trigger, a missing table), or by a wrapper around
// the real binding that throws D1's own transient errors or slips a failing statement into a batch.
let account: Account;
beforeAll(async () => {
  account = await createAccount();
});

afterEach(async () => {
  await databaseOf(account.organizationId).exec("DROP TRIGGER IF EXISTS fail_staging");
  await databaseOf(account.organizationId).exec("DROP TRIGGER IF EXISTS fail_revisions");
  vi.restoreAllMocks();
});

describe("a create that fails half-way", () => {
  it("leaves no app and no environment behind", async () => {
    await databaseOf(account.organizationId).exec(
      "CREATE TRIGGER fail_staging BEFORE INSERT ON environments WHEN NEW.name = 'staging' BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const [apps, environments] = [await countRows("apps"), await countRows("environments")];

    const response = await postApp(account.key, { app_name: "half-way" });

    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ detail: "Internal Server Error" });
    expect([await countRows("apps"), await countRows("environments")]).toEqual([apps, environments]);
    expect(errors).toHaveBeenCalledTimes(1);
    // The name is still free once the fault is gone.
    await databaseOf(account.organizationId).exec("DROP TRIGGER fail_staging");
    expect((await postApp(account.key, { app_name: "half-way" })).status).toBe(200);
  });
});

describe("an unexpected database error", () => {
  it("answers 500 with nothing internal in the body, and logs it", async () => {
    const appId = await createAppVia(account.key, { app_name: "broken-read" });
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    await databaseOf(account.organizationId).exec("ALTER TABLE environment_revisions RENAME TO environment_revisions_gone");
    try {
      const response = await getRevisions(account.key, appId, "production");
      expect(response.status).toBe(500);
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({ detail: "Internal Server Error" });
      expect(text).not.toMatch(/SELECT|environment_revisions|D1_ERROR|at /);
      expect(errors).toHaveBeenCalledTimes(1);
      expect(String(errors.mock.calls[0][0])).toContain("environment_revisions");
    } finally {
      await databaseOf(account.organizationId).exec("ALTER TABLE environment_revisions_gone RENAME TO environment_revisions");
    }
  });
});

/** A request whose D1 binding is the real one, instrumented; with the counter of its round trips. */
async function withFaults(instruments: Instruments, request: (db: D1Database) => Promise<Response>) {
  const { db, counter } = instrumentD1(databaseOf(account.organizationId), instruments);
  return { response: await request(db), trips: counter.trips };
}
const read = (appId: string, instruments: Instruments) =>
  withFaults(instruments, (db) =>
    getRevisions(account.key, appId, "production", { bindings: inPlaceOfShardFor(account.organizationId, db) }),
  );
const create = (name: string, instruments: Instruments) =>
  withFaults(instruments, (db) =>
    postApp(account.key, { app_name: name }, { bindings: inPlaceOfShardFor(account.organizationId, db) }),
  );

/** The apps of that name in the account's project, with the number of environments of each. */
const appsNamed = async (name: string) =>
  (
    await databaseOf(account.organizationId)
      .prepare(
        "SELECT a.id, COUNT(e.id) AS environments FROM apps a LEFT JOIN environments e ON e.app_id = a.id WHERE a.project_id = ? AND a.name = ? GROUP BY a.id",
      )
      .bind(account.projectId, name)
      .all<{ id: string; environments: number }>()
  ).results;

async function expectUnavailable(response: Response) {
  expect(response.status).toBe(503);
  expect(response.headers.get("Retry-After")).toBe("1");
  expect(await response.json()).toEqual({ detail: "Service temporarily unavailable" });
}

describe("transient D1 errors", () => {
  let appId: string;
  beforeAll(async () => {
    appId = await createAppVia(account.key, { app_name: "flaky" });
  });

  it("retries a read once, and answers as if nothing happened", async () => {
    const { response, trips } = await read(appId, { beforeTrip: failTrips([1]) });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { app_id: string }).app_id).toBe(appId);
    expect(trips).toBe(2);
  });

  it("answers 503 with Retry-After when the read fails again", async () => {
    const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    const { response, trips } = await read(appId, { beforeTrip: failTrips([1, 2]) });
    await expectUnavailable(response);
    expect(trips).toBe(2);
    expect(warnings).toHaveBeenCalled();
  });

  // The error is raised before the batch is sent: D1 never saw it. What this shows is that the service does not
  // retry a write itself (one round trip, no app), so the name stays free and the client's own retry creates it.
  it("does not retry a create whose batch never reached D1: 503, and the client's retry creates the app", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { response, trips } = await create("never-sent", { beforeTrip: failTrips([1]) });
    await expectUnavailable(response);
    expect(trips).toBe(1);
    expect(await appsNamed("never-sent")).toEqual([]);
    expect((await postApp(account.key, { app_name: "never-sent" })).status).toBe(200);
    expect(await appsNamed("never-sent")).toEqual([{ id: expect.any(String), environments: 3 }]);
  });

  // The batch commits in D1 and its answer is lost on the way back: the service cannot tell this from a write
  // that never happened, so it answers 503 too, and the client's retry finds the name taken.
  it("answers 503 when a create commits but its answer is lost; the retry gets 409, and there is one app", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { response, trips } = await create("answer-lost", { afterTrip: failTrips([1]) });
    await expectUnavailable(response);
    expect(trips).toBe(1);
    expect(await appsNamed("answer-lost")).toEqual([{ id: expect.any(String), environments: 3 }]);

    const retry = await postApp(account.key, { app_name: "answer-lost" });
    expect(retry.status).toBe(409);
    expect(await retry.json()).toEqual({ detail: "App with the same name already exists" });
    expect(await appsNamed("answer-lost")).toHaveLength(1);
  });

  it("answers 500, not 503, for an error D1 does not call transient, without retrying", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const { response, trips } = await read(appId, {
      beforeTrip: failTrips([1], "D1_ERROR: no such column: secret_column: SQLITE_ERROR"),
    });
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ detail: "Internal Server Error" });
    expect(text).not.toContain("secret_column");
    expect(trips).toBe(1);
    expect(errors).toHaveBeenCalledTimes(1);
  });
});

describe("a batch that fails in the middle", () => {
  it("rolls back the create whole: no app, no environment", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const before = [await countRows("apps"), await countRows("environments")];
    // Before the batch's last statement (after the app insert and the first environment inserts), one that breaks
    // a CHECK constraint.
    const { response } = await create("torn", {
      rewriteBatch: (statements, real) => [
        ...statements.slice(0, -1),
        real.prepare("UPDATE environments SET revision = -1 WHERE rowid = (SELECT MAX(rowid) FROM environments)"),
        ...statements.slice(-1),
      ],
    });
    expect(response.status).toBe(500);
    expect([await countRows("apps"), await countRows("environments")]).toEqual(before);
    expect(await appsNamed("torn")).toEqual([]);
  });
});

describe("a deploy or revert that fails half-way", () => {
  const deployBody = (appId: string) => ({
    variant_ref: { slug: "main" },
    environment_ref: { slug: "production" },
    application_ref: { id: appId },
  });

  async function deployedApp(name: string) {
    const appId = await createAppVia(account.key, { app_name: name });
    const added = await send("POST", "/variants/configs/add", {
      key: account.key,
      body: { application_ref: { id: appId }, variant_ref: { slug: "main" } },
    });
    expect(added.status).toBe(200);
    const first = await send("POST", "/variants/configs/deploy", { key: account.key, body: deployBody(appId) });
    expect(first.status).toBe(200);
    return { appId, revisionId: ((await first.json()) as { environment_ref: { id: string } }).environment_ref.id };
  }

  it("leaves no deployment, no environment revision and the record unmoved when the revision insert fails", async () => {
    const { appId, revisionId } = await deployedApp("deploy-half-way");
    await databaseOf(account.organizationId).exec(
      "CREATE TRIGGER fail_revisions BEFORE INSERT ON environment_revisions BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    vi.spyOn(console, "error").mockImplementation(() => {});
    const before = await snapshot();
    const deployed = await send("POST", "/variants/configs/deploy", { key: account.key, body: deployBody(appId) });
    const reverted = await send("POST", `/configs/deployment/${revisionId}/revert`, { key: account.key });
    expect([deployed.status, reverted.status]).toEqual([500, 500]);
    expect(await snapshot()).toEqual(before);
  });

  it("answers 503 when D1's transient error comes before the batch, and nothing is written", async () => {
    const { appId } = await deployedApp("deploy-transient");
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { db, counter } = instrumentD1(databaseOf(account.organizationId), { beforeTrip: failTrips([1]) });
    const before = await snapshot();
    const response = await send("POST", "/variants/configs/deploy", {
      key: account.key,
      body: deployBody(appId),
      bindings: inPlaceOfShardFor(account.organizationId, db),
    });
    expect(response.status).toBe(503);
    expect(counter.trips).toBe(1);
    expect(await snapshot()).toEqual(before);
  });
});

describe("an older SDK's save that fails half-way (its deploy to production fails after its commit)", () => {
  it("leaves neither the new revision nor any deployment behind", async () => {
    const appId = await createAppVia(account.key, { app_name: "save-half-way" });
    const save = (overwrite: boolean) =>
      send("POST", "/configs", {
        key: account.key,
        body: { base_id: appId, config_name: "main", parameters: { n: 1 }, overwrite },
      });
    expect((await save(false)).status).toBe(200);
    await databaseOf(account.organizationId).exec(
      "CREATE TRIGGER fail_revisions BEFORE INSERT ON environment_revisions BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    vi.spyOn(console, "error").mockImplementation(() => {});
    const before = await snapshot();

    const response = await save(true);

    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ detail: "Internal Server Error" });
    expect(await snapshot()).toEqual(before);
    await databaseOf(account.organizationId).exec("DROP TRIGGER fail_revisions");
    expect((await save(true)).status).toBe(200);
  });
});
