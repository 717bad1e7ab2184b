import { env } from "cloudflare:workers";
import { afterAll, beforeAll, expect, vi } from "vitest";
import { createAccount, createAppVia, createTeam, deploy, issueKey, send } from "./fixtures";
import {
  type Changes,
  type changes,
  type ExpectedEvent,
  expectEvents,
  expectRowCounts,
  type RowCounts,
  Tracker,
} from "./harness";

/*
 * The SQL injection battery's payloads, checks and setup, shared by injection.test.ts (the original endpoints),
 * injection-endpoints.test.ts (the others) and injection-deployments.test.ts (deploy, revert and the two headers).
 */

/**
 * The payloads by kind, each kind's first its representative in the everyday sample (`PAYLOAD_SAMPLE`).
 */
const PAYLOAD_KINDS: Record<string, readonly string[]> = {
  "a quote that ends the value, then a condition": ["' OR 1=1 --", "' OR '1'='1", "') OR ('a'='a", "anything' --"],
  // First: a value in double quotes, which an Idempotency-Key reads as quoted.
  "a double quote that ends the value": ['" OR ""="', '"; DROP TABLE apps; --'],
  // First: the longest payload, which after a key's 8-character prefix passes the 64 characters a prefix may have.
  "a statement stacked after the value": [
    "x'); INSERT INTO apps VALUES ('a', 'b', 'c', 'd', 'e'); --",
    "'; DROP TABLE apps; --",
    "1; DELETE FROM api_keys",
    "x'); DELETE FROM apps; --",
    "'; UPDATE api_keys SET revoked_at = NULL; --",
    "'; PRAGMA foreign_keys = OFF; --",
    "'; ATTACH DATABASE 'file:x' AS x; --",
  ],
  "a union or a subquery": [
    "' UNION SELECT key_hash, prefix FROM api_keys --",
    "x' UNION SELECT NULL, NULL, NULL, NULL --",
    "/**/UNION/**/SELECT/**/1",
    "'||(SELECT key_hash FROM api_keys LIMIT 1)||'",
    "' AND (SELECT COUNT(*) FROM users) > 0 --",
  ],
  "a comment": ["admin'/*", "*/ OR 1=1 /*"],
  "an expensive function": ["' OR randomblob(1000000000) --"],
  // First: two characters, too short for the checks that an answer never echoes the payload.
  "a bound parameter's placeholder": ["?1", "?3 OR 1=1", ":name", "@p", "$1"],
  "a LIKE wildcard": ["%", "_", "%_%"],
  "an escaped quote": ["\\' OR 1=1 --"],
  "a percent-encoded quote": ["%27%20OR%201%3D1%20--"],
  "a quote's look-alike outside Latin-1, which no header carries": [
    "\u2019 OR 1=1 --", // right single quotation mark
    "\u02bc OR 1=1 --", // modifier letter apostrophe
    "\uff07 OR 1=1 --", // fullwidth apostrophe
    "\uff02; DROP TABLE apps; --", // fullwidth quotation mark
    "\u2018; DROP TABLE apps; --",
  ],
  // NUL: refused in a name (a control character), and no header can carry it.
  "a NUL": ["\u0000' OR 1=1 --", "a\u0000'; DROP TABLE apps; --"],
};

/** Every payload. */
export const PAYLOADS = Object.values(PAYLOAD_KINDS).flat();

/** Whether a header's value can carry the payload: no character outside U+0020-U+00FF. */
const inHeader = (payload: string) => !/[^\x20-\xff]/.test(payload);

/** The payloads a header's value can carry. */
export const HEADER_PAYLOADS = PAYLOADS.filter(inHeader);

/**
 * The payloads of the files that send each through many routes and read back every write (injection-registry,
 * injection-teams): in the everyday run (`npm test`, CI) the first of each kind, every kind covered; all of them
 * under `npm run test:deep` (INJECTION_PAYLOADS=all, which test/vitest.config.ts passes in as a binding).
 */
