import { beforeAll, describe, expect, it } from "vitest";
import { type Account, CALLER_CTE, countRows, createAccount, createAppVia, issueKey, send } from "./fixtures";
import { databaseOf } from "./pool";

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "guarded" });
});

const revisionsPath = () => `/apps/${appId}/revisions/production`;

async function expectUnauthorized(response: Response) {
  expect(response.status).toBe(401);
  expect(await response.json()).toEqual({ detail: "Unauthorized" });
  expect(response.headers.get("WWW-Authenticate")).toMatch(/^ApiKey /);
  expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
}

describe("API keys", () => {
  it.each([
    ["ApiKey <key>", (key: string) => `ApiKey ${key}`],
    ["Bearer <key>", (key: string) => `Bearer ${key}`],
    ["the bare key", (key: string) => key],
    ["a lower-case scheme", (key: string) => `bearer ${key}`],
  ])("accepts %s on both endpoints", async (_, format) => {
    const authorization = format(account.key);
    expect((await send("GET", revisionsPath(), { authorization })).status).toBe(200);
    const created = await send("POST", "/apps", { authorization, body: { app_name: `form ${authorization.slice(0, 6)}` } });
    expect(created.status).toBe(200);
  });

  const secret = (key: string) => key.split(".")[1];
  const malformed: [string, () => string | undefined][] = [
    ["no Authorization header", () => undefined],
    ["an empty header", () => ""],
    ["another scheme", () => `Basic ${account.key}`],
    ["a scheme and nothing else", () => "ApiKey"],
    ["a short prefix", () => `abc.${secret(account.key)}`],
    ["a short secret", () => account.key.slice(0, -2)],
    ["an upper-case secret", () => account.key.toUpperCase()],
    ["extra words", () => `ApiKey ${account.key} extra`],
  ];

  it.each(malformed)("rejects %s with 401", async (_, header) => {
    await expectUnauthorized(await send("GET", revisionsPath(), { authorization: header() }));
  });

  it("rejects an unknown prefix with 401", async () => {
    await expectUnauthorized(await send("GET", revisionsPath(), { key: `Zz9Zz9Zz.${secret(account.key)}` }));
  });

  it("rejects a known prefix with the wrong secret with 401", async () => {
    const wrong = `${account.key.slice(0, 9)}${"0".repeat(64)}`;
    await expectUnauthorized(await send("GET", revisionsPath(), { key: wrong }));
  });

  it("rejects an expired key and accepts one not yet expired", async () => {
    const expired = await issueKey(account.userId, account.projectId, new Date(Date.now() - 60_000).toISOString());
    const live = await issueKey(account.userId, account.projectId, new Date(Date.now() + 3_600_000).toISOString());
    await expectUnauthorized(await send("GET", revisionsPath(), { key: expired }));
    expect((await send("GET", revisionsPath(), { key: live })).status).toBe(200);
  });

  it("rejects a revoked key", async () => {
    const key = await issueKey(account.userId, account.projectId);
    expect((await send("GET", revisionsPath(), { key })).status).toBe(200);
    await databaseOf(key)
      .prepare("UPDATE api_keys SET revoked_at = ? WHERE prefix = ?")
      .bind(new Date().toISOString(), key.slice(0, 8))
      .run();
    await expectUnauthorized(await send("GET", revisionsPath(), { key }));
  });

  it("checks the key before any answer goes out: a route that reads no data, a validation error, a success", async () => {
    const key = await issueKey(account.userId, account.projectId);
    const answers = async () => [
      await send("GET", "/workspaces/roles", { key }),
      await send("GET", "/workspaces/permissions", { key }),
      await send("POST", "/apps", { key, body: { app_name: "" } }),
      await send("GET", revisionsPath(), { key }),
    ];
    expect((await answers()).map((response) => response.status)).toEqual([200, 200, 422, 200]);
    await databaseOf(key)
      .prepare("UPDATE api_keys SET revoked_at = ? WHERE prefix = ?")
      .bind(new Date().toISOString(), key.slice(0, 8))
      .run();
    for (const response of await answers()) await expectUnauthorized(response);
  });

  it("stores only the prefix and a SHA-256 of the key", async () => {
    const rows = await databaseOf(account.organizationId)
      .prepare("SELECT * FROM api_keys WHERE user_id = ?")
      .bind(account.userId)
      .all();
    const stored = JSON.stringify(rows.results);
    expect(stored).not.toContain(secret(account.key));
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(account.key)));
    const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    expect(rows.results.some((row) => row.key_hash === hex && row.prefix === account.key.slice(0, 8))).toBe(true);
  });

  it("checks the key before the body: a bad key with a bad body is 401, and nothing is written", async () => {
    const before = await countRows("apps");
    for (const options of [
      { authorization: undefined, body: { app_name: "" } },
      { authorization: "nonsense", rawBody: "{not json", headers: { "Content-Type": "application/json" } },
      { authorization: undefined, rawBody: "x".repeat(20_000), headers: { "Content-Type": "text/plain" } },
    ]) {
      await expectUnauthorized(await send("POST", "/apps", options));
    }
    await expectUnauthorized(await send("GET", "/apps/not-a-uuid/revisions/x", {}));
    expect(await countRows("apps")).toBe(before);
  });

  it("never echoes the key in a response", async () => {
    const wrong = `${account.key.slice(0, 9)}${"1".repeat(64)}`;
    for (const response of [
      await send("GET", revisionsPath(), { key: wrong }),
      await send("POST", "/apps", { key: account.key, body: { app_name: "" } }),
    ]) {
      const text = `${[...response.headers].join("\n")}\n${await response.text()}`;
      expect(text).not.toContain(secret(account.key));
      expect(text).not.toContain("1".repeat(64));
    }
  });
});

describe("headers of authenticated routes", () => {
  it("every answer of the apps routes is no-store and nosniff, errors and 304 included", async () => {
    const etag = (await send("GET", revisionsPath(), { key: account.key })).headers.get("ETag") ?? "";
    const responses = [
      await send("GET", revisionsPath(), { key: account.key }),
      await send("GET", revisionsPath(), { key: account.key, headers: { "If-None-Match": etag } }),
      await send("POST", "/apps", { key: account.key, body: { app_name: "headers" } }),
      await send("POST", "/apps", { key: account.key, body: { app_name: "" } }),
      await send("GET", revisionsPath(), {}),
      await send("GET", revisionsPath(), { authorization: "malformed" }),
    ];
    expect(responses.map((response) => response.status)).toEqual([200, 304, 200, 422, 401, 401]);
    for (const response of responses) {
      expect(response.headers.get("Cache-Control")).toBe("no-store");
      expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
    }
  });
});

describe("no timing oracle on prefixes", () => {
  it("looks keys up by their hash's index alone, so an unknown prefix costs what a wrong secret costs", async () => {
    const plan = await databaseOf(account.organizationId)
      .prepare(`EXPLAIN QUERY PLAN WITH ${CALLER_CTE} SELECT user_id FROM caller`)
      .bind("0".repeat(64), "Zz9Zz9Zz", null, null, null, null, null)
      .all<{ detail: string }>();
    const details = plan.results.map((row) => row.detail).join("\n");
    expect(details).toMatch(/api_keys USING INDEX api_keys_by_hash \(key_hash=\?\)/);
    expect(details).not.toMatch(/prefix/);
  });
});
