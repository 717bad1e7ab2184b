import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ShardName } from "../../../src/db/pool";
import {
  ATTEMPTS_PER_RUN,
  claimDeliveries,
  createAccount,
  createAppVia,
  expectJson,
  LEASE_SECONDS,
  postApp,
  SHARDS_PER_RUN,
  send,
  sendInBatches,
} from "../fixtures";
import { instrumentD1 } from "../instrumented-d1";
import { countOnShards, databaseOf, fourShardPool, shardNameFor, shards } from "../pool";
import {
  attemptedDeliveries,
  deliverMessages,
  deliveryStatuses,
  losingQueue,
  newInbox,
  received,
  receivedAtLeast,
  recordingQueue,
  runCron,
  subscribe,
  timePasses,
} from "./webhook-fixtures";

/**
 * What one delivery run may do (webhooks/delivery.ts): at most ATTEMPTS_PER_RUN attempts, every organization's
 * oldest first, sends within the Queues limits, and leases that keep a delivery to one attempt at a time. An
 * organization's failing endpoints are webhooks to a closed port on this machine (nothing listens on port 9).
 */

const CLOSED_PORT = "http://127.0.0.1:9/hook";
const HOUR = 3600;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An organization with `webhooks` webhooks that all fail, and one with a webhook that answers 200; both on one shard,
 * so that one claim there (a run's share of its bounds on that shard) serves both.
 */
async function crowdedAndQuiet(webhooks: number) {
  const crowded = await createAccount(undefined, "SHARD_1");
  for (let i = 0; i < webhooks; i += 1) await subscribe(crowded.key, { url: CLOSED_PORT, events: ["app.created"] });
  const quiet = await createAccount(undefined, "SHARD_1");
  const inbox = newInbox();
  await subscribe(quiet.key, { url: inbox, events: ["app.created"] });
  return { crowded, quiet, inbox };
}

/** Creates an app whose hand-off to the queue goes to `queue` (by default, lost). */
const createAppHandingTo = async (key: string, appName: string, queue: Queue = losingQueue) =>
  expectJson(await postApp(key, { app_name: appName }, { bindings: { WEBHOOK_DELIVERIES: queue } }));

const pendingDeliveries = () => countOnShards("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'");

/**
 * Until no delivery is pending: time passes (a day and more, so that each failing webhook is disabled at its next
 * failure, ending its pending deliveries) and the sweep runs; the queue does the rest. At most five rounds.
 */
async function untilNothingPending() {
  for (let round = 0; round < 5 && (await pendingDeliveries()) !== 0; round += 1) {
    await timePasses(25 * HOUR);
    await runCron("* * * * *");
    const deadline = Date.now() + 20_000;
    while ((await pendingDeliveries()) !== 0 && Date.now() < deadline) await sleep(200);
  }
  expect(await pendingDeliveries()).toBe(0);
}

/**
 * The sweep's bounds on each shard: it serves every shard, and divides a run's bounds evenly among them (at most
 * ATTEMPTS_PER_RUN attempts and 1,000 ids left over in all; docs/SHARDING.md §7a).
 */
const SWEEP_SHARE = { attempts: Math.floor(ATTEMPTS_PER_RUN / shards().length), leftOver: Math.floor(1000 / shards().length) };

/** The ids the messages name as deliveries due now (not retries, which are delayed), sorted. */
const idsNamedNow = (messages: MessageSendRequest<{ deliveries?: string[] }>[]) =>
  messages.flatMap((message) => (message.delaySeconds ? [] : (message.body.deliveries ?? []))).sort();

describe("bounds and fairness", { timeout: 120_000 }, () => {
  it(`a queue batch attempts at most ${ATTEMPTS_PER_RUN} deliveries, every organization's first, and queues the rest`, async () => {
    const { crowded, quiet, inbox } = await crowdedAndQuiet(15);
    const handedOff = recordingQueue();
    for (let i = 0; i < 10; i += 1) await createAppHandingTo(crowded.key, `crowded-${i}`, handedOff.queue);
    await createAppHandingTo(quiet.key, "quiet", handedOff.queue);
    // One batch of the 11 events: 151 deliveries, the quiet organization's last.
    const sent = recordingQueue();
    await deliverMessages(
      handedOff.messages().map((message) => message.body),
      { WEBHOOK_DELIVERIES: sent.queue },
    );
    expect((await received(inbox)).length).toBe(1);
    const attempted = await attemptedDeliveries(crowded.organizationId);
    expect(attempted.length).toBe(ATTEMPTS_PER_RUN - 1);
    // Each failed attempt's retry, delayed; the rest named again, due now: every delivery is in a message.
    const retried = sent.messages().flatMap((message) => (message.delaySeconds ? (message.body.deliveries ?? []) : []));
    expect(retried.sort()).toEqual(attempted);
    const { results } = await databaseOf(crowded.organizationId)
      .prepare(
        `SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
        WHERE w.organization_id = ?1 AND d.attempts = 0 ORDER BY d.id`,
      )
      .bind(crowded.organizationId)
      .all<{ id: string }>();
    expect(results.length).toBe(150 - attempted.length);
    expect(idsNamedNow(sent.messages())).toEqual(results.map(({ id }) => id));
    await Promise.all(sent.calls.map((call) => env.WEBHOOK_DELIVERIES.sendBatch(call)));
    await untilNothingPending();
    expect(await deliveryStatuses(crowded.organizationId)).toEqual({ failed: 150 });
    expect(await deliveryStatuses(quiet.organizationId)).toEqual({ succeeded: 1 });
  });

  it("150 failing deliveries of one organization are all retried (sends within the Queues limits), another's arrive on time, every one ends", async () => {
    const { crowded, quiet, inbox } = await crowdedAndQuiet(15);
    for (let i = 0; i < 10; i += 1) await createAppVia(crowded.key, { app_name: `crowded-${i}` });
    await createAppVia(quiet.key, { app_name: "quiet" });
    await receivedAtLeast(inbox, 1);
    // Each failed first attempt queued its retry, 5 s on: no delivery waits for the sweep.
    await expect
      .poll(async () => (await attemptedDeliveries(crowded.organizationId, 2)).length, { timeout: 30_000, interval: 500 })
      .toBe(150);
    await untilNothingPending();
    expect(await deliveryStatuses(crowded.organizationId)).toEqual({ failed: 150 });
    expect(await deliveryStatuses(quiet.organizationId)).toEqual({ succeeded: 1 });
  });

  it(`the sweep attempts its share of ${ATTEMPTS_PER_RUN} overdue deliveries on each shard itself, every organization's oldest first: a backlog of 1,060 holds no other back`, async () => {
    const { crowded, quiet, inbox } = await crowdedAndQuiet(20);
    // Hand-offs lost: 1,060 deliveries of the crowded organization, then the quiet one's, all pending.
    for (let i = 0; i < 53; i += 1) await createAppHandingTo(crowded.key, `crowded-${i}`);
    await createAppHandingTo(quiet.key, "quiet");
    await timePasses(120);
    const sent = recordingQueue();
    await runCron("* * * * *", { WEBHOOK_DELIVERIES: sent.queue });
    expect((await received(inbox)).length).toBe(1);
    expect((await attemptedDeliveries(crowded.organizationId)).length).toBe(SWEEP_SHARE.attempts - 1);
    // The next ones, the shard's share of 1,000, are queued for the consumer, 100 a message.
    const queued = idsNamedNow(sent.messages());
    expect(queued.length).toBe(SWEEP_SHARE.leftOver);
    expect(sent.messages().filter((message) => !message.delaySeconds).length).toBe(SWEEP_SHARE.leftOver / 100);
    await Promise.all(sent.calls.map((call) => env.WEBHOOK_DELIVERIES.sendBatch(call)));
    await untilNothingPending();
    expect(await deliveryStatuses(crowded.organizationId)).toEqual({ failed: 1060 });
    expect(await deliveryStatuses(quiet.organizationId)).toEqual({ succeeded: 1 });
  });
});

describe("sends", () => {
  it("are cut to the Queues limits, 100 messages and 256 KB a call, in order", async () => {
    const small = Array.from({ length: 150 }, (_, i) => ({ body: { deliveries: [`d${i}`] } }));
    const smallSent = recordingQueue();
    await sendInBatches(smallSent.queue, small);
    expect(smallSent.calls.map((call) => call.length)).toEqual([100, 50]);
    expect(smallSent.messages()).toEqual(small);
    // 250 messages of 5 KB: about 1.25 MB, in calls the recording queue accepts (it refuses more than 256 KB).
    const large = Array.from({ length: 250 }, (_, i) => ({ body: { deliveries: [`${i}`.padEnd(5000, "x")] } }));
    const largeSent = recordingQueue();
    await sendInBatches(largeSent.queue, large);
    expect(largeSent.calls.length).toBeGreaterThan(4);
    expect(largeSent.messages()).toEqual(large);
  });
});

/** A delivery left pending by a lost hand-off, the inbox it is for, and a queue message naming it (on its shard). */
async function pendingDelivery(shard?: ShardName) {
  const me = await createAccount(undefined, shard);
  const inbox = newInbox();
  await subscribe(me.key, { url: inbox, events: ["app.created"] });
  await createAppHandingTo(me.key, "leased");
  const { id } = (await databaseOf(me.organizationId)
    .prepare(`SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.organization_id = ?1`)
    .bind(me.organizationId)
    .first<{ id: string }>()) ?? { id: "" };
  return { me, inbox, id, message: { shard: shardNameFor(me.organizationId), deliveries: [id] } };
}

describe("a queue run over a pool of four shards", () => {
  it(`serves the messages of the first ${SHARDS_PER_RUN} shards they name, and queues the others' again as they are`, async () => {
    const pool = await fourShardPool();
    const [first, passed] = [await pendingDelivery("SHARD_0"), await pendingDelivery("SHARD_1")];
    const counted = (["SHARD_0", "SHARD_1", "SHARD_2", "SHARD_3"] as const).map((name) => ({
      name,
      ...instrumentD1(({ ...env, ...pool } as unknown as Record<string, D1Database>)[name]),
    }));
    const sent = recordingQueue();
    // SHARD_2's and SHARD_3's messages name deliveries they do not hold: their claims find nothing.
    await deliverMessages(
      [
        { shard: "SHARD_2", deliveries: [crypto.randomUUID()] },
        first.message,
        { shard: "SHARD_3", deliveries: [crypto.randomUUID()] },
        passed.message,
      ],
      { ...pool, ...Object.fromEntries(counted.map(({ name, db }) => [name, db])), WEBHOOK_DELIVERIES: sent.queue },
    );
    // Each shard served: its claim, and the records of what it attempted; SHARD_1, the fourth named, not reached.
    expect(Object.fromEntries(counted.map(({ name, counter }) => [name, counter.trips]))).toEqual({
      SHARD_0: 2,
      SHARD_1: 0,
      SHARD_2: 1,
      SHARD_3: 1,
    });
    expect((await received(first.inbox)).map((request) => request.headers["webhook-id"])).toEqual([first.id]);
    expect(await received(passed.inbox)).toEqual([]);
    expect(sent.messages()).toEqual([{ body: passed.message }]);
    // The run that takes the message sent back attempts it.
    await deliverMessages(sent.messages().map(({ body }) => body));
    expect((await received(passed.inbox)).map((request) => request.headers["webhook-id"])).toEqual([passed.id]);
  });
});

describe("leases", { timeout: 60_000 }, () => {
  /** Another consumer's claim on the delivery (on whichever shard holds it): leased for LEASE_SECONDS, being attempted. */
  async function claimedElsewhere(id: string) {
    const claims = await Promise.all(
      shards().map((db) => claimDeliveries(db, { events: [], deliveries: [id] }, { limit: 1, leftOverLimit: 0 })),
    );
    expect(claims.flatMap(({ claimed }) => claimed.map((delivery) => delivery.delivery_id))).toEqual([id]);
  }

  it("a duplicate message leaves alone a delivery another consumer holds, until its lease ends", async () => {
    const { inbox, id, message } = await pendingDelivery();
    await claimedElsewhere(id);
    await deliverMessages([message]);
    expect(await received(inbox)).toEqual([]);
    // Still held as long as another run's attempts may take (6 at a time, 10 seconds each: 70 seconds).
    await timePasses(70);
    await deliverMessages([message]);
    expect(await received(inbox)).toEqual([]);
    await timePasses(LEASE_SECONDS - 70 + 1);
    await deliverMessages([message]);
    expect((await received(inbox)).map((request) => request.headers["webhook-id"])).toEqual([id]);
  });

  it("the sweep leaves alone an overdue delivery a consumer holds, until its lease ends", async () => {
    const { inbox, id } = await pendingDelivery();
    await timePasses(120);
    await claimedElsewhere(id);
    const sent = recordingQueue();
    await runCron("* * * * *", { WEBHOOK_DELIVERIES: sent.queue });
    expect(await received(inbox)).toEqual([]);
    expect(sent.messages()).toEqual([]);
    await timePasses(LEASE_SECONDS + 1);
    await runCron("* * * * *", { WEBHOOK_DELIVERIES: sent.queue });
    expect((await received(inbox)).map((request) => request.headers["webhook-id"])).toEqual([id]);
  });
});

describe("disabled webhooks", () => {
  // Disabling a webhook fails its pending deliveries (PATCH, and the batch recording an attempt), and the fan-out
  // trigger makes none for it: a pending delivery of a disabled webhook comes only from a writer that skipped those
  // (an operator's SQL, a half-applied change). The claim is the last guard, for the consumer and the sweep alike.
  it("a delivery of a disabled webhook is never attempted, by a queue message or by the sweep", async () => {
    const me = await createAccount();
    const inbox = newInbox();
    const hook = await subscribe(me.key, { url: inbox, events: ["app.created"] });
    await createAppHandingTo(me.key, "then disabled");
    await expectJson(await send("PATCH", `/webhooks/${hook.id}`, { key: me.key, body: { enabled: false } }));
    expect(await deliveryStatuses(me.organizationId)).toEqual({ failed: 1 });
    // Pending again and overdue, as such a writer would leave it.
    await databaseOf(hook.id)
      .prepare(
        `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = '2020-01-01T00:00:00.000Z'
        WHERE webhook_id = ?1`,
      )
      .bind(hook.id)
      .run();
    const [{ id }] = (
      await databaseOf(hook.id)
        .prepare("SELECT id FROM webhook_deliveries WHERE webhook_id = ?1")
        .bind(hook.id)
        .all<{ id: string }>()
    ).results;
    await deliverMessages([{ shard: shardNameFor(me.organizationId), deliveries: [id] }]);
    await runCron("* * * * *", { WEBHOOK_DELIVERIES: recordingQueue().queue });
    expect(await received(inbox)).toEqual([]);
    expect(await attemptedDeliveries(me.organizationId)).toEqual([]);
  });
});

describe("connections", () => {
  it("a run attempts at most 6 deliveries at a time (a Worker's open connections), all of them", async () => {
    const account = await createAccount();
    // Twelve webhooks of one organization to one slow inbox: one event, twelve deliveries in one run.
    const inbox = newInbox("delay_ms=300");
    for (let i = 0; i < 12; i += 1) await subscribe(account.key, { url: inbox, events: ["app.created"] });
    await createAppHandingTo(account.key, "twelve at once");
    const event = await databaseOf(account.organizationId)
      .prepare("SELECT id FROM events WHERE type = 'app.created' ORDER BY id DESC LIMIT 1")
      .first<{
        id: string;
      }>();
    await deliverMessages([{ shard: shardNameFor(account.organizationId), events: [event?.id as string] }]);
    const got = await received(inbox);
    expect(got).toHaveLength(12);
    expect(Math.max(...got.map((request) => request.concurrent))).toBe(6);
  });
});
