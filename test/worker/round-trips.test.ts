import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { type Account, BASE_URL, createAccount, createAppVia, createTeam, deploy } from "./fixtures";

/**
 * Counts D1 round trips: every `batch`, `exec` and statement execution (`first`, `all`, `run`, `raw`) on the
 * real binding or on its sessions. Test code only: the Worker gets it in place of `env.DB`.
 */
function countingD1(db: D1Database) {
  const counter = { trips: 0 };
  const count = <T extends object>(target: T, methods: string[]): T => {
    for (const method of methods) {
      const original = (target as Record<string, (...args: unknown[]) => unknown>)[method].bind(target);
      Object.assign(target, {
        [method]: (...args: unknown[]) => {
          if (method === "prepare") return countStatement(original(...args) as D1PreparedStatement);
          if (method === "withSession") return count(original(...args) as D1DatabaseSession, ["prepare", "batch"]);
          counter.trips += 1;
          return original(...args);
        },
      });
    }
    return target;
  };
  const countStatement = (statement: D1PreparedStatement): D1PreparedStatement => {
    const bind = statement.bind.bind(statement);
    count(statement, ["first", "all", "run", "raw"]);
    return Object.assign(statement, { bind: (...values: unknown[]) => countStatement(bind(...values)) });
  };
  const database = Object.create(db) as D1Database;
  for (const method of ["prepare", "batch", "exec", "withSession"] as const) {
    Object.assign(database, { [method]: (db[method] as (...args: unknown[]) => unknown).bind(db) });
  }
  return { db: count(database, ["prepare", "batch", "exec", "withSession"]), counter };
}

async function roundTrips(method: string, path: string, key: string | undefined, body?: string, contentType = "application/json") {
  const { db, counter } = countingD1(env.DB);
  const headers: Record<string, string> = key ? { Authorization: `ApiKey ${key}` } : {};
  if (body !== undefined) headers["Content-Type"] = contentType;
  const request = new Request(`${BASE_URL}${path}`, { method, headers, body }) as Request<unknown, IncomingRequestCfProperties>;
  const response = await worker.fetch(request, { ...env, DB: db }, createExecutionContext());
  await response.arrayBuffer();
  return { status: response.status, trips: counter.trips };
}

let account: Account;
let viewer: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let appId: string;
const wrongKey = () => `${account.key.slice(0, 9)}${"0".repeat(64)}`;

beforeAll(async () => {
  account = await createAccount();
  viewer = await createAccount();
  team = await createTeam(account, [[viewer, "viewer"]]);
  appId = await createAppVia(account.key, { app_name: "counted" });
  for (let i = 0; i < 5; i++) await deploy(appId, "production", "main", account);
});

describe("D1 round trips per request", () => {
  it("the counter sees every kind of call", async () => {
    const { db, counter } = countingD1(env.DB);
    await db.prepare("SELECT 1").first();
    await db.prepare("SELECT ?").bind(1).all();
    await db.batch([db.prepare("SELECT 1"), db.prepare("SELECT 2")]);
    const session = db.withSession("first-unconstrained");
    await session.prepare("SELECT 1").bind().raw();
    await session.batch([session.prepare("SELECT 1")]);
    expect(counter.trips).toBe(5);
  });

  it.each([
    ["GET, success (with five revisions)", "GET", () => `/apps/${appId}/revisions/production`, () => account.key, undefined, 200, 1],
    ["POST, success", "POST", () => "/apps", () => account.key, '{"app_name":"one-trip"}', 200, 1],
    ["POST into an organization, success", "POST", () => "/apps", () => account.key, () => `{"app_name":"org-trip","organization_id":"${team.organizationId}"}`, 200, 1],
  ] as const)("%s: %i trip", async (_, method, path, key, body, status, trips) => {
    const result = await roundTrips(method, path(), key(), typeof body === "function" ? body() : body);
    expect(result).toEqual({ status, trips });
  });

  it.each([
    ["GET, key not live", "GET", () => `/apps/${appId}/revisions/production`, () => wrongKey(), undefined, 401, 1],
    ["GET, unknown environment", "GET", () => `/apps/${appId}/revisions/qa`, () => account.key, undefined, 404, 1],
    ["GET, malformed key (no lookup)", "GET", () => `/apps/${appId}/revisions/production`, () => "nonsense", undefined, 401, 0],
    ["GET, invalid path, live key", "GET", () => "/apps/not-a-uuid/revisions/production", () => account.key, undefined, 422, 1],
    ["GET, invalid path, key not live", "GET", () => "/apps/not-a-uuid/revisions/production", () => wrongKey(), undefined, 401, 1],
    ["POST, invalid body, live key", "POST", () => "/apps", () => account.key, '{"app_name":""}', 422, 1],
    ["POST, invalid body, key not live", "POST", () => "/apps", () => wrongKey(), '{"app_name":""}', 401, 1],
    ["POST, key not live", "POST", () => "/apps", () => wrongKey(), '{"app_name":"nope"}', 401, 2],
    ["POST, name taken", "POST", () => "/apps", () => account.key, '{"app_name":"counted"}', 409, 1],
    ["POST, viewer", "POST", () => "/apps", () => viewer.key, () => `{"app_name":"v","organization_id":"${team.organizationId}"}`, 403, 2],
    ["POST, unknown project", "POST", () => "/apps", () => account.key, '{"app_name":"x","project_id":"01900000-0000-7000-8000-000000000000"}', 403, 2],
  ] as const)("error path %s: %i trips", async (_, method, path, key, body, status, trips) => {
    const result = await roundTrips(method, path(), key(), typeof body === "function" ? body() : body);
    expect(result).toEqual({ status, trips });
  });
});
