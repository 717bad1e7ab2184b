/** The scenarios the bench measures, and the one request that checks each before any load. */
import { gzipSync } from "node:zlib";
import type { LogVariant } from "./logging/variants";
import type { Receiver } from "./receiver";
import { thousands } from "./report";
import {
  AUDIT_DEEP,
  AUDIT_EVENTS,
  auditEventId,
  type BenchData,
  type BenchKey,
  DEPLOY_APPS,
  DIFF_CHANGES,
  EVENTS_PAGE,
  FULL_PROJECT_APPS,
  type HistoryTarget,
  LARGE_HISTORY,
  paramsOf,
  SMALL_HISTORY,
  urlOf,
  WEBHOOKS,
} from "./seed";

/** A scenario that did not run cleanly: reported, the others still run, and the bench exits non-zero. */
export class ScenarioError extends Error {}

/**
 * Where a scenario's requests go: the service, the floor, the bare handlers (test/bench/bare/), a copy of the service
 * with another request log, or the service of another tree (`--base`).
 */
export type ServerName = "service" | "floor" | "bare" | "base" | "uncached" | `log:${string}`;

export interface Scenario {
  label: string;
  server: ServerName;
  method: "GET" | "POST";
  /** Below the server's URL (and the service's BASE_PATH). */
  path: string;
  headers: Record<string, string>;
  /** Each request carries `Authorization: ApiKey <key>` with the next key of this pool. */
  keys: BenchKey[];
  /** With `[<id>]`, replaced by autocannon with a unique id per request. */
  body?: string;
  /**
   * What changes from one request to the next beyond the key: the body and headers of request number `n` (counted
   * over the whole run of the scenario, check excluded).
   */
  perRequest?: (n: number) => { body?: string; headers?: Record<string, string> };
  connections: number;
  /**
   * Waits until the work that the scenario's `answered` 2xx answers so far set going after their answer is done (the
   * webhook deliveries of the deploys), so that none of it runs into the next scenario's measurement and its CPU
   * time is this scenario's; resolves to the seconds waited (the time it took to catch up after the load stopped).
   */
  drain?(answered: number): Promise<number>;
  /** One request, checked in full before any load; what it returns goes into the report. */
  // biome-ignore lint/suspicious/noConfusingVoidType: most checks only throw; those that measure return their figures.
  check(base: string): Promise<CheckInfo | void>;
}

export interface CheckInfo {
  /** Size of the checked response's body, and gzipped. */
  bytes?: number;
  gzipBytes?: number;
  /** What the check wrote: apps it created, or deployments it made. */
  created?: number;
}

async function request(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; headers: Headers; text: string; bytes: number }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) });
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, text: body.toString("utf8"), bytes: body.byteLength };
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

/** The answer of POST /apps for a new name: {app_id, app_name}. */
function expectCreated(what: string, created: any, name: string): void {
  if (typeof created.app_id !== "string" || !UUID.test(created.app_id) || created.app_name !== name)
    throw new ScenarioError(`${what}: answered ${JSON.stringify(created)}`);
}

/** What bench-diff's revision 2 changes: DIFF_CHANGES weights, `revision` and `url`. */
const DIFF_OPERATIONS = DIFF_CHANGES + 2;

/** GET /diff/configs of bench-diff's two revisions: 200, every change listed (not coarse), one per patch operation. */
function checkDiff(key: BenchKey, path: string) {
  return async (base: string): Promise<CheckInfo> => {
    const what = `GET ${path}`;
    const response = await request(`${base}${path}`, { headers: authorization(key) });
    const diff = expectJson(what, response);
    if (diff.coarse !== false || diff.patch?.length !== DIFF_OPERATIONS || diff.changes?.length !== DIFF_OPERATIONS)
      throw new ScenarioError(`${what}: expected ${DIFF_OPERATIONS} changes, got ${JSON.stringify(diff).slice(0, 300)}`);
    return { bytes: response.bytes, gzipBytes: gzipSync(Buffer.from(response.text)).byteLength };
  };
}

const getPath = (target: HistoryTarget) => `/apps/${target.appId}/revisions/${target.environment}`;

