import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { Revision } from "../../src/applications/revisions.schemas";
import { generateApiKey, hashApiKey } from "../../src/auth/api-keys";
import { addConfig, commitConfig } from "../../src/core/configs.sql.ts";
import { deployConfig } from "../../src/core/deployments.sql.ts";
import {
  copyUser,
  createApiKey,
  createOrganizationCopyingOwner,
  createUser,
  newAccountIds,
  newOrganizationIds,
  setOrganizationMember,
  type User,
} from "../../src/db/accounts";
import { newId } from "../../src/db/buckets";
import { claimUser, confirmClaim } from "../../src/db/directory";
import { operatorDb } from "../../src/db/handles";
import type { ShardName } from "../../src/db/pool";
import type { Role } from "../../src/db/roles";
import worker from "../../src/index";
import { bucketFor, bucketForNewOrganization, countOnShards, databaseOf } from "./pool";

// Every import from src/ of the worker tests is here (re-exported below) or in pool.ts (the pool's), so that a move in
// src/ is one edit.
export { createService } from "../../src/app";
export type { Revision, WorkflowRevision } from "../../src/applications/revisions.schemas";
export { CreateAppBody } from "../../src/apps/apps.schemas";
export type { EnvironmentRevisions } from "../../src/apps/environments.schemas";
export { EnvironmentRevisionsParams } from "../../src/apps/environments.schemas";
export { DEFAULT_ENVIRONMENTS } from "../../src/apps/environments.sql.ts";
export { hashApiKey } from "../../src/auth/api-keys";
export { diffDocuments, MAX_DIFF_OPERATIONS } from "../../src/core/diff";
export { murmur3, splitBucket } from "../../src/core/split-bucket";
export { revokeApiKey } from "../../src/db/accounts";
export {
  BUCKETS,
  bucketOfId,
  bucketOfPrefix,
  bucketOfToken,
  LEGACY_BUCKET,
  newId,
  newInvitationToken,
  newKeyPrefix,
  PREFIX_ALPHABET,
} from "../../src/db/buckets";
export { CALLER_CTE } from "../../src/db/caller";
export { parseJsonExactly } from "../../src/db/exact-json";
export type { Role } from "../../src/db/roles";
export type { Event } from "../../src/events/events.sql.ts";
export type { DeliveryMessage } from "../../src/http/hand-off";
export {
  BURST_ENTRIES as REQUEST_LOG_BURST_ENTRIES,
  BURST_MS as REQUEST_LOG_BURST_MS,
} from "../../src/http/request-log";
export type { ConfigOutput } from "../../src/variants/configs.schemas";
export { claimDeliveries, LEASE_SECONDS } from "../../src/webhooks/deliveries.sql.ts";
export { ATTEMPTS_PER_RUN, SHARDS_PER_RUN, sendInBatches } from "../../src/webhooks/delivery";
export { type Delivery, WEBHOOKS_PER_ORGANIZATION, type Webhook } from "../../src/webhooks/webhooks.sql.ts";
export { worker };

/** One problem of a 422, in FastAPI's shape. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/**
 * Accounts and keys are made with the same data-access functions the admin CLI uses; requests go through the
 * Worker's own fetch handler, as a client's would.
 */
let counter = 0;

export interface Account {
  userId: string;
  username: string;
  organizationId: string;
  workspaceId: string;
  projectId: string;
  /** A live key naming the personal project. */
  key: string;
}

/**
 * A user (as the admin CLI's `user create` makes one: with a personal organization) and a live key of the personal
 * project; on the shard named `shard`, else on each shard in turn (`bucketForNewOrganization`).
 */
export async function createAccount(email?: string, shard?: ShardName): Promise<Account> {
  counter += 1;
  const username = `user${counter}-${crypto.randomUUID().slice(0, 8)}`;
  const ids = newAccountIds(bucketForNewOrganization(shard));
  const user = { email: email ?? `${username}@example.com`, username, createdAt: new Date().toISOString() };
  // As the admin CLI's `user create`: claimed in the directory, made on its shard, confirmed (docs/SHARDING.md §3.3).
  const claim = await claimUser(env.DIRECTORY, { id: ids.userId, ...user });
  if (claim !== "claimed") throw new Error(`createAccount: ${claim} (${user.email})`);
  await createUser(databaseOf(ids.organizationId), user, ids);
  await confirmClaim(env.DIRECTORY, ids.userId);
  const key = await issueKey(ids.userId, ids.projectId);
  return { ...ids, username, key };
}

