import { env } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import {
  A_NEW_ID,
  BUCKETS,
  bucketOfId,
  bucketOfPrefix,
  bucketOfToken,
  createAccount,
  expectError,
  expectJson,
  type IssuedInvitation,
  LEGACY_BUCKET,
  newId,
  newInvitationToken,
  newKeyPrefix,
  PREFIX_ALPHABET,
  send,
} from "./fixtures";
import { databaseOf } from "./pool";
import { makeRouteWorld, type RouteWorld, requestOf, routeFacts } from "./route-world";
import { received } from "./webhooks/webhook-fixtures";

/** docs/SHARDING.md §2: the buckets every id, key prefix and invitation token carries. */

const since = Date.parse(env.BUCKETED_SINCE);
const bucketOf = (id: string) => bucketOfId(id, since);
const prefixOf = (key: string) => key.split(".")[0];
const bucket = fc.integer({ min: 0, max: BUCKETS - 1 });
const prefixCharacter = fc.constantFrom(...PREFIX_ALPHABET);
const prefixPart = (length: number) => fc.string({ unit: prefixCharacter, minLength: length, maxLength: length });

describe("ids, key prefixes and tokens", () => {
  it("a new id is a UUIDv7 (as clients validate it) that carries its bucket", () => {
    fc.assert(
      fc.property(bucket, (b) => {
        const id = newId(b);
        expect(id).toEqual(A_NEW_ID);
        expect(z.uuid().safeParse(id).success).toBe(true);
        expect(bucketOf(id)).toBe(b);
      }),
    );
  });

  it("new ids sort in the order they were made, whatever their buckets", () => {
    fc.assert(
      fc.property(fc.array(bucket, { minLength: 2, maxLength: 200 }), (buckets) => {
        const ids = buckets.map((b) => newId(b));
        expect([...ids].sort()).toEqual(ids);
        expect(ids.map(bucketOf)).toEqual(buckets);
      }),
    );
  });

  it("an id made without a bucket reads as the legacy bucket: older than BUCKETED_SINCE, not a UUIDv7, or past 0x3ff", () => {
    const beforeSince = (since - 1).toString(16).padStart(12, "0");
    const v7Before = `${beforeSince.slice(0, 8)}-${beforeSince.slice(8)}-7abc-9def-0123456789ab`;
    expect(bucketOf(v7Before)).toBe(LEGACY_BUCKET);
    // The seed's fixed ids (time 0) and the others clients may hold.
    expect(bucketOf("00000000-0000-7000-8000-000000000005")).toBe(LEGACY_BUCKET);
    expect(bucketOf(crypto.randomUUID())).toBe(LEGACY_BUCKET);
    expect(bucketOf("not an id")).toBe(LEGACY_BUCKET);
    const afterSince = newId(5);
    expect(bucketOf(`${afterSince.slice(0, -3)}3ff`)).toBe(0x3ff);
    expect(bucketOf(`${afterSince.slice(0, -3)}400`)).toBe(LEGACY_BUCKET);
    expect(bucketOf(`${afterSince.slice(0, -3)}fff`)).toBe(LEGACY_BUCKET);
  });

  it("a new key prefix is 8 letters and digits that carry its bucket", () => {
    fc.assert(
      fc.property(bucket, (b) => {
        const prefix = newKeyPrefix(b);
        expect(prefix).toMatch(/^[A-Za-z0-9]{8}$/);
        expect(bucketOfPrefix(prefix)).toBe(b);
      }),
    );
  });

  it("a legacy prefix reads as bucket 0 but once in 14,444: of the 3,844 checks of a bucket's pair, one passes", () => {
    expect(bucketOfPrefix("localdev")).toBe(LEGACY_BUCKET);
    // Every first pair (a bucket or not) with any last four: at most one of the 3,844 second pairs reads as a bucket,
    // exactly one when the first pair is a bucket other than 0. So a random prefix reads as one with probability
    // (1,023 / 3,844) / 3,844 = 1 / 14,444.
    fc.assert(
      fc.property(prefixPart(2), prefixPart(4), (head, tail) => {
        const decoded: number[] = [];
        for (const c2 of PREFIX_ALPHABET) {
          for (const c3 of PREFIX_ALPHABET) {
            const found = bucketOfPrefix(`${head}${c2}${c3}${tail}`);
            if (found !== LEGACY_BUCKET) decoded.push(found);
          }
        }
        const named = PREFIX_ALPHABET.indexOf(head[0]) * 62 + PREFIX_ALPHABET.indexOf(head[1]);
        expect(decoded).toEqual(named > 0 && named < BUCKETS ? [named] : []);
      }),
      { numRuns: 50 },
    );
  });

  it("a new invitation token is 64 hex digits that carry its bucket", () => {
    fc.assert(
      fc.property(bucket, (b) => {
        const token = newInvitationToken(b);
        expect(token).toMatch(/^[0-9a-f]{64}$/);
        expect(bucketOfToken(token)).toBe(b);
      }),
    );
  });
});

