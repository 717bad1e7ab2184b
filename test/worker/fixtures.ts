import { env, exports } from "cloudflare:workers";
import { generateApiKey, hashApiKey } from "../../src/auth/api-keys";
import { createApiKey, createOrganization, createUser, type Role, setOrganizationMember } from "../../src/db/accounts";
import { deployVariant } from "../../src/db/apps";

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

export async function createAccount(): Promise<Account> {
  counter += 1;
  const username = `user${counter}-${crypto.randomUUID().slice(0, 8)}`;
  const ids = await createUser(env.DB, { email: `${username}@example.com`, username });
  const key = await issueKey(ids.userId, ids.projectId);
  return { ...ids, username, key };
}

export async function issueKey(userId: string, projectId: string, expiresAt: string | null = null): Promise<string> {
  const { key, prefix } = generateApiKey();
  await createApiKey(env.DB, { prefix, keyHash: await hashApiKey(key), userId, projectId, expiresAt });
  return key;
}

/** An organization owned by `owner`, with `members` added in the given roles. */
export async function createTeam(owner: Account, members: [Account, Role][] = []) {
  const ids = await createOrganization(env.DB, `team ${++counter}`, owner.userId);
  for (const [member, role] of members) await setOrganizationMember(env.DB, ids.organizationId, member.userId, role);
  return ids;
}

export function deploy(appId: string, environmentName: string, variantName: string, by: Account) {
  return deployVariant(env.DB, { appId, environmentName, variantName, deployedBy: by.userId });
}

export const BASE_URL = "https://apps.example.test";

interface RequestOptions {
  key?: string;
  /** The raw Authorization header; overrides `key`. */
  authorization?: string;
  body?: unknown;
  /** A body sent as is, not JSON-encoded. */
  rawBody?: BodyInit;
  headers?: Record<string, string>;
}

export function send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
  const headers = new Headers({ Accept: "application/json", ...options.headers });
  const authorization = options.authorization ?? (options.key ? `ApiKey ${options.key}` : undefined);
  if (authorization !== undefined) headers.set("Authorization", authorization);
  let body = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    if (!headers.has("Content-Type")) headers.set("Content-Type", "application/json");
  }
  return exports.default.fetch(new Request(`${BASE_URL}${path}`, { method, headers, body }));
}

export const postApp = (key: string, body: unknown, options: Omit<RequestOptions, "key" | "body"> = {}) =>
  send("POST", "/apps", { ...options, key, body });

export const getRevisions = (key: string, appId: string, environment: string) =>
  send("GET", `/apps/${appId}/revisions/${encodeURIComponent(environment)}`, { key });

/** Creates an app through the API and returns its id; fails the test on anything but 200. */
export async function createAppVia(key: string, body: Record<string, unknown>): Promise<string> {
  const response = await postApp(key, body);
  if (response.status !== 200) throw new Error(`create failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { app_id: string }).app_id;
}

/** Rows in a table, for checking that a failed request changed nothing. */
export async function countRows(table: "apps" | "environments" | "environment_revisions"): Promise<number> {
  const row = await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table}`).first<{ n: number }>();
  return row?.n ?? 0;
}