/** The user's row, read on the shard of their id's bucket (their first organization's, where it was made). */
async function userRow(userId: string): Promise<User> {
  const user = await databaseOf(userId)
    .prepare("SELECT id, username, email, created_at FROM users WHERE id = ?")
    .bind(userId)
    .first<User>();
  if (!user) throw new Error(`no user ${userId} on its shard`);
  return user;
}

/**
 * A live key of the user's naming the project: expiring at `expiresAt` (null: never), read-only with
 * `{ readOnly: true }` (set by SQL: the admin CLI makes no read-only keys).
 */
export async function issueKey(
  userId: string,
  projectId: string,
  expiry: string | null | { expiresAt?: string | null; readOnly?: boolean } = null,
): Promise<string> {
  const { expiresAt = null, readOnly = false } = typeof expiry === "object" && expiry !== null ? expiry : { expiresAt: expiry };
  const { key, prefix } = generateApiKey(bucketFor(projectId));
  const keyHash = await hashApiKey(key);
  const db = databaseOf(projectId);
  await createApiKey(db, { prefix, keyHash, userId, projectId, expiresAt });
  if (readOnly) await db.prepare("UPDATE api_keys SET read_only = 1 WHERE key_hash = ?").bind(keyHash).run();
  return key;
}

/** Records the key's use as just now, as the request after its first in an hour finds it. */
export async function markKeyUsed(key: string): Promise<void> {
  await databaseOf(key)
    .prepare("UPDATE api_keys SET last_used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE key_hash = ?")
    .bind(await hashApiKey(key))
    .run();
}

/**
 * An organization owned by `owner`, with `members` added in the given roles; on the shard named `shard`, else on each
 * shard in turn, whatever the shards of its members' own organizations.
 */
export async function createTeam(owner: Account, members: [Account, Role][] = [], shard?: ShardName) {
  const ids = newOrganizationIds(bucketForNewOrganization(shard));
  const db = databaseOf(ids.organizationId);
  await createOrganizationCopyingOwner(db, `team ${++counter}`, await userRow(owner.userId), ids);
  for (const [member, role] of members) await addMember(ids.organizationId, member.userId, role);
  return ids;
}

/**
 * Makes the user a member of the organization in `role` (or changes their role), with their row copied to its shard
 * first; no event, as the fixtures' other writes.
 */
export async function addMember(organizationId: string, userId: string, role: Role) {
  const db = databaseOf(organizationId);
  await copyUser(db, await userRow(userId));
  await setOrganizationMember(db, organizationId, userId, role);
}

/**
 * What access tests need around `owner`: a team of theirs with a viewer, keys of the team's project (the owner's, the
 * viewer's, and a read-only one of the owner's), and an outsider, a member of nothing of theirs.
 */
export async function createTeamWithKeys(owner: Account) {
  const outsider = await createAccount();
  const viewer = await createAccount();
  const team = await createTeam(owner, [[viewer, "viewer"]]);
  return {
    team,
    outsider,
    ownerKey: await issueKey(owner.userId, team.projectId),
    viewerKey: await issueKey(viewer.userId, team.projectId),
    readOnlyKey: await issueKey(owner.userId, team.projectId, { readOnly: true }),
  };
}

/** A workspace of `createLayeredTeam`: its default project, and the projects made before and after it. */
export interface LayeredWorkspace {
  id: string;
  defaultProjectId: string;
  otherProjectIds: [string, string];
}

/**
 * An organization owned by `owner` whose defaults are neither the oldest nor the newest (by creation time, by id and
 * by insertion): three workspaces, the middle one the default, each with three projects, the middle one the
 * workspace's default; plain SQL. In an account or a `createTeam`, a workspace has one project, so "its default
 * project" and "its first project" cannot be told apart; here they can.
 */
