import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { generateApiKey } from "../../src/auth/api-keys";
import { createApiKey, createUser, newAccountIds } from "../../src/db/accounts";
import { applicationVariants, simpleApplications } from "./client";
import {
  type Account,
  accept,
  addMember,
  createAccount,
  createAppVia,
  createOrganizationVia,
  createTeam,
  expectError,
  expectJson,
  FORBIDDEN,
  hashApiKey,
  type IssuedInvitation,
  invite,
  issueKey,
  LEGACY_BUCKET,
  markKeyUsed,
  newKeyPrefix,
  postApp,
  send,
} from "./fixtures";
import { snapshot } from "./harness";
import { failTrips, instrumentD1 } from "./instrumented-d1";
import { allShardNames, bucketFor, countedShards, databaseOf, fourShardPool, shardNameFor, shards } from "./pool";

/*
 * Requests whose key and organization are on different shards (docs/SHARDING.md §3.2): the key is checked on its home
 * shard, and the request runs on the organization's with the key vouched for; membership and role always come from
 * the organization's shard. Here the key's home is SHARD_0 and the organization's SHARD_1, or the other way round.
 */

/** A user homed on `home` (their personal organization and key) who is a member of `team`, on another shard, in `role`. */
async function guestOf(team: { organizationId: string; projectId: string }, home: string, role: "editor" | "viewer") {
  const guest = await createAccount(undefined, home as "SHARD_0");
  await addMember(team.organizationId, guest.userId, role);
  await markKeyUsed(guest.key);
  return guest;
}

type SimpleOne = { count: 1; application: { id: string } };

const appRevisions = (appId: string) => `/apps/${appId}/revisions/production`;
const statusOf = async (response: Promise<Response>) => {
  const answered = await response;
  await answered.arrayBuffer();
  return answered.status;
};

