import { afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import {
  type Account,
  createAccount,
  createAppVia,
  expectJson,
  getRevisions,
  postApp,
  REQUEST_LOG_BURST_ENTRIES,
  REQUEST_LOG_BURST_MS,
  send,
} from "./fixtures";
import { databaseOf } from "./pool";
import { newInbox, receivedAtLeast, subscribe } from "./webhooks/webhook-fixtures";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "logged" });
});

/**
 * Resolves once every entry of a request that has answered is written. An entry waits in its burst, whose line is
 * written REQUEST_LOG_BURST_MS after the burst's first entry: no later than a wait as long begun after the answer.
 */
const burstWritten = () => scheduler.wait(REQUEST_LOG_BURST_MS);

let logs: MockInstance<typeof console.log>;
beforeEach(async () => {
  await burstWritten(); // the entries of an earlier test's requests are not this test's
  logs = vi.spyOn(console, "log").mockImplementation(() => {});
});
afterEach(() => {
  vi.restoreAllMocks();
});

const withId = (id: string) => ({ headers: { "X-Request-Id": id } });
// What the log tests send: the request's line is written after its response, in its waitUntil work.

/** Every entry logged so far, in the order written, whether alone on its line or in a line's `requests`. */
function loggedEntries(): Record<string, unknown>[] {
  return logs.mock.calls.flatMap(([line]) => {
    const { requests } = line as { requests?: Record<string, unknown>[] };
    return Array.isArray(requests) ? requests : [line as Record<string, unknown>];
  });
}

/**
 * The one line logged for the request with this id, sent while no other request ran: a single plain object (whose
 * fields Workers Logs indexes), and that object as JSON text.
 */
async function logLine(requestId: string): Promise<{ text: string; fields: Record<string, unknown> }> {
  await burstWritten();
  const lines = logs.mock.calls.filter(
    ([entry]) => typeof entry === "object" && entry !== null && (entry as { request_id?: unknown }).request_id === requestId,
  );
  expect(lines, `log lines for ${requestId}`).toHaveLength(1);
  expect(lines[0], "one argument: the object").toHaveLength(1);
  const fields = lines[0][0] as Record<string, unknown>;
  expect(Object.getPrototypeOf(fields), "a plain object").toBe(Object.prototype);
  return { text: JSON.stringify(fields), fields };
}

describe("X-Request-Id", () => {
  it.each(["abc", "trace-1.span:2_x", "A".repeat(128)])("echoes a caller's id made of safe characters: %s", async (id) => {
    const response = await send("GET", "/health", withId(id));
    expect(response.headers.get("X-Request-Id")).toBe(id);
  });

  it.each([
    ["an empty one", ""],
    ["one of 129 characters", "A".repeat(129)],
    ["a space", "a b"],
    ["a slash", "a/b"],
    ["an equals sign", "a=b"],
    ["a quote", 'a"b'],
    ["markup", "<b>"],
  ])("replaces %s with a new UUID", async (_, id) => {
    const response = await send("GET", "/health", withId(id));
    expect(response.headers.get("X-Request-Id")).toMatch(UUID);
  });

  it("makes a new one for each request that brings none", async () => {
    const [first, second] = [await send("GET", "/health"), await send("GET", "/health")];
    expect(first.headers.get("X-Request-Id")).toMatch(UUID);
    expect(second.headers.get("X-Request-Id")).toMatch(UUID);
    expect(first.headers.get("X-Request-Id")).not.toBe(second.headers.get("X-Request-Id"));
  });

  it("is on error responses too: 401, 404, 405, 422", async () => {
    const cases: [number, Promise<Response>][] = [
      [401, send("GET", `/apps/${appId}/revisions/production`, withId("err-401"))],
      [404, send("GET", "/nowhere", withId("err-404"))],
      [405, send("PUT", "/apps", withId("err-405"))],
      [422, send("POST", "/apps", { key: account.key, body: {}, ...withId("err-422") })],
    ];
    for (const [status, pending] of cases) {
      const response = await pending;
      expect(response.status).toBe(status);
      expect(response.headers.get("X-Request-Id")).toBe(`err-${status}`);
    }
  });

  it("is on a 500, and in the error logged for it", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    await databaseOf(account.organizationId).exec("ALTER TABLE environment_revisions RENAME TO environment_revisions_gone");
    try {
      const response = await send("GET", `/apps/${appId}/revisions/production`, { key: account.key, ...withId("err-500") });
      expect(response.status).toBe(500);
      expect(response.headers.get("X-Request-Id")).toBe("err-500");
      expect(errors).toHaveBeenCalledTimes(1);
      expect(JSON.parse(String(errors.mock.calls[0][0]))).toMatchObject({ level: "error", request_id: "err-500" });
    } finally {
      await databaseOf(account.organizationId).exec("ALTER TABLE environment_revisions_gone RENAME TO environment_revisions");
    }
  });
});

