import { beforeAll, describe, expect, it } from "vitest";
import { apps, deployments } from "./client";
import { type Account, issueKey, send } from "./fixtures";
import { expectKeptRow, quoted, readIdempotencyKey } from "./fuzz-posts";
import { BAD_IDEMPOTENCY_KEY, MOVED_ON } from "./fuzz-support";
import { databaseProblems, type ExpectedEvent, type RowCounts } from "./harness";
import {
  asName,
  changesBy,
  environmentName,
  expectCleanError,
  expectNoChange,
  expectRefused,
  expectWrite,
  injectionTarget,
  issueAt,
  PAYLOADS,
  quietRequestLog,
  refExpectation,
  uuidAt,
} from "./injection-payloads";

/*
 * SQL injection into the deployments (POST /variants/configs/deploy, /environments/deploy,
 * /configs/deployment/{id}/revert) and into the two headers of the writes: every body field and ref part, the path
 * parameter, Idempotency-Key on every POST, If-Match on the deploy routes. Refused requests change nothing (every row
 * of every table compared); accepted ones change exactly what the same request with an ordinary value changes, a
 * payload key is kept verbatim and compared as an opaque string; no answer carries SQL, internals or the payload.
 */

let owner: Account;
/** The owner's key in the team's project: app slugs are looked up there, where no app is named like a payload. */
let key: string;
let teamProjectId: string;
let appId: string;
let variantId: string;
/** Two revisions of production, to revert to. */
let revisions: string[];

quietRequestLog();

beforeAll(async () => {
  const target = await injectionTarget(2);
  ({ owner, key, appId, variantId, revisions } = target);
  teamProjectId = target.team.projectId;
});

const ENVIRONMENT_NOT_FOUND = "App environment not found";
/** Main's latest revision to an environment of the target app, by name, with `refs` over it. */
const deployMain = (refs: object = {}) => ({
  application_ref: { id: appId },
  variant_ref: { slug: "main" },
  environment_ref: { slug: "staging" },
  ...refs,
});
const revertPath = (id: string) => `/configs/deployment/${encodeURIComponent(id)}/revert`;
const recordETag = async (environment: string) => (await apps.revisions({ key }, appId, environment)).headers.get("ETag")!;
/** A POST as `apiKey`'s holder with these headers (Idempotency-Key, If-Match). */
const postWith = (headers: Record<string, string>, { path, body }: { path: string; body?: unknown }, apiKey = key) =>
  send("POST", path, { key: apiKey, body, headers });

/** Whether a header can carry the payload at all: fetch refuses a NUL (or a line break) in a header's value. */
const sendable = (payload: string) => !/[\0\r\n]/.test(payload);

describe("SQL in the deployments' bodies and path", () => {
  type Case = [string, string, (payload: string) => Promise<Response>, (payload: string) => [number, unknown]];
  /** What a payload in a ref part of a deploy finds: an id or a version is refused, a slug finds nothing. */
  const refCase = (field: string, body: (payload: string) => object): Case => [
    "POST /variants/configs/deploy",
    field,
    (p) => deployments.deployConfig({ key }, body(p)),
    refExpectation(field, ENVIRONMENT_NOT_FOUND),
  ];
  const cases: Case[] = [
    refCase("application_ref.id", (p) => deployMain({ application_ref: { id: p } })),
    refCase("application_ref.slug", (p) => deployMain({ application_ref: { slug: p } })),
    refCase("application_ref.version", (p) => deployMain({ application_ref: { id: appId, version: p } })),
    refCase("variant_ref.id", (p) => deployMain({ application_ref: undefined, variant_ref: { id: p } })),
    refCase("variant_ref.slug", (p) => deployMain({ variant_ref: { slug: p } })),
    refCase("variant_ref.version", (p) => deployMain({ variant_ref: { slug: "main", version: p } })),
    refCase("environment_ref.id", (p) => deployMain({ environment_ref: { id: p } })),
    refCase("environment_ref.slug", (p) => deployMain({ environment_ref: { slug: p } })),
    refCase("environment_ref.version", (p) => deployMain({ environment_ref: { slug: "staging", version: p } })),
    [
      "POST /environments/deploy",
      "environment_name",
      (p) => deployments.deployEnvironment({ key }, { environment_name: p, variant_id: variantId }),
      asName(["body", "environment_name"], 404, ENVIRONMENT_NOT_FOUND, environmentName),
    ],
    [
      "POST /environments/deploy",
      "variant_id",
      (p) => deployments.deployEnvironment({ key }, { environment_name: "staging", variant_id: p }),
      uuidAt(["body", "variant_id"]),
    ],
    [
      "POST /configs/deployment/{id}/revert",
      "deployment_revision_id",
      (p) => deployments.revert({ key }, p),
      uuidAt(["path", "deployment_revision_id"]),
    ],
    [
      "POST /configs/deployment/{id}/revert",
      "a real id followed by the payload",
      (p) => deployments.revert({ key }, `${revisions[0]}${p}`),
      uuidAt(["path", "deployment_revision_id"]),
    ],
  ];

  it.each(cases)("%s, %s: every payload finds nothing or is refused, and nothing changes", async (_, __, request, expected) => {
    for (const payload of PAYLOADS) await expectRefused(payload, () => request(payload), ...expected(payload));
  });
});

