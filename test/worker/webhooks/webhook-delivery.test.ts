import { describe, expect, it, vi } from "vitest";
import { createAccount, createAppVia, expectError, expectJson, postApp, send } from "../fixtures";
import { shardNameFor } from "../pool";
import {
  deliveriesOf,
  deliverMessages,
  losingQueue,
  newInbox,
  received,
  receivedAtLeast,
  runCron,
  settledDeliveries,
  subscribe,
  timePasses,
  verified,
} from "./webhook-fixtures";

// Starts first: much of its minute is the queue's real retry delay (5 s, which its tests assert), spent waiting.

/**
 * Deliveries through the real queue (wrangler.toml's producer and consumer, local in the test pool) to a real HTTP
 * receiver on 127.0.0.1 (webhook-receiver.ts). Where a test needs hours to pass, `timePasses` moves the times the
 * delivery tables hold into the past.
 */

interface EventView {
  id: string;
  type: string;
  occurred_at: string;
  data: Record<string, unknown>;
}

const auditLog = async (key: string, query = "") =>
  (await expectJson<{ events: EventView[] }>(await send("GET", `/events${query}`, { key }))).events;

const HOUR = 3600;
const DAY = 24 * HOUR;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("delivery", { timeout: 30_000 }, () => {
  it("a change reaches a subscribed receiver, signed per Standard Webhooks, carrying the audit log's event", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    const appId = await createAppVia(me.key, { app_name: "announced" });
    const [request] = await receivedAtLeast(inbox, 1);
    const [event] = await auditLog(me.key, "?type=app.created");
    expect(event.data.app_id).toBe(appId);
    expect(verified(request, hook.secret)).toEqual({ type: "app.created", timestamp: event.occurred_at, data: event });
    expect(request.headers["content-type"]).toBe("application/json");
    const [delivery] = await settledDeliveries(me.key, hook.id);
    expect(request.headers["webhook-id"]).toBe(delivery.id);
    expect(delivery).toEqual({
      id: expect.any(String),
      event_id: event.id,
      event_type: "app.created",
      status: "succeeded",
      attempts: 1,
      last_attempt_at: expect.any(String),
      last_status_code: 200,
      last_error: null,
      next_attempt_at: null,
    });
  });

  it("a webhook gets the types it takes (or all, with *), of its app alone when it names one", async () => {
    const me = await createAccount();
    const appId = await createAppVia(me.key, { app_name: "watched" });
    const [all, deletions, watched] = [newInbox(), newInbox(), newInbox()];
    await subscribe(me.key, { url: all, events: ["*"] });
    await subscribe(me.key, { url: deletions, events: ["app.deleted"] });
    await subscribe(me.key, { url: watched, events: ["app.renamed", "app.deleted"], app_id: appId });
    const otherId = await createAppVia(me.key, { app_name: "other" });
    await expectJson(await send("PATCH", `/apps/${appId}`, { key: me.key, body: { app_name: "watched-2" } }));
    await expectJson(await send("DELETE", `/apps/${otherId}`, { key: me.key }));
    const types = async (inbox: string, count: number) =>
      (await receivedAtLeast(inbox, count)).map((request) => JSON.parse(request.body).type).sort();
    // `all` also hears the creation of the webhooks: its own and the two made after it.
    const everything = ["app.created", "app.deleted", "app.renamed", "webhook.created", "webhook.created", "webhook.created"];
    expect(await types(all, 6)).toEqual(everything);
    expect(await types(deletions, 1)).toEqual(["app.deleted"]);
    expect(await types(watched, 1)).toEqual(["app.renamed"]);
    await sleep(500);
    expect((await received(all)).length).toBe(6);
    expect((await received(deletions)).length).toBe(1);
    expect((await received(watched)).length).toBe(1);
  });

  it("a failed attempt is retried after about 5 s under the same webhook-id; the attempt log keeps both", async () => {
    const me = await createAccount();
    const inbox = newInbox("fail_first=1");
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    await createAppVia(me.key, { app_name: "retried" });
    await receivedAtLeast(inbox, 1);
    const [pending] = await settledDeliveries(me.key, hook.id);
    expect(pending).toMatchObject({ status: "pending", attempts: 1, last_status_code: 500, last_error: "HTTP 500" });
    const wait = Date.parse(pending.next_attempt_at ?? "") - Date.parse(pending.last_attempt_at ?? "");
    expect(wait).toBeGreaterThanOrEqual(5_000);
    expect(wait).toBeLessThanOrEqual(6_000);
    const [first, second] = await receivedAtLeast(inbox, 2, 20_000);
    expect(second.headers["webhook-id"]).toBe(first.headers["webhook-id"]);
    expect(verified(second, hook.secret)).toEqual(verified(first, hook.secret));
    const detail = await expectJson<any>(await send("GET", `/webhooks/${hook.id}/deliveries/${pending.id}`, { key: me.key }));
    await expect
      .poll(async () => (await deliveriesOf(me.key, hook.id)).deliveries[0].status, { timeout: 10_000 })
      .toBe("succeeded");
    const settled = await expectJson<any>(await send("GET", `/webhooks/${hook.id}/deliveries/${pending.id}`, { key: me.key }));
    expect(detail.attempt_log.length).toBeGreaterThanOrEqual(1);
    expect(settled.attempt_log).toEqual([
      {
        attempted_at: expect.any(String),
        status_code: 500,
        duration_ms: expect.any(Number),
        response_excerpt: "received 1",
        error: "HTTP 500",
      },
      {
        attempted_at: expect.any(String),
        status_code: 200,
        duration_ms: expect.any(Number),
        response_excerpt: "received 2",
        error: null,
      },
    ]);
    expect(settled).toMatchObject({
      status: "succeeded",
      attempts: 2,
      last_status_code: 200,
      last_error: null,
      next_attempt_at: null,
    });
  });

  it("a duplicate message leaves alone a delivery that is not due yet, or already settled", async () => {
    const me = await createAccount();
    const inbox = newInbox("fail_first=1");
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    await createAppVia(me.key, { app_name: "duplicated" });
    await receivedAtLeast(inbox, 1);
    const [pending] = await settledDeliveries(me.key, hook.id);
    expect(pending).toMatchObject({ status: "pending", attempts: 1 });
    const shard = shardNameFor(me.organizationId);
    await deliverMessages([{ shard, deliveries: [pending.id] }]);
    expect((await received(inbox)).length).toBe(1);
    expect((await deliveriesOf(me.key, hook.id)).deliveries).toEqual([pending]);
    const [, retried] = await receivedAtLeast(inbox, 2, 20_000);
    await expect
      .poll(async () => (await deliveriesOf(me.key, hook.id)).deliveries[0].status, { timeout: 10_000 })
      .toBe("succeeded");
    await deliverMessages([{ shard, deliveries: [pending.id], events: [JSON.parse(retried.body).data.id] }]);
    expect((await received(inbox)).length).toBe(2);
  });

  it("retries of one event count once toward the 20 events in a row", async () => {
    const me = await createAccount();
    const inbox = newInbox("status=500");
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    for (let i = 0; i < 10; i += 1) await createAppVia(me.key, { app_name: `retried-${i}` });
    // Each event's first attempt, then its retry 5 s on: 20 failed attempts, 10 events.
    await receivedAtLeast(inbox, 20, 20_000);
    await settledDeliveries(me.key, hook.id);
    expect((await expectJson<any>(await send("GET", `/webhooks/${hook.id}`, { key: me.key }))).enabled).toBe(true);
  });

  it("after the last retry (about 19 hours of them) the delivery has failed, and no attempt follows", async () => {
    const me = await createAccount();
    const inbox = newInbox("status=503");
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    await createAppVia(me.key, { app_name: "doomed" });
    await receivedAtLeast(inbox, 1);
    const delays: number[] = [];
    const nextDelay = async (attempts: number) => {
      // The receiver answers before the consumer records the attempt: wait for the record.
      const recorded = async () => (await deliveriesOf(me.key, hook.id)).deliveries[0];
      await expect.poll(async () => (await recorded()).attempts, { timeout: 10_000 }).toBe(attempts);
      const delivery = await recorded();
      expect(delivery).toMatchObject({ status: "pending", attempts });
      delays.push((Date.parse(delivery.next_attempt_at ?? "") - Date.parse(delivery.last_attempt_at ?? "")) / 1000);
    };
    // The first retry comes from the queue's own delayed message, 5 s on.
    await nextDelay(1);
    await receivedAtLeast(inbox, 2, 20_000);
    for (let attempt = 3; attempt <= 7; attempt += 1) {
      await nextDelay(attempt - 1);
      // The later ones are hours away: time passes until just past due, and overdue for the sweep.
      await timePasses(Math.ceil(delays.at(-1) ?? 0) + 61);
      await runCron("* * * * *");
      await receivedAtLeast(inbox, attempt);
    }
    // 5 s, 1 min, 10 min, 1 h, 6 h, 12 h, each with up to 20% jitter (12 h is the queue's longest delay).
    [5, 60, 600, 3600, 21600, 43200].forEach((base, i) => {
      expect(delays[i]).toBeGreaterThanOrEqual(base);
      expect(delays[i]).toBeLessThanOrEqual(Math.min(base * 1.2, 43200) + 1);
    });
    await expect.poll(async () => (await deliveriesOf(me.key, hook.id)).deliveries[0].status, { timeout: 10_000 }).toBe("failed");
    const [failed] = (await deliveriesOf(me.key, hook.id)).deliveries;
    expect(failed).toMatchObject({ attempts: 7, last_status_code: 503, last_error: "HTTP 503", next_attempt_at: null });
    await timePasses(13 * HOUR);
    await runCron("* * * * *");
    await sleep(500);
    expect((await received(inbox)).length).toBe(7);
  });

  it("a lost hand-off (the isolate gone after the commit) is delivered by the minute's sweep", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    const handedOff: unknown[] = [];
    const lost = { send: async (message: unknown) => void handedOff.push(message) } as unknown as Queue;
    await expectJson(
      await send("POST", "/apps", { key: me.key, body: { app_name: "lost" }, bindings: { WEBHOOK_DELIVERIES: lost } }),
    );
    await sleep(1_500);
    expect(await received(inbox)).toEqual([]);
    const [pending] = (await deliveriesOf(me.key, hook.id)).deliveries;
    expect(pending).toMatchObject({ status: "pending", attempts: 0 });
    // The write's own batch handed its committed event to the queue, by id.
    expect(handedOff).toEqual([{ shard: shardNameFor(me.organizationId), events: [pending.event_id] }]);
    // Not yet overdue: the sweep leaves it to its hand-off.
    await runCron("* * * * *");
    await sleep(1_500);
    expect(await received(inbox)).toEqual([]);
    await timePasses(120);
    await runCron("* * * * *");
    const [request] = await receivedAtLeast(inbox, 1);
    expect(request.headers["webhook-id"]).toBe(pending.id);
    expect(JSON.parse(request.body).data.data.app_name).toBe("lost");
  });

  it("nothing is handed to the queue by an organization without webhooks", async () => {
    const me = await createAccount();
    const handedOff: unknown[] = [];
    const queue = { send: async (message: unknown) => void handedOff.push(message) } as unknown as Queue;
    await expectJson(
      await send("POST", "/apps", { key: me.key, body: { app_name: "quiet" }, bindings: { WEBHOOK_DELIVERIES: queue } }),
    );
    expect(handedOff).toEqual([]);
    await subscribe(me.key, { url: newInbox(), events: ["app.deleted"] });
    await expectJson(
      await send("POST", "/apps", { key: me.key, body: { app_name: "heard" }, bindings: { WEBHOOK_DELIVERIES: queue } }),
    );
    const [event] = await auditLog(me.key, "?type=app.created");
    expect(handedOff).toEqual([{ shard: shardNameFor(me.organizationId), events: [event.id] }]);
  });
});

