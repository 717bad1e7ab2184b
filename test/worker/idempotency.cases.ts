import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  deploy,
  expectError,
  expectJson,
  hashApiKey,
  issueKey,
  send,
  worker,
} from "./fixtures";
import { snapshot } from "./harness";
import { failTrips, instrumentD1 } from "./instrumented-d1";
import { allShardNames, countOnShards, databaseOf, inPlaceOfShardFor, shardNameFor } from "./pool";

/*
 * Idempotency-Key on every POST (IETF httpapi idempotency-key draft): a retry replays the first answer and writes
 * nothing again; the key is the API key's own, for 24 hours.
 */

let account: Account;
const keyed = (key: string, headers: Record<string, string> = {}) => ({ "Idempotency-Key": key, ...headers });
const createApp = (key: string, body: unknown, idempotencyKey?: string, bindings?: Partial<Env>) =>
  send("POST", "/apps", { key, body, headers: idempotencyKey ? keyed(idempotencyKey) : {}, bindings });

/** The shard that does not hold what `id` names (the pool of the tests has two). */
const otherShard = (id: string) => allShardNames().filter((shard) => shard !== shardNameFor(id))[0];

const appsNamed = async (name: string) => countOnShards("SELECT COUNT(*) AS n FROM apps WHERE name = ?", name);

beforeAll(async () => {
  account = await createAccount();
});

/**
 * The real D1, whose round trips wait until `release()`: a request that reaches its first query (`reached`) stays in
 * flight, past the Idempotency-Key middleware's in-flight check, for as long as the test wants.
 */
function heldD1() {
  let reach = () => {};
  let release = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const { db } = instrumentD1(databaseOf(account.organizationId), {
    beforeTrip: () => {
      reach();
      return released;
    },
  });
  return { db, reached, release };
}

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

  it("is scoped to the API key: another key of the same project may use the same Idempotency-Key for its own request", async () => {
    // The same shard and bucket: the two keys' claims and requests share their tables, only the API key tells them apart.
    const other = await issueKey(account.userId, account.projectId);
    expect((await createApp(account.key, { app_name: "mine" }, "shared-key")).status).toBe(200);
    const theirs = await createApp(other, { app_name: "theirs" }, "shared-key");
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await appsNamed("theirs")).toBe(1);
  });

  it("is scoped to the API key across shards too: a key homed on the other shard may use it for its own request", async () => {
    const other = await createAccount(undefined, otherShard(account.organizationId));
    expect((await createApp(account.key, { app_name: "mine-across" }, "shared-across")).status).toBe(200);
    const theirs = await createApp(other.key, { app_name: "theirs-across" }, "shared-across");
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await appsNamed("theirs-across")).toBe(1);
  });
});

