import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, countRows, createAccount, createAppVia, getRevisions, postApp } from "./fixtures";

// Faults are injected into the real D1 with SQL (a failing trigger, a missing table), never by mocking it.
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