describe("auto-disable", { timeout: 30_000 }, () => {
  it("20 events in a row failing disable the webhook, with a webhook.disabled event; enabling it clears the count", async () => {
    const me = await createAccount();
    const inbox = newInbox("status=500");
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    for (let i = 0; i < 19; i += 1) await createAppVia(me.key, { app_name: `failing-${i}` });
    await receivedAtLeast(inbox, 19);
    await settledDeliveries(me.key, hook.id);
    expect((await expectJson<any>(await send("GET", `/webhooks/${hook.id}`, { key: me.key }))).enabled).toBe(true);
    await createAppVia(me.key, { app_name: "failing-20" });
    await expect
      .poll(async () => (await expectJson<any>(await send("GET", `/webhooks/${hook.id}`, { key: me.key }))).enabled, {
        timeout: 10_000,
      })
      .toBe(false);
    const disabled = await expectJson<any>(await send("GET", `/webhooks/${hook.id}`, { key: me.key }));
    expect(disabled.disabled_reason).toBe("deliveries of 20 events in a row failed");
    const [event] = await auditLog(me.key, "?type=webhook.disabled");
    expect(event).toMatchObject({
      type: "webhook.disabled",
      organization_id: me.organizationId,
      actor: { user_id: null, username: null, api_key_prefix: null },
      data: { webhook_id: hook.id, url: inbox, reason: "deliveries of 20 events in a row failed" },
    });
    const { deliveries } = await deliveriesOf(me.key, hook.id, "?limit=200");
    expect(deliveries.length).toBe(20);
    expect(deliveries.filter((delivery) => delivery.status === "pending")).toEqual([]);
    // Disabled: no delivery is made for it any more.
    await createAppVia(me.key, { app_name: "unheard" });
    expect((await deliveriesOf(me.key, hook.id, "?limit=200")).deliveries.length).toBe(20);

    const enabled = await expectJson<any>(await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { enabled: true } }));
    expect(enabled).toMatchObject({ enabled: true, disabled_reason: null });
    await createAppVia(me.key, { app_name: "failing-again" });
    await receivedAtLeast(inbox, 21);
    await settledDeliveries(me.key, hook.id);
    expect((await expectJson<any>(await send("GET", `/webhooks/${hook.id}`, { key: me.key }))).enabled).toBe(true);
  });

  it("a webhook whose deliveries have all failed for 24 hours is disabled at its next failure", async () => {
    const me = await createAccount();
    const inbox = newInbox("status=500");
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    await createAppVia(me.key, { app_name: "first-failure" });
    await receivedAtLeast(inbox, 1);
    await settledDeliveries(me.key, hook.id);
    await timePasses(23 * HOUR);
    await createAppVia(me.key, { app_name: "at-23-hours" });
    await receivedAtLeast(inbox, 2);
    await settledDeliveries(me.key, hook.id);
    expect((await expectJson<any>(await send("GET", `/webhooks/${hook.id}`, { key: me.key }))).enabled).toBe(true);
    await timePasses(2 * HOUR);
    await createAppVia(me.key, { app_name: "at-25-hours" });
    await expect
      .poll(async () => (await expectJson<any>(await send("GET", `/webhooks/${hook.id}`, { key: me.key }))).enabled, {
        timeout: 10_000,
      })
      .toBe(false);
    const [event] = await auditLog(me.key, "?type=webhook.disabled");
    expect(event.data).toEqual({ webhook_id: hook.id, url: inbox, reason: "every delivery failed for 24 hours" });
  });

  it("a success in between starts the count again", async () => {
    const me = await createAccount();
    const inbox = newInbox("status=500");
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    await createAppVia(me.key, { app_name: "fails" });
    await receivedAtLeast(inbox, 1);
    await settledDeliveries(me.key, hook.id);
    await timePasses(23 * HOUR);
    const healthy = newInbox();
    await expectJson(await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { url: healthy } }));
    await createAppVia(me.key, { app_name: "succeeds" });
    await receivedAtLeast(healthy, 1);
    await settledDeliveries(me.key, hook.id);
    await expectJson(await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { url: inbox } }));
    await timePasses(2 * HOUR);
    await createAppVia(me.key, { app_name: "fails-again" });
    await receivedAtLeast(inbox, 2);
    await settledDeliveries(me.key, hook.id);
    expect((await expectJson<any>(await send("GET", `/webhooks/${hook.id}`, { key: me.key }))).enabled).toBe(true);
  });
});

