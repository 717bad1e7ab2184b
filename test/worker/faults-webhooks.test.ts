import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Account, createAccount, expectJson, markKeyUsed, send } from "./fixtures";
import { databaseProblems, snapshot } from "./harness";
import { newInbox, subscribe } from "./webhook-fixtures";

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
  await env.DB.exec("DROP TRIGGER IF EXISTS fail_events");
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
    await env.DB.exec("CREATE TRIGGER fail_events BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'injected fault'); END");
    await expectNothingWritten(write);
  });

  it.each(writes)("%s: the event's fan-out into deliveries fails, nothing is written", async (_, write) => {
    await env.DB.exec(
      "CREATE TRIGGER fail_events BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    await expectNothingWritten(write);
  });
});

describe("a receiver that does not answer", () => {
  it("is given up on after 10 seconds", { timeout: 30_000 }, async () => {
    const hook = await subscribe(owner.key, { url: newInbox("delay_ms=20000"), events: ["*"] });
    const attempt = await expectJson(await send("POST", `/webhooks/${hook.id}/test`, { key: owner.key }));
    expect(attempt).toEqual({
      status_code: null,
      duration_ms: expect.any(Number),
      response_excerpt: null,
      error: "no answer within 10 seconds",
    });
    expect((attempt as { duration_ms: number }).duration_ms).toBeGreaterThanOrEqual(10_000);
    expect((attempt as { duration_ms: number }).duration_ms).toBeLessThan(15_000);
  });
});
