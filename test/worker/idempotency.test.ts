import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, createAccount, createAppVia, createTeam, hashApiKey, send, worker } from "./fixtures";
import { snapshot } from "./harness";
import { failTrips, instrumentD1 } from "./instrumented-d1";

/*
 * Idempotency-Key on every POST (IETF httpapi idempotency-key draft): a retry replays the first answer and writes
 * nothing again; the key is the API key's own, for 24 hours.
 */

let account: Account;
const keyed = (key: string, headers: Record<string, string> = {}) => ({ "Idempotency-Key": key, ...headers });
const createApp = (key: string, body: unknown, idempotencyKey?: string, bindings?: Partial<Env>) =>
  send("POST", "/apps", { key, body, headers: idempotencyKey ? keyed(idempotencyKey) : {}, bindings });

const appsNamed = async (name: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM apps WHERE name = ?").bind(name).first("n")) as number;

beforeAll(async () => {
  account = await createAccount();
});

describe("a retry with the same key", () => {
  it("replays the first answer (status and body) with Idempotent-Replayed, and creates nothing again", async () => {
    const first = await createApp(account.key, { app_name: "once" }, "create-once");
    expect(first.status).toBe(200);
    expect(first.headers.get("Idempotent-Replayed")).toBeNull();
    const body = await first.text();
    const before = await snapshot();
    const retry = await createApp(account.key, { app_name: "once" }, "create-once");
    expect(retry.status).toBe(200);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await retry.text()).toBe(body);
    expect(await snapshot()).toEqual(before);
    expect(await appsNamed("once")).toBe(1);
  });

  it("replays a config commit: the same revision, not a new one", async () => {
    const appId = await createAppVia(account.key, { app_name: "committed-once" });
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "main" } };
    expect((await send("POST", "/variants/configs/add", { key: account.key, body: ref })).status).toBe(200);
    const commit = () =>
      send("POST", "/variants/configs/commit", {
        key: account.key,
        body: { ...ref, params: { a: 1 } },
        headers: keyed("commit-1"),
      });
    const first = await commit();
    const retry = await commit();
    expect([first.status, retry.status]).toEqual([200, 200]);
    expect(await retry.json()).toEqual(await first.json());
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    const revisions = await send("POST", "/variants/configs/fetch", { key: account.key, body: ref });
    expect(((await revisions.json()) as { variant_ref: { version: number } }).variant_ref.version).toBe(2);
  });

  it("is scoped to the API key: another key may use the same Idempotency-Key for its own request", async () => {
    const other = await createAccount();
    expect((await createApp(account.key, { app_name: "mine" }, "shared-key")).status).toBe(200);
    const theirs = await createApp(other.key, { app_name: "theirs" }, "shared-key");
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await appsNamed("theirs")).toBe(1);
  });
});