describe("secret rotation", { timeout: 30_000 }, () => {
  it("for 24 hours after a rotation both secrets sign; then the new one alone", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    const { secret } = await expectJson<{ secret: string }>(
      await send("POST", `/webhooks/${hook.id}/rotate-secret`, { key: me.key }),
    );
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secret).not.toBe(hook.secret);
    await createAppVia(me.key, { app_name: "overlap" });
    const [during] = await receivedAtLeast(inbox, 1);
    expect(during.headers["webhook-signature"].split(" ").length).toBe(2);
    expect(verified(during, secret)).toMatchObject({ type: "app.created" });
    expect(verified(during, hook.secret)).toMatchObject({ type: "app.created" });
    await timePasses(24 * HOUR);
    await createAppVia(me.key, { app_name: "after" });
    const [, after] = await receivedAtLeast(inbox, 2);
    expect(after.headers["webhook-signature"].split(" ").length).toBe(1);
    expect(verified(after, secret)).toMatchObject({ type: "app.created" });
    expect(() => verified(after, hook.secret)).toThrow();
  });
});

describe("test and redeliver", { timeout: 30_000 }, () => {
  it("a test sends a signed webhook.test now and answers the attempt; it records no event and no delivery", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    const hook = await subscribe(me.key, { url: inbox, events: ["environment.deployed"] });
    const before = await auditLog(me.key);
    const attempt = await expectJson(await send("POST", `/webhooks/${hook.id}/test`, { key: me.key }));
    expect(attempt).toEqual({ status_code: 200, duration_ms: expect.any(Number), response_excerpt: "received 1", error: null });
    const [request] = await received(inbox);
    expect(verified(request, hook.secret)).toEqual({
      type: "webhook.test",
      timestamp: expect.any(String),
      data: {
        id: request.headers["webhook-id"],
        type: "webhook.test",
        occurred_at: expect.any(String),
        organization_id: me.organizationId,
        workspace_id: null,
        project_id: null,
        actor: { user_id: me.userId, username: me.username, api_key_prefix: me.key.split(".")[0] },
        data: { webhook_id: hook.id, url: inbox },
      },
    });
    expect(await auditLog(me.key)).toEqual(before);
    expect((await deliveriesOf(me.key, hook.id)).deliveries).toEqual([]);
  });

  it("a test answers what the receiver answered: a status and the first KiB of the body", async () => {
    const me = await createAccount();
    const test = async (url: string) => {
      const hook = await subscribe(me.key, { url, events: ["*"] });
      return expectJson<any>(await send("POST", `/webhooks/${hook.id}/test`, { key: me.key }));
    };
    expect(await test(newInbox("status=503&body_bytes=3000"))).toEqual({
      status_code: 503,
      duration_ms: expect.any(Number),
      response_excerpt: "x".repeat(1024),
      error: "HTTP 503",
    });
    expect(await test(newInbox("status=302"))).toMatchObject({ status_code: 302, error: "HTTP 302" });
    // A URL that cannot be reached: faults-webhooks.test.ts (it answers at the deadline).
  });

  it("redelivery sends the event again under the same webhook-id; refused for a disabled webhook", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    await createAppVia(me.key, { app_name: "twice" });
    const [first] = await receivedAtLeast(inbox, 1);
    const [delivery] = await settledDeliveries(me.key, hook.id);
    const again = await expectJson<any>(
      await send("POST", `/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`, { key: me.key }),
    );
    expect(again).toMatchObject({ id: delivery.id, status: "pending", attempts: 1 });
    const [, second] = await receivedAtLeast(inbox, 2);
    expect(second.headers["webhook-id"]).toBe(first.headers["webhook-id"]);
    await expect
      .poll(async () => (await deliveriesOf(me.key, hook.id)).deliveries[0], { timeout: 10_000 })
      .toMatchObject({ status: "succeeded", attempts: 2 });

    const missing = crypto.randomUUID();
    await expectError(
      await send("POST", `/webhooks/${hook.id}/deliveries/${missing}/redeliver`, { key: me.key }),
      404,
      "Delivery not found for this webhook",
    );
    await expectJson(await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { enabled: false } }));
    const paused = await deliveriesOf(me.key, hook.id);
    await expectError(
      await send("POST", `/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`, { key: me.key }),
      409,
      "This webhook is disabled: enable it (PATCH enabled: true) first",
    );
    expect(await deliveriesOf(me.key, hook.id)).toEqual(paused);
  });

  it("deliveries are listed newest first, a page at a time, and by status", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    for (let i = 0; i < 5; i += 1) await createAppVia(me.key, { app_name: `paged-${i}` });
    await receivedAtLeast(inbox, 5);
    const all = await settledDeliveries(me.key, hook.id);
    const names = async (deliveries: { event_id: string }[]) => {
      const log = await auditLog(me.key, "?type=app.created");
      return deliveries.map((delivery) => log.find((event) => event.id === delivery.event_id)?.data.app_name);
    };
    expect(await names(all)).toEqual(["paged-4", "paged-3", "paged-2", "paged-1", "paged-0"]);
    const first = await deliveriesOf(me.key, hook.id, "?limit=2");
    const second = await deliveriesOf(me.key, hook.id, `?limit=2&cursor=${first.next_cursor}`);
    const third = await deliveriesOf(me.key, hook.id, `?limit=2&cursor=${second.next_cursor}`);
    expect([...first.deliveries, ...second.deliveries, ...third.deliveries]).toEqual(all);
    expect(third.next_cursor).toBeNull();
    expect((await deliveriesOf(me.key, hook.id, "?status=succeeded")).deliveries.length).toBe(5);
    expect((await deliveriesOf(me.key, hook.id, "?status=failed")).deliveries).toEqual([]);
  });
});

