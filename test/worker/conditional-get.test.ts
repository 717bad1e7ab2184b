import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, deploy, postApp, send } from "./fixtures";

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "polled" });
});

const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

const list = (environment: string, headers: Record<string, string> = {}) =>
  send("GET", `/apps/${appId}/revisions/${environment}`, { key: account.key, headers });

describe("conditional GET", () => {
  it("answers 304 with no body for the current ETag, and 200 again once the record changes", async () => {
    const first = await list("production");
    const etag = first.headers.get("ETag");
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await list("production")).headers.get("ETag")).toBe(etag);

    const unchanged = await list("production", { "If-None-Match": etag ?? "" });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe("");
    expect(unchanged.headers.get("ETag")).toBe(etag);

    await deploy(appId, "production", "main", account);
    const changed = await list("production", { "If-None-Match": etag ?? "" });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("ETag")).not.toBe(etag);
    expect(((await changed.json()) as { revision: number }).revision).toBe(1);
  });

  it("gives each environment its own ETag and ignores ETags that do not match", async () => {
    const staging = (await list("staging")).headers.get("ETag");
    const development = (await list("development")).headers.get("ETag");
    expect(staging).not.toBe(development);
    expect((await list("staging", { "If-None-Match": development ?? "" })).status).toBe(200);
    expect((await list("staging", { "If-None-Match": `"other", ${staging}` })).status).toBe(304);
  });

  it("does not let an ETag stand in for the key", async () => {
    const etag = (await list("production")).headers.get("ETag") ?? "";
    const response = await send("GET", `/apps/${appId}/revisions/production`, { headers: { "If-None-Match": etag } });
    expect(response.status).toBe(401);
  });
});

describe("D1 bookmarks (read replicas)", () => {
  it("returns the bookmark of a create, and a read that presents it sees the write", async () => {
    const created = await postApp(account.key, { app_name: "read-your-writes" });
    expect(created.status).toBe(200);
    const bookmark = created.headers.get("x-d1-bookmark");
    expect(bookmark).toMatch(BOOKMARK);
    const { app_id } = (await created.json()) as { app_id: string };

    const read = await send("GET", `/apps/${app_id}/revisions/production`, {
      key: account.key,
      headers: { "x-d1-bookmark": bookmark ?? "" },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get("x-d1-bookmark")).toBeTruthy();
  });

  it("returns a bookmark on reads without one", async () => {
    expect((await list("production")).headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
  });

  it("ignores a bookmark that is not one, instead of passing it to D1 or echoing it", async () => {
    for (const garbage of ["garbage", "first-primary", "x".repeat(2000)]) {
      const response = await list("production", { "x-d1-bookmark": garbage });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
    }
  });
});
