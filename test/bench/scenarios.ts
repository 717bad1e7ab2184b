/** The scenarios the bench measures, and the one request that checks each before any load. */
import { gzipSync } from "node:zlib";
import { thousands } from "./report";
import { type BenchData, type BenchKey, FULL_PROJECT_APPS, LARGE_HISTORY, SMALL_HISTORY } from "./seed";

/** A scenario that did not run cleanly: reported, the others still run, and the bench exits non-zero. */
export class ScenarioError extends Error {}

export interface Scenario {
  label: string;
  server: "service" | "floor";
  method: "GET" | "POST";
  /** Below the server's URL (and the service's BASE_PATH). */
  path: string;
  headers: Record<string, string>;
  /** Each request carries `Authorization: ApiKey <key>` with the next key of this pool. */
  keys: BenchKey[];
  /** With `[<id>]`, replaced by autocannon with a unique id per request. */
  body?: string;
  connections: number;
  /** One request, checked in full before any load; what it returns goes into the report. */
  // biome-ignore lint/suspicious/noConfusingVoidType: most checks only throw; those that measure return their figures.
  check(base: string): Promise<CheckInfo | void>;
}

export interface CheckInfo {
  /** Size of the checked response's body, and gzipped. */
  bytes?: number;
  gzipBytes?: number;
  /** Apps the check created. */
  created?: number;
}

async function request(url: string, init: RequestInit = {}): Promise<{ status: number; text: string; bytes: number }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) });
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, text: body.toString("utf8"), bytes: body.byteLength };
}

function expectJson(what: string, response: { status: number; text: string }): any {
  if (response.status !== 200)
    throw new ScenarioError(`${what}: status ${response.status}, expected 200: ${response.text.slice(0, 300)}`);
  try {
    return JSON.parse(response.text);
  } catch {
    throw new ScenarioError(`${what}: the body is not JSON: ${response.text.slice(0, 300)}`);
  }
}

const authorization = (key: BenchKey) => ({ Authorization: `ApiKey ${key.key}`, Accept: "application/json" });
const postHeaders = (key: BenchKey) => ({ ...authorization(key), "Content-Type": "application/json" });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** GET of an environment: 200, the record of the right app at revision `count`, revisions 1..count in order. */
function checkRecord(path: string, key: BenchKey, appId: string, count: number) {
  return async (base: string): Promise<CheckInfo> => {
    const what = `GET ${path}`;
    const response = await request(`${base}${path}`, { headers: authorization(key) });
    const record = expectJson(what, response);
    const revisions = record.revisions;
    if (
      record.name !== "production" ||
      record.app_id !== appId ||
      record.revision !== count ||
      !Array.isArray(revisions) ||
      revisions.length !== count
    ) {
      throw new ScenarioError(
        `${what}: expected production of ${appId} at revision ${count} with ${count} revisions, got ${record.name} of ${record.app_id} at revision ${record.revision} with ${Array.isArray(revisions) ? revisions.length : "no"} revisions`,
      );
    }
    if (revisions.some((entry: { revision: number }, index: number) => entry.revision !== index + 1))
      throw new ScenarioError(`${what}: revisions are not 1..${count} in order`);
    return { bytes: response.bytes, gzipBytes: gzipSync(Buffer.from(response.text)).byteLength };
  };
}

/** POST /apps with the key: 200 {app_id, app_name} for a new name. */
function checkCreate(path: string, key: BenchKey, label: string) {
  return async (base: string): Promise<CheckInfo> => {
    const name = `bench-check-${label}-${Date.now()}`;
    const what = `POST ${path} {"app_name": "${name}"}`;
    const created = expectJson(
      what,
      await request(`${base}${path}`, { method: "POST", headers: postHeaders(key), body: JSON.stringify({ app_name: name }) }),
    );
    if (typeof created.app_id !== "string" || !UUID.test(created.app_id) || created.app_name !== name)
      throw new ScenarioError(`${what}: answered ${JSON.stringify(created)}`);
    return { created: 1 };
  };
}

function checkBody(path: string, expected: unknown) {
  return async (base: string): Promise<void> => {
    const body = expectJson(`GET ${path}`, await request(`${base}${path}`));
    if (JSON.stringify(body) !== JSON.stringify(expected))
      throw new ScenarioError(`GET ${path}: answered ${JSON.stringify(body)}, expected ${JSON.stringify(expected)}`);
  };
}

export type ScenarioId = "static" | "select1" | "get" | "post" | "getSmall1" | "getLarge1" | "postEmpty" | "postFull";

/** Every scenario, in the order they run; `connections` concurrent ones for the throughput scenarios. */
export function benchScenarios(data: BenchData, connections: number): Record<ScenarioId, Scenario> {
  const postBody = '{"app_name": "bench-[<id>]"}';
  const getPath = (which: "small" | "large") => `/apps/${data.apps[which]}/revisions/production`;
  // Every scenario, floors included, sends an Authorization header taken in turn from a pool of keys (the floor
  // ignores it): the same request shape and the same load-generator work per request everywhere.
  const k = data.keys;
  const json = { Accept: "application/json" };
  const post = { ...json, "Content-Type": "application/json" };
  return {
    static: {
      label: "floor: static JSON",
      server: "floor",
      method: "GET",
      path: "/static",
      headers: json,
      keys: k.read,
      connections,
      check: checkBody("/static", { status: "ok" }),
    },
    select1: {
      label: "floor: SELECT 1 on D1",
      server: "floor",
      method: "GET",
      path: "/select1",
      headers: json,
      keys: k.read,
      connections,
      check: checkBody("/select1", { one: 1 }),
    },
    get: {
      label: `GET production, ${SMALL_HISTORY} revisions`,
      server: "service",
      method: "GET",
      path: getPath("small"),
      headers: json,
      keys: k.read,
      connections,
      check: checkRecord(getPath("small"), k.read[0], data.apps.small, SMALL_HISTORY),
    },
    post: {
      label: "POST /apps, new app_name each",
      server: "service",
      method: "POST",
      path: "/apps",
      headers: post,
      keys: k.post,
      body: postBody,
      connections,
      check: checkCreate("/apps", k.post[0], "post"),
    },
    getSmall1: {
      label: `GET production, ${SMALL_HISTORY} revisions, 1 conn.`,
      server: "service",
      method: "GET",
      path: getPath("small"),
      headers: json,
      keys: k.read,
      connections: 1,
      check: checkRecord(getPath("small"), k.read[0], data.apps.small, SMALL_HISTORY),
    },
    getLarge1: {
      label: `GET production, ${thousands(LARGE_HISTORY)} revisions, 1 conn.`,
      server: "service",
      method: "GET",
      path: getPath("large"),
      headers: json,
      keys: k.read,
      connections: 1,
      check: checkRecord(getPath("large"), k.read[0], data.apps.large, LARGE_HISTORY),
    },
    postEmpty: {
      label: "POST /apps into an empty project",
      server: "service",
      method: "POST",
      path: "/apps",
      headers: post,
      keys: k.empty,
      body: postBody,
      connections,
      check: checkCreate("/apps", k.empty[0], "empty"),
    },
    postFull: {
      label: `POST /apps into a project of ${thousands(FULL_PROJECT_APPS)} apps`,
      server: "service",
      method: "POST",
      path: "/apps",
      headers: post,
      keys: k.full,
      body: postBody,
      connections,
      check: checkCreate("/apps", k.full[0], "full"),
    },
  };
}