describe.each([
  ["SHARD_0", "SHARD_1"],
  ["SHARD_1", "SHARD_0"],
])("a key homed on %s, in an organization on %s", (home, elsewhere) => {
  let owner: Account;
  let team: Awaited<ReturnType<typeof createTeam>>;
  let teamApp: string;
  beforeAll(async () => {
    owner = await createAccount(undefined, elsewhere as "SHARD_0");
    team = await createTeam(owner, [], elsewhere as "SHARD_0");
    teamApp = await createAppVia(owner.key, { app_name: "shared", organization_id: team.organizationId });
  });

  it("reads and writes there: the key checked on its home, the request on the organization's shard, two round trips", async () => {
    const guest = await guestOf(team, home, "editor");
    expect([shardNameFor(guest.key), shardNameFor(team.organizationId)]).toEqual([home, elsewhere]);
    const { bindings, trips } = countedShards();
    const read = await send("GET", appRevisions(teamApp), { key: guest.key, bindings });
    expect(read.status).toBe(200);
    expect(trips()).toEqual({ [home]: 1, [elsewhere]: 1, DIRECTORY: 0 });
    const made = await expectJson<{ app_id: string }>(
      await postApp(guest.key, { app_name: "by-guest", organization_id: team.organizationId }, { bindings }),
    );
    expect(trips()).toEqual({ [home]: 2, [elsewhere]: 2, DIRECTORY: 0 });
    // Where the organization's rows are, with its bucket; the events name the key that acted.
    expect(shardNameFor(made.app_id)).toBe(elsewhere);
    const event = await databaseOf(team.organizationId)
      .prepare("SELECT actor_user_id, actor_api_key_prefix FROM events WHERE app_id = ? AND type = 'app.created'")
      .bind(made.app_id)
      .first();
    expect(event).toEqual({ actor_user_id: guest.userId, actor_api_key_prefix: guest.key.split(".")[0] });
    // What names only the key (its project) stays on its home: one round trip.
    const listed = countedShards();
    expect((await send("GET", "/apps", { key: guest.key, bindings: listed.bindings })).status).toBe(200);
    expect(listed.trips()).toEqual({ [home]: 1, [elsewhere]: 0, DIRECTORY: 0 });
  });

  it("a write with an Idempotency-Key: the key's request kept on its home first (docs/SHARDING.md §7e), three round trips; its retry is replayed", async () => {
    const guest = await guestOf(team, home, "editor");
    const body = { app_name: "keyed-by-guest", organization_id: team.organizationId };
    const headers = { "Idempotency-Key": "guest-keyed-write" };
    const { bindings, trips } = countedShards();
    const made = await expectJson<{ app_id: string }>(await postApp(guest.key, body, { bindings, headers }));
    expect(trips()).toEqual({ [home]: 2, [elsewhere]: 1, DIRECTORY: 0 });
    const replayed = await expectJson<{ app_id: string }>(await postApp(guest.key, body, { headers }));
    expect(replayed).toEqual(made);
  });

  it("answers a bookmark for each shard it reached, and starts each shard's session at that shard's own entry", async () => {
    const guest = await guestOf(team, home, "viewer");
    const first = await send("GET", appRevisions(teamApp), { key: guest.key });
    expect(first.status).toBe(200);
    const header = first.headers.get("x-d1-bookmark") ?? "";
    const entries = new Map(
      header.split(",").map((entry) => [entry.slice(0, entry.indexOf(":")), entry.slice(entry.indexOf(":") + 1)]),
    );
    expect([...entries.keys()]).toEqual(["SHARD_0", "SHARD_1"]);
    const instrumented = allShardNames().map((name, i) => ({ name, ...instrumentD1(shards()[i]) }));
    const bindings = Object.fromEntries(instrumented.map(({ name, db }) => [name, db]));
    const again = await send("GET", appRevisions(teamApp), { key: guest.key, bindings, headers: { "x-d1-bookmark": header } });
    expect(again.status).toBe(200);
    expect(instrumented.map(({ name, counter }) => [name, counter.sessions])).toEqual(
      instrumented.map(({ name }) => [name, [entries.get(name)]]),
    );
  });

  it("lists what spans organizations from every shard, oldest first: organizations, keys, and the personal organization", async () => {
    const guest = await guestOf(team, home, "viewer");
    const teamKey = await issueKey(guest.userId, team.projectId);
    expect(shardNameFor(teamKey)).toBe(elsewhere);
    const { bindings, trips } = countedShards();
    const organizations = await expectJson<{ id: string; role: string }[]>(
      await send("GET", "/organizations", { key: guest.key, bindings }),
    );
    // The team was made before the guest's account.
    expect(organizations.map(({ id, role }) => ({ id, role }))).toEqual([
      { id: team.organizationId, role: "viewer" },
      { id: guest.organizationId, role: "owner" },
    ]);
    // The key checked on its home, then both shards in parallel.
    expect(trips()).toEqual({ [home]: 2, [elsewhere]: 1, DIRECTORY: 0 });
    const keys = await expectJson<{ prefix: string; organization_id: string }[]>(await send("GET", "/keys", { key: teamKey }));
    expect(keys.map(({ prefix, organization_id }) => ({ prefix, organization_id }))).toEqual([
      { prefix: guest.key.split(".")[0], organization_id: guest.organizationId },
      { prefix: teamKey.split(".")[0], organization_id: team.organizationId },
    ]);
    // With the team's key (homed on the team's shard), the own organization is still the personal one, on the other.
    expect(await expectJson(await send("GET", "/organizations/own", { key: teamKey }))).toEqual({
      id: guest.organizationId,
      name: guest.username,
    });
  });

  it("answers a query whose refs span shards from each shard they name, as if each part were asked alone", async () => {
    const guest = await guestOf(team, home, "viewer");
    const stranger = await createAccount(undefined, elsewhere as "SHARD_0");
    /** A current-API app `slug` of `account`'s project (or, with `organizationId`, a legacy-made one there), with a variant. */
    const appWithVariant = async (account: Account, slug: string, organizationId?: string) => {
      const id = organizationId
        ? await createAppVia(account.key, { app_name: slug, organization_id: organizationId })
        : (await expectJson<SimpleOne>(await simpleApplications.create(account, { application: { slug, name: slug } })))
            .application.id;
      const added = await applicationVariants.add(account, { application_variant: { application_id: id, slug: `${slug}-v` } });
      return { id, variant: (await expectJson<{ application_variant: { id: string } }>(added)).application_variant };
    };
    // Oldest first: the team's, the guest's own, the stranger's.
    const shared = await appWithVariant(owner, `shared-${home}`, team.organizationId);
    const mine = await appWithVariant(guest, "mine");
    const hidden = await appWithVariant(stranger, "hidden");
    expect([shardNameFor(shared.id), shardNameFor(mine.id), shardNameFor(hidden.id)]).toEqual([elsewhere, home, elsewhere]);

    // The key's project's apps: only the guest's own is listed, wherever the other refs point.
    const ownApp = await expectJson<SimpleOne>(await simpleApplications.get(guest, mine.id));
    for (const refs of [
      [{ id: shared.id }, { id: mine.id }],
      [{ id: hidden.id }, { id: mine.id }],
      [{ id: mine.id }, { id: shared.id }],
    ]) {
      const listed = await simpleApplications.query(guest, { application_refs: refs });
      expect(await expectJson(listed), JSON.stringify(refs)).toEqual({ count: 1, applications: [ownApp.application] });
    }

    // Variants of apps by id (anywhere the guest sees) and by slug (the key's project), merged oldest first.
    const both = { count: 2, application_variants: [shared.variant, mine.variant] };
    const { bindings, trips } = countedShards();
    const spanning = await applicationVariants.query(
      guest,
      { application_refs: [{ id: shared.id }, { slug: "mine" }] },
      { bindings },
    );
    expect(await expectJson(spanning)).toEqual(both);
    // The key checked on its home, then each shard its part (the slug's on the key's home).
    expect(trips()).toEqual({ [home]: 2, [elsewhere]: 1, DIRECTORY: 0 });
    for (const refs of [
      [{ slug: "mine" }, { id: shared.id }],
      [{ id: mine.id }, { id: shared.id }],
      [{ id: hidden.id }, { id: mine.id }, { id: shared.id }],
    ]) {
      const queried = await applicationVariants.query(guest, { application_refs: refs });
      expect(await expectJson(queried), JSON.stringify(refs)).toEqual(both);
    }
    // Narrowed by variant, across shards.
    const narrowed = await applicationVariants.query(guest, {
      application_refs: [{ id: mine.id }, { id: shared.id }],
      application_variant_refs: [{ id: shared.variant.id }],
    });
    expect(await expectJson(narrowed)).toEqual({ count: 1, application_variants: [shared.variant] });
    // A stranger's app beside the guest's own: nothing of it, the same answer as the guest's ref alone.
    const alone = await expectJson(await applicationVariants.query(guest, { application_refs: [{ slug: "mine" }] }));
    expect(alone).toEqual({ count: 1, application_variants: [mine.variant] });
    const withStranger = await applicationVariants.query(guest, { application_refs: [{ id: hidden.id }, { slug: "mine" }] });
    expect(await expectJson(withStranger)).toEqual(alone);
  });

  it("never answers on a stale view: a changed role, a removal, a read-only key and a revocation count on the very next request", async () => {
    const guest = await guestOf(team, home, "editor");
    const write = (name: string, key = guest.key) => postApp(key, { app_name: name, organization_id: team.organizationId });
    expect(await statusOf(write("before"))).toBe(200);

    // The owner makes the guest a viewer: writes are refused at once, reads go on.
    const demoted = await send("POST", `/workspaces/${team.workspaceId}/roles`, {
      key: owner.key,
      body: { email: `${guest.username}@example.com`, organization_id: team.organizationId, role: "viewer" },
    });
    expect(demoted.status).toBe(200);
    await expectError(await write("as-viewer"), 403, FORBIDDEN);
    expect(await statusOf(send("GET", appRevisions(teamApp), { key: guest.key }))).toBe(200);

    // A read-only key of the guest's own project: it reads there, never writes, whatever the role.
    await addMember(team.organizationId, guest.userId, "editor");
    const readOnly = await issueKey(guest.userId, guest.projectId, { readOnly: true });
    expect(shardNameFor(readOnly)).toBe(home);
    expect(await statusOf(send("GET", appRevisions(teamApp), { key: readOnly }))).toBe(200);
    await expectError(await write("read-only", readOnly), 403, FORBIDDEN);
    expect(await statusOf(write("editor-again"))).toBe(200);

    // Removed from the organization: it is hidden from them at once, while their own organization answers as before.
    const removed = await send(
      "DELETE",
      `/workspaces/${team.workspaceId}/users?org_id=${team.organizationId}&email=${encodeURIComponent(`${guest.username}@example.com`)}`,
      { key: owner.key },
    );
    expect(removed.status).toBe(200);
    expect(await statusOf(send("GET", appRevisions(teamApp), { key: guest.key }))).toBe(404);
    await expectError(await write("removed"), 403, FORBIDDEN);
    expect(await statusOf(send("GET", "/apps", { key: guest.key }))).toBe(200);

    // Back in, then the key revoked on its home shard: refused on both shards at once.
    await addMember(team.organizationId, guest.userId, "editor");
    expect(await statusOf(write("back"))).toBe(200);
    const spare = await issueKey(guest.userId, guest.projectId);
    expect(await statusOf(send("DELETE", `/keys/${guest.key.split(".")[0]}`, { key: spare }))).toBe(200);
    expect(await statusOf(send("GET", appRevisions(teamApp), { key: guest.key }))).toBe(401);
    expect(await statusOf(write("revoked"))).toBe(401);
    expect(await statusOf(send("GET", "/apps", { key: guest.key }))).toBe(401);
  });

  it("the key's bucket fenced moved on the organization's shard (an aborted move's destination, a finished move's old source) refuses nothing the key is vouched for there; a key row read there is refused", async () => {
    const guest = await guestOf(team, home, "editor");
    // A member homed on the team's shard, whose key is in another bucket than the team's.
    let local = await guestOf(team, elsewhere, "editor");
    for (let attempt = 0; attempt < 5 && bucketFor(local.key) === bucketFor(team.organizationId); attempt++) {
      local = await guestOf(team, elsewhere, "editor");
    }
    expect(bucketFor(local.key)).not.toBe(bucketFor(team.organizationId));
    // Admins, who read the organization's events too.
    for (const member of [guest, local]) await addMember(team.organizationId, member.userId, "workspace_admin");
    const db = databaseOf(team.organizationId);
    const fenced = [bucketFor(guest.key), bucketFor(local.key)];
    for (const bucket of fenced) {
      await db.prepare("INSERT INTO bucket_fences (bucket, state) VALUES (?, 'moved')").bind(bucket).run();
    }
    try {
      const main = { application_ref: { id: teamApp }, variant_ref: { slug: `fenced-${home}` } };
      const requests = (key: string): [string, () => Promise<Response>][] => [
        ["a read", () => send("GET", appRevisions(teamApp), { key })],
        ["the events", () => send("GET", `/events?organization_id=${team.organizationId}`, { key })],
        ["a variant", () => send("POST", "/variants/configs/add", { key, body: main })],
        ["a commit", () => send("POST", "/variants/configs/commit", { key, body: { ...main, params: { fenced: home } } })],
        ["an app", () => postApp(key, { app_name: `fenced-${home}`, organization_id: team.organizationId })],
        ["a key", () => send("POST", `/keys?workspace_id=${team.workspaceId}`, { key })],
      ];
      // Vouched for by its home: no key row is read on the team's shard, whose fence of that bucket is not the request's.
      for (const [name, request] of requests(guest.key)) expect([name, await statusOf(request())]).toEqual([name, 200]);
      // A key row read on the team's shard whose bucket moved away from it is a copy left behind (an isolate on an old
      // SHARD_MAP): refused, whatever the request names.
      for (const [name, request] of requests(local.key)) expect([name, await statusOf(request())]).toEqual([name, 503]);
    } finally {
      await db.prepare("DELETE FROM bucket_fences").run();
    }
  });

  it("an invitee homed elsewhere accepts with their own key: their user is copied, and the key works there at once", async () => {
    const invitee = await createAccount(undefined, home as "SHARD_0");
    const email = `${invitee.username}@example.com`;
    const invitation = await expectJson<IssuedInvitation>(
      await invite(owner.key, team.organizationId, team.workspaceId, email, "editor"),
    );
    const db = databaseOf(team.organizationId);
    const copy = () => db.prepare("SELECT id, username, email FROM users WHERE id = ?").bind(invitee.userId).first();
    expect(await copy()).toBeNull();
    // Another's key: refused, and nothing is copied.
    await expectError(await accept(invitation, owner.key), 403, "This invitation is for another email address");
    expect(await copy()).toBeNull();
    const accepted = await expectJson<{ user_id: string }>(await accept(invitation, invitee.key));
    expect(accepted.user_id).toBe(invitee.userId);
    expect(await copy()).toEqual({ id: invitee.userId, username: invitee.username, email });
    expect(await statusOf(postApp(invitee.key, { app_name: "joined", organization_id: team.organizationId }))).toBe(200);
  });
});

