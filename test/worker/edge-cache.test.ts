import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { splitApp, startSplit } from "./apps/split-fixtures";
import {
  type Account,
  createAccount,
  createAppVia,
  deploy,
  expectError,
  issueKey,
  markKeyUsed,
  type RequestOptions,
  send,
} from "./fixtures";
import { failTrips } from "./instrumented-d1";
import { countedShards, databaseOf, shardNameFor } from "./pool";

/**
 * The start-up reads served from the isolate's memory (docs/EDGE-DELIVERY.md §1, §2) within one isolate, the test's:
 * the file's requests pass the bound (the pool's default is 0). What two isolates see of each other's writes is proved
 * with two `wrangler dev` processes in test/cli/edge-delivery.test.ts.
 */

const on = (seconds = 30, stale = 0): Partial<Env> => ({
  FRESHNESS_BOUND_SECONDS: String(seconds),
  STALE_IF_ERROR_SECONDS: String(stale),
});

/** An app with production running config `main` (deployed by the data layer, past the isolate), and its key's owner. */
async function deployedApp(owner: Account) {
  const name = `cached-${crypto.randomUUID().slice(0, 8)}`;
  const appId = await createAppVia(owner.key, { app_name: name });
  const { variantId } = await deploy(appId, "production", "main", owner);
  return { appId, name, variantId };
}

type Read = { name: string; method: "GET" | "POST"; path: string; body?: unknown };

/** The five start-up reads of one app's production (or its config `main`'s latest revision). */
const readsOf = ({ appId, name, variantId }: Awaited<ReturnType<typeof deployedApp>>): Read[] => [
  {
    name: "configs/fetch",
    method: "POST",
    path: "/variants/configs/fetch",
    body: { application_ref: { id: appId }, environment_ref: { slug: "production" } },
  },
  { name: "GET /configs", method: "GET", path: `/configs?base_id=${appId}&environment_name=production` },
  {
    name: "applications retrieve",
    method: "POST",
    path: "/applications/revisions/retrieve",
    body: { resolve: true, environment_ref: { slug: "production" }, key: `${name}.revision` },
  },
  {
    name: "workflows retrieve",
    method: "POST",
    path: "/workflows/revisions/retrieve",
    body: { workflow_ref: { id: appId }, workflow_variant_ref: { id: variantId } },
  },
  { name: "GET record", method: "GET", path: `/apps/${appId}/revisions/production` },
];

const sendRead = (read: Read, key: string, options: RequestOptions = {}) =>
  send(read.method, read.path, { key, body: read.body, ...options, bindings: { ...on(), ...options.bindings } });

/** What an answer is, byte for byte, with its receipt. */
async function seen(response: Response) {
  return {
    status: response.status,
    body: await response.text(),
    etag: response.headers.get("ETag"),
    age: response.headers.get("Age"),
    cacheStatus: response.headers.get("Cache-Status"),
    cacheControl: response.headers.get("Cache-Control"),
  };
}

/** Moves production to a new revision of `main` holding `params`, past the isolate (as another location's write). */
const commitAndDeployBehind = (owner: Account, appId: string, params: Record<string, unknown>) =>
  deploy(appId, "production", "main", owner, params);

