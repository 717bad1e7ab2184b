import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, deploy, getRevisions, postApp, type RequestOptions, send } from "./fixtures";
import { instrumentD1 } from "./instrumented-d1";
import { databaseOf, inPlaceOfShardFor } from "./pool";

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "polled" });
});

const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

const list = (environment: string, headers: Record<string, string> = {}, options: RequestOptions = {}) =>
  getRevisions(account.key, appId, environment, { ...options, headers });

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

// Locally there are no replicas, so a read sees every write whatever the session: what is checked is where the
// service starts each D1 session (the argument of withSession, recorded on the real binding).
describe("D1 bookmarks (read replicas)", () => {
  async function withSessions(request: (options: RequestOptions) => Promise<Response>) {
    const { db, counter } = instrumentD1(databaseOf(account.organizationId));
    const response = await request({ bindings: inPlaceOfShardFor(account.organizationId, db) });
    return { response, sessions: counter.sessions };
  }
  let names = 0;
  const create = (headers: Record<string, string>) => (options: RequestOptions) =>
    postApp(account.key, { app_name: `bookmarked ${++names}` }, { ...options, headers });
  const read = (headers: Record<string, string>) => (options: RequestOptions) => list("production", headers, options);

  it("starts a create at the primary and a read anywhere when the client sends no bookmark, and returns one", async () => {
    const created = await withSessions(create({}));
    expect([created.response.status, created.sessions]).toEqual([200, ["first-primary"]]);
    expect(created.response.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
    const listed = await withSessions(read({}));
    expect([listed.response.status, listed.sessions]).toEqual([200, ["first-unconstrained"]]);
    expect(listed.response.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
  });

  it("starts the session at the bookmark the client sends back, which lets a read after a create see it on any replica", async () => {
    const created = await postApp(account.key, { app_name: "read-your-writes" });
    const bookmark = created.headers.get("x-d1-bookmark") ?? "";
    expect(bookmark).toMatch(BOOKMARK);
    const { app_id } = (await created.json()) as { app_id: string };

    const { response, sessions } = await withSessions((options) =>
      getRevisions(account.key, app_id, "production", { ...options, headers: { "x-d1-bookmark": bookmark } }),
    );
    expect([response.status, sessions]).toEqual([200, [bookmark]]);
    expect(response.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
    expect((await withSessions(create({ "x-d1-bookmark": bookmark }))).sessions).toEqual([bookmark]);
  });

  it("serves the config fetch by environment from anywhere, and from the client's bookmark after its deploy, which it sees", async () => {
    const app = { application_ref: { id: await createAppVia(account.key, { app_name: "fetched at the edge" }) } };
    const fetchProduction = (headers: Record<string, string>) => (options: RequestOptions) =>
      send("POST", "/variants/configs/fetch", {
        ...options,
        key: account.key,
        headers,
        body: { ...app, environment_ref: { slug: "production" } },
      });
    expect(
      (await send("POST", "/variants/configs/add", { key: account.key, body: { ...app, variant_ref: { slug: "main" } } })).status,
    ).toBe(200);
    const deployed = await send("POST", "/variants/configs/deploy", {
      key: account.key,
      body: { ...app, variant_ref: { slug: "main" }, environment_ref: { slug: "production" } },
    });
    expect(deployed.status).toBe(200);
    const bookmark = deployed.headers.get("x-d1-bookmark") ?? "";
    expect(bookmark).toMatch(BOOKMARK);
    const { environment_ref } = (await deployed.json()) as { environment_ref: { id: string } };

    const anywhere = await withSessions(fetchProduction({}));
    expect([anywhere.response.status, anywhere.sessions]).toEqual([200, ["first-unconstrained"]]);
    const after = await withSessions(fetchProduction({ "x-d1-bookmark": bookmark }));
    expect([after.response.status, after.sessions]).toEqual([200, [bookmark]]);
    expect(((await after.response.json()) as { environment_ref: { id: string } }).environment_ref.id).toBe(environment_ref.id);
    expect(after.response.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
  });

  it("ignores a bookmark that is not one: the documented start instead, and a bookmark of its own back", async () => {
    const real = (await list("production")).headers.get("x-d1-bookmark") ?? "";
    for (const garbage of ["garbage", "first-primary", "first-unconstrained", "x".repeat(2000), `${real}'--`, `${real}x`]) {
      const listed = await withSessions(read({ "x-d1-bookmark": garbage }));
      expect([listed.response.status, listed.sessions], garbage).toEqual([200, ["first-unconstrained"]]);
      expect(listed.response.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
      const created = await withSessions(create({ "x-d1-bookmark": garbage }));
      expect([created.response.status, created.sessions], garbage).toEqual([200, ["first-primary"]]);
    }
  });
});
