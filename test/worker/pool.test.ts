import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, ATTEMPTS_PER_RUN, createAccount, expectJson, postApp, SHARDS_PER_RUN, send } from "./fixtures";
import { bucketFor, databaseOf, shardNameFor, shards } from "./pool";
import { deliverMessages, newInbox, received, recordingQueue, subscribe } from "./webhooks/webhook-fixtures";

/*
 * The pool of D1 databases (docs/SHARDING.md) with its one shard: SHARD_MAP as the Worker reads it, the shard a write
 * hands its events over with, and the pool's schema (migrations/0012_pool.sql, migrations-directory/).
 */

let account: Account;

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {});
  account = await createAccount();
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.spyOn(console, "log").mockImplementation(() => {});
});

/** The reasons logged (console.error) for refusing a SHARD_MAP, in order. */
const refusals = (errors: { mock: { calls: unknown[][] } }) =>
  errors.mock.calls
    .map(([line]) => JSON.parse(String(line)) as { message?: string; reason?: string })
    .filter((entry) => entry.message === "no request can be served: SHARD_MAP or OPEN_SHARDS is invalid")
    .map((entry) => entry.reason);

describe("SHARD_MAP", () => {
  it.each([
    ["", "SHARD_MAP is empty"],
    ["shard zero", 'SHARD_MAP entry "shard" is not SHARD_<n>=<first>-<last>'],
    ["SHARD_0=0-1022", "SHARD_MAP names no shard for bucket 1023"],
    ["SHARD_0=0-99 SHARD_0=200-1023", "SHARD_MAP names no shard for bucket 100-199"],
    ["SHARD_0=0-1023 SHARD_0=7", "SHARD_MAP names bucket 7 twice (SHARD_0, SHARD_0)"],
    ["SHARD_0=0-1024", 'SHARD_MAP entry "SHARD_0=0-1024": buckets are 0-1023, first to last'],
    ["SHARD_0=9-3", 'SHARD_MAP entry "SHARD_0=9-3": buckets are 0-1023, first to last'],
    ["SHARD_0=0-511 SHARD_7=512-1023", "SHARD_MAP names SHARD_7, which is no D1 binding of the Worker"],
    ["DIRECTORY=0-1023", 'SHARD_MAP entry "DIRECTORY=0-1023" is not SHARD_<n>=<first>-<last>'],
  ])("%j: every request is a bare 500, the reason logged once", async (value, reason) => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const bindings = { SHARD_MAP: value };
    const answers = [
      await send("GET", "/health", { bindings }),
      await send("GET", "/apps", { key: account.key, bindings }),
      await postApp(account.key, { app_name: "never-made" }, { bindings }),
    ];
    expect(await Promise.all(answers.map(async (answer) => [answer.status, await answer.json()]))).toEqual(
      Array(3).fill([500, { detail: "Internal Server Error" }]),
    );
    expect(refusals(errors)).toEqual([reason]);
    expect(await databaseOf(account.organizationId).prepare("SELECT COUNT(*) AS n FROM apps").first("n")).toBe(0);
  });

  it.each(["SHARD_0=0-1023", " SHARD_0=0-511\tSHARD_0=512-1022  SHARD_0=1023 "])("%j is the whole pool", async (value) => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const bindings = { SHARD_MAP: value };
    expect((await send("GET", "/health", { bindings })).status).toBe(200);
    expect((await send("GET", "/apps", { key: account.key, bindings })).status).toBe(200);
    expect(refusals(errors)).toEqual([]);
  });
});

describe("the delivery queue", () => {
  it("a write hands its events over naming its shard", async () => {
    await subscribe(account.key, { url: newInbox(), events: ["app.created"] });
    const handedOff = recordingQueue();
    const app = await expectJson<{ app_id: string }>(
      await postApp(account.key, { app_name: "handed-off" }, { bindings: { WEBHOOK_DELIVERIES: handedOff.queue } }),
    );
    const event = await databaseOf(app.app_id)
      .prepare("SELECT id FROM events WHERE type = 'app.created' AND app_id = ?")
      .bind(app.app_id)
      .first("id");
    expect(handedOff.messages()).toEqual([{ body: { shard: shardNameFor(account.organizationId), events: [event] } }]);
  });

  it("serves a message naming its shard, and drops one naming no shard of the pool (the sweep finds its deliveries)", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    await subscribe(me.key, { url: inbox, events: ["app.created"] });
    const handedOff = recordingQueue();
    await postApp(me.key, { app_name: "delivered" }, { bindings: { WEBHOOK_DELIVERIES: handedOff.queue } });
    const [message] = handedOff.messages();
    const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    const dropped = await deliverMessages([{ ...message.body, shard: "SHARD_9" }]);
    expect([dropped.ackAll, await received(inbox)]).toEqual([true, []]);
    expect(warnings.mock.calls.map(([line]) => JSON.parse(String(line)))).toEqual([
      { level: "warn", message: "delivery message for no shard of the pool dropped", shard: "SHARD_9" },
    ]);
    await deliverMessages([message.body]);
    expect((await received(inbox)).length).toBe(1);
  });

  it("a run stays within the Free plan's 50 subrequests with the declared pool: a queue batch, and the sweep", () => {
    // webhooks/delivery.ts: ATTEMPTS_PER_RUN fetches, 2 D1 round trips per shard served, one queue send.
    const subrequests = (shardsServed: number) => ATTEMPTS_PER_RUN + 2 * shardsServed + 1;
    expect(subrequests(SHARDS_PER_RUN)).toBeLessThanOrEqual(50);
    expect(subrequests(shards().length)).toBeLessThanOrEqual(50);
  });
});

describe("the pool's schema", () => {
  it("the directory holds users, memberships and bucket moves", async () => {
    const { results } = await env.DIRECTORY.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name <> 'd1_migrations' ORDER BY name",
    ).all<{ name: string }>();
    expect(results.map(({ name }) => name)).toEqual(["bucket_moves", "memberships", "users"]);
  });

  it("a shard refuses any write tripping a fence: the whole batch aborts with 'bucket is moving'", async () => {
    const db = databaseOf(account.organizationId);
    await expect(
      db.batch([
        db.prepare("UPDATE organizations SET name = 'fenced' WHERE id = ?").bind(account.organizationId),
        db.prepare("INSERT INTO fence_trips (bucket) VALUES (0)"),
      ]),
    ).rejects.toThrow(/bucket is moving/);
    expect(await db.prepare("SELECT name FROM organizations WHERE id = ?").bind(account.organizationId).first("name")).not.toBe(
      "fenced",
    );
  });

  it("an Idempotency-Key claim is in its resource's bucket, and needs no key row on its shard", async () => {
    const response = await postApp(account.key, { app_name: "claimed" }, { headers: { "Idempotency-Key": "pool-claim" } });
    const { app_id } = await expectJson<{ app_id: string }>(response);
    const db = databaseOf(app_id);
    expect(
      await db.prepare("SELECT result_id, bucket FROM idempotency_keys WHERE idempotency_key = 'pool-claim'").first(),
    ).toEqual({ result_id: app_id, bucket: bucketFor(app_id) });
    expect((await db.prepare("SELECT * FROM pragma_foreign_key_list('idempotency_keys')").all()).results).toEqual([]);
  });
});