export async function createLayeredTeam(owner: Account) {
  const bucket = bucketForNewOrganization();
  const organizationId = newId(bucket);
  const db = databaseOf(organizationId);
  await copyUser(db, await userRow(owner.userId));
  const statements = [
    db
      .prepare("INSERT INTO organizations (id, name, bucket) VALUES (?, ?, ?)")
      .bind(organizationId, `layered ${++counter}`, bucket),
    db
      .prepare("INSERT INTO organization_members (organization_id, user_id, role) VALUES (?, ?, 'owner')")
      .bind(organizationId, owner.userId),
  ];
  let second = 0;
  const createdAt = () => `2026-01-01T00:00:${String(second++).padStart(2, "0")}.000Z`;
  const workspaces: LayeredWorkspace[] = [];
  for (let w = 0; w < 3; w++) {
    const workspaceId = newId(bucket);
    statements.push(
      db
        .prepare("INSERT INTO workspaces (id, organization_id, name, is_default, created_at) VALUES (?, ?, ?, ?, ?)")
        .bind(workspaceId, organizationId, `workspace ${w}`, w === 1 ? 1 : 0, createdAt()),
    );
    const projects = [newId(bucket), newId(bucket), newId(bucket)];
    projects.forEach((projectId, p) => {
      statements.push(
        db
          .prepare("INSERT INTO projects (id, workspace_id, name, is_default, created_at) VALUES (?, ?, ?, ?, ?)")
          .bind(projectId, workspaceId, `project ${p}`, p === 1 ? 1 : 0, createdAt()),
      );
    });
    workspaces.push({ id: workspaceId, defaultProjectId: projects[1], otherProjectIds: [projects[0], projects[2]] });
  }
  await db.batch(statements);
  return { organizationId, defaultWorkspace: workspaces[1], workspaces };
}

/**
 * Deploys the latest revision of config `configName` (added, with params {}, when the app has none of that name; with
 * `params`, a new revision holding them committed first) as `by` would, through the data layer the admin CLI uses;
 * `by` must be allowed to write to the app.
 */
export async function deploy(
  appId: string,
  environmentName: string,
  configName: string,
  by: Account,
  params?: Record<string, unknown>,
) {
  const caller = operatorDb(databaseOf(appId), by.userId, bucketFor(appId));
  const application = { id: appId, slug: null, version: null };
  const variant = { slug: configName, version: null, id: null };
  await addConfig(caller, application, configName);
  if (params) await commitConfig(caller, { application, variant }, { params, url: null });
  const deployed = await deployConfig(caller, {
    application,
    variant,
    environment: { slug: environmentName, version: null, id: null },
  });
  if (deployed.outcome !== "done" || !deployed.config.environment) throw new Error(`deploy failed: ${JSON.stringify(deployed)}`);
  return {
    revision: deployed.config.environment.revision,
    revisionId: deployed.config.environment.revisionId,
    variantId: deployed.config.variantId,
  };
}

export const BASE_URL = "https://apps.example.test";

export interface RequestOptions {
  key?: string;
  /** The raw Authorization header; overrides `key`. */
  authorization?: string;
  /** JSON-encoded, with Content-Type: application/json unless `headers` names another. */
  body?: unknown;
  /** A body sent as is. */
  rawBody?: BodyInit;
  headers?: Record<string, string>;
  /** Bindings in place of the real ones for this request: an instrumented D1, strict limiters, CORS_ORIGINS, BASE_PATH. */
  bindings?: Partial<Env>;
  /** The URL's origin in place of BASE_URL: on Cloudflare a request's URL has the Host header's host, which any client sets. */
  origin?: string;
  /** Answered once the work the Worker goes on with after its answer (waitUntil) is done too. */
  settled?: boolean;
}

/**
 * A request through the Worker's own fetch handler: src/index.ts's default export, called with the real bindings
 * (some possibly replaced). Called directly rather than through `exports.default.fetch`: under
 * @cloudflare/vitest-pool-workers 0.15.1 each `exports.default.fetch` call costs more than the one before it
 * (cloudflare/workers-sdk#15446; measured here: requests 1-100 of a file take 0.3 s, requests 400-500 take 7 s),
 * which makes thousands of requests in one file impractical.
 */