let owner: Account;
beforeAll(async () => {
  owner = await createAccount();
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a hit", () => {
  it("answers the uncached read's status, body and ETag byte for byte, with Age and Cache-Status, for each of the five reads", async () => {
    const app = await deployedApp(owner);
    for (const read of readsOf(app)) {
      const uncached = await seen(await sendRead(read, owner.key, { bindings: on(0) }));
      const miss = await seen(await sendRead(read, owner.key));
      const hit = await seen(await sendRead(read, owner.key));
      expect(uncached.status, read.name).toBe(200);
      expect(uncached.etag, read.name).toMatch(/^"[^"]+"$/);
      expect(uncached, read.name).toEqual({ ...miss, cacheStatus: "app-management; fwd=bypass" });
      expect(miss, read.name).toEqual({ ...uncached, age: "0", cacheStatus: "app-management; fwd=miss; stored" });
      expect(hit, read.name).toEqual({
        ...uncached,
        age: "0",
        cacheStatus: expect.stringMatching(/^app-management; hit; ttl=(29|30)$/),
      });
      expect(hit.cacheControl).toBe("no-store");
    }
  });

  it("costs no round trip; concurrent misses share one", async () => {
    const app = await deployedApp(owner);
    const [read] = readsOf(app);
    await markKeyUsed(owner.key);
    const { bindings, trips } = countedShards();
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => sendRead(read, owner.key, { bindings })));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(trips()[shardNameFor(app.appId)]).toBe(1);
    expect((await sendRead(read, owner.key, { bindings })).headers.get("Cache-Status")).toMatch(/; hit; /);
    expect(trips()[shardNameFor(app.appId)]).toBe(1);
  });

  it("is never served past the bound: the next read confirms, and a change made meanwhile is answered", async () => {
    const app = await deployedApp(owner);
    const [read] = readsOf(app);
    const bindings = on(1);
    const before = await (await sendRead(read, owner.key, { bindings })).json<{ params: unknown }>();
    await commitAndDeployBehind(owner, app.appId, { changed: 1 });
    const within = await sendRead(read, owner.key, { bindings });
    expect(await within.json()).toEqual(before);
    await scheduler.wait(1_000);
    const after = await sendRead(read, owner.key, { bindings });
    expect(after.headers.get("Cache-Status")).toBe("app-management; fwd=miss; stored");
    expect((await after.json<{ params: unknown }>()).params).toEqual({ changed: 1 });
  });

  it("is refused at its key's expiry, not up to the bound later", async () => {
    const app = await deployedApp(owner);
    const [read] = readsOf(app);
    const expiresAt = Date.now() + 1_500;
    const key = await issueKey(owner.userId, owner.projectId, new Date(expiresAt).toISOString());
    expect((await sendRead(read, key)).status).toBe(200);
    const hit = await sendRead(read, key);
    expect(hit.headers.get("Cache-Status")).toMatch(/^app-management; hit; ttl=[01]$/);
    await scheduler.wait(expiresAt - Date.now());
    await expectError(await sendRead(read, key), 401, "Unauthorized");
  });

  it("is made for one key only: another key of the same user misses, and a revoked one is refused", async () => {
    const app = await deployedApp(owner);
    const other = await issueKey(owner.userId, owner.projectId);
    for (const read of readsOf(app)) {
      await sendRead(read, owner.key);
      expect((await sendRead(read, other)).headers.get("Cache-Status"), read.name).toBe("app-management; fwd=miss; stored");
    }
    const [read] = readsOf(app);
    await databaseOf(owner.projectId)
      .prepare("DELETE FROM api_keys WHERE key_hash IN (SELECT key_hash FROM api_keys WHERE user_id = ? AND prefix = ?)")
      .bind(owner.userId, other.split(".")[0])
      .run();
    expect((await sendRead(read, owner.key)).headers.get("Cache-Status")).toMatch(/; hit; /);
    await expectError(await sendRead(read, other, { headers: { "Cache-Control": "no-cache" } }), 401, "Unauthorized");
  });

  it("keeps a split's arm: a hit answers its Config-Split and ETag, and 304 to If-None-Match with it", async () => {
    const appId = await splitApp(owner);
    await startSplit(owner.key, appId, "production", { weight: 5000 });
    const [read] = readsOf({ appId, name: "", variantId: "" });
    const headers = { "Targeting-Key": "user-1" };
    const miss = await sendRead(read, owner.key, { headers });
    const armOf = (response: Response) => [response.headers.get("Config-Split"), response.headers.get("ETag")];
    expect(armOf(miss)[0]).toMatch(/; weight=5000; reason=split$/);
    const hit = await sendRead(read, owner.key, { headers });
    expect([hit.headers.get("Cache-Status"), ...armOf(hit)]).toEqual([expect.stringMatching(/; hit; /), ...armOf(miss)]);
    const notModified = await sendRead(read, owner.key, { headers: { ...headers, "If-None-Match": String(armOf(miss)[1]) } });
    expect([
      notModified.status,
      await notModified.text(),
      notModified.headers.get("Cache-Status"),
      ...armOf(notModified),
    ]).toEqual([304, "", expect.stringMatching(/; hit; /), ...armOf(miss)]);
  });

  it("tells Targeting-Key values apart", async () => {
    const app = await deployedApp(owner);
    const [read] = readsOf(app);
    await sendRead(read, owner.key, { headers: { "Targeting-Key": "user-1" } });
    const other = await sendRead(read, owner.key, { headers: { "Targeting-Key": "user-2" } });
    expect(other.headers.get("Cache-Status")).toBe("app-management; fwd=miss; stored");
  });
});