export const PAYLOAD_SAMPLE = payloadSample(env.INJECTION_PAYLOADS);
/** PAYLOAD_SAMPLE's payloads a header's value can carry. */
export const HEADER_PAYLOAD_SAMPLE = PAYLOAD_SAMPLE.filter(inHeader);

function payloadSample(binding: string): readonly string[] {
  if (binding === "all") return PAYLOADS;
  if (binding === "sample") return Object.values(PAYLOAD_KINDS).map(([first]) => first);
  throw new Error(`INJECTION_PAYLOADS must be "sample" or "all", not ${binding}`);
}

/** What a payload is as a name or an environment name: accepted unless blank or holding a control character. */
export const isAcceptableName = (value: string) => value.trim() !== "" && !/[\p{Cc}\u2028\u2029]/u.test(value);
/** What a payload is as an environment's name: accepted unless it holds a control character. */
export const environmentName = (payload: string) => !/[\p{Cc}\u2028\u2029]/u.test(payload);

/** Text that must never reach a client: SQL, SQLite/D1 internals, stack traces, table names. */
const INTERNALS =
  /sqlite|d1_|sql|syntax|near "|constraint|no such|\b(select|insert|update|delete|union|drop|pragma|from|where)\b|stack|\bat \S+ \(|api_keys|key_hash|organization_members/i;

/** An error answer: the documented shape, and nothing of the payload, SQL or internals in it. */
export async function expectCleanError(response: Response, payload: string) {
  const text = await response.text();
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  expect(text).not.toMatch(INTERNALS);
  expect(JSON.parse(text)).toHaveProperty("detail");
  if (payload.length >= 3) expect(text).not.toContain(JSON.stringify(payload).slice(1, -1));
  return JSON.parse(text) as { detail: unknown };
}

let tracker: Tracker | undefined;

/** Runs the request: its result, and what it changed in the database (every row of every table compared). */
export async function changesBy<T>(request: () => Promise<T>): Promise<{ result: T; changed: ReturnType<typeof changes> }> {
  tracker ??= await Tracker.start();
  await tracker.changes(); // what was written before
  const result = await request();
  return { result, changed: await tracker.changes() };
}

/** Runs the request and checks that the database is exactly as it was. */
export async function expectNoChange<T>(request: () => Promise<T>): Promise<T> {
  const { result, changed } = await changesBy(request);
  expect(changed).toEqual({});
  return result;
}

/**
 * Exactly `rows` changed (counts of rows added and removed per table) and `events` recorded, the Idempotency-Key's
 * rows aside (fuzz-posts.ts's expectKeptRow checks them).
 */
export function expectWrite(changed: Changes, rows: RowCounts, ...events: ExpectedEvent[]): void {
  const { idempotency_keys: _, idempotency_key_requests: __, ...rest } = expectEvents(changed, ...events);
  expectRowCounts(rest, rows);
}

/** A route as the header checks call it: its method, its path, and its body where it takes one. */
export type HeaderRoute = [method: string, path: () => string, body?: () => unknown];

/**
 * Every route with `payload` in Authorization (as the key, as the secret of the live `key`, as the bare header: each
 * route gets one, in turn) is a 401 that says nothing internal, and nothing changes.
 */
export async function expectUnauthorizedWith(payload: string, key: string, routes: HeaderRoute[]) {
  const headers = [`ApiKey ${payload}`, `ApiKey ${key.split(".")[0]}.${payload}`, payload];
  await expectNoChange(async () => {
    for (const [i, [method, path, body]] of routes.entries()) {
      const response = await send(method, path(), { authorization: headers[i % headers.length], body: body?.() });
      expect(response.status, `${method} ${path()}`).toBe(401);
      await expectCleanError(response, payload);
    }
  });
}

