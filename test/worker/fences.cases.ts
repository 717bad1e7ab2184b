import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  BASE_URL,
  createAccount,
  expectError,
  expectJson,
  hashApiKey,
  type IssuedInvitation,
  invite,
  postApp,
  send,
  worker,
} from "./fixtures";
import { fingerprint } from "./harness";
import { bucketFor, databaseOf, shardNameFor, shards } from "./pool";
import {
  deliverMessages,
  losingQueue,
  newInbox,
  received,
  recordingQueue,
  runCron,
  subscribe,
  timePasses,
} from "./webhooks/webhook-fixtures";

/**
 * docs/SHARDING.md §5: while its bucket is fenced (being moved between shards), a write to an organization is refused
 * whole with a 503 and `Retry-After: 30`, nothing written; its reads go on, and other buckets' writes too.
 */

const FENCED = { detail: "Service temporarily unavailable" };

let owner: Account;
let organizationId: string;
let workspaceId: string;
let bucket: number;
/** A key of the fenced organization's default project: its prefix carries the bucket. */
let key: string;
let appId: string;
let invitation: IssuedInvitation;

const fence = (state: "moving" | "incoming" | "moved") =>
  databaseOf(organizationId).prepare("INSERT INTO bucket_fences (bucket, state) VALUES (?, ?)").bind(bucket, state).run();

const liftFence = () => databaseOf(organizationId).prepare("DELETE FROM bucket_fences WHERE bucket = ?").bind(bucket).run();

const main = () => ({ application_ref: { id: appId }, variant_ref: { slug: "main" } });

/** Writes to the fenced organization, of every kind of writer: as its key (with an Idempotency-Key too), and keyless. */
const WRITES: Record<string, () => Promise<Response>> = {
  "POST /apps": () => send("POST", "/apps", { key, body: { app_name: "made-after-the-fence" } }),
  "POST /apps with an Idempotency-Key": () =>
    send("POST", "/apps", { key, body: { app_name: "claimed" }, headers: { "Idempotency-Key": "fenced-claim" } }),
  "a config commit": () => send("POST", "/variants/configs/commit", { key, body: { ...main(), params: { fenced: true } } }),
  "a deploy": () =>
    send("POST", "/variants/configs/deploy", { key, body: { ...main(), environment_ref: { slug: "production" } } }),
  "an organization update": () => send("PUT", `/organizations/${organizationId}`, { key, body: { name: "renamed" } }),
  "a key creation": () => send("POST", `/keys?workspace_id=${workspaceId}`, { key }),
  "a webhook creation": () =>
    send("POST", "/webhooks", { key, body: { organization_id: organizationId, url: newInbox(), events: ["app.created"] } }),
  "an invitation accepted without a key": () =>
    send("POST", `/organizations/${organizationId}/workspaces/${workspaceId}/invite/accept?project_id=${invitation.project_id}`, {
      authorization: "",
      body: { token: invitation.token },
    }),
};

beforeAll(async () => {
  owner = await createAccount();
  // A bucket at random among those of the owner's key's shard: now and then the legacy one or the owner's personal
  // organization's, whose writes must go on; another organization then.
  for (let attempt = 0; attempt < 5 && (!bucket || bucket === bucketFor(owner.organizationId)); attempt++) {
    const made = await expectJson<{ id: string; workspaces: string[] }>(
      await send("POST", "/organizations", { key: owner.key, body: { name: `fenced ${attempt}`, owner: owner.userId } }),
    );
    [organizationId, workspaceId, bucket] = [made.id, made.workspaces[0], bucketFor(made.id)];
  }
  expect(bucket).toBeGreaterThan(0);
  expect(bucket).not.toBe(bucketFor(owner.organizationId));
  key = await expectJson<string>(await send("POST", `/keys?workspace_id=${workspaceId}`, { key: owner.key }));
  ({ app_id: appId } = await expectJson<{ app_id: string }>(
    await send("POST", "/apps", { key, body: { app_name: "before-the-fence" } }),
  ));
  await expectJson(await send("POST", "/variants/configs/add", { key, body: main() }));
  const email = `fenced-${crypto.randomUUID()}@example.com`;
  invitation = await expectJson<IssuedInvitation>(await invite(key, organizationId, workspaceId, email, "editor"));
});