describe("reading fresh", () => {
  it("Cache-Control no-cache or max-age=0 reads at once and refreshes the entry; a malformed one is ignored", async () => {
    const app = await deployedApp(owner);
    const [read] = readsOf(app);
    await sendRead(read, owner.key);
    for (const [n, cacheControl] of ["no-cache", "max-age=0", "no-store, max-age=0"].entries()) {
      await commitAndDeployBehind(owner, app.appId, { n });
      const stale = await sendRead(read, owner.key, { headers: { "Cache-Control": "max-age=abc, no-cach" } });
      expect(stale.headers.get("Cache-Status")).toMatch(/; hit; /);
      const fresh = await sendRead(read, owner.key, { headers: { "Cache-Control": cacheControl } });
      expect(fresh.headers.get("Cache-Status")).toBe("app-management; fwd=request; stored");
      expect((await fresh.json<{ params: unknown }>()).params).toEqual({ n });
      const refreshed = await sendRead(read, owner.key);
      expect(refreshed.headers.get("Cache-Status")).toMatch(/; hit; /);
      expect((await refreshed.json<{ params: unknown }>()).params).toEqual({ n });
    }
  });

  it("a bookmark newer than the entry's reads at once", async () => {
    const app = await deployedApp(owner);
    const [read] = readsOf(app);
    const first = await sendRead(read, owner.key);
    const shard = shardNameFor(app.appId);
    expect(first.headers.get("x-d1-bookmark")).toMatch(new RegExp(`${shard}:`));
    const session = databaseOf(app.appId).withSession("first-primary");
    await session.prepare("UPDATE apps SET updated_at = updated_at WHERE id = ?").bind(app.appId).run();
    await commitAndDeployBehind(owner, app.appId, { newer: true });
    await session.prepare("SELECT 1").run();
    const newer = `${shard}:${session.getBookmark()}`;
    const older = first.headers.get("x-d1-bookmark") as string;
    expect((await sendRead(read, owner.key, { headers: { "x-d1-bookmark": older } })).headers.get("Cache-Status")).toMatch(
      /; hit; /,
    );
    const fresh = await sendRead(read, owner.key, { headers: { "x-d1-bookmark": newer } });
    expect(fresh.headers.get("Cache-Status")).toBe("app-management; fwd=request; stored");
    expect((await fresh.json<{ params: unknown }>()).params).toEqual({ newer: true });
  });
});

