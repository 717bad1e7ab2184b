import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, createTeam, deploy, send } from "./fixtures";
import { instrumentD1 } from "./instrumented-d1";

/** Status and D1 round trips of one request, counted on the real binding. */
async function roundTrips(method: string, path: string, key: string, body?: object) {
  const { db, counter } = instrumentD1(env.DB);
  const response = await send(method, path, { key, body, bindings: { DB: db } });
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
    const { db, counter } = instrumentD1(env.DB);
    await db.prepare("SELECT 1").first();
    await db.prepare("SELECT ?").bind(1).all();
    await db.batch([db.prepare("SELECT 1"), db.prepare("SELECT 2")]);
    const session = db.withSession("first-unconstrained");
    await session.prepare("SELECT 1").bind().raw();
    await session.batch([session.prepare("SELECT 1")]);
    expect(counter.trips).toBe(5);
  });

  interface Case {
    name: string;
    method: "GET" | "POST";
    path: () => string;
    key: () => string;
    body?: () => object;
    status: number;
    trips: number;
  }
  const revisions = (environment: string) => () => `/apps/${appId}/revisions/${environment}`;
  const apps = () => "/apps";
  const ownKey = () => account.key;

  const successPaths: Case[] = [
    { name: "GET (five revisions)", method: "GET", path: revisions("production"), key: ownKey, status: 200, trips: 1 },
    {
      name: "POST into the key's project",
      method: "POST",
      path: apps,
      key: ownKey,
      body: () => ({ app_name: "one-trip" }),
      status: 200,
      trips: 1,
    },
    {
      name: "POST into an organization",
      method: "POST",
      path: apps,
      key: ownKey,
      body: () => ({ app_name: "org-trip", organization_id: team.organizationId }),
      status: 200,
      trips: 1,
    },
  ];

  const errorPaths: Case[] = [
    {
      name: "GET, malformed key (no lookup)",
      method: "GET",
      path: revisions("production"),
      key: () => "nonsense",
      status: 401,
      trips: 0,
    },
    { name: "GET, key not live", method: "GET", path: revisions("production"), key: wrongKey, status: 401, trips: 1 },
    { name: "GET, unknown environment", method: "GET", path: revisions("qa"), key: ownKey, status: 404, trips: 1 },
    {
      name: "GET, invalid path, live key",
      method: "GET",
      path: () => "/apps/not-a-uuid/revisions/x",
      key: ownKey,
      status: 422,
      trips: 1,
    },
    {
      name: "GET, invalid path, key not live",
      method: "GET",
      path: () => "/apps/not-a-uuid/revisions/x",
      key: wrongKey,
      status: 401,
      trips: 1,
    },
    {
      name: "POST, invalid body, live key",
      method: "POST",
      path: apps,
      key: ownKey,
      body: () => ({ app_name: "" }),
      status: 422,
      trips: 1,
    },
    {
      name: "POST, invalid body, key not live",
      method: "POST",
      path: apps,
      key: wrongKey,
      body: () => ({ app_name: "" }),
      status: 401,
      trips: 1,
    },
    {
      name: "POST, key not live",
      method: "POST",
      path: apps,
      key: wrongKey,
      body: () => ({ app_name: "nope" }),
      status: 401,
      trips: 1,
    },
    {
      name: "POST, name taken",
      method: "POST",
      path: apps,
      key: ownKey,
      body: () => ({ app_name: "counted" }),
      status: 409,
      trips: 1,
    },
    {
      name: "POST, viewer of the target",
      method: "POST",
      path: apps,
      key: () => viewer.key,
      body: () => ({ app_name: "v", organization_id: team.organizationId }),
      status: 403,
      trips: 2,
    },
    {
      name: "POST, unknown project",
      method: "POST",
      path: apps,
      key: ownKey,
      body: () => ({ app_name: "x", project_id: "01900000-0000-7000-8000-000000000000" }),
      status: 403,
      trips: 2,
    },
  ];

  it.each(successPaths)("success path $name: $trips round trip", async ({ method, path, key, body, status, trips }) => {
    expect(await roundTrips(method, path(), key(), body?.())).toEqual({ status, trips });
  });

  it.each(errorPaths)("error path $name: $trips round trips", async ({ method, path, key, body, status, trips }) => {
    expect(await roundTrips(method, path(), key(), body?.())).toEqual({ status, trips });
  });
});