describe("placing new organizations", () => {
  it("POST /organizations places it on the key's shard (one round trip), in a bucket other than the legacy one", async () => {
    for (const shard of allShardNames()) {
      const account = await createAccount(undefined, shard);
      await markKeyUsed(account.key);
      const { bindings, trips } = countedShards();
      const me = await expectJson<{ id: string }>(await send("GET", "/profile", { key: account.key }));
      const made = await expectJson<{ id: string }>(
        await send("POST", "/organizations", { key: account.key, body: { name: `on ${shard}`, owner: me.id }, bindings }),
      );
      expect(shardNameFor(made.id)).toBe(shard);
      expect(bucketFor(made.id)).not.toBe(LEGACY_BUCKET);
      expect(Object.values(trips()).reduce((sum, count) => sum + count, 0)).toBe(1);
      const stored = await databaseOf(made.id).prepare("SELECT bucket FROM organizations WHERE id = ?").bind(made.id).first();
      expect(stored).toEqual({ bucket: bucketFor(made.id) });
    }
  });

  it("with the key's shard closed to new organizations, on an open one, the owner's user copied there", async () => {
    const account = await createAccount(undefined, "SHARD_0");
    const me = await expectJson<{ id: string }>(await send("GET", "/profile", { key: account.key }));
    const made = await expectJson<{ id: string }>(
      await send("POST", "/organizations", {
        key: account.key,
        body: { name: "elsewhere", owner: me.id },
        bindings: { OPEN_SHARDS: "SHARD_1" },
      }),
    );
    expect(shardNameFor(made.id)).toBe("SHARD_1");
    const workspaces = await expectJson<{ id: string; members: unknown[] }>(
      await send("GET", `/organizations/${made.id}`, { key: account.key }),
    );
    expect(workspaces.id).toBe(made.id);
    const copy = await databaseOf(made.id).prepare("SELECT id FROM users WHERE id = ?").bind(account.userId).first();
    expect(copy).toEqual({ id: account.userId });
  });

  it("with the key's shard closed, on an open shard picked at random, each alike whatever its number of buckets", async () => {
    // SHARD_1 holds 510 buckets, SHARD_2 one: by bucket, nearly every organization would go to SHARD_1.
    const bindings = await fourShardPool("SHARD_1 SHARD_2");
    const account = await createAccount(undefined, "SHARD_0");
    const placed: Record<string, string[]> = { SHARD_1: [], SHARD_2: [] };
    // 40 organizations land on both (all on one: 2 chances in 2^40), each on the shard its bucket names.
    for (let i = 0; i < 40; i++) {
      const made = await expectJson<{ id: string }>(
        await send("POST", "/organizations", {
          key: account.key,
          body: { name: `spread ${i}`, owner: account.userId },
          bindings,
        }),
      );
      placed[bucketFor(made.id) === 1022 ? "SHARD_2" : "SHARD_1"].push(made.id);
    }
    const stored = async (db: D1Database, ids: string[]) =>
      (
        await db
          .prepare("SELECT id FROM organizations WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id")
          .bind(JSON.stringify(ids))
          .all<{ id: string }>()
      ).results.map(({ id }) => id);
    expect(placed.SHARD_2.length).toBeGreaterThan(0);
    expect(placed.SHARD_1.length).toBeGreaterThan(0);
    expect(await stored(env.TEST_SPARE_SHARD_2, placed.SHARD_2)).toEqual([...placed.SHARD_2].sort());
    expect(await stored(env.SHARD_1, placed.SHARD_1)).toEqual([...placed.SHARD_1].sort());
  });
});