describe("the isolate's own writes", () => {
  it("drop its entries before the write answers, which says when it is live everywhere", async () => {
    const app = await deployedApp(owner);
    const reads = readsOf(app);
    const before: string[] = [];
    for (const read of reads) before.push(await (await sendRead(read, owner.key)).text());
    const committed = await send("POST", "/variants/configs/commit", {
      key: owner.key,
      body: { config: { application_ref: { id: app.appId }, variant_ref: { slug: "main" }, params: { own: 1 } } },
      bindings: on(2, 3),
    });
    expect(committed.status).toBe(200);
    expect(committed.headers.get("Live-Everywhere-By")).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const sent = Date.now();
    const deployed = await send("POST", "/variants/configs/deploy", {
      key: owner.key,
      body: { application_ref: { id: app.appId }, variant_ref: { slug: "main" }, environment_ref: { slug: "production" } },
      bindings: on(2, 3),
    });
    const after = Date.now();
    expect(deployed.status).toBe(200);
    const by = deployed.headers.get("Live-Everywhere-By") as string;
    expect(by).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(by)).toBeGreaterThanOrEqual(sent + 5_000);
    expect(Date.parse(by)).toBeLessThanOrEqual(after + 5_000);
    for (const [i, read] of reads.entries()) {
      const answer = await sendRead(read, owner.key);
      expect(answer.headers.get("Cache-Status"), read.name).toBe("app-management; fwd=miss; stored");
      expect(await answer.text(), read.name).not.toBe(before[i]);
    }
    const events = await (await send("GET", "/events?limit=1", { key: owner.key })).json<{
      events: { type: string; data: { live_everywhere_by: string } }[];
    }>();
    expect(events.events[0].type).toBe("environment.deployed");
    expect(Date.parse(events.events[0].data.live_everywhere_by)).toBeGreaterThanOrEqual(sent + 5_000);
    expect(Date.parse(events.events[0].data.live_everywhere_by)).toBeLessThanOrEqual(Date.parse(by));
  });

  it("a refused write answers no Live-Everywhere-By", async () => {
    const app = await deployedApp(owner);
    const refused = await send("POST", "/variants/configs/deploy", {
      key: owner.key,
      body: { application_ref: { id: app.appId }, variant_ref: { slug: "absent" }, environment_ref: { slug: "production" } },
    });
    expect(refused.status).toBe(404);
    expect(refused.headers.get("Live-Everywhere-By")).toBeNull();
  });
});

describe("refusals and errors", () => {
  it("a refusal is never kept: each costs its round trip", async () => {
    const app = await deployedApp(owner);
    const absent: Read = { name: "absent", method: "GET", path: `/configs?base_id=${app.appId}&environment_name=qa` };
    await markKeyUsed(owner.key);
    const { bindings, trips } = countedShards();
    for (let i = 0; i < 3; i++) {
      const answer = await sendRead(absent, owner.key, { bindings });
      expect(answer.status).toBe(404);
      expect(answer.headers.get("Cache-Status")).toBe("app-management; fwd=miss");
    }
    expect(trips()[shardNameFor(app.appId)]).toBe(3);
  });

  it("a failed confirmation answers 503; with STALE_IF_ERROR_SECONDS the entry is served, marked stale", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const app = await deployedApp(owner);
    const [read] = readsOf(app);
    const kept = await (await sendRead(read, owner.key, { bindings: on(1, 30) })).text();
    await scheduler.wait(1_000);
    const failing = countedShards({ beforeTrip: failTrips("all") }).bindings;
    await expectError(
      await sendRead(read, owner.key, { bindings: { ...failing, ...on(1, 0) } }),
      503,
      "Service temporarily unavailable",
    );
    const stale = await sendRead(read, owner.key, { bindings: { ...failing, ...on(1, 30) } });
    expect(stale.status).toBe(200);
    expect(stale.headers.get("Cache-Status")).toBe("app-management; fwd=stale; detail=shard-unavailable");
    expect(stale.headers.get("Age")).toBe("1");
    expect(stale.headers.get("Retry-After")).toBeNull();
    expect(await stale.text()).toBe(kept);
  });

  it("a bad setting: every request is answered 500, and the log names it", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const bad: Partial<Env>[] = [
      ...["abc", "61", "-1", "", "5.5", " 5", "1e1"].map((value) => ({ FRESHNESS_BOUND_SECONDS: value })),
      ...["301", "x"].map((value) => ({ STALE_IF_ERROR_SECONDS: value })),
    ];
    for (const bindings of bad) {
      await expectError(await send("GET", "/health", { bindings }), 500, "Internal Server Error");
      await expectError(await send("GET", "/apps", { key: owner.key, bindings }), 500, "Internal Server Error");
    }
    const logged = errors.mock.calls.map(([line]) => JSON.parse(String(line)).error as string);
    expect(logged).toHaveLength(bad.length * 2);
    logged.forEach((line, i) => {
      const [name] = Object.keys(bad[Math.floor(i / 2)]);
      expect(line).toMatch(new RegExp(`^Error: ${name} \\(wrangler.toml \\[vars\\]\\) must be a whole number of seconds`));
    });
    expect((await send("GET", "/health", { bindings: on(60, 300) })).status).toBe(200);
  });
});