describe("the request log", () => {
  it("writes one object per request with the request id, method, route pattern, status and caller, and nothing else", async () => {
    const response = await send("GET", `/apps/${appId}/revisions/production`, { key: account.key, ...withId("log-get") });
    expect(response.status).toBe(200);
    expect((await logLine("log-get")).fields).toEqual({
      request_id: "log-get",
      method: "GET",
      route: "/apps/:app_id/revisions/:environment_name",
      status: 200,
      user_id: account.userId,
    });
  });

  it("writes the id it made up when the caller sent none, the one echoed on the response", async () => {
    const response = await send("GET", `/apps/${appId}/revisions/production`, { key: account.key });
    const id = response.headers.get("X-Request-Id");
    expect(id).toMatch(UUID);
    expect((await logLine(String(id))).fields).toMatchObject({ status: 200, user_id: account.userId });
  });

  it("names the route, not the path, for a create sent with a trailing slash", async () => {
    const response = await send("POST", "/apps/", { key: account.key, body: { app_name: "slashed" }, ...withId("log-post") });
    expect(response.status).toBe(200);
    expect((await logLine("log-post")).fields).toMatchObject({
      method: "POST",
      route: "/apps",
      status: 200,
      user_id: account.userId,
    });
  });

  it("logs refused requests without a caller, and unknown paths without a route", async () => {
    await send("GET", `/apps/${appId}/revisions/production`, {
      key: `${account.key.slice(0, 9)}${"0".repeat(64)}`,
      ...withId("log-401"),
    });
    expect((await logLine("log-401")).fields).toMatchObject({
      route: "/apps/:app_id/revisions/:environment_name",
      status: 401,
      user_id: null,
    });
    await send("GET", "/apps/x/nowhere", withId("log-404"));
    expect((await logLine("log-404")).fields).toMatchObject({ method: "GET", route: null, status: 404, user_id: null });
  });

  it("never writes the key or the Authorization header", async () => {
    const secret = account.key.split(".")[1];
    await postApp(account.key, { app_name: "secretive" }, withId("log-key-1"));
    await send("GET", "/apps/x/revisions/y", { authorization: `Bearer ${account.key}`, ...withId("log-key-2") });
    await getRevisions(account.key, appId, "staging");
    await burstWritten();
    const written = logs.mock.calls.map((args) => args.map((arg) => JSON.stringify(arg)).join(" ")).join("\n");
    expect(written).toContain('"request_id":"log-key-1"');
    expect(written).not.toContain(secret);
    expect(written).not.toMatch(/authorization|apikey|bearer/i);
  });

  it("never writes a webhook's secret: shown at creation and rotation, used to sign, sealed at rest", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const hook = await subscribe(account.key, { url: newInbox(), events: ["*"] });
    const rotate = await send("POST", `/webhooks/${hook.id}/rotate-secret`, { key: account.key, ...withId("log-secret-1") });
    const { secret } = await expectJson<{ secret: string }>(rotate);
    await send("POST", `/webhooks/${hook.id}/test`, { key: account.key });
    await postApp(account.key, { app_name: "signed" });
    await receivedAtLeast(hook.url, 1);
    await burstWritten();
    const written = [...logs.mock.calls, ...errors.mock.calls]
      .map((args) => args.map((arg) => JSON.stringify(arg)).join(" "))
      .join("\n");
    expect(written).toContain('"request_id":"log-secret-1"');
    for (const shown of [hook.secret, secret]) expect(written).not.toContain(shown.slice("whsec_".length));
  });
});

describe("the request log under concurrent requests", () => {
  const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}-${index}`);
  const getAll = (requestIds: string[]) =>
    Promise.all(requestIds.map((id) => send("GET", `/apps/${appId}/revisions/production`, { key: account.key, ...withId(id) })));

  it("writes the entries of requests that end together in one line, each of them once", async () => {
    const sent = ids("burst", 12);
    const responses = await getAll(sent);
    expect(responses.map((response) => response.status)).toEqual(sent.map(() => 200));
    await burstWritten();
    expect(logs.mock.calls.length, "fewer lines than requests").toBeLessThan(sent.length);
    expect(logs.mock.calls.some(([line]) => Array.isArray((line as { requests?: unknown }).requests))).toBe(true);
    const entries = loggedEntries();
    expect(entries.map((entry) => entry.request_id).sort()).toEqual([...sent].sort());
    for (const entry of entries) {
      expect(entry).toEqual({
        request_id: entry.request_id,
        method: "GET",
        route: "/apps/:app_id/revisions/:environment_name",
        status: 200,
        user_id: account.userId,
      });
    }
  });

  it(`writes at most ${REQUEST_LOG_BURST_ENTRIES} entries in a line`, async () => {
    const sent = ids("many", REQUEST_LOG_BURST_ENTRIES * 2 + 7);
    await getAll(sent);
    await burstWritten();
    const sizes = logs.mock.calls.map(([line]) => (line as { requests?: unknown[] }).requests?.length ?? 1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(REQUEST_LOG_BURST_ENTRIES);
    expect(
      loggedEntries()
        .map((entry) => entry.request_id)
        .sort(),
    ).toEqual([...sent].sort());
  });
});