describe("a key made before buckets whose prefix looks bucketed (the fallback)", () => {
  it("is found on the legacy bucket's shard; what it names by itself stays there, and ids it mints read as legacy", async () => {
    // A legacy account (bucket 0, on SHARD_0) with a key whose random prefix happens to decode to a bucket of SHARD_1.
    const ids = newAccountIds(LEGACY_BUCKET);
    const username = `legacy-${crypto.randomUUID().slice(0, 8)}`;
    await createUser(databaseOf(ids.organizationId), { email: `${username}@example.com`, username }, ids);
    const secondShardBucket = Array.from({ length: 1024 }, (_, b) => b).find(
      (b) => b > 0 && shardNameFor(newKeyPrefix(b)) === "SHARD_1",
    );
    const prefix = newKeyPrefix(secondShardBucket as number);
    const { key: generated } = generateApiKey(LEGACY_BUCKET);
    const key = `${prefix}.${generated.split(".")[1]}`;
    await createApiKey(databaseOf(ids.organizationId), {
      prefix,
      keyHash: await hashApiKey(key),
      userId: ids.userId,
      projectId: ids.projectId,
      expiresAt: null,
    });
    expect([shardNameFor(key), shardNameFor(ids.organizationId)]).toEqual(["SHARD_1", "SHARD_0"]);

    const made = await expectJson<{ app_id: string; project_id?: string }>(await postApp(key, { app_name: "legacy-app" }));
    expect(bucketFor(made.app_id)).toBe(LEGACY_BUCKET);
    const { bindings, trips } = countedShards();
    const listed = await expectJson<{ app_id: string }[]>(await send("GET", "/apps", { key, bindings }));
    expect(listed.map((app) => app.app_id)).toEqual([made.app_id]);
    // Asked on its prefix's shard first (a miss), then found on the legacy bucket's.
    expect(trips()).toEqual({ SHARD_0: 1, SHARD_1: 1, DIRECTORY: 0 });
    expect(await statusOf(send("GET", appRevisions(made.app_id), { key }))).toBe(200);
  });
});

