import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, createAccount, createAppVia, expectJson, markKeyUsed, send } from "./fixtures";
import { databaseProblems, snapshot } from "./harness";
import { databaseOf } from "./pool";
import { newInbox, settledDeliveries, subscribe } from "./webhooks/webhook-fixtures";

// Starts first: most of its time is a receiver held silent past the delivery deadline (10 s), spent waiting.

/*
 * Faults in the writes that make events: a trigger fails the event's insert, or its fan-out into deliveries. The
 * change and its event are one batch: whatever failed, the database is exactly as before, and the answer is a bare 500.
 */

let owner: Account;
let hookId: string;

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {});
  owner = await createAccount();
  await markKeyUsed(owner.key);
  hookId = (await subscribe(owner.key, { url: newInbox(), events: ["*"] })).id;
});

afterEach(async () => {
  await databaseOf(owner.organizationId).exec("DROP TRIGGER IF EXISTS fail_events");
  vi.restoreAllMocks();
  vi.spyOn(console, "log").mockImplementation(() => {});
});

async function expectNothingWritten(write: () => Promise<Response>) {
  vi.spyOn(console, "error").mockImplementation(() => {});
  const before = await snapshot();
  const response = await write();
  expect(response.status).toBe(500);
  expect(await response.json()).toEqual({ detail: "Internal Server Error" });
  expect(await snapshot()).toEqual(before);
  expect(await databaseProblems()).toEqual([]);
}

describe("a change and its event commit together or not at all", () => {
  const writes: [string, () => Promise<Response>][] = [
    ["POST /webhooks", () => send("POST", "/webhooks", { key: owner.key, body: { url: newInbox(), events: ["*"] } })],
    ["PATCH /webhooks/{id}", () => send("PATCH", `/webhooks/${hookId}`, { key: owner.key, body: { description: "x" } })],
    ["POST /webhooks/{id}/rotate-secret", () => send("POST", `/webhooks/${hookId}/rotate-secret`, { key: owner.key })],
    ["DELETE /webhooks/{id}", () => send("DELETE", `/webhooks/${hookId}`, { key: owner.key })],
    ["POST /apps", () => send("POST", "/apps", { key: owner.key, body: { app_name: "faulty" } })],
  ];

  it.each(writes)("%s: the event's insert fails, nothing is written", async (_, write) => {
    await databaseOf(owner.organizationId).exec(
      "CREATE TRIGGER fail_events BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    await expectNothingWritten(write);
  });

  it.each(writes)("%s: the event's fan-out into deliveries fails, nothing is written", async (_, write) => {
    await databaseOf(owner.organizationId).exec(
      "CREATE TRIGGER fail_events BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    await expectNothingWritten(write);
  });
});

describe("a URL that cannot be reached", () => {
  // Nothing listens on the discard port of the test machine's loopback.
  const closedPort = "http://127.0.0.1:9/hook";
  // TLS to the receiver's plain HTTP port: a port that is open but does not speak what the URL asks.
  const notTls = newInbox().replace(/^http:/, "https:");
  // The receiver holds its answer past the deadline.
  const silent = newInbox("delay_ms=20000");
  const DEADLINE_MS = 10_000;
  const unreachable = { status_code: null, duration_ms: DEADLINE_MS, response_excerpt: null, error: "could not reach the URL" };

  const testWebhook = async (url: string) => {
    // An event type nothing here records: the next test's deliveries do not wait on these hooks.
    const hook = await subscribe(owner.key, { url, events: ["environment.deployed"] });
    const started = Date.now();
    const attempt = await expectJson(await send("POST", `/webhooks/${hook.id}/test`, { key: owner.key }));
    return { attempt, tookMs: Date.now() - started };
  };

  it("a test answers the same for a closed port, a port without TLS and a silent one, at the deadline", {
    timeout: 30_000,
  }, async () => {
    const answers = await Promise.all([closedPort, notTls, silent].map(testWebhook));
    expect(answers.map(({ attempt }) => attempt)).toEqual([unreachable, unreachable, unreachable]);
    for (const { tookMs } of answers) expect(tookMs).toBeGreaterThanOrEqual(DEADLINE_MS);
  });

  it("a delivery's attempt log records the same, without the exception's text or a duration to read", async () => {
    const hooks = await Promise.all([closedPort, notTls].map((url) => subscribe(owner.key, { url, events: ["app.created"] })));
    await createAppVia(owner.key, { app_name: "unreachable" });
    for (const hook of hooks) {
      const [delivery] = await settledDeliveries(owner.key, hook.id);
      const detail = await expectJson<{ attempt_log: unknown[] }>(
        await send("GET", `/webhooks/${hook.id}/deliveries/${delivery.id}`, { key: owner.key }),
      );
      expect(detail.attempt_log[0], hook.url).toEqual({ attempted_at: expect.any(String), ...unreachable });
    }
  });
});