/** Every read among the routes, with SQL as its D1 bookmark: a 200 that changes nothing and never sends the SQL back. */
export async function expectBookmarkSqlIgnored(key: string, routes: HeaderRoute[]) {
  for (const [method, path] of routes.filter(([method]) => method === "GET")) {
    for (const payload of ["' OR 1=1 --", "first-primary", "00000000-00000000-00000000-00000000000000000000000000000000'--"]) {
      const response = await expectNoChange(() => send(method, path(), { key, headers: { "x-d1-bookmark": payload } }));
      expect(response.status, path()).toBe(200);
      expect(response.headers.get("x-d1-bookmark") ?? "").not.toContain(payload);
    }
  }
}

export const UUID_ISSUE = { msg: "Input should be a valid UUID", type: "uuid_parsing" };
/** A 422 at `loc` (its message and type, when given). */
export const issueAt = (loc: (string | number)[], issue: object = {}) => expect.objectContaining({ loc, ...issue });

/**
 * The request is refused with `status` and a detail holding `detail` (an issue, or the message), and changes nothing;
 * failures name the payload (tests try every payload in turn).
 */
export async function expectRefused(payload: string, request: () => Promise<Response>, status: number, detail: unknown) {
  const response = await expectNoChange(request);
  expect(response.status, JSON.stringify(payload)).toBe(status);
  const body = await expectCleanError(response, payload);
  if (typeof detail === "string") expect(body.detail, JSON.stringify(payload)).toBe(detail);
  else expect(body.detail, JSON.stringify(payload)).toContainEqual(detail);
}

/** The request is refused with `status`, its detail holding `issue` (a 422's) or being it, and writes nothing. */
export async function expectRefusedWith(request: () => Promise<Response>, status: number, issue: unknown) {
  const response = await expectNoChange(request);
  const text = await response.text();
  expect(response.status, text).toBe(status);
  const { detail } = JSON.parse(text) as { detail: unknown };
  if (Array.isArray(detail) && !Array.isArray(issue)) expect(detail).toContainEqual(issue);
  else expect(detail).toEqual(issue);
}

/** A name the payload makes: looked up and found nowhere (`status`, `detail`), or refused at `loc` for a control character. */
export const asName =
  (loc: string[], status: number, detail: string, acceptable = isAcceptableName) =>
  (payload: string): [number, unknown] =>
    acceptable(payload) ? [status, detail] : [422, issueAt(loc)];

/** A 422 at `loc` of an invalid UUID, whatever the payload. */
export const uuidAt = (loc: string[]) => (): [number, unknown] => [422, issueAt(loc, UUID_ISSUE)];

/**
 * What a payload in a ref part of a configs body finds (`field`: "variant_ref.id", ...): an id is refused (uuid_parsing),
 * a version too, a slug finds nothing: "Config not found.", or for an environment's `environmentNotFound`.
 */
export function refExpectation(field: string, environmentNotFound = "Config not found."): (payload: string) => [number, unknown] {
  const loc = ["body", ...field.split(".")];
  if (field.endsWith(".id")) return uuidAt(loc);
  if (field.endsWith(".version")) return () => [422, issueAt(loc)];
  return field.startsWith("environment_ref")
    ? asName(loc, 404, environmentNotFound, environmentName)
    : asName(loc, 404, "Config not found.");
}

/** Silences the request log (a line per request: thousands) for the tests of the file, restored after them. */
export function quietRequestLog() {
  beforeAll(() => {
    vi.spyOn(console, "log").mockImplementation(() => {});
  });
  afterAll(() => {
    vi.restoreAllMocks();
  });
}

/**
 * The app the payloads aim at: "target", made with the owner's key in a team's project (app slugs are looked up there,
 * where no app is named like a payload), with config main deployed to production `deployments` times.
 */
export async function injectionTarget(deployments = 1) {
  const owner = await createAccount();
  const team = await createTeam(owner);
  const key = await issueKey(owner.userId, team.projectId);
  const appId = await createAppVia(key, { app_name: "target" });
  const deployed = [];
  while (deployed.length < deployments) deployed.push(await deploy(appId, "production", "main", owner));
  return { owner, team, key, appId, variantId: deployed[0].variantId, revisions: deployed.map((one) => one.revisionId) };
}