describe("one shard failing", () => {
  it("fails only the requests that reach it: 503 with Retry-After, nothing written; the other shard answers as usual", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    vi.spyOn(console, "error").mockImplementation(() => {});
    const healthy = await createAccount(undefined, "SHARD_0");
    const failing = await createAccount(undefined, "SHARD_1");
    const healthyApp = await createAppVia(healthy.key, { app_name: "healthy" });
    const failingApp = await createAppVia(failing.key, { app_name: "failing" });
    // A key homed on the healthy shard, in an organization of the failing one.
    const crossing = await guestOf({ organizationId: failing.organizationId, projectId: failing.projectId }, "SHARD_0", "editor");
    const { bindings } = countedShards();
    const broken = countedShards({ beforeTrip: failTrips("all") }).bindings;
    const pool = { ...bindings, SHARD_1: broken.SHARD_1 };
    const before = await snapshot();

    expect(await statusOf(send("GET", appRevisions(healthyApp), { key: healthy.key, bindings: pool }))).toBe(200);
    expect(await statusOf(postApp(healthy.key, { app_name: "still-made" }, { bindings: pool }))).toBe(200);
    const after = await snapshot();
    expect(after).not.toEqual(before);

    for (const refused of [
      send("GET", appRevisions(failingApp), { key: failing.key, bindings: pool }),
      postApp(failing.key, { app_name: "never" }, { bindings: pool }),
      send("GET", appRevisions(failingApp), { key: crossing.key, bindings: pool }),
      postApp(crossing.key, { app_name: "never", organization_id: failing.organizationId }, { bindings: pool }),
      // The key's home failing fails its requests everywhere (docs/SHARDING.md §7, R5).
      send("GET", appRevisions(healthyApp), { key: failing.key, bindings: pool }),
    ]) {
      const response = await refused;
      expect(response.status).toBe(503);
      expect(response.headers.get("Retry-After")).toBe("1");
      expect(await response.json()).toEqual({ detail: "Service temporarily unavailable" });
    }
    expect(await snapshot()).toEqual(after);
    // The healthy shard takes new organizations as usual.
    expect(shardNameFor((await createOrganizationVia(healthy.key)).organizationId)).toBe("SHARD_0");
  });
});

