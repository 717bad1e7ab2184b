import { env } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import {
  A_NEW_ID,
  type Account,
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
import { newInbox, received, settledDeliveries, subscribe } from "./webhooks/webhook-fixtures";

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

describe("an organization in a bucket other than 0", () => {
  let owner: Account;
  let organizationId: string;
  let workspaceId: string;
  let placed: number;
  /** Every operation of the document that is not a GET, with what this walk sent it (`${METHOD} ${path}`). */
  const walked = new Set<string>();
  let key: string;
  let hookInbox: string;

  /** Sends as the organization's key, recording the operation walked. */
  const call = (operation: string, path: string, body?: unknown, headers?: Record<string, string>) => {
    walked.add(operation);
    return ok(send(operation.split(" ")[0], path, { key, body, headers }));
  };

  beforeAll(async () => {
    owner = await createAccount();
    // A bucket at random: 0 once in 1,024; another organization then.
    for (let attempt = 0; attempt < 5 && !placed; attempt++) {
      const made = await ok<{ id: string; workspaces: string[] }>(
        send("POST", "/organizations", { key: owner.key, body: { name: `placed ${attempt}`, owner: owner.userId } }),
      );
      [organizationId, workspaceId, placed] = [made.id, made.workspaces[0], bucketOf(made.id)];
    }
    walked.add("POST /organizations");
    expect(placed).toBeGreaterThan(0);
    walked.add("POST /keys");
    key = await ok<string>(send("POST", `/keys?workspace_id=${workspaceId}`, { key: owner.key }));
  });

  it("every write of the OpenAPI document mints ids in the organization's bucket, and its row says so", async () => {
    expect(bucketOfPrefix(prefixOf(key))).toBe(placed);
    hookInbox = newInbox();
    const hook = await subscribe(key, { organization_id: organizationId, url: hookInbox, events: ["*"] });
    walked.add("POST /webhooks");

    // Apps, configs and deployments (the key's project is the organization's default one).
    const { app_id: appId } = await call("POST /apps", "/apps", { app_name: "walked" }, { "Idempotency-Key": "walk" });
    const throwaway = await call("POST /apps", "/apps", { app_name: "throwaway", organization_id: organizationId });
    await call("PATCH /apps/{app_id}", `/apps/${appId}`, { app_name: "walked" });
    await call("DELETE /apps/{app_id}", `/apps/${throwaway.app_id}`);
    const main = { application_ref: { id: appId }, variant_ref: { slug: "main" } };
    await call("POST /variants/configs/add", "/variants/configs/add", main);
    await call("POST /variants/configs/commit", "/variants/configs/commit", { ...main, params: { a: 1 } });
    await call("POST /variants/configs/fetch", "/variants/configs/fetch", main);
    await call("POST /variants/configs/fork", "/variants/configs/fork", main);
    const deployed = await call("POST /variants/configs/deploy", "/variants/configs/deploy", {
      ...main,
      environment_ref: { slug: "production" },
    });
    const deployedRevision = (deployed.environment_ref as { id: string }).id;
    const based = { base_id: appId, new_variant_name: "v", parameters: { n: 1 } };
    const kept = await call("POST /variants/from-base", "/variants/from-base", { ...based, new_config_name: "kept" });
    const removable = await call("POST /variants/from-base", "/variants/from-base", { ...based, new_config_name: "gone" });
    await call("PUT /variants/{variant_id}/parameters", `/variants/${kept.variant_id}/parameters`, { parameters: { n: 2 } });
    await call("DELETE /variants/{variant_id}", `/variants/${removable.variant_id}`);
    await call("POST /environments/deploy", "/environments/deploy", { environment_name: "staging", variant_id: kept.variant_id });
    await call("POST /configs/deployment/{deployment_revision_id}/revert", `/configs/deployment/${deployedRevision}/revert`);
    const saved = { base_id: appId, parameters: { n: 3 } };
    await call("POST /configs", "/configs", { ...saved, config_name: "saved", overwrite: false });
    await call("POST /configs", "/configs", { ...saved, config_name: "main", overwrite: true });

    // Today's SDK.
    const simple = { application: { slug: "walked-current", name: "walked-current" } };
    const { application } = await call("POST /simple/applications", "/simple/applications/", simple);
    const simpleId = (application as { id: string }).id;
    const simplePath = `/simple/applications/${simpleId}`;
    await call("POST /simple/applications/query", "/simple/applications/query", {});
    await call("PUT /simple/applications/{application_id}", simplePath, {
      application: { slug: "walked-renamed", name: "walked-renamed" },
    });
    await call("POST /simple/applications/{application_id}/archive", `${simplePath}/archive`);
    await call("POST /simple/applications/{application_id}/unarchive", `${simplePath}/unarchive`);
    const variantBody = { application_variant: { application_id: simpleId, slug: "walked-variant" } };
    const { application_variant } = await call("POST /applications/variants", "/applications/variants/", variantBody);
    const variantId = (application_variant as { id: string }).id;
    await call("POST /applications/variants/query", "/applications/variants/query", { application_refs: [{ id: simpleId }] });
    await call("POST /applications/variants/{variant_id}/archive", `/applications/variants/${variantId}/archive`);
    await call("POST /applications/variants/{variant_id}/unarchive", `/applications/variants/${variantId}/unarchive`);
    await call("POST /applications/revisions/commit", "/applications/revisions/commit", {
      application_revision: { application_variant_id: variantId, data: { parameters: { t: 1 } }, message: "m" },
    });
    await call("POST /applications/revisions/retrieve", "/applications/revisions/retrieve", {
      application_ref: { id: appId },
      application_variant_ref: { slug: "main" },
    });
    await call("POST /applications/revisions/log", "/applications/revisions/log", {
      application_revisions: { application_variant_id: variantId },
    });
    await call("POST /applications/revisions/deploy", "/applications/revisions/deploy", {
      application_ref: { id: appId },
      application_variant_ref: { slug: "main" },
      environment_ref: { slug: "development" },
    });
    await call("POST /workflows/revisions/retrieve", "/workflows/revisions/retrieve", {
      workflow_ref: { id: appId },
      workflow_variant_ref: { id: kept.variant_id },
    });
    const { environments } = await call("POST /simple/environments/query", "/simple/environments/query", {
      environment: { slug: "staging" },
    });
    const staging = (environments as { id: string }[])[0].id;
    await call("POST /simple/environments/{environment_id}/guard", `/simple/environments/${staging}/guard`);
    await call("POST /simple/environments/{environment_id}/unguard", `/simple/environments/${staging}/unguard`);

    // The organization, its workspaces, invitations (new users, with their first keys) and members.
    const inOrganization = `/organizations/${organizationId}`;
    const inWorkspace = `${inOrganization}/workspaces/${workspaceId}`;
    await call("PUT /organizations/{org_id}", inOrganization, { name: "walked" });
    await call("POST /organizations/{org_id}/workspaces", `${inOrganization}/workspaces`, { name: "second" });
    await call("PUT /organizations/{org_id}/workspaces/{workspace_id}", inWorkspace, { description: "walked" });
    const invitee = `walked-${crypto.randomUUID()}@example.com`;
    const leaver = `leaver-${crypto.randomUUID()}@example.com`;
    const invite = "POST /organizations/{org_id}/workspaces/{workspace_id}/invite";
    const first = await call(invite, `${inWorkspace}/invite`, [{ email: invitee, roles: ["editor"] }]);
    const resent = await call(`${invite}/resend`, `${inWorkspace}/invite/resend`, { email: invitee });
    const toLeave = await call(invite, `${inWorkspace}/invite`, [{ email: leaver, roles: ["viewer"] }]);
    const tokens = [first, resent, toLeave].map((invitation) => (invitation as unknown as IssuedInvitation).token);
    expect(tokens.map(bucketOfToken)).toEqual([placed, placed, placed]);
    const newUsers: string[] = [];
    for (const token of tokens.slice(1)) {
      walked.add(`${invite}/accept`);
      const joined = await ok<{ user_id: string; api_key: string }>(
        send("POST", `${inWorkspace}/invite/accept?project_id=${first.project_id}`, { authorization: "", body: { token } }),
      );
      expect([bucketOf(joined.user_id), bucketOfPrefix(prefixOf(joined.api_key))]).toEqual([placed, placed]);
      newUsers.push(joined.user_id);
    }
    // Change requests (the owner approves their own: the settings allow it here), and the protection they read.
    const settings = `/projects/${first.project_id}/environments/staging/protection`;
    await call("PUT /projects/{project_id}/environments/{environment_name}/protection", settings, { allow_self_approval: true });
    const proposal = {
      app_id: appId,
      environment: "staging",
      variant_revision_id: (deployed.variant_ref as { id: string }).id,
      title: "walked",
    };
    const request = (await call("POST /change-requests", "/change-requests", proposal)) as unknown as { id: string };
    const inRequest = `/change-requests/${request.id}`;
    await call("PATCH /change-requests/{change_request_id}", inRequest, { title: "walked again" });
    await call("POST /change-requests/{change_request_id}/reviews", `${inRequest}/reviews`, { kind: "approve", version: 1 });
    const soon = { scheduled_at: new Date(Date.now() + 3_600_000).toISOString() };
    await call("POST /change-requests/{change_request_id}/schedule", `${inRequest}/schedule`, soon);
    await call("POST /change-requests/{change_request_id}/unschedule", `${inRequest}/unschedule`);
    await call("POST /change-requests/{change_request_id}/apply", `${inRequest}/apply`);
    const draft = (await call("POST /change-requests", "/change-requests", { ...proposal, draft: true })) as unknown as {
      id: string;
    };
    for (const action of ["submit", "rebase", "cancel"]) {
      await call(`POST /change-requests/{change_request_id}/${action}`, `/change-requests/${draft.id}/${action}`);
    }

    const member = { email: invitee, organization_id: organizationId, role: "deployment_manager" };
    await call("POST /workspaces/{workspace_id}/roles", `/workspaces/${workspaceId}/roles`, member);
    const unassign = `email=${invitee}&org_id=${organizationId}&role=deployment_manager`;
    await call("DELETE /workspaces/{workspace_id}/roles", `/workspaces/${workspaceId}/roles?${unassign}`);
    await call(
      "DELETE /workspaces/{workspace_id}/users",
      `/workspaces/${workspaceId}/users?email=${leaver}&org_id=${organizationId}`,
    );
    const spare = await ok<string>(send("POST", `/keys?workspace_id=${workspaceId}`, { key }));
    expect(bucketOfPrefix(prefixOf(spare))).toBe(placed);
    await call("DELETE /keys/{key_prefix}", `/keys/${prefixOf(spare)}`);

    // Webhooks: the deliveries of all the above, and a test event (recorded nowhere, but an event id all the same).
    const inHook = `/webhooks/${hook.id}`;
    await call("PATCH /webhooks/{webhook_id}", inHook, { description: "walked" });
    await call("POST /webhooks/{webhook_id}/rotate-secret", `${inHook}/rotate-secret`);
    await call("POST /webhooks/{webhook_id}/test", `${inHook}/test`);
    const testEvent = (await received(hookInbox)).map(({ body }) => JSON.parse(body)).find(({ type }) => type === "webhook.test");
    expect(bucketOf(testEvent.data.id)).toBe(placed);
    const [delivery] = await settledDeliveries(key, hook.id);
    await call("POST /webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", `${inHook}/deliveries/${delivery.id}/redeliver`);
    const other = await subscribe(key, { organization_id: organizationId, url: newInbox(), events: ["app.created"] });
    await call("DELETE /webhooks/{webhook_id}", `/webhooks/${other.id}`);

    const document = await ok<{ paths: Record<string, Record<string, unknown>> }>(send("GET", "/openapi.json"));
    const writes = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ["post", "put", "patch", "delete"].includes(method))
        .map((method) => `${method.toUpperCase()} ${path.replace(/\/$/, "")}`),
    );
    expect([...walked].sort()).toEqual(writes.sort());

    const rows = await organizationRows(organizationId, newUsers);
    expect(new Set(rows.map(({ source }) => source))).toEqual(new Set(Object.keys(ORGANIZATION_ROWS)));
    const strays = rows.filter(
      ({ source, value }) => (source === "api_keys.prefix" ? bucketOfPrefix(value) : bucketOf(value)) !== placed,
    );
    expect(strays).toEqual([]);
    const stored = await databaseOf(organizationId)
      .prepare("SELECT bucket FROM organizations WHERE id = ?")
      .bind(organizationId)
      .first();
    expect(stored).toEqual({ bucket: bucketOf(organizationId) });
  });

  it("ids the API answers stay UUIDv7 (as clients validate them), in the bucket, and in the order they were made", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await ok(send("POST", "/apps", { key, body: { app_name: `burst-${i}` } }))).app_id as string);
    for (const id of ids) expect([z.uuid().safeParse(id).success, id, bucketOf(id)]).toEqual([true, A_NEW_ID, placed]);
    expect([...ids].sort()).toEqual(ids);
  });
});

/**
 * The id-like values of every row of an organization (docs/SHARDING.md §1's paths), by `source` (table.column): made
 * by the walk above, through its requests only. Deliveries are made by SQL (UUIDv4) and reached through their webhook.
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
