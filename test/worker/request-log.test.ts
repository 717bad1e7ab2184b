import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { type Account, createAccount, createAppVia, getRevisions, postApp, send } from "./fixtures";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "logged" });
});

let logs: MockInstance<typeof console.log>;
beforeEach(() => {
  logs = vi.spyOn(console, "log").mockImplementation(() => {});
});
afterEach(() => {
  vi.restoreAllMocks();
});

const withId = (id: string) => ({ headers: { "X-Request-Id": id } });

/**
 * The one line logged for the request with this id: a single plain object (whose fields Workers Logs indexes), and
 * that object as JSON text.
 */
function logLine(requestId: string): { text: string; fields: Record<string, unknown> } {
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
    await env.DB.exec("ALTER TABLE environment_revisions RENAME TO environment_revisions_gone");
    try {
      const response = await send("GET", `/apps/${appId}/revisions/production`, { key: account.key, ...withId("err-500") });
      expect(response.status).toBe(500);
      expect(response.headers.get("X-Request-Id")).toBe("err-500");
      expect(errors).toHaveBeenCalledTimes(1);
      expect(JSON.parse(String(errors.mock.calls[0][0]))).toMatchObject({ level: "error", request_id: "err-500" });
    } finally {
      await env.DB.exec("ALTER TABLE environment_revisions_gone RENAME TO environment_revisions");
    }
  });
});

describe("the request log", () => {
  it("writes one object per request with the request id, method, route pattern, status and caller, and nothing else", async () => {
    const response = await send("GET", `/apps/${appId}/revisions/production`, { key: account.key, ...withId("log-get") });
    expect(response.status).toBe(200);
    expect(logLine("log-get").fields).toEqual({
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
    expect(logLine(String(id)).fields).toMatchObject({ status: 200, user_id: account.userId });
  });

  it("names the route, not the path, for a create sent with a trailing slash", async () => {
    const response = await send("POST", "/apps/", { key: account.key, body: { app_name: "slashed" }, ...withId("log-post") });
    expect(response.status).toBe(200);
    expect(logLine("log-post").fields).toMatchObject({ method: "POST", route: "/apps", status: 200, user_id: account.userId });
  });

  it("logs refused requests without a caller, and unknown paths without a route", async () => {
    await send("GET", `/apps/${appId}/revisions/production`, {
      key: `${account.key.slice(0, 9)}${"0".repeat(64)}`,
      ...withId("log-401"),
    });
    expect(logLine("log-401").fields).toMatchObject({
      route: "/apps/:app_id/revisions/:environment_name",
      status: 401,
      user_id: null,
    });
    await send("GET", "/apps/x/nowhere", withId("log-404"));
    expect(logLine("log-404").fields).toMatchObject({ method: "GET", route: null, status: 404, user_id: null });
  });

  it("never writes the key or the Authorization header", async () => {
    const secret = account.key.split(".")[1];
    await postApp(account.key, { app_name: "secretive" }, withId("log-key-1"));
    await send("GET", "/apps/x/revisions/y", { authorization: `Bearer ${account.key}`, ...withId("log-key-2") });
    await getRevisions(account.key, appId, "staging");
    const written = logs.mock.calls.map((args) => args.map((arg) => JSON.stringify(arg)).join(" ")).join("\n");
    expect(logLine("log-key-1").text).not.toContain(secret);
    expect(written).not.toContain(secret);
    expect(written).not.toMatch(/authorization|apikey|bearer/i);
  });
});