describe("a key used for another request", () => {
  it("answers 422 in the FastAPI shape, naming the header, and writes nothing", async () => {
    expect((await createApp(account.key, { app_name: "first-use" }, "reused")).status).toBe(200);
    const before = await snapshot();
    for (const [method, path, body] of [
      ["POST", "/apps", { app_name: "second-use" }],
      ["POST", "/variants/configs/add", { application_ref: { slug: "first-use" }, variant_ref: { slug: "x" } }],
    ] as const) {
      const response = await send(method, path, { key: account.key, body, headers: keyed("reused") });
      expect(response.status).toBe(422);
      expect(await response.json()).toEqual({
        detail: [expect.objectContaining({ loc: ["header", "Idempotency-Key"], type: "value_error" })],
      });
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe("answers that changed nothing", () => {
  it("are not kept: the same request with the same key is evaluated again", async () => {
    const owner = await createAccount();
    const member = await createAccount();
    const team = await createTeam(owner, [[member, "viewer"]]);
    const body = { app_name: "after-promotion", organization_id: team.organizationId };
    expect((await createApp(member.key, body, "promoted")).status).toBe(403);
    await env.DB.prepare("UPDATE organization_members SET role = 'editor' WHERE organization_id = ? AND user_id = ?")
      .bind(team.organizationId, member.userId)
      .run();
    const again = await createApp(member.key, body, "promoted");
    expect(again.status).toBe(200);
    expect(again.headers.get("Idempotent-Replayed")).toBeNull();
  });
});

describe("a malformed key", () => {
  it.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["a control character", "a\tb"],
    ["non-ASCII", "clé"],
  ])("is a 400 (%s), before anything is written", async (_, idempotencyKey) => {
    const before = await snapshot();
    const refused = await send("POST", "/apps", {
      key: account.key,
      body: { app_name: "never" },
      headers: { "Idempotency-Key": idempotencyKey },
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/Idempotency-Key/);
    expect(await snapshot()).toEqual(before);
  });

  it("accepts the draft's quoted form, the same key as the bare one", async () => {
    const first = await createApp(account.key, { app_name: "quoted" }, '"quoted-key"');
    const bare = await createApp(account.key, { app_name: "quoted" }, "quoted-key");
    expect([first.status, bare.status]).toEqual([200, 200]);
    expect(bare.headers.get("Idempotent-Replayed")).toBe("true");
  });

  it("is a 401 still when the API key is bad", async () => {
    const response = await send("POST", "/apps", {
      authorization: `${account.key.slice(0, 9)}${"0".repeat(64)}`,
      body: { app_name: "x" },
      headers: { "Idempotency-Key": "" },
    });
    expect(response.status).toBe(401);
  });
});

describe("the realistic failure: the write commits, the answer is lost", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("a create: the retry gets the original 200 and the original id, and exactly one app exists", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { db } = instrumentD1(env.DB, { afterTrip: failTrips("all") });
    const lost = await createApp(account.key, { app_name: "lost-answer" }, "lost-1", { DB: db });
    expect(lost.status).toBe(503);
    expect(await appsNamed("lost-answer")).toBe(1);
    const retry = await createApp(account.key, { app_name: "lost-answer" }, "lost-1");
    expect(retry.status).toBe(200);
    const { app_id } = (await retry.json()) as { app_id: string };
    const stored = await env.DB.prepare("SELECT id FROM apps WHERE name = 'lost-answer'").first("id");
    expect(app_id).toBe(stored);
    expect(await appsNamed("lost-answer")).toBe(1);
  });

  it("a deploy: the retry gets the original revision, and exactly one environment revision exists", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const appId = await createAppVia(account.key, { app_name: "lost-deploy" });
    expect(
      (
        await send("POST", "/variants/configs/add", {
          key: account.key,
          body: { application_ref: { id: appId }, variant_ref: { slug: "main" } },
        })
      ).status,
    ).toBe(200);
    const deploy = { variant_ref: { slug: "main" }, environment_ref: { slug: "production" }, application_ref: { id: appId } };
    const { db } = instrumentD1(env.DB, { afterTrip: failTrips("all") });
    const lost = await send("POST", "/variants/configs/deploy", {
      key: account.key,
      body: deploy,
      headers: keyed("deploy-1"),
      bindings: { DB: db },
    });
    expect(lost.status).toBe(503);
    const retry = await send("POST", "/variants/configs/deploy", { key: account.key, body: deploy, headers: keyed("deploy-1") });
    expect(retry.status).toBe(200);
    const { environment_ref } = (await retry.json()) as { environment_ref: { id: string; version: number } };
    expect(environment_ref.version).toBe(1);
    const { results } = await env.DB.prepare(
      "SELECT r.id FROM environment_revisions r JOIN environments e ON e.id = r.environment_id WHERE e.app_id = ?",
    )
      .bind(appId)
      .all();
    expect(results).toEqual([{ id: environment_ref.id }]);
  });
});

describe("a retry while the first is still being answered", () => {
  it("is a 409, and the request runs once", async () => {
    const [first, second] = await Promise.all([
      createApp(account.key, { app_name: "in-flight" }, "in-flight-1"),
      createApp(account.key, { app_name: "in-flight" }, "in-flight-1"),
    ]);
    expect([first.status, second.status].sort()).toEqual([200, 409]);
    expect(await appsNamed("in-flight")).toBe(1);
  });
});

describe("keeping keys", () => {
  it("keeps a key 24 hours; an expired one is free again, and the scheduled handler sweeps expired ones", async () => {
    expect((await createApp(account.key, { app_name: "kept" }, "kept-1")).status).toBe(200);
    const owner = await hashApiKey(account.key);
    const claim = await env.DB.prepare(
      "SELECT (julianday(expires_at) - julianday(created_at)) * 24 AS hours FROM idempotency_keys WHERE key_hash = ? AND idempotency_key = 'kept-1'",
    )
      .bind(owner)
      .first<{ hours: number }>();
    expect(claim?.hours).toBeCloseTo(24, 3);

    await env.DB.prepare("UPDATE idempotency_keys SET expires_at = '2000-01-01T00:00:00.000Z' WHERE key_hash = ?")
      .bind(owner)
      .run();
    const reused = await createApp(account.key, { app_name: "kept-again" }, "kept-1");
    expect(reused.status).toBe(200);
    expect(reused.headers.get("Idempotent-Replayed")).toBeNull();

    await env.DB.prepare("UPDATE idempotency_keys SET expires_at = '2000-01-01T00:00:00.000Z' WHERE key_hash = ?")
      .bind(owner)
      .run();
    const context = createExecutionContext();
    await worker.scheduled?.(createScheduledController(), env, context);
    await waitOnExecutionContext(context);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM idempotency_keys WHERE key_hash = ?").bind(owner).first("n")).toBe(0);
  });
});