/**
 * A POST that takes an Idempotency-Key, a request of it (`n` makes each one another), and the rows a 200 changes
 * besides its event (none for a read).
 */
interface Write {
  label: string;
  request: (n: number) => { path: string; body?: unknown };
  /** A write, whose 200 is kept; a read (configs/fetch) keeps nothing. */
  keeps: boolean;
  rows: RowCounts;
  event?: (n: number) => ExpectedEvent;
}

/** An event of the target app, made with the owner's key; `data` beside the app's id. */
const appEvent = (type: string, data: Record<string, unknown>): ExpectedEvent => ({
  type,
  project_id: teamProjectId,
  app_id: appId,
  actor_user_id: owner.userId,
  data: { app_id: appId, ...data },
});
/** The event of a deployment to `environment` (a revert: to `revertedTo`). */
const deploymentEvent = (environment: string, current: Record<string, unknown>, revertedTo?: string) =>
  revertedTo
    ? appEvent("environment.reverted", { environment, reverted_to_revision_id: revertedTo })
    : appEvent("environment.deployed", { environment, current: expect.objectContaining(current) });

const DEPLOYMENT_ROWS: RowCounts = { deployments: [1, 0], environment_revisions: [1, 0], environments: [1, 1] };
const WRITES: Write[] = [
  {
    label: "POST /apps",
    request: (n) => ({ path: "/apps", body: { app_name: `keyed ${n}` } }),
    keeps: true,
    rows: { apps: [1, 0], environments: [3, 0] },
    event: (n) => ({
      type: "app.created",
      project_id: teamProjectId,
      actor_user_id: owner.userId,
      data: { app_name: `keyed ${n}` },
    }),
  },
  {
    label: "POST /variants/configs/add",
    request: (n) => ({
      path: "/variants/configs/add",
      body: { variant_ref: { slug: `keyed ${n}` }, application_ref: { id: appId } },
    }),
    keeps: true,
    rows: { app_variants: [1, 0], app_variant_revisions: [1, 0] },
    event: (n) => appEvent("config.added", { config_name: `keyed ${n}`, revision: 1 }),
  },
  {
    label: "POST /variants/configs/commit",
    request: (n) => ({ path: "/variants/configs/commit", body: { ...deployMain(), environment_ref: undefined, params: { n } } }),
    keeps: true,
    rows: { app_variant_revisions: [1, 0] },
    event: () => appEvent("config.committed", { config_name: "main" }),
  },
  {
    label: "POST /variants/configs/fork",
    request: (n) => ({ path: "/variants/configs/fork", body: { ...deployMain(), environment_ref: undefined, n } }),
    keeps: true,
    rows: { app_variants: [1, 0], app_variant_revisions: [1, 0] },
    event: () => appEvent("config.forked", { revision: 1, source_config_name: "main" }),
  },
  {
    label: "POST /variants/configs/fetch",
    request: (n) => ({ path: "/variants/configs/fetch", body: { ...deployMain(), environment_ref: undefined, n } }),
    keeps: false,
    rows: {},
  },
  {
    label: "POST /variants/configs/deploy",
    request: (n) => ({ path: "/variants/configs/deploy", body: { ...deployMain(), n } }),
    keeps: true,
    rows: DEPLOYMENT_ROWS,
    event: () => deploymentEvent("staging", { config_name: "main" }),
  },
  {
    label: "POST /environments/deploy",
    request: (n) => ({ path: "/environments/deploy", body: { environment_name: "development", variant_id: variantId, n } }),
    keeps: true,
    rows: DEPLOYMENT_ROWS,
    event: () => deploymentEvent("development", { variant_id: variantId }),
  },
  {
    label: "POST /configs/deployment/{id}/revert",
    request: (n) => ({ path: revertPath(revisions[n % 2]) }),
    keeps: true,
    rows: DEPLOYMENT_ROWS,
    event: (n) => deploymentEvent("production", {}, revisions[n % 2]),
  },
];