describe("BUCKETED_SINCE", () => {
  it("not an RFC 3339 instant: every request is answered 500 in the documented shape, and the log says why", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const account = await createAccount();
    for (const value of ["yesterday", "2026-11-26", "2026-13-01T00:00:00Z", ""]) {
      const bindings = { BUCKETED_SINCE: value };
      await expectError(await send("GET", "/health", { bindings }), 500, "Internal Server Error");
      await expectError(await send("GET", "/apps", { key: account.key, bindings }), 500, "Internal Server Error");
      await expectError(
        await send("POST", "/apps", { key: account.key, body: { app_name: "x" }, bindings }),
        500,
        "Internal Server Error",
      );
    }
    const logged = errors.mock.calls.map(([line]) => JSON.parse(String(line)).error as string);
    errors.mockRestore();
    expect(logged).toHaveLength(12);
    for (const line of logged)
      expect(line).toMatch(/^Error: BUCKETED_SINCE \(wrangler.toml \[vars\]\) must be an RFC 3339 instant/);
    expect((await send("GET", "/apps", { key: account.key })).status).toBe(200);
    expect(await expectJson(await send("GET", "/apps", { key: account.key }))).toEqual([]);
  });

  it("still ahead (an upgrade's first deploy): new organizations are in bucket 0, which their ids read as", async () => {
    const account = await createAccount();
    const bindings = { BUCKETED_SINCE: "2999-01-01T00:00:00Z" };
    for (let i = 0; i < 5; i++) {
      const body = { name: `early ${i}`, owner: account.userId };
      const { id } = await expectJson<{ id: string }>(await send("POST", "/organizations", { key: account.key, body, bindings }));
      const stored = await databaseOf(id).prepare("SELECT bucket FROM organizations WHERE id = ?").bind(id).first();
      expect([stored, bucketOfId(id, Date.parse(bindings.BUCKETED_SINCE))]).toEqual([{ bucket: LEGACY_BUCKET }, LEGACY_BUCKET]);
    }
  });
});

/** A response's JSON, expecting a 200. */
const ok = <T = Record<string, unknown>>(response: Promise<Response>) => response.then((answer) => expectJson<T>(answer));

/**
 * The walk of every write (every operation but a GET) in organizations of buckets other than 0: each write route's
 * round-trip cases (src/http/route-facts.ts), in the router's order, against the world round-trips.cases.ts counts them in
 * (test/worker/route-world.ts), whose organizations are all on SHARD_1 (buckets 512 to 1023). Every id they mint, every
 * key prefix and every invitation token carries the bucket of the organization it belongs to.
 */
describe("organizations in buckets other than 0", () => {
  let world: RouteWorld;
  /** Each write's answers of its 2xx cases, by operation. */
  const answers = new Map<string, unknown[]>();
  beforeAll(async () => {
    world = await makeRouteWorld();
  });

  const writes = routeFacts().filter(({ operation }) => !operation.startsWith("GET "));
  describe.each(writes)("$operation", ({ operation, roundTrips }) => {
    it.each((roundTrips?.cases ?? []).map((walked) => ({ status: 200, ...walked })))("$name: $status", async (walked) => {
      const { path, key, body, headers } = requestOf(world, walked);
      const response = await send(operation.split(" ")[0], path, { key, body, headers });
      expect(response.status).toBe(walked.status);
      const text = await response.text();
      if (response.ok) answers.set(operation, [...(answers.get(operation) ?? []), text ? JSON.parse(text) : null]);
    });
  });

  it("every write of the OpenAPI document was walked, with a case that answered 2xx", async () => {
    const document = await ok<{ paths: Record<string, Record<string, unknown>> }>(send("GET", "/openapi.json"));
    const documented = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ["post", "put", "patch", "delete"].includes(method))
        .map((method) => `${method.toUpperCase()} ${path.replace(/\/$/, "")}`),
    );
    expect([...answers.keys()].sort()).toEqual(documented.sort());
  });

  it("every id they minted is in its organization's bucket, as are the keys and invitation tokens they answered", async () => {
    const organizationId = world.values["org.organizationId"];
    const placed = bucketOf(organizationId);
    const invite = "POST /organizations/{org_id}/workspaces/{workspace_id}/invite";
    const answered = (operation: string) => answers.get(operation) ?? [];
    // The key made in the organization's workspace, the invitations' tokens, and the users (with their first keys) who
    // accepted them.
    const [key] = answered("POST /keys") as string[];
    expect(bucketOfPrefix(prefixOf(key))).toBe(placed);
    const tokens = [...answered(invite), ...answered(`${invite}/resend`)].map((issued) => (issued as IssuedInvitation).token);
    expect(tokens.map(bucketOfToken)).toEqual(tokens.map(() => placed));
    const joined = answered(`${invite}/accept`) as { user_id: string; api_key: string }[];
    expect(joined.map((user) => [bucketOf(user.user_id), bucketOfPrefix(prefixOf(user.api_key))])).toEqual(
      joined.map(() => [placed, placed]),
    );
    // The test event, recorded nowhere, has an event id all the same.
    const testEvent = (await received(world.values.hookInbox))
      .map(({ body }) => JSON.parse(body))
      .find(({ type }) => type === "webhook.test");
    expect(bucketOf(testEvent.data.id)).toBe(bucketOf(world.values["owner.organizationId"]));

    const sources = new Set<string>();
    for (const id of world.organizationIds) {
      expect(bucketOf(id)).toBeGreaterThan(0);
      const rows = await organizationRows(id, id === organizationId ? joined.map((user) => user.user_id) : []);
      for (const { source } of rows) sources.add(source);
      const strays = rows.filter(
        ({ source, value }) => (source === "api_keys.prefix" ? bucketOfPrefix(value) : bucketOf(value)) !== bucketOf(id),
      );
      expect(strays).toEqual([]);
      const stored = await databaseOf(id).prepare("SELECT bucket FROM organizations WHERE id = ?").bind(id).first();
      expect(stored).toEqual({ bucket: bucketOf(id) });
    }
    expect(sources).toEqual(new Set(Object.keys(ORGANIZATION_ROWS)));
  });

  it("ids the API answers stay UUIDv7 (as clients validate them), in the bucket, and in the order they were made", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await ok(send("POST", "/apps", { key: world.keys.account, body: { app_name: `burst-${i}` } }))).app_id as string);
    const placed = bucketOf(world.account.organizationId);
    for (const id of ids) expect([z.uuid().safeParse(id).success, id, bucketOf(id)]).toEqual([true, A_NEW_ID, placed]);
    expect([...ids].sort()).toEqual(ids);
  });
});

