import { v5 as uuidv5 } from "uuid";
import { beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../src/routes";
import {
  type Account,
  createAccount,
  createAppVia,
  createOrganizationVia,
  createTeam,
  deploy,
  expectJson,
  getRevisions,
  type IssuedInvitation,
  invite,
  issueKey,
  joinAsNewUser,
  markKeyUsed,
  newId,
  newKeyPrefix,
  send,
} from "./fixtures";
import { instrumentD1 } from "./instrumented-d1";
import { bucketFor, countedShards, databaseOf, inPlaceOfShardFor, shards } from "./pool";
import { newInbox, settledDeliveries, subscribe } from "./webhooks/webhook-fixtures";

/**
 * Status and D1 round trips of one request, counted on the real binding. The key's use is first recorded as
 * recent, as it is for every request but a key's first in an hour, which adds one write after the answer
 * (counted on its own in "a key's use").
 */
/** The lists spanning organizations, which read every shard. */
const LISTS_OF_EVERY_SHARD = ["/keys", "/organizations", "/organizations/own"];

/** Every request `roundTrips` sent: its method and path (without the query), for "the walk" below. */
const walked: string[] = [];

/**
 * A request's status and its round trips, on every database together. Every organization here is on SHARD_1, and every
 * key homed there: a request answered otherwise than 401 (a key not found on SHARD_1 is looked for on the legacy
 * bucket's shard) never reaches SHARD_0, or it was routed wrong.
 */
async function roundTrips(method: string, path: string, key: string, body?: object, headers?: Record<string, string>) {
  const { status, trips } = await tripsByShard(method, path, key, body, headers);
  walked.push(`${method} ${path.split("?")[0]}`);
  const spansShards = method === "GET" && LISTS_OF_EVERY_SHARD.includes(path);
  if (status !== 401 && !spansShards) expect(trips.SHARD_0, `${method} ${path} reached SHARD_0`).toBe(0);
  return { status, trips: Object.values(trips).reduce((sum, count) => sum + count, 0) };
}

/** A request's status and its round trips on each shard, by shard (a shard it did not reach: 0). */
async function tripsByShard(method: string, path: string, key: string, body?: object, headers?: Record<string, string>) {
  await markKeyUsed(key);
  const { bindings, trips } = countedShards();
  const response = await send(method, path, { key, body, headers, bindings });
  await response.arrayBuffer();
  return { status: response.status, trips: trips() };
}

/** A request whose round trips are counted, and what it must answer in how many. */
interface Case {
  name: string;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: () => string;
  key: () => string;
  body?: () => object;
  headers?: () => Record<string, string>;
  status: number;
  trips: number;
}

let account: Account;
let viewer: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let appId: string;
let teamAppId: string;
let renamedId: string;
let deletedId: string;
let variantId: string;
let firstRevisionId: string;
let staleETag: string;
let removableId: string;
let org: Awaited<ReturnType<typeof createOrganizationVia>>;
let spareKey: string;
let newcomer: IssuedInvitation;
let memberEmail: string;
let leaverEmail: string;
let simpleAppId: string;
let simpleVariantId: string;
const keyed = (name: string) => ({ "Idempotency-Key": `round-trips-${name}` });
/** An id, and a key prefix, of nothing, in the bucket of the account's organization: routed to its shard. */
const unknownId = () => newId(bucketFor(account.organizationId));
const unknownPrefix = () => newKeyPrefix(bucketFor(account.organizationId));
/**
 * A key that is not live, of the account's prefix: a key found on no shard costs two round trips when its prefix is
 * not on the legacy bucket's shard, which is asked too (a key made before buckets may have such a prefix by chance).
 */
const wrongKey = () => `${account.key.slice(0, 9)}${"0".repeat(64)}`;

beforeAll(async () => {
  // All on the second shard (whose buckets carry no legacy one): each route then needs its one round trip only if it
  // routes by what it names. Keys homed on another shard: "across shards" below.
  account = await createAccount(undefined, "SHARD_1");
  viewer = await createAccount(undefined, "SHARD_1");
  team = await createTeam(account, [[viewer, "viewer"]], "SHARD_1");
  appId = await createAppVia(account.key, { app_name: "counted" });
  const deployed = [];
  for (let i = 0; i < 5; i++) deployed.push(await deploy(appId, "production", "main", account));
  [{ variantId, revisionId: firstRevisionId }] = deployed;
  // The ETag production had after its first deploy: four deploys ago.
  staleETag = String((await getRevisions(account.key, appId, "production")).headers.get("ETag")).replace(/\.5"$/, '.1"');
  teamAppId = await createAppVia(account.key, { app_name: "team-counted", organization_id: team.organizationId });
  await deploy(teamAppId, "staging", "main", account);
  renamedId = await createAppVia(account.key, { app_name: "to-rename" });
  deletedId = await createAppVia(account.key, { app_name: "to-delete" });
  expect((await send("POST", "/apps", { key: account.key, body: { app_name: "keyed" }, headers: keyed("taken") })).status).toBe(
    200,
  );
  const removable = await send("POST", "/variants/from-base", {
    key: account.key,
    body: { base_id: appId, new_variant_name: "x", new_config_name: "removable", parameters: {} },
  });
  removableId = ((await removable.json()) as { variant_id: string }).variant_id;
  org = await createOrganizationVia(account.key, "counted org");
  spareKey = await issueKey(account.userId, account.projectId);
  newcomer = await expectJson<IssuedInvitation>(
    await invite(account.key, org.organizationId, org.workspaceId, "counted@example.com", "editor"),
  );
  memberEmail = (await joinAsNewUser(account.key, org.organizationId, org.workspaceId, "editor")).email;
  leaverEmail = (await joinAsNewUser(account.key, org.organizationId, org.workspaceId, "viewer")).email;
  const simpleApp = await send("POST", "/simple/applications/", {
    key: account.key,
    body: { application: { slug: "current-counted", name: "current-counted" } },
  });
  simpleAppId = (await expectJson<{ application: { id: string } }>(simpleApp)).application.id;
  const simpleVariant = await send("POST", "/applications/variants/", {
    key: account.key,
    body: { application_variant: { application_id: simpleAppId, slug: "counted-variant" } },
  });
  simpleVariantId = (await expectJson<{ application_variant: { id: string } }>(simpleVariant)).application_variant.id;
});

describe("D1 round trips per request", () => {
  it("the counter sees every kind of call", async () => {
    const { db, counter } = instrumentD1(shards()[0]);
    await db.prepare("SELECT 1").first();
    await db.prepare("SELECT ?").bind(1).all();
    await db.batch([db.prepare("SELECT 1"), db.prepare("SELECT 2")]);
    const session = db.withSession("first-unconstrained");
    await session.prepare("SELECT 1").bind().raw();
    await session.batch([session.prepare("SELECT 1")]);
    expect(counter.trips).toBe(5);
  });

  it("a key's first request in an hour is answered after one round trip; the record of its use comes after the answer", async () => {
    const fresh = await createAccount();
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Trip 2, the write of the key's use, is held until the answer is in: the answer does not wait for it.
    const { db, counter } = instrumentD1(databaseOf(fresh.key), { beforeTrip: (trip) => (trip === 2 ? held : undefined) });
    const response = await send("GET", "/profile", { key: fresh.key, bindings: inPlaceOfShardFor(fresh.key, db) });
    expect(response.status).toBe(200);
    expect(counter.trips).toBe(2);
    release();
    const recorded = async () =>
      (
        await databaseOf(fresh.key)
          .prepare("SELECT last_used_at FROM api_keys WHERE user_id = ?")
          .bind(fresh.userId)
          .first<{ last_used_at: string | null }>()
      )?.last_used_at;
    for (let attempt = 0; attempt < 50 && !(await recorded()); attempt++) await scheduler.wait(10);
    expect(await recorded()).not.toBeNull();
  });

  const revisions = (environment: string) => () => `/apps/${appId}/revisions/${environment}`;
  const apps = () => "/apps";
  const ownKey = () => account.key;
  const configs = (action: string) => () => `/variants/configs/${action}`;
  const mainOf = (id: () => string) => () => ({ application_ref: { id: id() }, variant_ref: { slug: "main" } });
  const mainTo = (environment: string) => () => ({ ...mainOf(() => appId)(), environment_ref: { slug: environment } });
  /** One case per route of the registry, each as the platform's client calls it. */
  const registryPaths: Case[] = [
    { name: "GET /apps", method: "GET", path: apps, key: ownKey, status: 200, trips: 1 },
    { name: "GET /apps?app_name", method: "GET", path: () => "/apps?app_name=counted", key: ownKey, status: 200, trips: 1 },
    {
      name: "PATCH /apps/{id}",
      method: "PATCH",
      path: () => `/apps/${renamedId}`,
      key: ownKey,
      body: () => ({ app_name: "renamed" }),
      status: 200,
      trips: 1,
    },
    { name: "DELETE /apps/{id}", method: "DELETE", path: () => `/apps/${deletedId}`, key: ownKey, status: 200, trips: 1 },
    { name: "GET environments", method: "GET", path: () => `/apps/${appId}/environments`, key: ownKey, status: 200, trips: 1 },
    { name: "GET an app's variants", method: "GET", path: () => `/apps/${appId}/variants`, key: ownKey, status: 200, trips: 1 },
    {
      name: "GET get_variant_by_env",
      method: "GET",
      path: () => `/apps/get_variant_by_env?app_id=${appId}&environment=production`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    { name: "GET a variant", method: "GET", path: () => `/variants/${variantId}`, key: ownKey, status: 200, trips: 1 },
    {
      name: "GET its revisions",
      method: "GET",
      path: () => `/variants/${variantId}/revisions`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "GET one revision",
      method: "GET",
      path: () => `/variants/${variantId}/revisions/1`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "configs/add",
      method: "POST",
      path: configs("add"),
      key: ownKey,
      body: () => ({ application_ref: { id: appId }, variant_ref: { slug: "added" } }),
      status: 200,
      trips: 1,
    },
    {
      name: "configs/commit",
      method: "POST",
      path: configs("commit"),
      key: ownKey,
      body: () => ({ ...mainOf(() => appId)(), params: { a: 1 } }),
      status: 200,
      trips: 1,
    },
    {
      name: "configs/fetch by variant",
      method: "POST",
      path: configs("fetch"),
      key: ownKey,
      body: mainOf(() => appId),
      status: 200,
      trips: 1,
    },
    {
      name: "configs/fetch by environment",
      method: "POST",
      path: configs("fetch"),
      key: ownKey,
      body: () => ({ application_ref: { slug: "counted" }, environment_ref: { slug: "production" } }),
      status: 200,
      trips: 1,
    },
    {
      name: "configs/fork",
      method: "POST",
      path: configs("fork"),
      key: ownKey,
      body: mainOf(() => appId),
      status: 200,
      trips: 1,
    },
    {
      name: "configs/commit, stale version",
      method: "POST",
      path: configs("commit"),
      key: ownKey,
      body: () => ({ application_ref: { id: appId }, variant_ref: { slug: "main", version: 1 }, params: {} }),
      status: 409,
      trips: 1,
    },
    {
      name: "configs/add, existing",
      method: "POST",
      path: configs("add"),
      key: ownKey,
      body: mainOf(() => appId),
      status: 400,
      trips: 1,
    },
    {
      name: "configs/commit by a viewer",
      method: "POST",
      path: configs("commit"),
      key: () => viewer.key,
      body: () => ({ ...mainOf(() => teamAppId)(), params: {} }),
      status: 403,
      trips: 1,
    },
    {
      name: "configs/fetch, nothing there",
      method: "POST",
      path: configs("fetch"),
      key: ownKey,
      body: () => ({ application_ref: { id: appId }, variant_ref: { slug: "absent" } }),
      status: 404,
      trips: 1,
    },
    {
      name: "PATCH to a taken name",
      method: "PATCH",
      path: () => `/apps/${appId}`,
      key: ownKey,
      body: () => ({ app_name: "renamed" }),
      status: 409,
      trips: 1,
    },
  ];

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
    {
      name: "POST with an Idempotency-Key (its claim in the same batch)",
      method: "POST",
      path: apps,
      key: ownKey,
      body: () => ({ app_name: "keyed-trip" }),
      headers: () => keyed("fresh"),
      status: 200,
      trips: 1,
    },
    {
      name: "configs/deploy",
      method: "POST",
      path: configs("deploy"),
      key: ownKey,
      body: mainTo("staging"),
      status: 200,
      trips: 1,
    },
    {
      name: "configs/deploy with If-Match: * and an Idempotency-Key",
      method: "POST",
      path: configs("deploy"),
      key: ownKey,
      body: mainTo("development"),
      headers: () => ({ "If-Match": "*", ...keyed("deploy") }),
      status: 200,
      trips: 1,
    },
    {
      name: "environments/deploy",
      method: "POST",
      path: () => "/environments/deploy",
      key: ownKey,
      body: () => ({ environment_name: "staging", variant_id: variantId }),
      status: 200,
      trips: 1,
    },
    {
      name: "revert",
      method: "POST",
      path: () => `/configs/deployment/${firstRevisionId}/revert`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "configs/deploy?dry_run=true",
      method: "POST",
      path: () => "/variants/configs/deploy?dry_run=true",
      key: ownKey,
      body: mainTo("staging"),
      status: 200,
      trips: 1,
    },
    {
      name: "environments/deploy?dry_run=true",
      method: "POST",
      path: () => "/environments/deploy?dry_run=true",
      key: ownKey,
      body: () => ({ environment_name: "staging", variant_id: variantId }),
      status: 200,
      trips: 1,
    },
    {
      name: "revert?dry_run=true",
      method: "POST",
      path: () => `/configs/deployment/${firstRevisionId}/revert?dry_run=true`,
      key: ownKey,
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
    { name: "GET, key not live", method: "GET", path: revisions("production"), key: wrongKey, status: 401, trips: 2 },
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
      trips: 2,
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
      trips: 2,
    },
    {
      name: "POST, key not live",
      method: "POST",
      path: apps,
      key: wrongKey,
      body: () => ({ app_name: "nope" }),
      status: 401,
      trips: 2,
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
      body: () => ({ app_name: "x", project_id: unknownId() }),
      status: 403,
      trips: 2,
    },
    {
      name: "configs/deploy, If-Match of an earlier state",
      method: "POST",
      path: configs("deploy"),
      key: ownKey,
      body: mainTo("production"),
      headers: () => ({ "If-Match": staleETag }),
      status: 412,
      trips: 1,
    },
    {
      name: "POST, a replay of an Idempotency-Key (its first answer read back)",
      method: "POST",
      path: apps,
      key: ownKey,
      body: () => ({ app_name: "keyed" }),
      headers: () => keyed("taken"),
      status: 200,
      trips: 2,
    },
    {
      name: "POST, an Idempotency-Key used for another request",
      method: "POST",
      path: apps,
      key: ownKey,
      body: () => ({ app_name: "not-keyed" }),
      headers: () => keyed("taken"),
      status: 422,
      trips: 2,
    },
  ];

  const saved = (config: string, overwrite: boolean) => () => ({
    base_id: appId,
    config_name: config,
    parameters: { n: 1 },
    overwrite,
  });
  /** The older SDK's registry: one round trip each, the key check and (for a save over a name) the deploy inside it. */
  const olderSdkPaths: Case[] = [
    {
      name: "GET /configs by environment",
      method: "GET",
      path: () => `/configs?base_id=${appId}&environment_name=production`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "GET /configs by name",
      method: "GET",
      path: () => `/configs?base_id=${appId}&config_name=main`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "GET /configs, nothing deployed",
      method: "GET",
      path: () => `/configs?base_id=${appId}&environment_name=qa`,
      key: ownKey,
      status: 404,
      trips: 1,
    },
    {
      name: "POST /configs, a new name",
      method: "POST",
      path: () => "/configs",
      key: ownKey,
      body: saved("saved", false),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /configs, overwrite (commit and deploy)",
      method: "POST",
      path: () => "/configs",
      key: ownKey,
      body: saved("main", true),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /configs with an Idempotency-Key",
      method: "POST",
      path: () => "/configs",
      key: ownKey,
      body: saved("main", true),
      headers: () => keyed("save"),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /configs, name taken",
      method: "POST",
      path: () => "/configs",
      key: ownKey,
      body: saved("saved", false),
      status: 400,
      trips: 1,
    },
    {
      name: "GET /configs/deployment/{id}",
      method: "GET",
      path: () => `/configs/deployment/${firstRevisionId}`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    { name: "GET /bases", method: "GET", path: () => `/bases?app_id=${appId}`, key: ownKey, status: 200, trips: 1 },
    {
      name: "POST /variants/from-base",
      method: "POST",
      path: () => "/variants/from-base",
      key: ownKey,
      body: () => ({ base_id: appId, new_variant_name: "v", new_config_name: "based", parameters: { n: 1 } }),
      status: 200,
      trips: 1,
    },
    {
      name: "PUT /variants/{id}/parameters",
      method: "PUT",
      path: () => `/variants/${variantId}/parameters`,
      key: ownKey,
      body: () => ({ parameters: { n: 2 } }),
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /variants/{id}",
      method: "DELETE",
      path: () => `/variants/${removableId}`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /variants/{id}, deployed",
      method: "DELETE",
      path: () => `/variants/${variantId}`,
      key: ownKey,
      status: 409,
      trips: 1,
    },
  ];

  it.each(olderSdkPaths)(
    "older SDK $name: $status in $trips round trip",
    async ({ method, path, key, body, headers, status, trips }) => {
      expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
    },
  );

  it.each(successPaths)("success path $name: $trips round trip", async ({ method, path, key, body, headers, status, trips }) => {
    expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
  });

  it.each(registryPaths)(
    "registry $name: $status in $trips round trip",
    async ({ method, path, key, body, headers, status, trips }) => {
      expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
    },
  );

  /** One case per call of today's SDK this branch serves (docs/CURRENT-SDK-API.md, 10 to 15), and their refusals. */
  const currentSdkPaths: Case[] = [
    {
      name: "retrieve by environment",
      method: "POST",
      path: () => "/applications/revisions/retrieve",
      key: ownKey,
      body: () => ({ resolve: true, environment_ref: { slug: "production", version: "2" }, key: "counted.revision" }),
      status: 200,
      trips: 1,
    },
    {
      name: "retrieve by environment, running nothing",
      method: "POST",
      path: () => "/applications/revisions/retrieve",
      key: ownKey,
      body: () => ({ environment_ref: { slug: "production", version: "99" }, key: "counted.revision" }),
      status: 404,
      trips: 1,
    },
    {
      name: "retrieve by variant",
      method: "POST",
      path: () => "/applications/revisions/retrieve",
      key: ownKey,
      body: () => ({ application_ref: { slug: "counted" }, application_variant_ref: { slug: "main" } }),
      status: 200,
      trips: 1,
    },
    {
      name: "retrieve by an app ref alone (the app found or not in the same batch)",
      method: "POST",
      path: () => "/applications/revisions/retrieve",
      key: ownKey,
      body: () => ({ resolve: true, application_ref: { slug: "counted" }, application_variant_ref: null }),
      status: 200,
      trips: 1,
    },
    {
      name: "retrieve by an app ref alone naming no app",
      method: "POST",
      path: () => "/applications/revisions/retrieve",
      key: ownKey,
      body: () => ({ resolve: true, application_ref: { slug: "no-such-app" } }),
      status: 404,
      trips: 1,
    },
    {
      name: "workflows retrieve",
      method: "POST",
      path: () => "/workflows/revisions/retrieve",
      key: ownKey,
      body: () => ({ workflow_ref: { id: appId }, workflow_variant_ref: { id: variantId } }),
      status: 200,
      trips: 1,
    },
    {
      name: "commit with an Idempotency-Key",
      method: "POST",
      path: () => "/applications/revisions/commit",
      key: ownKey,
      body: () => ({ application_revision: { application_variant_id: variantId, data: { parameters: { t: 1 } }, message: "m" } }),
      headers: () => keyed("current-commit"),
      status: 200,
      trips: 1,
    },
    {
      name: "commit to a variant the key cannot see",
      method: "POST",
      path: () => "/applications/revisions/commit",
      key: () => viewer.key,
      body: () => ({ application_revision: { application_variant_id: variantId, data: { parameters: {} } } }),
      status: 404,
      trips: 1,
    },
    {
      name: "log, a page",
      method: "POST",
      path: () => "/applications/revisions/log",
      key: ownKey,
      body: () => ({ application_revisions: { application_variant_id: variantId }, windowing: { limit: 2 } }),
      status: 200,
      trips: 1,
    },
    {
      name: "deploy with If-Match: *",
      method: "POST",
      path: () => "/applications/revisions/deploy",
      key: ownKey,
      body: () => ({
        application_ref: { id: appId },
        application_variant_ref: { slug: "main" },
        environment_ref: { slug: "staging" },
      }),
      headers: () => ({ "If-Match": "*" }),
      status: 200,
      trips: 1,
    },
    {
      name: "deploy?dry_run=true",
      method: "POST",
      path: () => "/applications/revisions/deploy?dry_run=true",
      key: ownKey,
      body: () => ({
        application_ref: { id: appId },
        application_variant_ref: { slug: "main" },
        environment_ref: { slug: "staging" },
      }),
      status: 200,
      trips: 1,
    },
    {
      name: "deploy to no environment",
      method: "POST",
      path: () => "/applications/revisions/deploy",
      key: ownKey,
      body: () => ({ application_ref: { id: appId }, environment_ref: { slug: "qa" } }),
      status: 404,
      trips: 1,
    },
    {
      name: "environments query",
      method: "POST",
      path: () => "/simple/environments/query",
      key: ownKey,
      body: () => ({ environment: { slug: "production" } }),
      status: 200,
      trips: 1,
    },
  ];

  it.each(currentSdkPaths)(
    "today's SDK $name: $status in $trips round trip",
    async ({ method, path, key, body, headers, status, trips }) => {
      expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
    },
  );

  const inOrg = (path: string) => () => `/organizations/${org.organizationId}${path}`;
  const inWorkspace = (path: string) => () => `/workspaces/${org.workspaceId}${path}`;
  const inOrgWorkspace = (path: string) => () => `/organizations/${org.organizationId}/workspaces/${org.workspaceId}${path}`;
  /** One case per accounts route (docs/ACCOUNTS-API.md), each as the platform's client calls it. */
  const accountsPaths: Case[] = [
    { name: "GET /keys", method: "GET", path: () => "/keys", key: ownKey, status: 200, trips: 3 },
    {
      name: "POST /keys",
      method: "POST",
      path: () => `/keys?workspace_id=${org.workspaceId}`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /keys/{prefix}?dry_run=true",
      method: "DELETE",
      path: () => `/keys/${spareKey.split(".")[0]}?dry_run=true`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /keys/{prefix}",
      method: "DELETE",
      path: () => `/keys/${spareKey.split(".")[0]}`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /keys/{prefix}, unknown",
      method: "DELETE",
      path: () => `/keys/${unknownPrefix()}`,
      key: ownKey,
      status: 404,
      trips: 1,
    },
    {
      name: "GET /keys/{prefix}/validate",
      method: "GET",
      path: () => `/keys/${unknownPrefix()}/validate`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    { name: "GET /profile", method: "GET", path: () => "/profile", key: ownKey, status: 200, trips: 1 },
    // A list spanning organizations: the key checked on its home shard, then every shard (two) in parallel.
    { name: "GET /organizations", method: "GET", path: () => "/organizations", key: ownKey, status: 200, trips: 3 },
    {
      name: "POST /organizations",
      method: "POST",
      path: () => "/organizations",
      key: ownKey,
      body: () => ({ name: "another", owner: account.userId }),
      status: 200,
      trips: 1,
    },
    { name: "GET /organizations/own", method: "GET", path: () => "/organizations/own", key: ownKey, status: 200, trips: 3 },
    { name: "GET /organizations/{id}", method: "GET", path: inOrg(""), key: ownKey, status: 200, trips: 1 },
    {
      name: "PUT /organizations/{id}",
      method: "PUT",
      path: inOrg(""),
      key: ownKey,
      body: () => ({ name: "renamed" }),
      status: 200,
      trips: 1,
    },
    {
      name: "PUT /organizations/{id}, not a member",
      method: "PUT",
      path: inOrg(""),
      key: () => viewer.key,
      body: () => ({ name: "x" }),
      status: 404,
      trips: 1,
    },
    {
      name: "POST .../workspaces",
      method: "POST",
      path: inOrg("/workspaces"),
      key: ownKey,
      body: () => ({ name: "w2" }),
      status: 200,
      trips: 1,
    },
    {
      name: "PUT .../workspaces/{id}",
      method: "PUT",
      path: inOrgWorkspace(""),
      key: ownKey,
      body: () => ({ description: "d" }),
      status: 200,
      trips: 1,
    },
    {
      name: "POST .../invite",
      method: "POST",
      path: inOrgWorkspace("/invite"),
      key: ownKey,
      body: () => [{ email: "counted-2@example.com", roles: ["viewer"] }],
      status: 200,
      trips: 1,
    },
    {
      name: "POST .../invite/resend",
      method: "POST",
      path: inOrgWorkspace("/invite/resend"),
      key: ownKey,
      body: () => ({ email: "counted-2@example.com" }),
      status: 200,
      trips: 1,
    },
    {
      // The invitation's email read, the directory's claim, the accept, and the claim confirmed after the answer.
      name: "POST .../invite/accept, a new email without a key",
      method: "POST",
      path: () => `${inOrgWorkspace("/invite/accept")()}?project_id=${newcomer.project_id}`,
      key: () => "",
      body: () => ({ token: newcomer.token }),
      status: 200,
      trips: 4,
    },
    {
      name: "POST .../invite/accept, a used token",
      method: "POST",
      path: () => `${inOrgWorkspace("/invite/accept")()}?project_id=${newcomer.project_id}`,
      key: () => "",
      body: () => ({ token: newcomer.token }),
      status: 409,
      trips: 3,
    },
    { name: "GET /workspaces/roles", method: "GET", path: () => "/workspaces/roles", key: ownKey, status: 200, trips: 1 },
    {
      name: "GET /workspaces/permissions",
      method: "GET",
      path: () => "/workspaces/permissions",
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /workspaces/{id}/roles",
      method: "POST",
      path: inWorkspace("/roles"),
      key: ownKey,
      body: () => ({ email: memberEmail, organization_id: org.organizationId, role: "deployment_manager" }),
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /workspaces/{id}/roles?dry_run=true",
      method: "DELETE",
      path: () =>
        `/workspaces/${org.workspaceId}/roles?email=${memberEmail}&org_id=${org.organizationId}&role=deployment_manager&dry_run=true`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /workspaces/{id}/roles",
      method: "DELETE",
      path: () =>
        `/workspaces/${org.workspaceId}/roles?email=${memberEmail}&org_id=${org.organizationId}&role=deployment_manager`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /workspaces/{id}/users?dry_run=true",
      method: "DELETE",
      path: () => `/workspaces/${org.workspaceId}/users?email=${leaverEmail}&org_id=${org.organizationId}&dry_run=true`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "DELETE /workspaces/{id}/users",
      method: "DELETE",
      path: () => `/workspaces/${org.workspaceId}/users?email=${leaverEmail}&org_id=${org.organizationId}`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    { name: "GET /events", method: "GET", path: () => "/events?type=app.&limit=5", key: ownKey, status: 200, trips: 1 },
    { name: "GET /health", method: "GET", path: () => "/health", key: () => "", status: 200, trips: 0 },
    // The document is a static asset: no database is asked.
    { name: "GET /openapi.json", method: "GET", path: () => "/openapi.json", key: () => "", status: 200, trips: 0 },
  ];

  it.each(accountsPaths)(
    "accounts $name: $status in $trips round trip",
    async ({ method, path, key, body, headers, status, trips }) => {
      expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
    },
  );

  const simpleApp =
    (path = "") =>
    () =>
      `/simple/applications/${simpleAppId}${path}`;
  const simpleVariant =
    (path = "") =>
    () =>
      `/applications/variants/${simpleVariantId}${path}`;
  /** One case per call of today's SDK's apps and variants (docs/CURRENT-SDK-API.md, 1 to 9), and their error paths. */
  const currentApiPaths: Case[] = [
    {
      name: "POST /simple/applications/",
      method: "POST",
      path: () => "/simple/applications/",
      key: ownKey,
      body: () => ({ application: { slug: "current-new", name: "current-new" } }),
      status: 200,
      trips: 1,
    },
    // The 409 says whether the app holding the name is archived: one more round trip, on this path only.
    {
      name: "POST /simple/applications/, a name taken",
      method: "POST",
      path: () => "/simple/applications/",
      key: ownKey,
      body: () => ({ application: { slug: "counted", name: "counted" } }),
      status: 409,
      trips: 2,
    },
    {
      name: "POST /simple/applications/query",
      method: "POST",
      path: () => "/simple/applications/query",
      key: ownKey,
      body: () => ({}),
      status: 200,
      trips: 1,
    },
    { name: "GET /simple/applications/{id}", method: "GET", path: simpleApp(), key: ownKey, status: 200, trips: 1 },
    {
      name: "GET /simple/applications/{id}, absent",
      method: "GET",
      path: () => `/simple/applications/${unknownId()}`,
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "PUT /simple/applications/{id}",
      method: "PUT",
      path: simpleApp(),
      key: ownKey,
      body: () => ({ application: { id: simpleAppId, slug: "current-renamed", name: "current-renamed" } }),
      status: 200,
      trips: 1,
    },
    {
      name: "PUT /simple/applications/{id}, a name taken",
      method: "PUT",
      path: simpleApp(),
      key: ownKey,
      body: () => ({ application: { slug: "counted", name: "counted" } }),
      status: 409,
      trips: 2,
    },
    {
      name: "POST /simple/applications/{id}/archive",
      method: "POST",
      path: simpleApp("/archive"),
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /simple/applications/{id}/unarchive",
      method: "POST",
      path: simpleApp("/unarchive"),
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /simple/applications/{id}/archive, a viewer",
      method: "POST",
      path: () => `/simple/applications/${teamAppId}/archive`,
      key: () => viewer.key,
      status: 403,
      trips: 1,
    },
    {
      name: "POST /simple/applications/{id}/archive, absent",
      method: "POST",
      path: () => `/simple/applications/${unknownId()}/archive`,
      key: ownKey,
      status: 404,
      trips: 1,
    },
    {
      name: "POST /applications/variants/",
      method: "POST",
      path: () => "/applications/variants/",
      key: ownKey,
      body: () => ({ application_variant: { application_id: simpleAppId, slug: "another-variant" } }),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /applications/variants/, a slug taken",
      method: "POST",
      path: () => "/applications/variants/",
      key: ownKey,
      body: () => ({ application_variant: { application_id: simpleAppId, slug: "counted-variant" } }),
      status: 409,
      trips: 2,
    },
    {
      name: "POST /applications/variants/query",
      method: "POST",
      path: () => "/applications/variants/query",
      key: ownKey,
      body: () => ({ application_refs: [{ id: simpleAppId }], application_variant: { slug: "counted-variant" } }),
      status: 200,
      trips: 1,
    },
    { name: "GET /applications/variants/{id}", method: "GET", path: simpleVariant(), key: ownKey, status: 200, trips: 1 },
    {
      name: "POST /applications/variants/{id}/archive",
      method: "POST",
      path: simpleVariant("/archive"),
      key: ownKey,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /applications/variants/{id}/unarchive",
      method: "POST",
      path: simpleVariant("/unarchive"),
      key: ownKey,
      status: 200,
      trips: 1,
    },
  ];

  it.each(currentApiPaths)(
    "today's SDK $name: $status in $trips round trip(s)",
    async ({ method, path, key, body, headers, status, trips }) => {
      expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
    },
  );

  it.each(errorPaths)("error path $name: $trips round trips", async ({ method, path, key, body, headers, status, trips }) => {
    expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
  });
});

describe("D1 round trips of webhooks", () => {
  let owner: Account;
  let hookId: string;
  let deliveryId: string;
  beforeAll(async () => {
    owner = await createAccount(undefined, "SHARD_1");
    const hooks = await Promise.all([1, 2, 3].map(() => subscribe(owner.key, { url: newInbox(), events: ["*"] })));
    hookId = hooks[0].id;
    await createAppVia(owner.key, { app_name: "heard" });
    deliveryId = (await settledDeliveries(owner.key, hookId))[0].id;
  });
  const inHook = (path: string) => () => `/webhooks/${hookId}${path}`;
  const ownerKey = () => owner.key;
  /** One case per webhook route, and a write with three webhooks subscribed: each is still one round trip. */
  const webhookPaths: Case[] = [
    {
      name: "POST /apps, three webhooks subscribed",
      method: "POST",
      path: () => "/apps",
      key: ownerKey,
      body: () => ({ app_name: "announced" }),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /webhooks",
      method: "POST",
      path: () => "/webhooks",
      key: ownerKey,
      body: () => ({ url: newInbox(), events: ["app.created"] }),
      status: 200,
      trips: 1,
    },
    { name: "GET /webhooks", method: "GET", path: () => "/webhooks", key: ownerKey, status: 200, trips: 1 },
    { name: "GET /webhooks/{id}", method: "GET", path: inHook(""), key: ownerKey, status: 200, trips: 1 },
    {
      name: "PATCH /webhooks/{id}",
      method: "PATCH",
      path: inHook(""),
      key: ownerKey,
      body: () => ({ description: "patched" }),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /webhooks/{id}/rotate-secret",
      method: "POST",
      path: inHook("/rotate-secret"),
      key: ownerKey,
      status: 200,
      trips: 1,
    },
    { name: "POST /webhooks/{id}/test", method: "POST", path: inHook("/test"), key: ownerKey, status: 200, trips: 1 },
    { name: "GET /webhooks/{id}/deliveries", method: "GET", path: inHook("/deliveries"), key: ownerKey, status: 200, trips: 1 },
    {
      name: "GET /webhooks/{id}/deliveries/{id}",
      method: "GET",
      path: () => `/webhooks/${hookId}/deliveries/${deliveryId}`,
      key: ownerKey,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /webhooks/{id}/deliveries/{id}/redeliver",
      method: "POST",
      path: () => `/webhooks/${hookId}/deliveries/${deliveryId}/redeliver`,
      key: ownerKey,
      status: 200,
      trips: 1,
    },
    { name: "DELETE /webhooks/{id}", method: "DELETE", path: inHook(""), key: ownerKey, status: 200, trips: 1 },
  ];

  it.each(webhookPaths)("$name: $status in $trips round trip", async ({ method, path, key, body, headers, status, trips }) => {
    expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
  });

  const accountKey = () => account.key;
  const protectionOf = (environment: string) => () => `/projects/${team.projectId}/environments/${environment}/protection`;
  const teamDeploy = () => ({
    application_ref: { id: teamAppId },
    variant_ref: { slug: "main" },
    environment_ref: { slug: "development" },
  });
  const teamApp = (action: string) => () => (action === "" ? `/apps/${teamAppId}` : `/simple/applications/${teamAppId}${action}`);
  const teamRename = () => ({ app_name: "team-renamed" });
  const simpleEnvironment =
    (action = "") =>
    () =>
      `/simple/environments/${uuidv5("production", account.projectId)}${action}`;
  /** Protection (docs/CHANGE-REQUESTS.md §1, §2, §8), in order: the settings, a deploy they refuse, or let through. */
  const protectionPaths: Case[] = [
    { name: "GET protection", method: "GET", path: protectionOf("production"), key: accountKey, status: 200, trips: 1 },
    {
      name: "PUT protection",
      method: "PUT",
      path: protectionOf("development"),
      key: accountKey,
      body: () => ({ protected: true, bypass_roles: ["owner"] }),
      status: 200,
      trips: 1,
    },
    {
      name: "PUT protection, unchanged",
      method: "PUT",
      path: protectionOf("development"),
      key: accountKey,
      body: () => ({ protected: true, bypass_roles: ["owner"] }),
      status: 200,
      trips: 1,
    },
    {
      name: "deploy, protected",
      method: "POST",
      path: () => "/variants/configs/deploy",
      key: accountKey,
      body: teamDeploy,
      status: 409,
      trips: 1,
    },
    {
      name: "deploy, bypassed",
      method: "POST",
      path: () => "/variants/configs/deploy",
      key: accountKey,
      body: teamDeploy,
      headers: () => ({ "Protection-Bypass": "counted" }),
      status: 200,
      trips: 1,
    },
    // An app write that changes what a protected environment answers: its gate in the write's own batch.
    { name: "rename, protected", method: "PATCH", path: teamApp(""), key: accountKey, body: teamRename, status: 409, trips: 1 },
    {
      name: "rename, bypassed",
      method: "PATCH",
      path: teamApp(""),
      key: accountKey,
      body: teamRename,
      headers: () => ({ "Protection-Bypass": "counted" }),
      status: 200,
      trips: 1,
    },
    { name: "archive, protected", method: "POST", path: teamApp("/archive"), key: accountKey, status: 409, trips: 1 },
    {
      name: "archive, bypassed",
      method: "POST",
      path: teamApp("/archive"),
      key: accountKey,
      headers: () => ({ "Protection-Bypass": "counted" }),
      status: 200,
      trips: 1,
    },
    { name: "GET /simple/environments/{id}", method: "GET", path: simpleEnvironment(), key: accountKey, status: 200, trips: 1 },
    // The environment's id is the key's project's (a name-based UUID): the project is read first.
    { name: "guard", method: "POST", path: simpleEnvironment("/guard"), key: accountKey, status: 200, trips: 2 },
    { name: "unguard", method: "POST", path: simpleEnvironment("/unguard"), key: accountKey, status: 200, trips: 2 },
  ];

  it.each(protectionPaths)("$name: $status in $trips round trip", async ({ method, path, key, body, headers, status, trips }) => {
    expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
  });
});

describe("D1 round trips of change requests", () => {
  let owner: Account;
  let appId: string;
  let proposed: string;
  let requestId: string;
  let draftId: string;
  beforeAll(async () => {
    owner = await createAccount(undefined, "SHARD_1");
    appId = await createAppVia(owner.key, { app_name: "requested" });
    await deploy(appId, "staging", "main", owner);
    proposed = (await expectJson<{ deployed_app_variant_revision_id: string }>(await getRevisions(owner.key, appId, "staging")))
      .deployed_app_variant_revision_id;
    const made = (draft: boolean) =>
      send("POST", "/change-requests", {
        key: owner.key,
        body: { app_id: appId, environment: "production", variant_revision_id: proposed, title: "Counted", draft },
      });
    requestId = (await expectJson<{ id: string }>(await made(false))).id;
    draftId = (await expectJson<{ id: string }>(await made(true))).id;
  });
  const ownerKey = () => owner.key;
  const inRequest = (path: string) => () => `/change-requests/${requestId}${path}`;
  /** One case per route: each one round trip, a write with its Idempotency-Key too. */
  const requestPaths: Case[] = [
    {
      name: "POST /change-requests, with an Idempotency-Key",
      method: "POST",
      path: () => "/change-requests",
      key: ownerKey,
      body: () => ({ app_id: appId, environment: "staging", variant_revision_id: proposed, title: "Keyed" }),
      headers: () => keyed("change-request"),
      status: 200,
      trips: 1,
    },
    { name: "GET /change-requests/{id}", method: "GET", path: inRequest(""), key: ownerKey, status: 200, trips: 1 },
    {
      name: "GET /change-requests",
      method: "GET",
      path: () => `/change-requests?app_id=${appId}`,
      key: ownerKey,
      status: 200,
      trips: 1,
    },
    { name: "GET /change-requests/{id}/diff", method: "GET", path: inRequest("/diff"), key: ownerKey, status: 200, trips: 1 },
    {
      name: "PATCH /change-requests/{id}",
      method: "PATCH",
      path: inRequest(""),
      key: ownerKey,
      body: () => ({ title: "Recounted" }),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/reviews, with an Idempotency-Key",
      method: "POST",
      path: inRequest("/reviews"),
      key: ownerKey,
      body: () => ({ kind: "comment", comment: "Counted." }),
      headers: () => keyed("review"),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/submit",
      method: "POST",
      path: () => `/change-requests/${draftId}/submit`,
      key: ownerKey,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/rebase",
      method: "POST",
      path: inRequest("/rebase"),
      key: ownerKey,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/cancel",
      method: "POST",
      path: inRequest("/cancel"),
      key: ownerKey,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/cancel, refused (cancelled)",
      method: "POST",
      path: inRequest("/cancel"),
      key: ownerKey,
      status: 409,
      trips: 1,
    },
  ];
  it.each(requestPaths)("$name: $status in $trips round trip", async ({ method, path, key, body, headers, status, trips }) => {
    expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
  });
});

describe("diffs: one round trip", () => {
  let configRevisionId: string;
  beforeAll(async () => {
    const row = await databaseOf(appId)
      .prepare("SELECT id FROM app_variant_revisions WHERE variant_id = ? ORDER BY revision LIMIT 1")
      .bind(variantId)
      .first<{ id: string }>();
    configRevisionId = String(row?.id);
  });
  const diffPaths: Case[] = [
    {
      name: "GET /diff/configs",
      method: "GET",
      path: () => `/diff/configs?from=${configRevisionId}&to=${configRevisionId}`,
      key: () => account.key,
      status: 200,
      trips: 1,
    },
    {
      name: "GET /diff/environments",
      method: "GET",
      path: () => `/diff/environments?from=${firstRevisionId}&to=${firstRevisionId}`,
      key: () => account.key,
      status: 200,
      trips: 1,
    },
    {
      name: "GET /diff/environments, an unknown revision",
      method: "GET",
      path: () => `/diff/environments?from=${firstRevisionId}&to=${unknownId()}`,
      key: () => account.key,
      status: 404,
      trips: 1,
    },
  ];
  it.each(diffPaths)("$name: $status in $trips round trip", async ({ method, path, key, status, trips }) => {
    expect(await roundTrips(method, path(), key())).toEqual({ status, trips });
  });
});

describe("a change request's apply, schedule and unschedule: one round trip each", () => {
  let requestId: string;
  beforeAll(async () => {
    const requestedAppId = await createAppVia(account.key, { app_name: "requested-counted" });
    const { variantId: requestedVariant } = await deploy(requestedAppId, "development", "main", account);
    const row = await databaseOf(requestedAppId)
      .prepare("SELECT id FROM app_variant_revisions WHERE variant_id = ?")
      .bind(requestedVariant)
      .first<{ id: string }>();
    const settings = { allow_self_approval: true };
    const put = await send("PUT", `/projects/${account.projectId}/environments/staging/protection`, {
      key: account.key,
      body: settings,
    });
    expect(put.status).toBe(200);
    const made = await send("POST", "/change-requests", {
      key: account.key,
      body: { app_id: requestedAppId, environment: "staging", variant_revision_id: String(row?.id), title: "Counted" },
    });
    requestId = (await expectJson<{ id: string }>(made)).id;
    const approved = await send("POST", `/change-requests/${requestId}/reviews`, {
      key: account.key,
      body: { kind: "approve", version: 1 },
    });
    expect(approved.status).toBe(200);
  });
  const inADay = () => new Date(Date.now() + 86_400_000).toISOString();
  const applyPaths: Case[] = [
    {
      name: "POST /change-requests/{id}/apply?dry_run=true",
      method: "POST",
      path: () => `/change-requests/${requestId}/apply?dry_run=true`,
      key: () => account.key,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/schedule",
      method: "POST",
      path: () => `/change-requests/${requestId}/schedule`,
      key: () => account.key,
      body: () => ({ scheduled_at: inADay() }),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/unschedule",
      method: "POST",
      path: () => `/change-requests/${requestId}/unschedule`,
      key: () => account.key,
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/apply, with an Idempotency-Key",
      method: "POST",
      path: () => `/change-requests/${requestId}/apply`,
      key: () => account.key,
      headers: () => keyed("apply"),
      status: 200,
      trips: 1,
    },
    {
      name: "POST /change-requests/{id}/apply, applied already",
      method: "POST",
      path: () => `/change-requests/${requestId}/apply`,
      key: () => account.key,
      status: 409,
      trips: 1,
    },
  ];
  it.each(applyPaths)("$name: $status in $trips round trip", async ({ method, path, key, body, headers, status, trips }) => {
    expect(await roundTrips(method, path(), key(), body?.(), headers?.())).toEqual({ status, trips });
  });
});

describe("the walk", () => {
  // Every declared route by its operation: a route that no case above requests fails here, under its own name.
  it.each(ROUTES.map(({ declaration: { method, path } }) => `${method.toUpperCase()} ${path}`))(
    "has sent a request above to %s, for an organization on SHARD_1",
    (operation) => {
      const [method, template] = operation.split(" ");
      // A client may add a trailing slash (today's SDK does, to /simple/applications/).
      const matches = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}/?$`);
      const requested = walked.filter((request) => request.startsWith(`${method} `)).map((request) => request.split(" ")[1]);
      expect(requested.some((path) => matches.test(path))).toBe(true);
    },
  );
});