describe("a fenced bucket", () => {
  afterEach(liftFence);

  it("refuses every write to its organizations with a 503 and Retry-After: 30, writing nothing; lifted, the same writes succeed", async () => {
    await fence("moving");
    for (const [name, write] of Object.entries(WRITES)) {
      const before = await fingerprint();
      const response = await write();
      expect([name, response.status, response.headers.get("Retry-After"), await response.json()]).toEqual([
        name,
        503,
        "30",
        FENCED,
      ]);
      expect(await fingerprint(), name).toEqual(before);
    }
    await liftFence();
    for (const [name, write] of Object.entries(WRITES)) {
      const response = await write();
      expect([name, response.status], await response.clone().text()).toEqual([name, 200]);
      // The claim refused with its write was never made: the retry runs as a first request, not a replay.
      expect(response.headers.get("Idempotent-Replayed"), name).toBeNull();
    }
  });

  it.each(["moving", "incoming", "moved"] as const)("in state %s refuses writes", async (state) => {
    await fence(state);
    const before = await fingerprint();
    const response = await WRITES["POST /apps"]();
    expect([response.status, response.headers.get("Retry-After"), await response.json()]).toEqual([503, "30", FENCED]);
    expect(await fingerprint()).toEqual(before);
  });

  it("lets the organization's reads go on, a POST that reads included", async () => {
    await fence("moving");
    const reads = [
      send("GET", "/apps", { key }),
      send("GET", `/organizations/${organizationId}`, { key }),
      send("GET", `/apps/${appId}/variants`, { key }),
      send("GET", `/events?organization_id=${organizationId}`, { key }),
      send("POST", "/variants/configs/fetch", { key, body: main() }),
    ];
    for (const response of await Promise.all(reads)) expect(response.status, await response.clone().text()).toBe(200);
  });

  it("leaves other buckets' organizations writing as usual", async () => {
    await fence("moving");
    expect(bucketFor(owner.organizationId)).not.toBe(bucket);
    const made = await expectJson<{ app_id: string }>(
      await send("POST", "/apps", { key: owner.key, body: { app_name: "elsewhere" } }),
    );
    const stored = await databaseOf(made.app_id).prepare("SELECT name FROM apps WHERE id = ?").bind(made.app_id).first();
    expect(stored).toEqual({ name: "elsewhere" });
  });

  it("still answers a bad key 401, not the fence's 503", async () => {
    await fence("moving");
    const before = await fingerprint();
    const wrongSecret = `${key.slice(0, 9)}${"0".repeat(64)}`;
    await expectError(await send("POST", "/apps", { key: wrongSecret, body: { app_name: "x" } }), 401, "Unauthorized");
    expect(await fingerprint()).toEqual(before);
  });
});

/**
 * docs/SHARDING.md §4: statements without a caller that span organizations (the delivery claims of the sweep and the
 * queue consumer, the hourly pruning) leave a fenced bucket's rows alone, and take them up once the fence is lifted.
 */