describe("a bucket copied to another shard (docs/SHARDING.md §5)", () => {
  /** An organization on SHARD_1 with an app, its owner's key homed there, and a member homed on SHARD_0. */
  async function moving() {
    const owner = await createAccount(undefined, "SHARD_1");
    const appId = await createAppVia(owner.key, { app_name: "moving" });
    const member = await guestOf({ organizationId: owner.organizationId, projectId: owner.projectId }, "SHARD_0", "viewer");
    const db = databaseOf(owner.organizationId);
    const fence = (state: "incoming" | "moved") =>
      db.prepare("INSERT INTO bucket_fences (bucket, state) VALUES (?, ?)").bind(bucketFor(owner.organizationId), state).run();
    const listed = async (key: string) =>
      (await expectJson<{ id: string }[]>(await send("GET", "/organizations", { key }))).map(({ id }) => id);
    return { owner, appId, member, fence, listed };
  }

  const expectRefused = async (response: Response) => {
    expect([response.status, response.headers.get("Retry-After"), await response.json()]).toEqual([
      503,
      "30",
      { detail: "Service temporarily unavailable" },
    ]);
  };

  it("moved away: the copy left behind answers no read, no key of it is taken, and lists leave it out", async () => {
    const { owner, appId, member, fence, listed } = await moving();
    expect(await listed(member.key)).toContain(owner.organizationId);
    await fence("moved");
    await expectRefused(await send("GET", appRevisions(appId), { key: owner.key }));
    await expectRefused(await send("GET", appRevisions(appId), { key: member.key }));
    // The owner's key is of the moved bucket: its row here is a copy, whatever the request names.
    await expectRefused(await send("GET", "/organizations", { key: owner.key }));
    await expectRefused(await postApp(owner.key, { app_name: "never" }));
    expect(await listed(member.key)).toEqual([member.organizationId]);
  });

  it("incoming (a copy being made): its reads are answered, its writes refused, and lists leave it out", async () => {
    const { owner, appId, member, fence, listed } = await moving();
    await fence("incoming");
    expect(await statusOf(send("GET", appRevisions(appId), { key: member.key }))).toBe(200);
    await expectRefused(await postApp(member.key, { app_name: "never", organization_id: owner.organizationId }));
    expect(await listed(member.key)).toEqual([member.organizationId]);
  });
});