describe("retention", { timeout: 30_000 }, () => {
  const HOURLY = "23 * * * *";

  /** An account with a webhook on app.created, and what its audit log and deliveries hold (ids, newest first). */
  async function subscribedAccount() {
    const me = await createAccount();
    const hook = await subscribe(me.key, { url: newInbox(), events: ["app.created"] });
    const deliveries = async (status = "") =>
      (await deliveriesOf(me.key, hook.id, status && `?status=${status}`)).deliveries.map(({ id }) => id);
    let delivered = 0;
    return {
      me,
      deliveries,
      events: async () => (await auditLog(me.key, "?limit=200")).map(({ id }) => id),
      eventOf: async (appName: string) =>
        (await auditLog(me.key, "?type=app.created")).find((event) => event.data.app_name === appName)?.id,
      /** Makes an app, once its delivery has succeeded. */
      appDelivered: async (appName: string) => {
        await createAppVia(me.key, { app_name: appName });
        delivered += 1;
        await expect.poll(async () => (await deliveries("succeeded")).length, { timeout: 15_000 }).toBe(delivered);
      },
    };
  }

  it("by default, the hourly run prunes events past 400 days and settled deliveries past 30 days, keeping the rest", async () => {
    const account = await subscribedAccount();
    await account.appDelivered("old");
    const old = { events: await account.events(), deliveries: await account.deliveries() };
    await timePasses(31 * DAY);
    await account.appDelivered("recent");
    const all = { events: await account.events(), deliveries: await account.deliveries() };
    const recent = (ids: string[], before: string[]) => ids.filter((id) => !before.includes(id));
    await runCron(HOURLY);
    expect([await account.events(), await account.deliveries()]).toEqual([all.events, recent(all.deliveries, old.deliveries)]);
    await timePasses(370 * DAY);
    await runCron(HOURLY);
    // 370 days on, the recent delivery is past its 30 days too; its event is within its 400.
    expect([await account.events(), await account.deliveries()]).toEqual([recent(all.events, old.events), []]);
  });

  it("keeps events EVENT_RETENTION_DAYS and settled deliveries DELIVERY_RETENTION_DAYS; a pending delivery and its event stay", async () => {
    const bindings = { EVENT_RETENTION_DAYS: "10", DELIVERY_RETENTION_DAYS: "3" };
    const account = await subscribedAccount();
    await account.appDelivered("old");
    // Its hand-off lost and no sweep run: its delivery stays pending, never attempted.
    await expectJson(await postApp(account.me.key, { app_name: "waiting" }, { bindings: { WEBHOOK_DELIVERIES: losingQueue } }));
    const waiting = { event: await account.eventOf("waiting"), deliveries: await account.deliveries("pending") };
    expect(waiting.deliveries.length).toBe(1);
    const old = { events: await account.events(), deliveries: await account.deliveries() };
    await timePasses(4 * DAY);
    await account.appDelivered("recent");
    const all = { events: await account.events(), deliveries: await account.deliveries() };
    const keptOf = (ids: string[], before: string[], waitingIds: unknown[]) =>
      ids.filter((id) => !before.includes(id) || waitingIds.includes(id));

    await runCron(HOURLY, bindings);
    expect([await account.events(), await account.deliveries()]).toEqual([
      all.events,
      keptOf(all.deliveries, old.deliveries, waiting.deliveries),
    ]);
    await timePasses(7 * DAY);
    await runCron(HOURLY, bindings);
    expect([await account.events(), await account.deliveries()]).toEqual([
      keptOf(all.events, old.events, [waiting.event]),
      waiting.deliveries,
    ]);
  });

  it("a bad retention value prunes nothing and logs why, each run, until it is fixed", async () => {
    const account = await subscribedAccount();
    await account.appDelivered("old");
    const kept = [await account.events(), await account.deliveries()];
    await timePasses(401 * DAY);
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const bad: [string, string][] = [
      ["EVENT_RETENTION_DAYS", "0"],
      ["EVENT_RETENTION_DAYS", "-1"],
      ["EVENT_RETENTION_DAYS", ""],
      ["EVENT_RETENTION_DAYS", "400d"],
      ["EVENT_RETENTION_DAYS", "4e2"],
      ["DELIVERY_RETENTION_DAYS", "1.5"],
      ["DELIVERY_RETENTION_DAYS", "thirty"],
    ];
    for (const [name, value] of bad) await runCron(HOURLY, { [name]: value });
    await runCron(HOURLY, { EVENT_RETENTION_DAYS: "0" });
    expect(errors.mock.calls.map(([line]) => JSON.parse(String(line)))).toEqual(
      [...bad, ["EVENT_RETENTION_DAYS", "0"]].map(([name, value]) => ({
        level: "error",
        message: "history not pruned: a retention var is invalid",
        reason: `${name} (wrangler.toml [vars]) must be a positive whole number of days; it is ${JSON.stringify(value)}`,
      })),
    );
    errors.mockRestore();
    expect([await account.events(), await account.deliveries()]).toEqual(kept);
    await runCron(HOURLY);
    expect([await account.events(), await account.deliveries()]).toEqual([[], []]);
  });
});