/**
 * The id-like values of every row of an organization (docs/SHARDING.md §1's paths), by `source` (table.column): made
 * by the world and the walk above. Deliveries are made by SQL (UUIDv4) and reached through their webhook.
 */
const ORGANIZATION_ROWS: Record<string, string> = {
  "organizations.id": "SELECT id FROM organizations WHERE id = ?1",
  "workspaces.id": "SELECT id FROM workspaces WHERE organization_id = ?1",
  "projects.id": "SELECT id FROM projects WHERE workspace_id IN (SELECT id FROM workspaces WHERE organization_id = ?1)",
  "api_keys.id": "SELECT id FROM api_keys WHERE project_id IN (SELECT id FROM org_projects)",
  "api_keys.prefix": "SELECT prefix FROM api_keys WHERE project_id IN (SELECT id FROM org_projects)",
  "idempotency_keys.result_id": `SELECT result_id FROM idempotency_keys
    WHERE key_hash IN (SELECT key_hash FROM api_keys WHERE project_id IN (SELECT id FROM org_projects))`,
  "apps.id": "SELECT id FROM org_apps",
  "app_variants.id": "SELECT id FROM app_variants WHERE app_id IN (SELECT id FROM org_apps)",
  "app_variant_revisions.id": `SELECT id FROM app_variant_revisions
    WHERE variant_id IN (SELECT id FROM app_variants WHERE app_id IN (SELECT id FROM org_apps))`,
  "environments.id": "SELECT id FROM environments WHERE app_id IN (SELECT id FROM org_apps)",
  "deployments.id":
    "SELECT id FROM deployments WHERE environment_id IN (SELECT id FROM environments WHERE app_id IN (SELECT id FROM org_apps))",
  "environment_revisions.id": `SELECT id FROM environment_revisions
    WHERE environment_id IN (SELECT id FROM environments WHERE app_id IN (SELECT id FROM org_apps))`,
  "change_requests.id": "SELECT id FROM change_requests WHERE app_id IN (SELECT id FROM org_apps)",
  "change_request_reviews.id": `SELECT id FROM change_request_reviews
    WHERE change_request_id IN (SELECT id FROM change_requests WHERE app_id IN (SELECT id FROM org_apps))`,
  "invitations.id": "SELECT id FROM invitations WHERE organization_id = ?1",
  "invitations.acceptance_id": "SELECT acceptance_id FROM invitations WHERE organization_id = ?1 AND acceptance_id IS NOT NULL",
  "events.id": "SELECT id FROM events WHERE organization_id = ?1",
  "webhooks.id": "SELECT id FROM webhooks WHERE organization_id = ?1",
  "users.id": "SELECT id FROM users WHERE id IN (SELECT value FROM json_each(?2))",
};

async function organizationRows(organizationId: string, newUserIds: string[]) {
  const scope = `WITH org_projects AS (SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id WHERE w.organization_id = ?1),
    org_apps AS (SELECT id FROM apps WHERE project_id IN (SELECT id FROM org_projects))`;
  const sources = Object.entries(ORGANIZATION_ROWS);
  const db = databaseOf(organizationId);
  const results = await db.batch<Record<string, string>>(
    sources.map(([, query]) => {
      const statement = db.prepare(`${scope} ${query}`);
      return query.includes("?2") ? statement.bind(organizationId, JSON.stringify(newUserIds)) : statement.bind(organizationId);
    }),
  );
  return results.flatMap(({ results: rows }, i) => rows.map((row) => ({ source: sources[i][0], value: Object.values(row)[0] })));
}