/** GET of an environment: 200, the record of the right app at its revision `count`, revisions 1..count in order. */
function checkRecord(key: BenchKey, target: HistoryTarget) {
  const { appId, environment, revisions: count } = target;
  const path = getPath(target);
  return async (base: string): Promise<CheckInfo> => {
    const what = `GET ${path}`;
    const response = await request(`${base}${path}`, { headers: authorization(key) });
    const record = expectJson(what, response);
    const revisions = record.revisions;
    if (
      record.name !== environment ||
      record.app_id !== appId ||
      record.revision !== count ||
      !Array.isArray(revisions) ||
      revisions.length !== count
    ) {
      throw new ScenarioError(
        `${what}: expected ${environment} of ${appId} at revision ${count} with ${count} revisions, got ${record.name} of ${record.app_id} at revision ${record.revision} with ${Array.isArray(revisions) ? revisions.length : "no"} revisions`,
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
    expectCreated(what, created, name);
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

/** Config as every configs/* route answers it: the refs, params and url checked against the bench data. */
function checkConfig(
  what: string,
  config: any,
  expected: { appId: string; revision: number; environment: string; environmentRevision: number },
): void {
  const problems = [
    config?.application_ref?.id === expected.appId ? "" : `application_ref ${JSON.stringify(config?.application_ref)}`,
    config?.variant_ref?.slug === "main" && config?.variant_ref?.version === expected.revision
      ? ""
      : `variant_ref ${JSON.stringify(config?.variant_ref)} (expected main, version ${expected.revision})`,
    config?.environment_ref?.slug === expected.environment && config?.environment_ref?.version === expected.environmentRevision
      ? ""
      : `environment_ref ${JSON.stringify(config?.environment_ref)} (expected ${expected.environment}, version ${expected.environmentRevision})`,
    JSON.stringify(config?.params) === JSON.stringify(paramsOf(expected.revision))
      ? ""
      : `params ${JSON.stringify(config?.params)}`,
    config?.url === urlOf(expected.revision) ? "" : `url ${JSON.stringify(config?.url)}`,
  ].filter(Boolean);
  if (problems.length > 0) throw new ScenarioError(`${what}: unexpected ${problems.join("; ")}`);
}

const fetchBody = (target: HistoryTarget) =>
  JSON.stringify({ environment_ref: { slug: target.environment }, application_ref: { id: target.appId } });

/** Config fetch by environment: 200, the config that environment's current revision deployed. */
function checkFetch(path: string, key: BenchKey, target: HistoryTarget) {
  return async (base: string): Promise<CheckInfo> => {
    const what = `POST ${path} ${fetchBody(target)}`;
    const response = await request(`${base}${path}`, { method: "POST", headers: postHeaders(key), body: fetchBody(target) });
    checkConfig(what, expectJson(what, response), {
      appId: target.appId,
      revision: target.revisions, // the bench data deploys revision r at environment revision r
      environment: target.environment,
      environmentRevision: target.revisions,
    });
    return { bytes: response.bytes };
  };
}

/** How many targeting keys the split pair sends, one to each of the read keys: as many cached answers as `fetch`'s. */
const TARGETING_KEYS = 128;
const targetingKey = (n: number) => ({ headers: { "Targeting-Key": `user-${n % TARGETING_KEYS}` } });

/**
 * The split pair's reads (docs/SPLITS.md §5): `target`'s environment with a Targeting-Key; `split`: a split runs there
 * (started by the check, on bench-get-20's staging: its revision 19 deployed, 20 the candidate at half the keys) and
 * every answer says its arm; else none runs and none does.
 */
function checkSplitRead(key: BenchKey, target: HistoryTarget, split: boolean) {
  return async (base: string): Promise<CheckInfo> => {
    const environment = `${base}/apps/${target.appId}/environments/${target.environment}`;
    const write = async (what: string, url: string, method: "POST" | "PUT", body: unknown) =>
      expectJson(what, await request(url, { method, headers: postHeaders(key), body: JSON.stringify(body) }));
    if (split && (await request(`${environment}/split`, { headers: authorization(key) })).status === 404) {
      const main = (version: number) => ({ variant_ref: { slug: "main", version } });
      await write("deploy to staging", `${base}/variants/configs/deploy`, "POST", {
        ...main(SMALL_HISTORY - 1),
        environment_ref: { slug: target.environment },
        application_ref: { id: target.appId },
      });
      await write("the split's start", `${environment}/split`, "PUT", { candidate: main(SMALL_HISTORY), weight: 5000 });
    }
    const what = `POST /variants/configs/fetch ${fetchBody(target)}, Targeting-Key`;
    const headers = { ...postHeaders(key), ...targetingKey(0).headers };
    const response = await request(`${base}/variants/configs/fetch`, { method: "POST", headers, body: fetchBody(target) });
    expectJson(what, response);
    const arm = response.headers.get("Config-Split");
    if (split ? !/^(base|candidate); bucket=\d+; weight=5000; reason=split$/.test(arm ?? "") : arm !== null)
      throw new ScenarioError(`${what}: Config-Split ${JSON.stringify(arm)}`);
    return { bytes: response.bytes };
  };
}

/** The header in which the service answers a D1 bookmark per shard the request reached (src/http/d1-session.ts). */
const BOOKMARK_HEADER = "x-d1-bookmark";

/**
 * A scenario's request sent with a key homed on another shard than the data it reads (`across`) checks as its twin
 * does with a key of the data's shard (`contentCheck`, run with `across`); then both keys, one request each, get the
 * same status and body, and the one across answers bookmarks of both shards, the same-shard one of its own only: the
 * key was checked on its home shard before the read ran on the data's (docs/SHARDING.md §3.2).
 */
function checkAcross(scenario: Scenario, same: BenchKey, across: BenchKey, contentCheck: (base: string) => Promise<CheckInfo>) {
  return async (base: string): Promise<CheckInfo> => {
    const info = await contentCheck(base);
    const what = `${scenario.method} ${scenario.path}`;
    const send = (key: BenchKey) =>
      request(`${base}${scenario.path}`, {
        method: scenario.method,
        headers: { ...scenario.headers, ...authorization(key) },
        body: scenario.body,
      });
    const [sameAnswer, acrossAnswer] = [await send(same), await send(across)];
    if (acrossAnswer.status !== sameAnswer.status || acrossAnswer.text !== sameAnswer.text)
      throw new ScenarioError(
        `${what}: with a key on the other shard, status ${acrossAnswer.status} and ${acrossAnswer.text.slice(0, 300)}; with one on the same shard, status ${sameAnswer.status} and ${sameAnswer.text.slice(0, 300)}`,
      );
    const shards = (answer: { headers: Headers }) =>
      (answer.headers.get(BOOKMARK_HEADER) ?? "")
        .split(",")
        .map((entry) => entry.split(":")[0])
        .join(", ");
    if (shards(sameAnswer) !== "SHARD_0" || shards(acrossAnswer) !== "SHARD_0, SHARD_1")
      throw new ScenarioError(
        `${what}: bookmarks of ${shards(sameAnswer) || "no shard"} with a key on the same shard, of ${shards(acrossAnswer) || "no shard"} with one on the other (expected SHARD_0; SHARD_0, SHARD_1)`,
      );
    return info;
  };
}

/**
 * A bare handler's scenario (test/bench/bare/): the route's check (`contentCheck`) on the bare handler's answer, then
 * the same request with the same key to the bare handler and to the service at `serviceBase`: the same status and the
 * same body, byte for byte.
 */
function checkBare(scenario: Scenario, serviceBase: string, contentCheck: Scenario["check"]) {
  // biome-ignore lint/suspicious/noConfusingVoidType: the route's check may return nothing (Scenario["check"]).
  return async (base: string): Promise<CheckInfo | void> => {
    const info = await contentCheck(base);
    const what = `${scenario.method} ${scenario.path}`;
    const send = (to: string) =>
      request(`${to}${scenario.path}`, {
        method: scenario.method,
        headers: { ...scenario.headers, ...authorization(scenario.keys[0]) },
        body: scenario.body,
      });
    const [bare, service] = [await send(base), await send(serviceBase)];
    if (bare.status !== service.status || bare.text !== service.text)
      throw new ScenarioError(
        `${what}: the bare handler answered status ${bare.status} and ${bare.text.slice(0, 300)}; the service, status ${service.status} and ${service.text.slice(0, 300)}`,
      );
    return info;
  };
}

/**
 * Today's SDK's start-up read (`ConfigManager.get_from_registry` by environment): what bench-get-20's production runs,
 * by the app's name in the key ("<app name>.revision").
 */
const retrieveBody = (target: HistoryTarget, appName: string) =>
  JSON.stringify({ resolve: true, environment_ref: { slug: target.environment }, key: `${appName}.revision` });

/** Retrieve by environment: 200, `main` at the revision that environment's current revision deployed (params, url). */
function checkRetrieve(key: BenchKey, target: HistoryTarget, appName: string) {
  return async (base: string): Promise<CheckInfo> => {
    const path = "/applications/revisions/retrieve";
    const what = `POST ${path} ${retrieveBody(target, appName)}`;
    const response = await request(`${base}${path}`, {
      method: "POST",
      headers: postHeaders(key),
      body: retrieveBody(target, appName),
    });
    const revision = expectJson(what, response).application_revision;
    // The bench data deploys revision r at environment revision r.
    const expected = {
      application_id: target.appId,
      application_variant_slug: "main",
      version: String(target.revisions),
      data: { parameters: paramsOf(target.revisions), url: urlOf(target.revisions) },
    };
    const found = {
      application_id: revision?.application_id,
      application_variant_slug: revision?.application_variant_slug,
      version: revision?.version,
      data: revision?.data,
    };
    if (JSON.stringify(found) !== JSON.stringify(expected))
      throw new ScenarioError(`${what}: answered ${JSON.stringify(found)}, expected ${JSON.stringify(expected)}`);
    return { bytes: response.bytes };
  };
}

/** The older SDK's start-up read (`get_config`): what the target environment runs, by the app's id (its base's). */
const getConfigPath = (target: HistoryTarget) =>
  `/configs?${new URLSearchParams({ base_id: target.appId, environment_name: target.environment })}`;

/**
 * The body of GET /configs: exactly {config_name, current_version, parameters}, of config `main` at variant
 * revision `revision` (what the environment runs) with the params `params`.
 */
function checkRegistryConfig(what: string, config: any, revision: number, params: Record<string, unknown>): void {
  const keys = config !== null && typeof config === "object" && !Array.isArray(config) ? Object.keys(config).sort() : [];
  const problems = [
    JSON.stringify(keys) === JSON.stringify(["config_name", "current_version", "parameters"])
      ? ""
      : `keys ${JSON.stringify(keys)} (expected config_name, current_version, parameters)`,
    config?.config_name === "main" ? "" : `config_name ${JSON.stringify(config?.config_name)} (expected main)`,
    config?.current_version === revision
      ? ""
      : `current_version ${JSON.stringify(config?.current_version)} (expected ${revision})`,
    JSON.stringify(config?.parameters) === JSON.stringify(params) ? "" : `parameters ${JSON.stringify(config?.parameters)}`,
  ].filter(Boolean);
  if (problems.length > 0) throw new ScenarioError(`${what}: unexpected ${problems.join("; ")}`);
}

/** GET /configs by environment: 200, `main` at the revision the environment's current revision deployed. */
function checkGetConfig(key: BenchKey, target: HistoryTarget) {
  return async (base: string): Promise<CheckInfo> => {
    const path = getConfigPath(target);
    const what = `GET ${path}`;
    const response = await request(`${base}${path}`, { headers: authorization(key) });
    // The bench data deploys revision r at environment revision r.
    checkRegistryConfig(what, expectJson(what, response), target.revisions, paramsOf(target.revisions));
    return { bytes: response.bytes };
  };
}

/** GET /organizations: the bench user's organizations (one per key pool), each owned by that user. */
function checkOrganizations(key: BenchKey, userId: string) {
  return async (base: string): Promise<CheckInfo> => {
    const what = "GET /organizations";
    const response = await request(`${base}/organizations`, { headers: authorization(key) });
    const organizations = expectJson(what, response);
    if (!Array.isArray(organizations) || organizations.length === 0)
      throw new ScenarioError(`${what}: expected a non-empty list: ${response.text.slice(0, 300)}`);
    for (const organization of organizations) {
      if (organization.owner !== userId || organization.role !== "owner" || !UUID.test(organization.id))
        throw new ScenarioError(`${what}: expected organizations owned by the bench user: ${JSON.stringify(organization)}`);
    }
    return { bytes: response.bytes };
  };
}

/** The older SDK's save (`save_config`) over the taken name `main`, with overwrite: params of the given number. */
const saveBody = (target: HistoryTarget, n: number) =>
  JSON.stringify({ base_id: target.appId, config_name: "main", parameters: paramsOf(n), overwrite: true });

/**
 * POST /configs with overwrite over `main`: 200 and `null`; then GET /configs by environment finds production
 * running `main`'s next revision with the params sent (the save committed it and deployed it in one batch).
 */
function checkSaveConfig(key: BenchKey, target: HistoryTarget) {
  return async (base: string): Promise<CheckInfo> => {
    const next = target.revisions + 1; // `main` has as many revisions as production has entries
    const what = `POST /configs ${saveBody(target, next)}`;
    const response = await request(`${base}/configs`, {
      method: "POST",
      headers: postHeaders(key),
      body: saveBody(target, next),
    });
    const saved = expectJson(what, response);
    if (saved !== null) throw new ScenarioError(`${what}: answered ${response.text.slice(0, 300)}, expected null`);
    const path = getConfigPath(target);
    const read = `${what}, then GET ${path}`;
    checkRegistryConfig(
      read,
      expectJson(read, await request(`${base}${path}`, { headers: authorization(key) })),
      next,
      paramsOf(next),
    );
    return { created: 1, bytes: response.bytes };
  };
}

/** What the save scenario left, in SQL: `main`'s revisions, production's revisions, and what production runs. */
export const savedSql = (target: HistoryTarget) => ({
  revisions: `(SELECT COUNT(*) FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id
                WHERE v.app_id = '${target.appId}' AND v.name = 'main')`,
  deploys: `(SELECT COUNT(*) FROM environment_revisions er JOIN deployments d ON d.id = er.deployment_id
              WHERE er.environment_id = '${target.environmentId}')`,
  environmentRevision: `(SELECT revision FROM environments WHERE id = '${target.environmentId}')`,
  runs: `(SELECT r.revision FROM environments e JOIN app_variant_revisions r ON r.id = e.deployed_app_variant_revision_id
           JOIN app_variants v ON v.id = r.variant_id WHERE e.id = '${target.environmentId}' AND v.name = 'main')`,
});

/** The config the commit scenario commits to, in the app of `GET production`: its check adds it. */
const COMMITTED_CONFIG = "bench-commit";

const commitBody = (target: HistoryTarget, revision: number) =>
  JSON.stringify({
    params: paramsOf(revision),
    url: urlOf(revision),
    variant_ref: { slug: COMMITTED_CONFIG },
    application_ref: { id: target.appId },
  });

/**
 * Config commit of the bench's params (numbers, a prompt) on top of the latest: the check adds the config, then
 * commits its revision 2, answered with the params and url as sent.
 */
function checkCommit(path: string, key: BenchKey, target: HistoryTarget) {
  return async (base: string): Promise<CheckInfo> => {
    const add = JSON.stringify({ variant_ref: { slug: COMMITTED_CONFIG }, application_ref: { id: target.appId } });
    expectJson(
      `POST /variants/configs/add ${add}`,
      await request(`${base}/variants/configs/add`, { method: "POST", headers: postHeaders(key), body: add }),
    );
    const what = `POST ${path} ${commitBody(target, 2)}`;
    const response = await request(`${base}${path}`, { method: "POST", headers: postHeaders(key), body: commitBody(target, 2) });
    const config = expectJson(what, response);
    if (
      config?.variant_ref?.version !== 2 ||
      JSON.stringify(config?.params) !== JSON.stringify(paramsOf(2)) ||
      config?.url !== urlOf(2)
    )
      throw new ScenarioError(`${what}: answered ${response.text.slice(0, 300)}`);
    return { created: 1, bytes: response.bytes };
  };
}

/** Revisions of the commit scenario's config, in SQL (for counting what the scenario wrote). */
export const committedRevisionsSql = (target: HistoryTarget) =>
  `(SELECT COUNT(*) FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id
     WHERE v.app_id = '${target.appId}' AND v.name = '${COMMITTED_CONFIG}')`;

const deployBody = (target: HistoryTarget) =>
  JSON.stringify({
    variant_ref: { slug: "main" },
    environment_ref: { slug: target.environment },
    application_ref: { id: target.appId },
  });

/**
 * A deploy of `main`'s latest revision: 200, the config now deployed at the environment's next revision, and the
 * environment's new ETag. `variantRevisions`: how many revisions `main` has.
 */
function checkDeploy(path: string, key: BenchKey, target: HistoryTarget, variantRevisions: number) {
  return async (base: string): Promise<CheckInfo> => {
    const what = `POST ${path} ${deployBody(target)}`;
    const response = await request(`${base}${path}`, { method: "POST", headers: postHeaders(key), body: deployBody(target) });
    const next = target.revisions + 1;
    checkConfig(what, expectJson(what, response), {
      appId: target.appId,
      revision: variantRevisions,
      environment: target.environment,
      environmentRevision: next,
    });
    const etag = response.headers.get("ETag");
    if (etag !== `"${target.environmentId}.${next}"`)
      throw new ScenarioError(`${what}: ETag ${etag}, expected "${target.environmentId}.${next}"`);
    return { created: 1, bytes: response.bytes };
  };
}

/**
 * POST /apps with an Idempotency-Key: 200 {app_id, app_name}; the same request again replays that answer
 * (`Idempotent-Replayed: true`, the same app), so the key is really claimed.
 */
function checkKeyedCreate(path: string, key: BenchKey, idempotencyKey: string, name: string) {
  return async (base: string): Promise<CheckInfo> => {
    const what = `POST ${path} {"app_name": "${name}"} with Idempotency-Key ${idempotencyKey}`;
    const send = () =>
      request(`${base}${path}`, {
        method: "POST",
        headers: { ...postHeaders(key), "Idempotency-Key": idempotencyKey },
        body: JSON.stringify({ app_name: name }),
      });
    const created = expectJson(what, await send());
    expectCreated(what, created, name);
    const again = await send();
    const replayed = expectJson(`${what}, again`, again);
    if (replayed.app_id !== created.app_id || again.headers.get("Idempotent-Replayed") !== "true")
      throw new ScenarioError(
        `${what}, sent again: answered ${JSON.stringify(replayed)} (Idempotent-Replayed: ${again.headers.get("Idempotent-Replayed")}), expected a replay of ${created.app_id}`,
      );
    return { created: 1 };
  };
}

const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));

/**
 * Waits until the receiver has got `wanted` deliveries (at most `timeoutMs`); the seconds waited. Past the timeout
 * it gives up without failing: the report compares the counts at the end.
 */
export async function drainDeliveries(receiver: Receiver, wanted: number, timeoutMs = 60_000): Promise<number> {
  const start = performance.now();
  while ((await receiver.counts()).deliveries < wanted && performance.now() - start < timeoutMs) await sleep(20);
  return (performance.now() - start) / 1000;
}

/**
 * The deploy into the hooked organization: first its WEBHOOKS webhooks, subscribed through POST /webhooks to
 * `environment.deployed` at the receiver (their creation's own events are of another type: nothing is delivered for
 * them), then a deploy checked as `checkDeploy` does, whose event the receiver must get from each webhook, signed,
 * within 15 s; unless the code under test has no queue consumer (`delivers` false: a copy made to measure the
 * request's own cost), where the deliveries stay pending.
 */
function checkHookedDeploy(
  path: string,
  key: BenchKey,
  target: HistoryTarget,
  receiver: Receiver | undefined,
  delivers: boolean,
) {
  const deploy = checkDeploy(path, key, target, SMALL_HISTORY);
  return async (base: string): Promise<CheckInfo> => {
    if (!receiver) throw new ScenarioError("no webhook receiver was started (test/bench/receiver.ts)");
    for (let n = 1; n <= WEBHOOKS; n++) {
      const body = JSON.stringify({
        url: `${receiver.url}/hooks/${n}`,
        events: ["environment.deployed"],
        description: `bench receiver ${n}`,
      });
      const what = `POST /webhooks ${body}`;
      const hook = expectJson(what, await request(`${base}/webhooks`, { method: "POST", headers: postHeaders(key), body }));
      if (!UUID.test(String(hook?.id)) || typeof hook?.secret !== "string" || hook?.enabled !== true)
        throw new ScenarioError(`${what}: answered ${JSON.stringify(hook).slice(0, 300)}`);
    }
    const before = await receiver.counts();
    const info = await deploy(base);
    if (!delivers) return info;
    const waited = await drainDeliveries(receiver, before.deliveries + WEBHOOKS, 15_000);
    const after = await receiver.counts();
    if (after.deliveries < before.deliveries + WEBHOOKS || after.events !== before.events + 1)
      throw new ScenarioError(
        `the deploy's event reached the receiver ${after.deliveries - before.deliveries} time(s) of ${WEBHOOKS} within ${waited.toFixed(1)} s ` +
          `(${after.events - before.events} distinct events): is wrangler dev's queue consumer running, and WEBHOOKS_ALLOW_LOCAL true?`,
      );
    if (after.signed !== after.requests)
      throw new ScenarioError(`${after.requests - after.signed} of ${after.requests} webhook requests came without a signature`);
    return info;
  };
}

/** GET /events, a page from `cursor` (the id of event `after`; null: the first page). */
const eventsPath = (after: number | null) =>
  `/events?${new URLSearchParams({ limit: String(EVENTS_PAGE), ...(after === null ? {} : { cursor: auditEventId(after) }) })}`;

/**
 * A page of the audit log: EVENTS_PAGE events of the audit organization, newest first, from the one just older than
 * event `after` (null: from the newest), and the cursor of the next page.
 */
function checkEvents(key: BenchKey, organizationId: string, after: number | null) {
  return async (base: string): Promise<CheckInfo> => {
    const path = eventsPath(after);
    const what = `GET ${path}`;
    const response = await request(`${base}${path}`, { headers: authorization(key) });
    const page = expectJson(what, response);
    const newest = (after ?? AUDIT_EVENTS + 1) - 1;
    const expected = Array.from({ length: EVENTS_PAGE }, (_, index) => auditEventId(newest - index));
    const events: any[] = Array.isArray(page?.events) ? page.events : [];
    const ids = events.map((event) => event?.id);
    if (JSON.stringify(ids) !== JSON.stringify(expected) || page.next_cursor !== expected.at(-1))
      throw new ScenarioError(
        `${what}: expected events ${expected[0]} to ${expected.at(-1)} (next_cursor the last), got ${ids.length} from ${ids[0]} to ${ids.at(-1)}, next_cursor ${page?.next_cursor}`,
      );
    const stray = events.find(
      (event) => event.organization_id !== organizationId || typeof event.data !== "object" || typeof event.type !== "string",
    );
    if (stray) throw new ScenarioError(`${what}: unexpected event ${JSON.stringify(stray).slice(0, 300)}`);
    return { bytes: response.bytes, gzipBytes: gzipSync(Buffer.from(response.text)).byteLength };
  };
}

/** The scenarios of every run. */
export type CoreScenarioId =
  | "static"
  | "select1"
  | "get"
  | "getAcross"
  | "fetch"
  | "fetchAcross"
  | "fetchFresh"
  | "fetchOff"
  | "fetchMany"
  | "bareFetchHit"
  | "fetchSplit"
  | "fetchUnsplit"
  | "fetchSplitFresh"
  | "fetchUnsplitFresh"
  | "retrieve"
  | "bareGet"
  | "bareFetch"
  | "bareRetrieve"
  | "getConfig"
  | "organizations"
  | "commit"
  | "saveConfig"
  | "post"
  | "postKeyed"
  | "deploy"
  | "deployLarge"
  | "getSmall1"
  | "getLarge1"
  | "postEmpty"
  | "postFull"
  | "deployQuiet"
  | "deployHooks"
  | "eventsFirst"
  | "eventsDeep"
  | "diff100k";
/**
 * The reads held against the least possible read (BENCHMARKS.md round 15): each with the scenario of its bare handler
 * (test/bench/bare/), which sends the same requests with the same keys.
 */
export const BARE_PAIRS = [
  { read: "get", bare: "bareGet", label: "GET of a record" },
  { read: "fetch", bare: "bareFetch", label: "config fetch by environment" },
  { read: "retrieve", bare: "bareRetrieve", label: "retrieve by environment (today's SDK)" },
] as const;

/** The scenarios `--base` runs on the other tree too, each right after its twin. */
export const BASE_SCENARIOS = ["get", "fetch", "post", "deployQuiet"] as const;
export type BaseScenarioId = `base:${(typeof BASE_SCENARIOS)[number]}`;

/**
 * A scenario is a core one, the GET against a copy of the service with another request log (`--log-variants`), or a
 * core one against the service of another tree (`--base`).
 */
export type ScenarioId = CoreScenarioId | `log:${string}` | BaseScenarioId;

/**
 * Every scenario, in the order they run; `connections` concurrent ones for the throughput scenarios. `runTag`
 * makes this run's app names and Idempotency-Keys unique. `webhooks.receiver`: where the hooked organization's
 * webhooks point (without it, "deploy, three webhooks" fails its check); `webhooks.delivers`: whether the service
 * has a queue consumer (wrangler.toml), i.e. whether deliveries are to be waited for. `withBase`: BASE_SCENARIOS run
 * on the base's server too, each right after its twin, so that before and after alternate within every round.
 * `serviceBase`: the service's URL, whose answers the bare handlers' are checked against.
 */
export function benchScenarios(
  data: BenchData,
  connections: number,
  runTag: string,
  logVariants: LogVariant[] = [],
  webhooks: { receiver?: Receiver; delivers: boolean } = { delivers: true },
  withBase = false,
  serviceBase = "",
): Record<CoreScenarioId | BaseScenarioId, Scenario> & Record<`log:${string}`, Scenario> {
  const { receiver, delivers } = webhooks;
  const diffPath = `/diff/configs?from=${data.diff.from}&to=${data.diff.to}`;
  const postBody = '{"app_name": "bench-[<id>]"}';
  const { get: reads, deploy: deploys, save } = data;
  // Every scenario, floors included, sends an Authorization header taken in turn from a pool of keys (the floor
  // ignores it): the same request shape and the same load-generator work per request everywhere.
  const k = data.keys;
  const json = { Accept: "application/json" };
  const post = { ...json, "Content-Type": "application/json" };
  const getScenario = (label: string, server: ServerName): Scenario => ({
    label,
    server,
    method: "GET",
    path: getPath(reads.small),
    headers: json,
    keys: k.read,
    connections,
    check: checkRecord(k.read[0], reads.small),
  });
  const logScenarios = Object.fromEntries(
    logVariants.map((variant) => [
      `log:${variant.name}`,
      getScenario(`GET production, ${SMALL_HISTORY} revisions, log: ${variant.name}`, `log:${variant.name}`),
    ]),
  ) as Record<`log:${string}`, Scenario>;
  // The short-history deploys take turns on DEPLOY_APPS environments, so that none of their histories grows long.
  const smallDeployBodies = deploys.small.map(deployBody);
  // The same, into the quiet organization's apps and into the hooked one's.
  const quietBodies = data.webhooks.quiet.map(deployBody);
  const hookedBodies = data.webhooks.hooked.map(deployBody);
  // The scenario, and with --base the same against the base's service right after it.
  const twin = <Id extends (typeof BASE_SCENARIOS)[number]>(id: Id, scenario: Scenario) =>
    ({
      [id]: scenario,
      ...(withBase ? { [`base:${id}`]: { ...scenario, label: `${scenario.label}, base`, server: "base" } } : {}),
    }) as Record<Id | `base:${Id}`, Scenario>; // the base's only with --base, as --only leaves some out
  // The GET of a record and the config fetch, and each again with a key of the across organization (homed on SHARD_1,
  // the data on SHARD_0): the key checked on its home shard, then the read run with the key vouched for.
  const getRecord = getScenario(`GET production, ${SMALL_HISTORY} revisions`, "service");
  const fetchConfig: Scenario = {
    label: "POST configs/fetch by environment",
    server: "service",
    method: "POST",
    path: "/variants/configs/fetch",
    headers: post,
    keys: k.read,
    body: fetchBody(reads.small),
    connections,
    check: checkFetch("/variants/configs/fetch", k.read[0], reads.small),
  };
  const across = (scenario: Scenario, check: (key: BenchKey) => (base: string) => Promise<CheckInfo>): Scenario => ({
    ...scenario,
    label: `${scenario.label}, key on the other shard`,
    keys: k.across,
    check: checkAcross(scenario, k.read[0], k.across[0], check(k.across[0])),
  });
  const retrieve: Scenario = {
    label: "POST applications/revisions/retrieve by environment (today's SDK)",
    server: "service",
    method: "POST",
    path: "/applications/revisions/retrieve",
    headers: post,
    keys: k.read,
    body: retrieveBody(reads.small, `bench-get-${SMALL_HISTORY}`),
    connections,
    check: checkRetrieve(k.read[0], reads.small, `bench-get-${SMALL_HISTORY}`),
  };
  // Each read again against its bare handler: the same request, keys and route's check, and its answer the service's.
  const pairedReads = { get: getRecord, fetch: fetchConfig, retrieve };
  const bareScenarios = Object.fromEntries(
    BARE_PAIRS.map(({ read, bare }) => {
      const scenario = pairedReads[read];
      const bareScenario: Scenario = { ...scenario, label: `bare: ${scenario.label}`, server: "bare" };
      return [bare, { ...bareScenario, check: checkBare(bareScenario, serviceBase, scenario.check) }];
    }),
  ) as Record<(typeof BARE_PAIRS)[number]["bare"], Scenario>;
  // The cache (docs/EDGE-DELIVERY.md): the fetch above is served from memory in the steady state (each of the 128 keys'
  // answers confirmed once per FRESHNESS_BOUND_SECONDS); here the same read asking for fresh every time, the service
  // with the cache off, the hit's own work in the bare handler, and many keys and environments, more answers than an
  // isolate keeps: each request the next key, each 128 the next of the 256 short-history apps' staging.
  const manyBodies = deploys.small.map((target) => fetchBody(target));
  const cacheScenarios = {
    fetchFresh: {
      ...fetchConfig,
      label: "POST configs/fetch, Cache-Control: no-cache (a confirmation each)",
      headers: { ...post, "Cache-Control": "no-cache" },
    },
    fetchOff: { ...fetchConfig, label: "POST configs/fetch, cache off (FRESHNESS_BOUND_SECONDS=0)", server: "uncached" },
    fetchMany: {
      ...fetchConfig,
      label: `POST configs/fetch, ${k.read.length} keys x ${DEPLOY_APPS} environments`,
      perRequest: (n: number) => ({ body: manyBodies[Math.floor(n / k.read.length) % DEPLOY_APPS] }),
    },
    bareFetchHit: {
      ...fetchConfig,
      label: "bare: a hit's own work (hash, rate limit, lookup, answer)",
      server: "bare",
      headers: { ...post, "x-bare-hit": "1" },
      check: checkBare({ ...fetchConfig, headers: { ...post, "x-bare-hit": "1" } }, serviceBase, fetchConfig.check),
    },
  } satisfies Record<string, Scenario>;
  // A read of an environment a split runs in against the same read of one without (docs/SPLITS.md §5: CPU within 3%),
  // each request the next read key and its own targeting key: served from memory in the steady state (an answer is
  // kept per targeting key, its arm chosen when it was confirmed), and asking fresh each time (the read's statement
  // with the split's arms, the bucket computed).
  const staging = { ...reads.small, environment: "staging" as const };
  const splitRead: Scenario = {
    ...fetchConfig,
    label: "POST configs/fetch, a split running, Targeting-Key",
    body: fetchBody(staging),
    perRequest: targetingKey,
    check: checkSplitRead(k.read[0], staging, true),
  };
  const unsplitRead: Scenario = {
    ...fetchConfig,
    label: "POST configs/fetch, no split, Targeting-Key",
    perRequest: targetingKey,
    check: checkSplitRead(k.read[0], reads.small, false),
  };
  const fresh = (scenario: Scenario): Scenario => ({
    ...scenario,
    label: `${scenario.label}, no-cache`,
    headers: { ...post, "Cache-Control": "no-cache" },
  });
  const splitScenarios = {
    fetchSplit: splitRead,
    fetchUnsplit: unsplitRead,
    fetchSplitFresh: fresh(splitRead),
    fetchUnsplitFresh: fresh(unsplitRead),
  } satisfies Record<string, Scenario>;
  const keyedName = (n: number | string) => `bench-key-${runTag}-${n}`;
  const keyedKey = (n: number | string) => `bench-${runTag}-${n}`;
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
    ...twin("get", getRecord),
    getAcross: across(getRecord, (key) => checkRecord(key, reads.small)),
    ...logScenarios,
    ...twin("fetch", fetchConfig),
    fetchAcross: across(fetchConfig, (key) => checkFetch(fetchConfig.path, key, reads.small)),
    ...cacheScenarios,
    ...splitScenarios,
    retrieve,
    ...bareScenarios,
    getConfig: {
      label: "GET /configs by environment (older SDK)",
      server: "service",
      method: "GET",
      path: getConfigPath(reads.small),
      headers: json,
      keys: k.read,
      connections,
      check: checkGetConfig(k.read[0], reads.small),
    },
    organizations: {
      label: "GET /organizations (accounts: every organization with its workspaces and members)",
      server: "service",
      method: "GET",
      path: "/organizations",
      headers: json,
      keys: k.read,
      connections,
      check: checkOrganizations(k.read[0], data.userId),
    },
    commit: {
      label: "POST configs/commit, on top of the latest",
      server: "service",
      method: "POST",
      path: "/variants/configs/commit",
      headers: post,
      keys: k.read,
      perRequest: (n) => ({ body: commitBody(reads.small, n + 3) }),
      connections,
      check: checkCommit("/variants/configs/commit", k.read[0], reads.small),
    },
    saveConfig: {
      label: "POST /configs, overwrite: commit and deploy",
      server: "service",
      method: "POST",
      path: "/configs",
      headers: post,
      keys: k.read,
      // The check saved params of SMALL_HISTORY + 1; the params differ from one request to the next.
      perRequest: (n) => ({ body: saveBody(save, SMALL_HISTORY + 2 + n) }),
      connections,
      check: checkSaveConfig(k.read[0], save),
    },
    ...twin("post", {
      label: "POST /apps, new app_name each",
      server: "service",
      method: "POST",
      path: "/apps",
      headers: post,
      keys: k.post,
      body: postBody,
      connections,
      check: checkCreate("/apps", k.post[0], "post"),
    }),
    postKeyed: {
      label: "POST /apps with an Idempotency-Key",
      server: "service",
      method: "POST",
      path: "/apps",
      headers: post,
      keys: k.keyed,
      // A new key and a new name every request: each is a first request, which claims its key.
      perRequest: (n) => ({
        headers: { "Idempotency-Key": keyedKey(n) },
        body: JSON.stringify({ app_name: keyedName(n) }),
      }),
      connections,
      check: checkKeyedCreate("/apps", k.keyed[0], keyedKey("check"), keyedName("check")),
    },
    deploy: {
      label: `POST configs/deploy, ${SMALL_HISTORY}-revision histories`,
      server: "service",
      method: "POST",
      path: "/variants/configs/deploy",
      headers: post,
      keys: k.read,
      perRequest: (n) => ({ body: smallDeployBodies[n % DEPLOY_APPS] }),
      connections,
      // The check deploys into the last of them, the load starts with the first.
      check: checkDeploy("/variants/configs/deploy", k.read[0], deploys.small[DEPLOY_APPS - 1], SMALL_HISTORY),
    },
    deployLarge: {
      label: `POST configs/deploy, ${thousands(LARGE_HISTORY)}-revision history`,
      server: "service",
      method: "POST",
      path: "/variants/configs/deploy",
      headers: post,
      keys: k.read,
      body: deployBody(deploys.large),
      connections,
      check: checkDeploy("/variants/configs/deploy", k.read[0], deploys.large, LARGE_HISTORY),
    },
    getSmall1: {
      ...getScenario(`GET production, ${SMALL_HISTORY} revisions, 1 conn.`, "service"),
      connections: 1,
    },
    getLarge1: {
      label: `GET production, ${thousands(LARGE_HISTORY)} revisions, 1 conn.`,
      server: "service",
      method: "GET",
      path: getPath(reads.large),
      headers: json,
      keys: k.read,
      connections: 1,
      check: checkRecord(k.read[0], reads.large),
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
    ...twin("deployQuiet", {
      label: `POST configs/deploy, no webhooks`,
      server: "service",
      method: "POST",
      path: "/variants/configs/deploy",
      headers: post,
      keys: k.quiet,
      perRequest: (n) => ({ body: quietBodies[n % DEPLOY_APPS] }),
      connections,
      check: checkDeploy("/variants/configs/deploy", k.quiet[0], data.webhooks.quiet[DEPLOY_APPS - 1], SMALL_HISTORY),
    }),
    deployHooks: {
      label: `POST configs/deploy, ${WEBHOOKS} webhooks`,
      server: "service",
      method: "POST",
      path: "/variants/configs/deploy",
      headers: post,
      keys: k.hooked,
      perRequest: (n) => ({ body: hookedBodies[n % DEPLOY_APPS] }),
      connections,
      drain: receiver && delivers ? (answered) => drainDeliveries(receiver, WEBHOOKS * answered) : undefined,
      check: checkHookedDeploy(
        "/variants/configs/deploy",
        k.hooked[0],
        data.webhooks.hooked[DEPLOY_APPS - 1],
        receiver,
        delivers,
      ),
    },
    eventsFirst: {
      label: `GET /events, first page (${EVENTS_PAGE} of ${thousands(AUDIT_EVENTS)})`,
      server: "service",
      method: "GET",
      path: eventsPath(null),
      headers: json,
      keys: k.audit,
      connections,
      check: checkEvents(k.audit[0], data.audit.organizationId, null),
    },
    eventsDeep: {
      label: `GET /events, deep page (after the ${thousands(AUDIT_DEEP)}th newest)`,
      server: "service",
      method: "GET",
      path: eventsPath(AUDIT_EVENTS - AUDIT_DEEP + 1),
      headers: json,
      keys: k.audit,
      connections,
      check: checkEvents(k.audit[0], data.audit.organizationId, AUDIT_EVENTS - AUDIT_DEEP + 1),
    },
    diff100k: {
      label: `GET /diff/configs, two ~110 KB revisions, ${DIFF_OPERATIONS} changes`,
      server: "service",
      method: "GET",
      path: diffPath,
      headers: json,
      keys: k.read,
      connections,
      check: checkDiff(k.read[0], diffPath),
    },
  };
}
