import { afterEach, describe, expect, it, vi } from "vitest";
import { createAccount, createAppVia, getRevisions, hashApiKey, postApp, REQUEST_LOG_BURST_MS, send } from "./fixtures";
import { databaseOf } from "./pool";

/** A console argument as the text it stands for: objects as JSON (String() would make them "[object Object]"). */
const asText = (arg: unknown) =>
  typeof arg === "string" ? arg : arg instanceof Error ? `${arg.message}\n${arg.stack}` : JSON.stringify(arg);

afterEach(() => {
  vi.restoreAllMocks();
});

describe("logs", () => {
  it("never contain a key, its secret, its hash or SQL text, for successful and failing requests", async () => {
    const account = await createAccount();
    const appId = await createAppVia(account.key, { app_name: "logged" });
    await scheduler.wait(REQUEST_LOG_BURST_MS); // the entry of the create above is written before the spies
    const lines: string[] = [];
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        lines.push(args.map(asText).join(" "));
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
    await databaseOf(account.organizationId).exec("ALTER TABLE environment_revisions RENAME TO environment_revisions_gone");
    try {
      statuses.push((await getRevisions(account.key, appId, "production")).status);
    } finally {
      await databaseOf(account.organizationId).exec("ALTER TABLE environment_revisions_gone RENAME TO environment_revisions");
    }
    expect(statuses).toEqual([200, 200, 422, 409, 401, 401, 500]);
    await scheduler.wait(REQUEST_LOG_BURST_MS); // the request log's entries are written after the answers
    const requestIds = lines.join("\n").match(/"request_id":"[^"]+"/g) ?? [];
    expect(new Set(requestIds).size, "every request logged").toBe(statuses.length);

    const secret = account.key.split(".")[1];
    const forbidden = [secret, "0".repeat(64), await hashApiKey(account.key), await hashApiKey(wrong)];
    for (const line of lines) {
      for (const value of forbidden) expect(line).not.toContain(value);
      expect(line).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE)\b/);
    }
  });
});