describe("a replay after what the first request made was renamed or deleted", () => {
  const renameApp = async (appId: string, name: string) =>
    expect((await send("PATCH", `/apps/${appId}`, { key: account.key, body: { app_name: name } })).status).toBe(200);
  const deleteApp = async (appId: string) =>
    expect((await send("DELETE", `/apps/${appId}`, { key: account.key })).status).toBe(200);

  it("a create replays its first answer as it was: the name as first sent, and a 200 for an app deleted since", async () => {
    const create = () => createApp(account.key, { app_name: "replayed-create" }, "replayed-create");
    const first = await create();
    expect(first.status).toBe(200);
    const body = await first.text();
    const { app_id } = JSON.parse(body) as { app_id: string };
    await renameApp(app_id, "renamed-since");
    const afterRename = await create();
    expect([afterRename.status, afterRename.headers.get("Idempotent-Replayed")]).toEqual([200, "true"]);
    expect(await afterRename.text()).toBe(body);
    await deleteApp(app_id);
    const before = await snapshot();
    const afterDelete = await create();
    expect([afterDelete.status, afterDelete.headers.get("Idempotent-Replayed")]).toEqual([200, "true"]);
    expect(await afterDelete.text()).toBe(body);
    expect(await snapshot()).toEqual(before);
  });

  it("a config write (add, commit, fork) reads its revision again: the app's current name; 404 once the app is deleted", async () => {
    const appId = await createAppVia(account.key, { app_name: "replayed-configs" });
    const writes = [
      ["add", { application_ref: { id: appId }, variant_ref: { slug: "main" } }],
      ["commit", { application_ref: { id: appId }, variant_ref: { slug: "main" }, params: { a: 1 } }],
      ["fork", { application_ref: { id: appId }, variant_ref: { slug: "main", version: 1 } }],
    ] as const;
    const write = (action: string, body: unknown) =>
      send("POST", `/variants/configs/${action}`, { key: account.key, body, headers: keyed(`replayed-${action}`) });
    const firsts = new Map<string, Record<string, unknown>>();
    for (const [action, body] of writes) firsts.set(action, await expectJson(await write(action, body)));
    await renameApp(appId, "replayed-configs-renamed");
    for (const [action, body] of writes) {
      const replay = await write(action, body);
      expect(replay.headers.get("Idempotent-Replayed"), action).toBe("true");
      const first = firsts.get(action) as { application_ref: Record<string, unknown> };
      expect(await expectJson(replay)).toEqual({
        ...first,
        application_ref: { ...first.application_ref, slug: "replayed-configs-renamed" },
      });
    }
    await deleteApp(appId);
    const before = await snapshot();
    for (const [action, body] of writes) {
      const replay = await write(action, body);
      expect(replay.headers.get("Idempotent-Replayed"), action).toBeNull();
      await expectError(replay, 404, "Config not found.");
    }
    expect(await snapshot()).toEqual(before);
  });

  it("a deploy or revert reads its environment revision again: the app's current name; 404 once the app is deleted", async () => {
    const appId = await createAppVia(account.key, { app_name: "replayed-deploys" });
    const { variantId } = await deploy(appId, "staging", "main", account);
    const { revisionId } = await deploy(appId, "production", "main", account);
    const deploys = [
      [
        "/variants/configs/deploy",
        { application_ref: { id: appId }, variant_ref: { slug: "main" }, environment_ref: { slug: "development" } },
      ],
      ["/environments/deploy", { environment_name: "staging", variant_id: variantId }],
      [`/configs/deployment/${revisionId}/revert`, undefined],
    ] as const;
    const post = (path: string, body: unknown) =>
      send("POST", path, { key: account.key, body, headers: keyed(`replayed-${path}`) });
    const firsts = new Map<string, unknown>();
    for (const [path, body] of deploys) firsts.set(path, await expectJson(await post(path, body)));
    await renameApp(appId, "replayed-deploys-renamed");
    for (const [path, body] of deploys) {
      const replay = await post(path, body);
      expect(replay.headers.get("Idempotent-Replayed"), path).toBe("true");
      const first = firsts.get(path) as { application_ref?: Record<string, unknown> } | null | string;
      const expected =
        first && typeof first === "object"
          ? { ...first, application_ref: { ...first.application_ref, slug: "replayed-deploys-renamed" } }
          : first;
      expect(await expectJson(replay), path).toEqual(expected);
    }
    await deleteApp(appId);
    const before = await snapshot();
    const details = ["App environment not found", "App environment not found", "Deployment revision not found"];
    for (const [i, [path, body]] of deploys.entries()) {
      const replay = await post(path, body);
      expect(replay.headers.get("Idempotent-Replayed"), path).toBeNull();
      await expectError(replay, 404, details[i]);
    }
    expect(await snapshot()).toEqual(before);
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

describe("one Idempotency-Key across shards (one API key, organizations on both)", () => {
  // The README's demo: the user's own organization on the key's shard, a team on the other.
  let user: Account;
  let team: Awaited<ReturnType<typeof createTeam>>;
  const here = (name: string) => ({ app_name: name });
  const there = (name: string) => ({ app_name: name, organization_id: team.organizationId });
  beforeAll(async () => {
    user = await createAccount();
    team = await createTeam(user, [], otherShard(user.organizationId));
  });

  it("names one request: used on one shard, another request with it on the other is a 422 that writes nothing", async () => {
    const first = await createApp(user.key, here("home-first"), "across-1");
    expect(first.status).toBe(200);
    const body = await first.text();
    const before = await snapshot();
    const elsewhere = await createApp(user.key, there("then-there"), "across-1");
    expect(elsewhere.status).toBe(422);
    expect(await elsewhere.json()).toEqual({
      detail: [
        {
          loc: ["header", "Idempotency-Key"],
          msg: "Value error, this Idempotency-Key was used for another request (another method, path or body)",
          type: "value_error",
        },
      ],
    });
    expect(await snapshot()).toEqual(before);
    const retry = await createApp(user.key, here("home-first"), "across-1");
    expect([retry.status, retry.headers.get("Idempotent-Replayed"), await retry.text()]).toEqual([200, "true", body]);
  });

  it("used first on the other shard, its retry replays there and another request on the key's shard is a 422", async () => {
    const first = await createApp(user.key, there("there-first"), "across-2");
    expect(first.status).toBe(200);
    const body = await first.text();
    const before = await snapshot();
    const retry = await createApp(user.key, there("there-first"), "across-2");
    expect([retry.status, retry.headers.get("Idempotent-Replayed"), await retry.text()]).toEqual([200, "true", body]);
    expect((await createApp(user.key, here("then-home"), "across-2")).status).toBe(422);
    expect(await snapshot()).toEqual(before);
    expect(await appsNamed("there-first")).toBe(1);
  });

  it("a request across shards that made nothing keeps nothing: the key is free for another request", async () => {
    expect((await createApp(user.key, there("taken-there"))).status).toBe(200);
    const before = await snapshot();
    const refused = await createApp(user.key, there("taken-there"), "across-3");
    expect(refused.status).toBe(409);
    expect(await snapshot()).toEqual(before);
    const another = await createApp(user.key, here("free-again"), "across-3");
    expect([another.status, another.headers.get("Idempotent-Replayed")]).toEqual([200, null]);
  });
});

describe("answers that changed nothing", () => {
  it("are not kept: the same request with the same key is evaluated again", async () => {
    const owner = await createAccount();
    const member = await createAccount();
    const team = await createTeam(owner, [[member, "viewer"]]);
    const body = { app_name: "after-promotion", organization_id: team.organizationId };
    expect((await createApp(member.key, body, "promoted")).status).toBe(403);
    await databaseOf(team.organizationId)
      .prepare("UPDATE organization_members SET role = 'editor' WHERE organization_id = ? AND user_id = ?")
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
    const { db } = instrumentD1(databaseOf(account.organizationId), { afterTrip: failTrips("all") });
    const lost = await createApp(
      account.key,
      { app_name: "lost-answer" },
      "lost-1",
      inPlaceOfShardFor(account.organizationId, db),
    );
    expect(lost.status).toBe(503);
    expect(await appsNamed("lost-answer")).toBe(1);
    const retry = await createApp(account.key, { app_name: "lost-answer" }, "lost-1");
    expect(retry.status).toBe(200);
    const { app_id } = (await retry.json()) as { app_id: string };
    const stored = await databaseOf(account.organizationId).prepare("SELECT id FROM apps WHERE name = 'lost-answer'").first("id");
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
    const { db } = instrumentD1(databaseOf(account.organizationId), { afterTrip: failTrips("all") });
    const lost = await send("POST", "/variants/configs/deploy", {
      key: account.key,
      body: deploy,
      headers: keyed("deploy-1"),
      bindings: inPlaceOfShardFor(account.organizationId, db),
    });
    expect(lost.status).toBe(503);
    const retry = await send("POST", "/variants/configs/deploy", { key: account.key, body: deploy, headers: keyed("deploy-1") });
    expect(retry.status).toBe(200);
    const { environment_ref } = (await retry.json()) as { environment_ref: { id: string; version: number } };
    expect(environment_ref.version).toBe(1);
    const { results } = await databaseOf(appId)
      .prepare("SELECT r.id FROM environment_revisions r JOIN environments e ON e.id = r.environment_id WHERE e.app_id = ?")
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

describe("a claim refused as taken while no claim of it can be read", () => {
  afterEach(async () => {
    await databaseOf(account.organizationId).exec("DROP TRIGGER IF EXISTS claim_always_taken");
    vi.restoreAllMocks();
  });

  it("is tried twice, then ends: a 500 with nothing internal, logged, after four round trips, and nothing written", async () => {
    // As if another API key's row held the key: every claim fails on the UNIQUE constraint, and none is ever found.
    await databaseOf(account.organizationId).exec(
      "CREATE TRIGGER claim_always_taken BEFORE INSERT ON idempotency_keys BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: idempotency_keys.key_hash, idempotency_keys.idempotency_key'); END",
    );
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const before = await snapshot();
    // A retry without a bound would run on: the 21st round trip fails, so that such a run ends too (with 21 trips).
    const { db, counter } = instrumentD1(databaseOf(account.organizationId), {
      beforeTrip: (trip) => {
        if (trip > 20) throw new Error("more than 20 round trips");
      },
    });
    const response = await createApp(
      account.key,
      { app_name: "never-claimed" },
      "always-taken",
      inPlaceOfShardFor(account.organizationId, db),
    );
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ detail: "Internal Server Error" });
    expect(text).not.toMatch(/idempotency|UNIQUE|D1_ERROR|claim/i);
    // Each try: the claimed batch (refused), then the read of the claim (none).
    expect(counter.trips).toBe(4);
    expect(errors).toHaveBeenCalledTimes(1);
    expect(await snapshot()).toEqual(before);
  });
});

describe("two API keys sending the same Idempotency-Key at the same moment", () => {
  it("are two requests, not a retry: both 200, each its own app", async () => {
    // Another key of the same project: the same shard and bucket.
    const other = await issueKey(account.userId, account.projectId);
    const held = heldD1();
    const first = createApp(
      account.key,
      { app_name: "same-moment-mine" },
      "same-moment",
      inPlaceOfShardFor(account.organizationId, held.db),
    );
    // The first is in flight (past the in-flight check, at its write) while the second is sent and answered.
    await Promise.race([held.reached, first]);
    const second = await createApp(other, { app_name: "same-moment-theirs" }, "same-moment");
    held.release();
    const answers = [await first, second];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers.map((answer) => answer.headers.get("Idempotent-Replayed"))).toEqual([null, null]);
    expect([await appsNamed("same-moment-mine"), await appsNamed("same-moment-theirs")]).toEqual([1, 1]);
  });
});

describe("keeping keys", () => {
  it("keeps a key 24 hours; an expired one is free again, and the scheduled handler sweeps expired ones", async () => {
    expect((await createApp(account.key, { app_name: "kept" }, "kept-1")).status).toBe(200);
    const owner = await hashApiKey(account.key);
    const claim = await databaseOf(account.organizationId)
      .prepare(
        "SELECT (julianday(expires_at) - julianday(created_at)) * 24 AS hours FROM idempotency_keys WHERE key_hash = ? AND idempotency_key = 'kept-1'",
      )
      .bind(owner)
      .first<{ hours: number }>();
    expect(claim?.hours).toBeCloseTo(24, 3);

    // The claim, and the key's request beside it (kept on the key's home: the same shard here).
    const expireAll = () =>
      databaseOf(account.organizationId).batch(
        ["idempotency_keys", "idempotency_key_requests"].map((table) =>
          databaseOf(account.organizationId)
            .prepare(`UPDATE ${table} SET expires_at = '2000-01-01T00:00:00.000Z' WHERE key_hash = ?`)
            .bind(owner),
        ),
      );
    await expireAll();
    const reused = await createApp(account.key, { app_name: "kept-again" }, "kept-1");
    expect(reused.status).toBe(200);
    expect(reused.headers.get("Idempotent-Replayed")).toBeNull();

    await expireAll();
    const context = createExecutionContext();
    await worker.scheduled?.(createScheduledController({ cron: "23 * * * *" }), env, context);
    await waitOnExecutionContext(context);
    expect(
      await databaseOf(account.organizationId)
        .prepare(
          "SELECT (SELECT COUNT(*) FROM idempotency_keys WHERE key_hash = ?1) + (SELECT COUNT(*) FROM idempotency_key_requests WHERE key_hash = ?1) AS n",
        )
        .bind(owner)
        .first("n"),
    ).toBe(0);
  });

  it("the sweep drops expired claims only: live ones stay as they were, and their retries still replay", async () => {
    const sweeper = await createAccount();
    const owner = await hashApiKey(sweeper.key);
    const bodies = new Map<string, string>();
    for (const name of ["fresh", "expiring", "expired"]) {
      const response = await createApp(sweeper.key, { app_name: `swept-${name}` }, `sweep-${name}`);
      expect(response.status).toBe(200);
      bodies.set(name, await response.text());
    }
    const setExpiry = (key: string, expiresAt: Date) =>
      databaseOf(sweeper.organizationId)
        .prepare("UPDATE idempotency_keys SET expires_at = ? WHERE key_hash = ? AND idempotency_key = ?")
        .bind(expiresAt.toISOString(), owner, key)
        .run();
    await setExpiry("sweep-expiring", new Date(Date.now() + 60_000));
    await setExpiry("sweep-expired", new Date("2000-01-01T00:00:00.000Z"));
    const claims = (await snapshot()).idempotency_keys;
    const live = claims.filter((claim) => String(claim.expires_at) > new Date().toISOString());
    expect(claims.filter((claim) => claim.key_hash === owner).length).toBe(3);
    const liveOfOwner = live.filter((claim) => claim.key_hash === owner).map((claim) => claim.idempotency_key);
    expect(liveOfOwner.sort()).toEqual(["sweep-expiring", "sweep-fresh"]);

    const context = createExecutionContext();
    await worker.scheduled?.(createScheduledController({ cron: "23 * * * *" }), env, context);
    await waitOnExecutionContext(context);

    expect((await snapshot()).idempotency_keys).toEqual(live);
    for (const name of ["fresh", "expiring"]) {
      const retry = await createApp(sweeper.key, { app_name: `swept-${name}` }, `sweep-${name}`);
      expect(retry.status).toBe(200);
      expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
      expect(await retry.text()).toBe(bodies.get(name));
    }
  });
});