describe("writers without a caller", () => {
  afterEach(liftFence);

  /** A webhook of the organization with one pending delivery, its hand-off lost: the sweep's to take once overdue. */
  async function pendingDelivery(organization: string, as: string) {
    const inbox = newInbox();
    const hook = await subscribe(as, { organization_id: organization, url: inbox, events: ["app.created"] });
    const app = { app_name: `waiting-${crypto.randomUUID()}`, organization_id: organization };
    await expectJson(await postApp(as, app, { bindings: { WEBHOOK_DELIVERIES: losingQueue } }));
    const row = () =>
      databaseOf(hook.id)
        .prepare("SELECT id, status, attempts, lease FROM webhook_deliveries WHERE webhook_id = ?")
        .bind(hook.id)
        .first<{ id: string; status: string }>();
    return { inbox, row, id: (await row())?.id as string };
  }

  it("the sweep and the queue consumer claim no delivery of a fenced bucket; lifted, it is delivered", async () => {
    const fenced = await pendingDelivery(organizationId, key);
    const elsewhere = await pendingDelivery(owner.organizationId, owner.key);
    await timePasses(120);
    await fence("moving");
    const waiting = await fenced.row();
    expect(waiting).toEqual({ id: fenced.id, status: "pending", attempts: 0, lease: null });
    await deliverMessages([
      { shard: shardNameFor(organizationId), deliveries: [fenced.id] },
      { shard: shardNameFor(owner.organizationId), deliveries: [elsewhere.id] },
    ]);
    await runCron("* * * * *", { WEBHOOK_DELIVERIES: recordingQueue().queue });
    expect([await fenced.row(), await received(fenced.inbox)]).toEqual([waiting, []]);
    expect((await received(elsewhere.inbox)).length).toBe(1);
    await liftFence();
    await runCron("* * * * *", { WEBHOOK_DELIVERIES: recordingQueue().queue });
    expect([(await fenced.row())?.status, (await received(fenced.inbox)).length]).toEqual(["succeeded", 1]);
  });

  /** The organization's events and webhook deliveries, and the Idempotency-Key claims of its bucket. */
  const historyOf = async (organization: string, inBucket: number) => {
    const db = databaseOf(organization);
    const results = await db.batch([
      db.prepare("SELECT * FROM events WHERE organization_id = ? ORDER BY id").bind(organization),
      db
        .prepare(
          "SELECT * FROM webhook_deliveries WHERE webhook_id IN (SELECT id FROM webhooks WHERE organization_id = ?) ORDER BY id",
        )
        .bind(organization),
      db.prepare("SELECT * FROM idempotency_keys WHERE bucket = ? ORDER BY key_hash, idempotency_key").bind(inBucket),
    ]);
    const [events, deliveries, claims] = results.map((result) => result.results);
    return { events, deliveries, claims };
  };

  it("the hourly run prunes no event, delivery or expired Idempotency-Key claim of a fenced bucket; lifted, it does", async () => {
    const claimed = { key: owner.key, body: { app_name: "claimed-elsewhere" }, headers: { "Idempotency-Key": "pruned" } };
    await expectJson(await send("POST", "/apps", claimed));
    await Promise.all(
      shards().map((db) => db.prepare("UPDATE idempotency_keys SET expires_at = '2020-01-01T00:00:00.000Z'").run()),
    );
    await timePasses(401 * 24 * 3600);
    const ownerBucket = bucketFor(owner.organizationId);
    const fenced = await historyOf(organizationId, bucket);
    const elsewhere = await historyOf(owner.organizationId, ownerBucket);
    const sizes = (history: typeof fenced) => Object.values(history).map((rows) => rows.length);
    expect(Math.min(...sizes(fenced), ...sizes(elsewhere))).toBeGreaterThan(0);

    await fence("moving");
    await runCron("23 * * * *");
    expect(await historyOf(organizationId, bucket)).toEqual(fenced);
    const [eventsLeft, deliveriesLeft, claimsLeft] = sizes(await historyOf(owner.organizationId, ownerBucket));
    expect([eventsLeft < elsewhere.events.length, deliveriesLeft < elsewhere.deliveries.length, claimsLeft]).toEqual([
      true,
      true,
      0,
    ]);

    await liftFence();
    await runCron("23 * * * *");
    const [events, deliveries, claims] = sizes(await historyOf(organizationId, bucket));
    expect([events < fenced.events.length, deliveries < fenced.deliveries.length, claims]).toEqual([true, true, 0]);
  });

  it("an attempt made before the fence is not recorded after it; its delivery, leased, is attempted again once lifted", async () => {
    const inbox = newInbox("delay_ms=1500");
    const hook = await subscribe(key, { organization_id: organizationId, url: inbox, events: ["app.created"] });
    const app = { app_name: `in-flight-${crypto.randomUUID()}`, organization_id: organizationId };
    await expectJson(await postApp(key, app, { bindings: { WEBHOOK_DELIVERIES: losingQueue } }));
    const db = databaseOf(hook.id);
    const state = () =>
      db
        .prepare(
          `SELECT d.status, d.attempts, d.lease IS NOT NULL AS leased,
                  (SELECT COUNT(*) FROM webhook_attempts a WHERE a.delivery_id = d.id) AS recorded
             FROM webhook_deliveries d WHERE d.webhook_id = ?`,
        )
        .bind(hook.id)
        .first();
    const delivery = await db
      .prepare("SELECT id FROM webhook_deliveries WHERE webhook_id = ?")
      .bind(hook.id)
      .first<{ id: string }>();
    const run = deliverMessages([{ shard: shardNameFor(organizationId), deliveries: [delivery?.id as string] }]);
    for (let wait = 0; wait < 100 && (await received(inbox)).length === 0; wait++) await scheduler.wait(20);
    expect((await received(inbox)).length).toBe(1);
    await fence("moving");
    await run;
    expect(await state()).toEqual({ status: "pending", attempts: 0, leased: 1, recorded: 0 });
    await liftFence();
    await timePasses(300);
    await runCron("* * * * *", { WEBHOOK_DELIVERIES: recordingQueue().queue });
    expect([await state(), (await received(inbox)).length]).toEqual([
      { status: "succeeded", attempts: 1, leased: 0, recorded: 1 },
      2,
    ]);
  });

  it("a key's use is not recorded while its bucket is fenced; lifted, its next use is", async () => {
    const keyHash = await hashApiKey(key);
    const db = databaseOf(organizationId);
    const lastUsed = async () =>
      (
        await db
          .prepare("SELECT last_used_at FROM api_keys WHERE key_hash = ?")
          .bind(keyHash)
          .first<{ last_used_at: string | null }>()
      )?.last_used_at;
    /** A read with the key, the record of its use (after the answer) included. */
    const readSettled = async () => {
      const context = createExecutionContext();
      const request = new Request(`${BASE_URL}/apps`, { headers: { Authorization: `ApiKey ${key}` } });
      const response = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, env, context);
      await waitOnExecutionContext(context);
      return response.status;
    };
    await db.prepare("UPDATE api_keys SET last_used_at = NULL WHERE key_hash = ?").bind(keyHash).run();
    await fence("moving");
    expect(await readSettled()).toBe(200);
    expect(await lastUsed()).toBeNull();
    await liftFence();
    expect(await readSettled()).toBe(200);
    expect(await lastUsed()).toEqual(expect.any(String));
  });
});