/** Nothing of the payload in an answer's body or headers (a key never travels back). */
async function expectNotEchoed(response: Response, payload: string) {
  const text = `${[...response.headers.values()].join("\n")}\n${await response.clone().text()}`;
  if (payload.length >= 3) expect(text).not.toContain(payload);
}

describe("SQL in Idempotency-Key, on every POST", () => {
  it.each(WRITES.map((write, i) => [write.label, write, i] as const))(
    "%s: every payload is a key of its own, kept verbatim, replayed for its retry, and a 422 for another request",
    async (_, { request, keeps, rows, event }, route) => {
      // A key of its own for each route: a payload key used on one route would be a 422 on the next.
      const apiKey = await issueKey(owner.userId, teamProjectId);
      for (const [n, payload] of PAYLOADS.entries()) {
        if (!sendable(payload)) {
          // A NUL never reaches the service: the client cannot even make the request.
          await expect(postWith({ "Idempotency-Key": payload }, request(n), apiKey)).rejects.toThrow(TypeError);
          continue;
        }
        const { result: first, changed } = await changesBy(() => postWith({ "Idempotency-Key": payload }, request(n), apiKey));
        const reading = readIdempotencyKey(payload);
        const refused =
          first.status === 400 && BAD_IDEMPOTENCY_KEY.test(((await first.clone().json()) as { detail: string }).detail);
        if (reading.kind === "invalid" || (reading.kind === "bare or invalid" && refused)) {
          // Not printable ASCII (the payload's UTF-8 bytes travel): a 400 before anything is written.
          expect(first.status, JSON.stringify(payload)).toBe(400);
          expect((await expectCleanError(first, payload)).detail).toMatch(BAD_IDEMPOTENCY_KEY);
          expect(changed).toEqual({});
          continue;
        }
        if (reading.kind === "none") throw new Error("unreachable");
        expect(first.status, JSON.stringify(payload)).toBe(200);
        expect(first.headers.get("Idempotent-Replayed")).toBeNull();
        await expectNotEchoed(first, payload);
        expectWrite(changed, rows, ...(event ? [event(n)] : []));
        if (keeps) await expectKeptRow(changed, apiKey, reading.key);
        else expect(changed).toEqual({});
        // Every other payload (alternating from route to route), and every key with a quote or a backslash: the retry,
        // with the key as sent or as a quoted string (the same key), gets the first answer and writes nothing.
        const escapes = /["\\]/.test(reading.key);
        if ((n + route) % 2 === 0 || escapes) {
          const again = (n + route) % 4 === 0 || escapes ? quoted(reading.key) : payload;
          const retry = await expectNoChange(() => postWith({ "Idempotency-Key": again }, request(n), apiKey));
          expect({ status: retry.status, body: await retry.json() }).toEqual({ status: 200, body: await first.json() });
          expect(retry.headers.get("Idempotent-Replayed")).toBe(keeps ? "true" : null);
        }
        // The others: the key for another request (another body, or for a revert another path) is a 422.
        if (!keeps || (n + route) % 2 === 0) continue;
        const other = request(n + PAYLOADS.length + 1);
        await expectRefused(
          payload,
          () => postWith({ "Idempotency-Key": payload }, other, apiKey),
          422,
          issueAt(["header", "Idempotency-Key"]),
        );
      }
    },
  );

  it("keeps a payload key per API key: another key's holder uses it for a request of their own", async () => {
    const { request, rows, event } = WRITES.find((write) => write.label === "POST /environments/deploy")!;
    // The requests the previous test made with these keys, made again with the owner's other API key.
    for (const [n, payload] of PAYLOADS.entries()) {
      const reading = readIdempotencyKey(payload);
      if (reading.kind !== "valid") continue;
      const { result, changed } = await changesBy(() => postWith({ "Idempotency-Key": payload }, request(n), owner.key));
      expect({ payload, status: result.status, replayed: result.headers.get("Idempotent-Replayed") }).toEqual({
        payload,
        status: 200,
        replayed: null,
      });
      expectWrite(changed, rows, event!(n));
      await expectKeptRow(changed, owner.key, reading.key);
    }
  });

  it("answers 401 to a bad API key whatever the Idempotency-Key, and nothing changes", async () => {
    const [prefix] = key.split(".");
    for (const apiKey of [`${prefix}.${"0".repeat(64)}`, `Zz9Zz9Zz.${"0".repeat(64)}`]) {
      for (const [n, payload] of PAYLOADS.filter(sendable).entries()) {
        const { path, body } = WRITES[n % WRITES.length].request(n);
        const response = await expectNoChange(() => postWith({ "Idempotency-Key": payload }, { path, body }, apiKey));
        expect({ payload, path, status: response.status }).toEqual({ payload, path, status: 401 });
        await expectCleanError(response, payload);
      }
    }
  });
});

describe("SQL in If-Match, on the deploy routes", () => {
  const routes: [string, string, () => { path: string; body?: unknown }][] = [
    ["POST /variants/configs/deploy", "staging", () => ({ path: "/variants/configs/deploy", body: deployMain() })],
    [
      "POST /environments/deploy",
      "development",
      () => ({ path: "/environments/deploy", body: { environment_name: "development", variant_id: variantId } }),
    ],
    ["POST /configs/deployment/{id}/revert", "production", () => ({ path: revertPath(revisions[0]) })],
  ];

  it.each(routes)(
    "%s: no payload is the environment's ETag (alone, or around the real one): 412, nothing written, the key not kept",
    async (_, environment, request) => {
      const sent = request();
      const etag = await recordETag(environment);
      const [id, revision] = JSON.parse(etag).split(".");
      for (const [n, payload] of PAYLOADS.filter(sendable).entries()) {
        // The payload alone; every third one also around the real tag, one way or another.
        const around = [`${etag}${payload}`, `"${id}.${revision}${payload}"`, `"${id}${payload}.${revision}"`][n % 9];
        for (const tag of [payload, ...(around ? [around] : [])]) {
          const idempotencyKey = `if-match ${crypto.randomUUID()}`;
          const headers = { "If-Match": tag, "Idempotency-Key": idempotencyKey };
          const response = await expectNoChange(() => postWith(headers, sent));
          expect({ tag, status: response.status }).toEqual({ tag, status: 412 });
          expect((await expectCleanError(response, payload)).detail).toBe(MOVED_ON);
        }
      }
      // A 412 keeps no key: the same key with the record's ETag deploys, as a first request.
      const idempotencyKey = `after a 412 on ${sent.path}`;
      await expectNoChange(() => postWith({ "If-Match": PAYLOADS[0], "Idempotency-Key": idempotencyKey }, sent));
      const { result, changed } = await changesBy(() => postWith({ "If-Match": etag, "Idempotency-Key": idempotencyKey }, sent));
      expect({ status: result.status, replayed: result.headers.get("Idempotent-Replayed") }).toEqual({
        status: 200,
        replayed: null,
      });
      const revertedTo = sent.path === revertPath(revisions[0]) ? revisions[0] : undefined;
      expectWrite(changed, DEPLOYMENT_ROWS, deploymentEvent(environment, {}, revertedTo));
      await expectKeptRow(changed, key, idempotencyKey);
      expect(result.headers.get("ETag") ?? (await recordETag(environment))).toBe(`"${id}.${Number(revision) + 1}"`);
    },
  );
});

it("leaves the database consistent after all of the above", async () => {
  expect(await databaseProblems()).toEqual([]);
});