export async function send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  const authorization = options.authorization ?? (options.key ? `ApiKey ${options.key}` : undefined);
  if (authorization !== undefined) headers.set("Authorization", authorization);
  let body = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    if (!headers.has("Content-Type")) headers.set("Content-Type", "application/json");
  }
  const request = new Request(`${options.origin ?? BASE_URL}${path}`, { method, headers, body }) as Request<
    unknown,
    IncomingRequestCfProperties
  >;
  const context = createExecutionContext();
  const response = await worker.fetch(request, { ...env, ...options.bindings }, context);
  if (options.settled) await waitOnExecutionContext(context);
  return response;
}

export const postApp = (key: string, body: unknown, options: Omit<RequestOptions, "key" | "body"> = {}) =>
  send("POST", "/apps", { ...options, key, body });

export const getRevisions = (key: string, appId: string, environment: string, options: Omit<RequestOptions, "key"> = {}) =>
  send("GET", `/apps/${appId}/revisions/${encodeURIComponent(environment)}`, { ...options, key });

/** Creates an app through the API and returns its id; fails the test on anything but 200. */
export async function createAppVia(key: string, body: Record<string, unknown>): Promise<string> {
  const response = await postApp(key, body);
  if (response.status !== 200) throw new Error(`create failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { app_id: string }).app_id;
}

/** Rows in a table on every shard, for checking that a failed request changed nothing. */
export const countRows = (table: "apps" | "environments" | "environment_revisions"): Promise<number> =>
  countOnShards(`SELECT COUNT(*) AS n FROM ${table}`);

/**
 * Runs `attempt` (which must use fresh keys or addresses each time) so that it falls within one window of an
 * emulated rate limiter. The emulator's windows are fixed (wall-clock minutes, for every key at once): a probe key
 * spent before the attempt and still spent after it means no window began in between. An attempt that straddled
 * two windows is run once more; it takes far less than a minute, so the second cannot straddle too.
 */
export async function withinOneWindow<T>(limiter: RateLimit, attempt: () => Promise<T>): Promise<T> {
  for (let run = 0; run < 2; run++) {
    const probe = `probe-${crypto.randomUUID()}`;
    let spent = 0;
    while ((await limiter.limit({ key: probe })).success) {
      spent += 1;
      if (spent > 100) throw new Error("withinOneWindow needs a limiter with a small budget");
    }
    const result = await attempt();
    if (!(await limiter.limit({ key: probe })).success) return result;
  }
  throw new Error("two attempts in a row straddled a rate limit window");
}

/** The 403 every refused write answers, in the platform's words. */
export const FORBIDDEN = "You do not have access to perform this action. Please contact your organization admin.";

/** A config registry call (`/variants/configs/<action>`) with its body sent as written: JSON.stringify would change its numbers. */
export const postConfigText = (action: string, key: string, body: string, headers: Record<string, string> = {}) =>
  send("POST", `/variants/configs/${action}`, {
    authorization: key,
    rawBody: body,
    headers: { "Content-Type": "application/json", ...headers },
  });

/** JSON with each number as `{ number: "<its text>" }`, so that whole values compare digit for digit. */
export const parseKeepingNumbers = (text: string): any =>
  JSON.parse(text, (_key, value, context?: { source?: string }) =>
    typeof value === "number" ? { number: context?.source } : value,
  );

/** Any time as the service writes one (RFC 3339 UTC with milliseconds), and any id it makes (a UUIDv7). */
export const A_TIME = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
export const A_NEW_ID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

/** The `detail` of today's SDK's 409 for a slug taken (docs/CURRENT-SDK-API.md), by an archived app or variant or not. */
export const slugTakenDetail = (slug: string, archived: boolean) => ({
  message:
    `A resource with slug '${slug}' already exists in this project.` +
    (archived ? " It is archived: unarchive it, or choose another slug." : ""),
  conflict: { slug },
});

/** Checks an error answer: its status and its `{"detail": ...}` body (a 422's issues, whole). */
export async function expectError(response: Response, status: number, detail: string | ValidationIssue[]) {
  expect(response.status).toBe(status);
  expect(await response.json()).toEqual({ detail });
}

/** The JSON body of an answer with this status (the body is shown when the status is another). */
export async function expectJson<T>(response: Response, status = 200): Promise<T> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return JSON.parse(text) as T;
}

/** An organization made through the API by the key's user (its owner), with the default workspace's id. */
export async function createOrganizationVia(key: string, name = `org ${++counter}`) {
  const me = await expectJson<{ id: string }>(await send("GET", "/profile", { key }));
  const organization = await expectJson<{ id: string; workspaces: string[] }>(
    await send("POST", "/organizations", { key, body: { name, owner: me.id } }),
  );
  return { organizationId: organization.id, workspaceId: organization.workspaces[0] };
}

/** What an invite answers: the token to pass on, and the project the invitee accepts into. */
export interface IssuedInvitation {
  email: string;
  role: Role;
  token: string;
  organization_id: string;
  workspace_id: string;
  project_id: string;
  expires_at: string;
}

/** `invite_user_to_workspace` as the platform's client sends it. */
export const invite = (key: string, organizationId: string, workspaceId: string, email: string, role: string) =>
  send("POST", `/organizations/${organizationId}/workspaces/${workspaceId}/invite`, { key, body: [{ email, roles: [role] }] });

/** `accept_invitation` as the client sends it: with the invitee's key, or with an empty Authorization (no key). */
export const accept = (invitation: IssuedInvitation, key = "", token = invitation.token) =>
  send(
    "POST",
    `/organizations/${invitation.organization_id}/workspaces/${invitation.workspace_id}/invite/accept?project_id=${invitation.project_id}`,
    { authorization: key, body: { token } },
  );

/** A new email invited by `key`'s user and accepted with the token alone: the new member's id and first key. */
export async function joinAsNewUser(key: string, organizationId: string, workspaceId: string, role: string) {
  const email = `invitee${++counter}-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const invitation = await expectJson<IssuedInvitation>(await invite(key, organizationId, workspaceId, email, role));
  const joined = await expectJson<{ user_id: string; api_key: string }>(await accept(invitation));
  return { email, userId: joined.user_id, key: joined.api_key };
}

/**
 * Variant revision `revision` of variant `variantId` as the current API must show it (docs/CURRENT-SDK-API.md,
 * Revision), from its rows in D1: what both APIs read.
 */
export async function storedRevision(variantId: string, revision: number): Promise<Revision> {
  const row = await databaseOf(variantId)
    .prepare(
      `SELECT r.id, r.slug, r.message, r.params, r.url, r.created_at, r.modified_by, u.email, v.name AS config_name,
            a.id AS app_id, a.name AS app_name
       FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id JOIN apps a ON a.id = v.app_id
       JOIN users u ON u.id = r.modified_by
      WHERE r.variant_id = ? AND r.revision = ?`,
    )
    .bind(variantId, revision)
    .first<Record<string, string>>();
  if (!row) throw new Error(`no revision ${revision} of variant ${variantId}`);
  return {
    id: row.id,
    slug: row.slug,
    version: String(revision),
    ...(row.message === null ? {} : { message: row.message }),
    data: { parameters: JSON.parse(row.params), url: row.url },
    application_id: row.app_id,
    application_slug: row.app_name,
    application_variant_id: variantId,
    application_variant_slug: row.config_name,
    variant_id: variantId,
    variant_slug: row.config_name,
    artifact_id: row.app_id,
    artifact_slug: row.app_name,
    created_at: row.created_at,
    created_by_id: row.modified_by,
    updated_by: row.email,
    updated_by_id: row.modified_by,
  };
}

/**
 * Config `configName` of the app made through the legacy API as the platform's client makes it: added (revision 1,
 * params {}), then each of `commits` committed as the next revision. Its variant id.
 */
export async function legacyConfig(key: string, appId: string, configName: string, ...commits: Record<string, unknown>[]) {
  const refs = { application_ref: { id: appId }, variant_ref: { slug: configName } };
  const added = await send("POST", "/variants/configs/add", { key, body: refs });
  if (added.status !== 200) throw new Error(`add failed: ${added.status} ${await added.text()}`);
  for (const params of commits) {
    const committed = await send("POST", "/variants/configs/commit", { key, body: { ...refs, params } });
    if (committed.status !== 200) throw new Error(`commit failed: ${committed.status} ${await committed.text()}`);
  }
  const row = await databaseOf(appId)
    .prepare("SELECT id FROM app_variants WHERE app_id = ? AND name = ?")
    .bind(appId, configName)
    .first<{ id: string }>();
  return (row as { id: string }).id;
}
