import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createAccount, createAppVia, getRevisions, hashApiKey, postApp, send } from "./fixtures";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("logs", () => {
  it("never contain a key, its secret, its hash or SQL text, for successful and failing requests", async () => {
    const account = await createAccount();
    const appId = await createAppVia(account.key, { app_name: "logged" });
    const lines: string[] = [];
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        lines.push(args.map(String).join(" "));
      });
    }
    const wrong = `${account.key.slice(0, 9)}${"0".repeat(64)}`;
    const statuses = [
      (await getRevisions(account.key, appId, "production")).status,
      (await postApp(account.key, { app_name: "logged-too" })).status,
      (await postApp(account.key, { app_name: "" })).status,
      (await postApp(account.key, { app_name: "logged" })).status,
      (await send("GET", `/apps/${appId}/revisions/production`, { key: wrong })).status,
      (await send("GET", `/apps/${appId}/revisions/production`, { authorization: `Bearer ${account.key}x` })).status,
    ];
    await env.DB.exec("ALTER TABLE environment_revisions RENAME TO environment_revisions_gone");
    try {
      statuses.push((await getRevisions(account.key, appId, "production")).status);
    } finally {
      await env.DB.exec("ALTER TABLE environment_revisions_gone RENAME TO environment_revisions");
    }
    expect(statuses).toEqual([200, 200, 422, 409, 401, 401, 500]);
    expect(lines.length).toBeGreaterThanOrEqual(statuses.length);

    const secret = account.key.split(".")[1];
    const forbidden = [secret, "0".repeat(64), await hashApiKey(account.key), await hashApiKey(wrong)];
    for (const line of lines) {
      for (const value of forbidden) expect(line).not.toContain(value);
      expect(line).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE)\b/);
    }
  });
});
