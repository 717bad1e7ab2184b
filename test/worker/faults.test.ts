import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, countRows, createAccount, createAppVia, getRevisions, postApp } from "./fixtures";
import { fetchWithDb, instrumentD1 } from "./instrumented-d1";

// Faults are injected into the real D1: with SQL (a failing trigger, a missing table), or by a wrapper around
// the real binding that throws D1's own transient errors or slips a failing statement into a batch.
let account: Account;
beforeAll(async () => {
  account = await createAccount();
});

afterEach(async () => {
  await env.DB.exec("DROP TRIGGER IF EXISTS fail_staging");
  vi.restoreAllMocks();
});

describe("a create that fails half-way", () => {
  it("leaves no app and no environment behind", async () => {
    await env.DB.exec(
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
    await env.DB.exec("DROP TRIGGER fail_staging");
    expect((await postApp(account.key, { app_name: "half-way" })).status).toBe(200);
  });
});

describe("an unexpected database error", () => {
  it("answers 500 with nothing internal in the body, and logs it", async () => {
    const appId = await createAppVia(account.key, { app_name: "broken-read" });
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    await env.DB.exec("ALTER TABLE environment_revisions RENAME TO environment_revisions_gone");
    try {
      const response = await getRevisions(account.key, appId, "production");
      expect(response.status).toBe(500);
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({ detail: "Internal Server Error" });
      expect(text).not.toMatch(/SELECT|environment_revisions|D1_ERROR|at /);
      expect(errors).toHaveBeenCalledTimes(1);
      expect(String(errors.mock.calls[0][0])).toContain("environment_revisions");
    } finally {
      await env.DB.exec("ALTER TABLE environment_revisions_gone RENAME TO environment_revisions");
    }
  });
});

const TRANSIENT = "D1_ERROR: Network connection lost.";
const failTrips =
  (trips: number[], message = TRANSIENT) =>
  (trip: number) => {
    if (trips.includes(trip)) throw new Error(message);
  };

describe("transient D1 errors", () => {
  let appId: string;
  beforeAll(async () => {
    appId = await createAppVia(account.key, { app_name: "flaky" });
  });

  it("retries a read once, and answers as if nothing happened", async () => {
    const { db, counter } = instrumentD1(env.DB, { beforeTrip: failTrips([1]) });
    const response = await fetchWithDb(db, "GET", `/apps/${appId}/revisions/production`, account.key);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { app_id: string }).app_id).toBe(appId);
    expect(counter.trips).toBe(2);
  });

  it("answers 503 with Retry-After when the read fails again", async () => {
    const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    const { db, counter } = instrumentD1(env.DB, { beforeTrip: failTrips([1, 2]) });
    const response = await fetchWithDb(db, "GET", `/apps/${appId}/revisions/production`, account.key);
    expect(response.status).toBe(503);
    expect(response.headers.get("Retry-After")).toBe("1");
    expect(await response.json()).toEqual({ detail: "Service temporarily unavailable" });
    expect(counter.trips).toBe(2);
    expect(warnings).toHaveBeenCalled();
  });

  it("does not retry a create: 503, and nothing written", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const before = [await countRows("apps"), await countRows("environments")];
    const { db, counter } = instrumentD1(env.DB, { beforeTrip: failTrips([1]) });
    const response = await fetchWithDb(db, "POST", "/apps", account.key, '{"app_name":"not-retried"}');
    expect(response.status).toBe(503);
    expect(response.headers.get("Retry-After")).toBe("1");
    expect(counter.trips).toBe(1);
    expect([await countRows("apps"), await countRows("environments")]).toEqual(before);
  });

  it("answers 500, not 503, for an error D1 does not call transient, without retrying", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const { db, counter } = instrumentD1(env.DB, {
      beforeTrip: failTrips([1], "D1_ERROR: no such column: secret_column: SQLITE_ERROR"),
    });
    const response = await fetchWithDb(db, "GET", `/apps/${appId}/revisions/production`, account.key);
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ detail: "Internal Server Error" });
    expect(text).not.toContain("secret_column");
    expect(counter.trips).toBe(1);
    expect(errors).toHaveBeenCalledTimes(1);
  });
});

describe("a batch that fails in the middle", () => {
  it("rolls back the create whole: no app, no environment", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const before = [await countRows("apps"), await countRows("environments")];
    // After the app insert and one environment insert, a statement that breaks a CHECK constraint.
    const { db } = instrumentD1(env.DB, {
      rewriteBatch: (statements, real) => [
        ...statements.slice(0, 2),
        real.prepare("UPDATE environments SET revision = -1 WHERE rowid = (SELECT MAX(rowid) FROM environments)"),
        ...statements.slice(2),
      ],
    });
    const response = await fetchWithDb(db, "POST", "/apps", account.key, '{"app_name":"torn"}');
    expect(response.status).toBe(500);
    expect([await countRows("apps"), await countRows("environments")]).toEqual(before);
    const named = await env.DB.prepare("SELECT COUNT(*) AS n FROM apps WHERE name = 'torn'").first<{ n: number }>();
    expect(named?.n).toBe(0);
  });
});
