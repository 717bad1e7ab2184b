import { beforeAll, describe, expect, it } from "vitest";
import { apps, registry, variants } from "./client";
import { type Account, createAppVia, deploy, expectJson, issueKey, REQUEST_LOG_BURST_MS, send } from "./fixtures";
import { expectKeptRow, quoted, readIdempotencyKey } from "./fuzz-posts";
import { BAD_IDEMPOTENCY_KEY } from "./fuzz-support";
import { addedRow, databaseProblems, type ExpectedEvent, expectEvents, type RowCounts } from "./harness";
import {
  asName,
  changesBy,
  environmentName,
  expectBookmarkSqlIgnored,
  expectCleanError,
  expectNoChange,
  expectRefused,
  expectUnauthorizedWith,
  expectWrite,
  HEADER_PAYLOAD_SAMPLE,
  type HeaderRoute,
  injectionTarget,
  isAcceptableName,
  issueAt,
  PAYLOAD_SAMPLE,
  quietRequestLog,
  UUID_ISSUE,
  uuidAt,
} from "./injection-payloads";
import { databaseOf } from "./pool";

/*
 * SQL injection into the registry of the older SDK (registry.test.ts): GET and POST /configs, GET
 * /configs/deployment/{id}, GET /bases, POST /variants/from-base, PUT /variants/{id}/parameters and DELETE
 * /variants/{id}. Every path parameter, query parameter, body field and header: refused with the documented 4xx, or
 * finding nothing (404), or, where it is data (a new config's name, params' keys and values, a base name), stored or
 * compared as sent. Refused requests change nothing (every row of every table compared); accepted ones change exactly
 * what the same request with an ordinary value changes; no answer carries SQL or internals. A variant named like a
 * payload is removed (its name becomes the tombstone U+0001 || id), and its name is free again.
 */

let owner: Account;
/** The owner's key in the team's project. */
let key: string;
let teamProjectId: string;
/** The app the lookups aim at: config main deployed to production; no config of it is named like a payload. */
let appId: string;
/** Main of the target app, which the PUTs commit to. */
let variantId: string;
/** Production's revision 1 (main's revision 1). */
let revisionId: string;
/** One app per kind of write, so that a name one of them makes is not taken in another. */
let saveAppId: string;
let fromBaseAppId: string;
let removalAppId: string;
let keyedAppId: string;

quietRequestLog();

beforeAll(async () => {
  const target = await injectionTarget();
  ({ owner, key, appId, variantId } = target);
  [revisionId] = target.revisions;
  teamProjectId = target.team.projectId;
  saveAppId = await createAppVia(key, { app_name: "saves" });
  fromBaseAppId = await createAppVia(key, { app_name: "from base" });
  removalAppId = await createAppVia(key, { app_name: "removals" });
  keyedAppId = await createAppVia(key, { app_name: "keyed" });
});

const CONFIG_NOT_FOUND = "Config not found.";
const CONFIG_EXISTS = "Config already exists.";
const CONFIG_NAME_TAKEN = "Config name already exists. Please use a different name or set overwrite to True.";
const VARIANT_NOT_FOUND = "Variant not found";
const stillDeployed = (environment: string) =>
  `Variant is deployed to ${environment}: deploy another variant there first, then remove this one`;

interface AppVariant {
  app_id: string;
  variant_id: string;
  variant_name: string;
  base_id: string;
  config_name: string;
  revision: number;
  parameters: Record<string, unknown>;
}

/** Params holding the payload as keys and values, at the top and nested. */
const paramsOf = (payload: string) => ({ [payload]: payload, nested: { [payload]: [payload, { [payload]: null }] } });

const eachPayload = () => PAYLOAD_SAMPLE.map((payload, n) => [JSON.stringify(payload), payload, n] as const);

const DEPLOYMENT_ROWS: RowCounts = { deployments: [1, 0], environment_revisions: [1, 0], environments: [1, 1] };

/** An event of the owner's change to config `config_name` of app `app`; `data` beside them. */
const configEvent = (type: string, app: string, config_name: string, data: Record<string, unknown> = {}): ExpectedEvent => ({
  type,
  app_id: app,
  actor_user_id: owner.userId,
  data: { app_id: app, config_name, ...data },
});
/** The events of a save over a taken name: its next revision, deployed to production. */
const committedAndDeployed = (app: string, config_name: string, revision: number) => [
  configEvent("config.committed", app, config_name, { revision }),
  {
    ...configEvent("environment.deployed", app, config_name),
    data: { app_id: app, environment: "production", current: expect.objectContaining({ config_name, revision }) },
  },
];
const NEW_CONFIG_ROWS: RowCounts = { app_variants: [1, 0], app_variant_revisions: [1, 0] };

/**
 * A request that writes when the payload is `acceptable`: then a 200, its body and the rows it changed; else a 422 at
 * `loc` that changes nothing (undefined).
 */
async function expectWritten<T>(
  request: () => Promise<Response>,
  payload: string,
  loc: string[],
  acceptable: (payload: string) => boolean = isAcceptableName,
) {
  const { result: response, changed } = await changesBy(request);
  if (!acceptable(payload)) {
    expect(response.status, JSON.stringify(payload)).toBe(422);
    expect((await expectCleanError(response, payload)).detail).toContainEqual(issueAt(loc));
    expect(changed).toEqual({});
    return undefined;
  }
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return { body: JSON.parse(text) as T, changed };
}

type Case = [string, (payload: string) => Promise<Response>, (payload: string) => [number, unknown]];

describe("SQL in path parameters", () => {
  const routes: [string, (id: string) => Promise<Response>, string, () => string][] = [
    [
      "GET /configs/deployment/{deployment_revision_id}",
      (id) => registry.deploymentConfig({ key }, id),
      "deployment_revision_id",
      () => revisionId,
    ],
    [
      "PUT /variants/{variant_id}/parameters",
      (id) => registry.putParameters({ key }, id, { never: "stored" }),
      "variant_id",
      () => variantId,
    ],
    ["DELETE /variants/{variant_id}", (id) => registry.removeVariant({ key }, id), "variant_id", () => variantId],
  ];

  it.each(routes)("%s: every payload as the id is refused (422 uuid_parsing), and nothing changes", async (_, request, field) => {
    for (const payload of PAYLOAD_SAMPLE) {
      await expectRefused(payload, () => request(payload), 422, issueAt(["path", field], UUID_ISSUE));
    }
  });

  it.each(routes)("%s: a real id followed by each payload is refused, and nothing changes", async (_, request, field, id) => {
    for (const payload of PAYLOAD_SAMPLE) {
      await expectRefused(payload, () => request(`${id()}${payload}`), 422, issueAt(["path", field], UUID_ISSUE));
    }
  });
});

describe("SQL in query parameters", () => {
  it("the ordinary lookups find the target (so that a 404 below is the payload's)", async () => {
    const main = { config_name: "main", current_version: 1, parameters: {} };
    expect(await expectJson(await registry.getConfig({ key }, { base_id: appId, config_name: "main" }))).toEqual(main);
    expect(await expectJson(await registry.getConfig({ key }, { base_id: appId, environment_name: "production" }))).toEqual(main);
    expect(await expectJson(await registry.deploymentConfig({ key }, revisionId))).toEqual(main);
    expect(await expectJson(await registry.getBases({ key }, { app_id: appId }))).toEqual([{ base_id: appId, base_name: "app" }]);
  });

  const notFound = (field: string, acceptable?: (payload: string) => boolean) =>
    asName(["query", field], 404, CONFIG_NOT_FOUND, acceptable);
  const refusals: Case[] = [
    [
      "GET /configs?base_id= (config_name=main)",
      (p) => registry.getConfig({ key }, { base_id: p, config_name: "main" }),
      uuidAt(["query", "base_id"]),
    ],
    [
      "GET /configs?base_id= (environment_name=production)",
      (p) => registry.getConfig({ key }, { base_id: p, environment_name: "production" }),
      uuidAt(["query", "base_id"]),
    ],
    [
      "GET /configs?base_id=<a real id followed by the payload>",
      (p) => registry.getConfig({ key }, { base_id: `${appId}${p}`, config_name: "main" }),
      uuidAt(["query", "base_id"]),
    ],
    [
      "GET /configs?environment_name=",
      (p) => registry.getConfig({ key }, { base_id: appId, environment_name: p }),
      notFound("environment_name", environmentName),
    ],
    [
      "GET /configs?config_name=",
      (p) => registry.getConfig({ key }, { base_id: appId, config_name: p }),
      notFound("config_name"),
    ],
    [
      "GET /configs?environment_name= (with config_name=main: the environment wins, and finds nothing)",
      (p) => registry.getConfig({ key }, { base_id: appId, environment_name: p, config_name: "main" }),
      notFound("environment_name", environmentName),
    ],
    ["GET /bases?app_id=", (p) => registry.getBases({ key }, { app_id: p }), uuidAt(["query", "app_id"])],
    [
      "GET /bases?app_id=<a real id followed by the payload>",
      (p) => registry.getBases({ key }, { app_id: `${appId}${p}` }),
      uuidAt(["query", "app_id"]),
    ],
  ];

  it.each(refusals)("%s: every payload finds nothing or is refused, and nothing changes", async (_, request, expected) => {
    for (const payload of PAYLOAD_SAMPLE) await expectRefused(payload, () => request(payload), ...expected(payload));
  });

  it("GET /configs?config_name=<payload>&environment_name=production: the name is checked, then the environment answers", async () => {
    const deployed = await expectJson(await registry.getConfig({ key }, { base_id: appId, environment_name: "production" }));
    for (const payload of PAYLOAD_SAMPLE) {
      const request = () => registry.getConfig({ key }, { base_id: appId, config_name: payload, environment_name: "production" });
      if (!isAcceptableName(payload)) {
        await expectRefused(payload, request, 422, issueAt(["query", "config_name"]));
        continue;
      }
      const response = await expectNoChange(request);
      expect({ payload, answer: await expectJson(response) }).toEqual({ payload, answer: deployed });
    }
  });

  it("GET /bases?base_name=<payload>: compared with the one base's name, answers no base, and nothing changes", async () => {
    for (const payload of PAYLOAD_SAMPLE) {
      const response = await expectNoChange(() => registry.getBases({ key }, { app_id: appId, base_name: payload }));
      expect({ payload, answer: await expectJson(response) }).toEqual({ payload, answer: [] });
    }
  });
});

describe("SQL in the bodies' ids and types", () => {
  const dictType = (field: string) => (): [number, unknown] => [422, issueAt(["body", field], { type: "dict_type" })];
  const saving = (body: object) => ({ base_id: saveAppId, config_name: "never saved", parameters: {}, overwrite: true, ...body });
  const making = (body: object) => ({
    base_id: fromBaseAppId,
    new_variant_name: "v",
    new_config_name: "never made",
    parameters: {},
    ...body,
  });
  const refusals: Case[] = [
    ["POST /configs, base_id", (p) => registry.saveConfig({ key }, saving({ base_id: p })), uuidAt(["body", "base_id"])],
    [
      "POST /configs, base_id: a real id followed by the payload",
      (p) => registry.saveConfig({ key }, saving({ base_id: `${saveAppId}${p}` })),
      uuidAt(["body", "base_id"]),
    ],
    [
      "POST /configs, overwrite",
      (p) => registry.saveConfig({ key }, saving({ overwrite: p })),
      () => [422, issueAt(["body", "overwrite"])],
    ],
    [
      "POST /configs, parameters (the payload itself)",
      (p) => registry.saveConfig({ key }, saving({ parameters: p })),
      dictType("parameters"),
    ],
    ["POST /variants/from-base, base_id", (p) => registry.fromBase({ key }, making({ base_id: p })), uuidAt(["body", "base_id"])],
    [
      "POST /variants/from-base, base_id: a real id followed by the payload",
      (p) => registry.fromBase({ key }, making({ base_id: `${fromBaseAppId}${p}` })),
      uuidAt(["body", "base_id"]),
    ],
    [
      "POST /variants/from-base, parameters (the payload itself)",
      (p) => registry.fromBase({ key }, making({ parameters: p })),
      dictType("parameters"),
    ],
    [
      "PUT /variants/{variant_id}/parameters, parameters (the payload itself)",
      (p) => registry.putParameters({ key }, variantId, p),
      dictType("parameters"),
    ],
  ];

  it.each(refusals)("%s: every payload is refused, and nothing changes", async (_, request, expected) => {
    for (const payload of PAYLOAD_SAMPLE) await expectRefused(payload, () => request(payload), ...expected(payload));
  });
});

describe("SQL in a new config's name and params (POST /configs)", () => {
  it.each(eachPayload())(
    "config_name %s: one new row of exactly that name, taken for a second save, and committed over and deployed with overwrite",
    async (_, payload) => {
      const body = { base_id: saveAppId, config_name: payload, parameters: { saved: 1 }, overwrite: false };
      const made = await expectWritten<null>(() => registry.saveConfig({ key }, body), payload, ["body", "config_name"]);
      if (!made) return;
      const name = payload.normalize("NFC");
      expect(made.body).toBeNull();
      const variant = addedRow(made.changed, "app_variants");
      const added = configEvent("config.added", saveAppId, name, { variant_id: variant.id, revision: 1 });
      expectWrite(made.changed, NEW_CONFIG_ROWS, added);
      expect(variant).toEqual(expect.objectContaining({ app_id: saveAppId, name, removed_at: null, removed_name: null }));
      expect(addedRow(made.changed, "app_variant_revisions")).toEqual(
        expect.objectContaining({ variant_id: variant.id, revision: 1, params: '{"saved":1}', url: "" }),
      );
      const { results } = await databaseOf(saveAppId)
        .prepare("SELECT id FROM app_variants WHERE app_id = ? AND name = ?")
        .bind(saveAppId, payload)
        .all();
      expect(results).toEqual([{ id: variant.id }]);
      expect(await expectJson(await registry.getConfig({ key }, { base_id: saveAppId, config_name: payload }))).toEqual({
        config_name: name,
        current_version: 1,
        parameters: { saved: 1 },
      });

      // Taken: without overwrite a 400 that writes nothing; with it, revision 2, deployed to production.
      await expectRefused(
        payload,
        () => registry.saveConfig({ key }, { ...body, parameters: { saved: 2 } }),
        400,
        CONFIG_NAME_TAKEN,
      );
      const { result, changed } = await changesBy(() =>
        registry.saveConfig({ key }, { ...body, parameters: { saved: 2 }, overwrite: true }),
      );
      expect(await expectJson(result)).toBeNull();
      expectWrite(changed, { app_variant_revisions: [1, 0], ...DEPLOYMENT_ROWS }, ...committedAndDeployed(saveAppId, name, 2));
      expect(addedRow(changed, "app_variant_revisions")).toEqual(
        expect.objectContaining({ variant_id: variant.id, revision: 2, params: '{"saved":2}' }),
      );
      const environmentRevision = addedRow(changed, "environment_revisions");
      const deployed = { config_name: name, current_version: 2, parameters: { saved: 2 } };
      expect(await expectJson(await registry.getConfig({ key }, { base_id: saveAppId, environment_name: "production" }))).toEqual(
        deployed,
      );
      expect(await expectJson(await registry.deploymentConfig({ key }, environmentRevision.id as string))).toEqual({
        ...deployed,
        current_version: environmentRevision.revision,
      });
    },
  );

  it.each(eachPayload())("parameters with %s as keys and values: stored as sent, read back the same", async (_, payload, n) => {
    const parameters = paramsOf(payload);
    const body = { base_id: saveAppId, config_name: `parameters ${n}`, parameters, overwrite: false };
    const { result, changed } = await changesBy(() => registry.saveConfig({ key }, body));
    expect(await expectJson(result)).toBeNull();
    expectWrite(changed, NEW_CONFIG_ROWS, configEvent("config.added", saveAppId, body.config_name, { revision: 1 }));
    expect(addedRow(changed, "app_variant_revisions").params).toBe(JSON.stringify(parameters));
    expect(await expectJson(await registry.getConfig({ key }, { base_id: saveAppId, config_name: body.config_name }))).toEqual({
      config_name: body.config_name,
      current_version: 1,
      parameters,
    });
  });
});

describe("SQL in POST /variants/from-base", () => {
  it.each(eachPayload())(
    "new_config_name %s: one new variant of exactly that name, answered and read back as it; a second is a 400",
    async (_, payload) => {
      const body = { base_id: fromBaseAppId, new_variant_name: "v", new_config_name: payload, parameters: { made: 1 } };
      const made = await expectWritten<AppVariant>(() => registry.fromBase({ key }, body), payload, ["body", "new_config_name"]);
      if (!made) return;
      const name = payload.normalize("NFC");
      expect(made.body).toMatchObject({
        app_id: fromBaseAppId,
        base_id: fromBaseAppId,
        config_name: name,
        variant_name: `app.${name}`,
        revision: 1,
        parameters: { made: 1 },
      });
      const added = configEvent("config.added", fromBaseAppId, name, { variant_id: made.body.variant_id, revision: 1 });
      expectWrite(made.changed, NEW_CONFIG_ROWS, added);
      expect(addedRow(made.changed, "app_variants")).toEqual(
        expect.objectContaining({ id: made.body.variant_id, app_id: fromBaseAppId, name, removed_at: null, removed_name: null }),
      );
      expect(addedRow(made.changed, "app_variant_revisions")).toEqual(
        expect.objectContaining({ variant_id: made.body.variant_id, revision: 1, params: '{"made":1}', url: "" }),
      );
      await expectRefused(payload, () => registry.fromBase({ key }, { ...body, parameters: { made: 2 } }), 400, CONFIG_EXISTS);
      expect(await expectJson(await variants.get({ key }, made.body.variant_id))).toEqual(made.body);
      expect(await expectJson(await registry.getConfig({ key }, { base_id: fromBaseAppId, config_name: payload }))).toEqual({
        config_name: name,
        current_version: 1,
        parameters: { made: 1 },
      });
    },
  );

  it.each(eachPayload())(
    "new_variant_name %s is ignored: the variant is app.<new_config_name>, the payload kept nowhere",
    async (_, payload, n) => {
      const configName = `ignored ${n}`;
      const body = { base_id: fromBaseAppId, new_variant_name: payload, new_config_name: configName, parameters: {} };
      const { result, changed } = await changesBy(() => registry.fromBase({ key }, body));
      expect(await expectJson(result)).toMatchObject({ config_name: configName, variant_name: `app.${configName}` });
      expectWrite(changed, NEW_CONFIG_ROWS, configEvent("config.added", fromBaseAppId, configName));
      if (payload.length < 3) return;
      for (const table of ["app_variants", "app_variant_revisions"] as const) {
        for (const value of Object.values(addedRow(changed, table))) expect(String(value)).not.toContain(payload);
      }
    },
  );

  it.each(eachPayload())(
    "parameters with %s as keys and values: stored as sent, answered and read back the same",
    async (_, payload, n) => {
      const parameters = paramsOf(payload);
      const body = { base_id: fromBaseAppId, new_variant_name: "v", new_config_name: `parameters ${n}`, parameters };
      const { result, changed } = await changesBy(() => registry.fromBase({ key }, body));
      const made = await expectJson<AppVariant>(result);
      expect(made.parameters).toEqual(parameters);
      const added = configEvent("config.added", fromBaseAppId, body.new_config_name, { variant_id: made.variant_id });
      expectWrite(changed, NEW_CONFIG_ROWS, added);
      expect(addedRow(changed, "app_variant_revisions").params).toBe(JSON.stringify(parameters));
      expect((await expectJson<AppVariant>(await variants.get({ key }, made.variant_id))).parameters).toEqual(parameters);
    },
  );
});

describe("SQL in PUT /variants/{variant_id}/parameters", () => {
  it.each(eachPayload())(
    "parameters with %s as keys and values: the next revision, stored as sent, read back the same",
    async (_, payload) => {
      const parameters = paramsOf(payload);
      const { result, changed } = await changesBy(() => registry.putParameters({ key }, variantId, parameters));
      expect(await expectJson(result)).toBeNull();
      const row = addedRow(changed, "app_variant_revisions");
      const committed = configEvent("config.committed", appId, "main", { variant_id: variantId, revision_id: row.id });
      expectWrite(changed, { app_variant_revisions: [1, 0] }, committed);
      expect(row).toEqual(expect.objectContaining({ variant_id: variantId, params: JSON.stringify(parameters), url: "" }));
      const variant = await expectJson<AppVariant>(await variants.get({ key }, variantId));
      expect({ revision: variant.revision, parameters: variant.parameters }).toEqual({ revision: row.revision, parameters });
      expect(await expectJson(await registry.getConfig({ key }, { base_id: appId, config_name: "main" }))).toEqual({
        config_name: "main",
        current_version: row.revision,
        parameters,
      });
    },
  );
});

describe("SQL in a removed variant's name (DELETE /variants/{variant_id})", () => {
  const names = PAYLOAD_SAMPLE.filter(isAcceptableName).map((payload) => [JSON.stringify(payload), payload] as const);
  /** Each payload's first variant, removed. */
  const removed = new Map<string, string>();
  /** The event of the removal of variant `id`, config `name` of the app. */
  const removalOf = (id: string, name: string): ExpectedEvent => ({
    type: "config.removed",
    app_id: removalAppId,
    data: { app_id: removalAppId, config_name: name, variant_id: id },
  });

  it.each(names)(
    "a variant named %s: 409 while deployed; then removed, its name the tombstone, and gone from every call",
    async (_, payload) => {
      const name = payload.normalize("NFC");
      const body = { base_id: removalAppId, new_variant_name: "v", new_config_name: payload, parameters: { generation: 1 } };
      const { result, changed } = await changesBy(() => registry.fromBase({ key }, body));
      const { variant_id: id } = await expectJson<AppVariant>(result);
      const row = addedRow(changed, "app_variants");

      await deploy(removalAppId, "staging", name, owner);
      await expectRefused(payload, () => registry.removeVariant({ key }, id), 409, stillDeployed("staging"));
      await deploy(removalAppId, "staging", "main", owner);

      const gone = await changesBy(() => registry.removeVariant({ key }, id));
      expect(await expectJson(gone.result)).toBeNull();
      expect(expectEvents(gone.changed, removalOf(id, name))).toEqual({
        app_variants: {
          added: [{ ...row, name: `\u0001${id}`, removed_name: name, removed_at: expect.any(String) }],
          removed: [row],
        },
      });
      removed.set(payload, id);

      await expectRefused(
        payload,
        () => registry.getConfig({ key }, { base_id: removalAppId, config_name: payload }),
        404,
        CONFIG_NOT_FOUND,
      );
      await expectRefused(payload, () => registry.putParameters({ key }, id, { generation: 2 }), 404, VARIANT_NOT_FOUND);
      await expectRefused(payload, () => registry.removeVariant({ key }, id), 404, VARIANT_NOT_FOUND);
      await expectRefused(payload, () => variants.get({ key }, id), 404, VARIANT_NOT_FOUND);
    },
  );

  it("with every payload's variant removed, no payload finds one, and no request can name a tombstone", async () => {
    expect(removed.size).toBe(names.length);
    for (const payload of PAYLOAD_SAMPLE) {
      const request = () => registry.getConfig({ key }, { base_id: removalAppId, config_name: payload });
      await expectRefused(payload, request, ...asName(["query", "config_name"], 404, CONFIG_NOT_FOUND)(payload));
    }
    const { results } = await databaseOf(removalAppId)
      .prepare("SELECT id, name, removed_name FROM app_variants WHERE app_id = ? AND removed_at IS NOT NULL ORDER BY id")
      .bind(removalAppId)
      .all();
    expect(results).toEqual(
      [...removed]
        .map(([payload, id]) => ({ id, name: `\u0001${id}`, removed_name: payload.normalize("NFC") }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
    for (const id of removed.values()) {
      const tombstone = `\u0001${id}`;
      await expectRefused(
        tombstone,
        () => registry.getConfig({ key }, { base_id: removalAppId, config_name: tombstone }),
        422,
        issueAt(["query", "config_name"]),
      );
      await expectRefused(
        tombstone,
        () => registry.saveConfig({ key }, { base_id: removalAppId, config_name: tombstone, parameters: {}, overwrite: true }),
        422,
        issueAt(["body", "config_name"]),
      );
      await expectRefused(
        tombstone,
        () =>
          registry.fromBase(
            { key },
            { base_id: removalAppId, new_variant_name: tombstone, new_config_name: tombstone, parameters: {} },
          ),
        422,
        issueAt(["body", "new_config_name"]),
      );
      // The id alone is no name either.
      await expectRefused(
        id,
        () => registry.getConfig({ key }, { base_id: removalAppId, config_name: id }),
        404,
        CONFIG_NOT_FOUND,
      );
    }
    const listed = await expectJson<AppVariant[]>(await apps.variants({ key }, removalAppId));
    expect(listed.map((variant) => variant.config_name)).toEqual(["main"]);
  }, 60_000);

  it.each(names)(
    "%s is free again: saved as one new row and read back as the new config; removed again, made again",
    async (_, payload) => {
      const name = payload.normalize("NFC");
      const first = removed.get(payload)!;
      // With overwrite: a name that matched the removed variant (or its tombstone) would commit to it and deploy it.
      const body = { base_id: removalAppId, config_name: payload, parameters: { generation: 2 }, overwrite: true };
      const { result, changed } = await changesBy(() => registry.saveConfig({ key }, body));
      expect(await expectJson(result)).toBeNull();
      const reborn = addedRow(changed, "app_variants");
      expectWrite(changed, NEW_CONFIG_ROWS, configEvent("config.added", removalAppId, name, { variant_id: reborn.id }));
      expect(reborn).toEqual(expect.objectContaining({ app_id: removalAppId, name, removed_at: null, removed_name: null }));
      expect(reborn.id).not.toBe(first);
      expect(await expectJson(await registry.getConfig({ key }, { base_id: removalAppId, config_name: payload }))).toEqual({
        config_name: name,
        current_version: 1,
        parameters: { generation: 2 },
      });

      const again = await changesBy(() => registry.removeVariant({ key }, reborn.id as string));
      expect(await expectJson(again.result)).toBeNull();
      expect(expectEvents(again.changed, removalOf(reborn.id as string, name))).toEqual({
        app_variants: {
          added: [{ ...reborn, name: `\u0001${reborn.id}`, removed_name: name, removed_at: expect.any(String) }],
          removed: [reborn],
        },
      });
      const third = await expectJson<AppVariant>(
        await registry.fromBase(
          { key },
          {
            base_id: removalAppId,
            new_variant_name: payload,
            new_config_name: payload,
            parameters: { generation: 3 },
          },
        ),
      );
      expect(third).toMatchObject({ config_name: name, revision: 1, parameters: { generation: 3 } });
      const { results } = await databaseOf(removalAppId)
        .prepare(
          "SELECT id, name, removed_name FROM app_variants WHERE app_id = ? AND (name = ? OR removed_name = ?) ORDER BY id",
        )
        .bind(removalAppId, name, name)
        .all();
      expect(results).toEqual(
        [
          { id: first, name: `\u0001${first}`, removed_name: name },
          { id: reborn.id, name: `\u0001${reborn.id}`, removed_name: name },
          { id: third.variant_id, name, removed_name: null },
        ].sort((a, b) => ((a.id as string) < (b.id as string) ? -1 : 1)),
      );
    },
  );
});

describe("SQL in headers", () => {
  const routes: HeaderRoute[] = [
    ["GET", () => `/configs?base_id=${appId}&config_name=main`],
    ["GET", () => `/configs?base_id=${appId}&environment_name=production`],
    ["GET", () => `/configs/deployment/${revisionId}`],
    ["GET", () => `/bases?app_id=${appId}`],
    ["POST", () => "/configs", () => ({ base_id: appId, config_name: "main", parameters: { never: 1 }, overwrite: true })],
    [
      "POST",
      () => "/variants/from-base",
      () => ({ base_id: appId, new_variant_name: "x", new_config_name: "never made", parameters: {} }),
    ],
    ["PUT", () => `/variants/${variantId}/parameters`, () => ({ parameters: { never: "stored" } })],
    ["DELETE", () => `/variants/${variantId}`],
  ];

  it.each(HEADER_PAYLOAD_SAMPLE.map((payload) => [payload]))(
    "Authorization with %s is a 401 on every route, and nothing changes",
    (payload) => expectUnauthorizedWith(payload, key, routes),
  );

  it("ignores a D1 bookmark header holding SQL on every read", () => expectBookmarkSqlIgnored(key, routes));

  /**
   * A write that takes an Idempotency-Key, a request of it (`n` makes each one another), the rows a 200 changes and the
   * events it records.
   */
  interface Write {
    label: string;
    request: (n: number) => { method: string; path: string; body: unknown };
    rows: RowCounts;
    events: (n: number) => ExpectedEvent[];
  }
  const WRITES: Write[] = [
    {
      label: "POST /configs",
      request: (n) => ({
        method: "POST",
        path: "/configs",
        body: { base_id: keyedAppId, config_name: `keyed ${n}`, parameters: { n }, overwrite: false },
      }),
      rows: NEW_CONFIG_ROWS,
      events: (n) => [configEvent("config.added", keyedAppId, `keyed ${n}`, { revision: 1 })],
    },
    {
      label: "POST /variants/from-base",
      request: (n) => ({
        method: "POST",
        path: "/variants/from-base",
        body: { base_id: keyedAppId, new_variant_name: "v", new_config_name: `from base ${n}`, parameters: { n } },
      }),
      rows: NEW_CONFIG_ROWS,
      events: (n) => [configEvent("config.added", keyedAppId, `from base ${n}`, { revision: 1 })],
    },
    {
      label: "PUT /variants/{variant_id}/parameters",
      request: (n) => ({ method: "PUT", path: `/variants/${variantId}/parameters`, body: { parameters: { n } } }),
      rows: { app_variant_revisions: [1, 0] },
      events: () => [configEvent("config.committed", appId, "main", { variant_id: variantId })],
    },
  ];
  /** Whether a header can carry the payload at all: fetch refuses a NUL (or a line break) in a header's value. */
  const sendable = (payload: string) => !/[\0\r\n]/.test(payload);

  it.each(WRITES.map((write, i) => [write.label, write, i] as const))(
    "%s: every payload as Idempotency-Key is a key of its own, kept verbatim, replayed for its retry, a 422 for another request",
    async (_, { request, rows, events }, route) => {
      // A key of its own for each route: a payload key used on one route would be a 422 on the next.
      const apiKey = await issueKey(owner.userId, teamProjectId);
      const write = (n: number, idempotencyKey: string) => {
        const { method, path, body } = request(n);
        return send(method, path, { key: apiKey, body, headers: { "Idempotency-Key": idempotencyKey } });
      };
      for (const [n, payload] of PAYLOAD_SAMPLE.entries()) {
        if (!sendable(payload)) {
          // A NUL never reaches the service: the client cannot even make the request.
          await expect(write(n, payload)).rejects.toThrow(TypeError);
          continue;
        }
        const { result: first, changed } = await changesBy(() => write(n, payload));
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
        const answer = await first.clone().text();
        expect(first.status, answer).toBe(200);
        expect(first.headers.get("Idempotent-Replayed")).toBeNull();
        if (payload.length >= 3) expect(`${[...first.headers.values()].join("\n")}\n${answer}`).not.toContain(payload);
        expectWrite(changed, rows, ...events(n));
        await expectKeptRow(changed, apiKey, reading.key);
        // The retry, with the key as sent or as a quoted string (the same key): the first answer, nothing written.
        const again = (n + route) % 2 === 0 || /["\\]/.test(reading.key) ? quoted(reading.key) : payload;
        const retry = await expectNoChange(() => write(n, again));
        expect({ status: retry.status, body: await retry.json() }).toEqual({ status: 200, body: await first.json() });
        expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
        // The key for another request (another body): a 422 that writes nothing.
        await expectRefused(
          payload,
          () => write(n + PAYLOAD_SAMPLE.length + 1, payload),
          422,
          issueAt(["header", "Idempotency-Key"]),
        );
      }
    },
    60_000,
  );

  const ifMatch: [string, () => Promise<unknown>, Write][] = [
    [
      "POST /configs over a taken name with overwrite, which deploys to production",
      () =>
        registry.saveConfig({ key }, { base_id: keyedAppId, config_name: "if-match", parameters: { n: -1 }, overwrite: false }),
      {
        label: "",
        request: (n) => ({
          method: "POST",
          path: "/configs",
          body: { base_id: keyedAppId, config_name: "if-match", parameters: { n }, overwrite: true },
        }),
        rows: { app_variant_revisions: [1, 0], ...DEPLOYMENT_ROWS },
        events: (n) => committedAndDeployed(keyedAppId, "if-match", n + 2),
      },
    ],
    [
      "POST /variants/from-base",
      async () => {},
      { ...WRITES[1], request: (n) => WRITES[1].request(1000 + n), events: (n) => WRITES[1].events(1000 + n) },
    ],
    ["PUT /variants/{variant_id}/parameters", async () => {}, WRITES[2]],
  ];

  it("the reads and DELETE take no Idempotency-Key or If-Match: every payload in both is ignored, and no key is kept", async () => {
    const reads = routes.filter(([method]) => method === "GET");
    const answers = await Promise.all(reads.map(async ([method, path]) => (await send(method, path(), { key })).json()));
    for (const [n, payload] of PAYLOAD_SAMPLE.filter(sendable).entries()) {
      const headers = { "Idempotency-Key": payload, "If-Match": payload };
      for (const [i, [method, path]] of reads.entries()) {
        const response = await expectNoChange(() => send(method, path(), { key, headers }));
        expect({ payload, path: path(), answer: await expectJson(response) }).toEqual({
          payload,
          path: path(),
          answer: answers[i],
        });
      }
      const made = await expectJson<AppVariant>(
        await registry.fromBase(
          { key },
          {
            base_id: keyedAppId,
            new_variant_name: "v",
            new_config_name: `removed with headers ${n}`,
            parameters: {},
          },
        ),
      );
      const { result, changed } = await changesBy(() => registry.removeVariant({ key }, made.variant_id, { headers }));
      expect(await expectJson(result)).toBeNull();
      const removal = { type: "config.removed", app_id: keyedAppId, data: { variant_id: made.variant_id } };
      expect(Object.keys(expectEvents(changed, removal))).toEqual(["app_variants"]);
      expect(changed.app_variants?.added).toEqual([
        expect.objectContaining({ id: made.variant_id, name: `\u0001${made.variant_id}` }),
      ]);
    }
  }, 60_000);

  it.each(ifMatch)(
    "%s: every payload as If-Match is ignored, and the write is as any other",
    async (_, setup, { request, rows, events }) => {
      await setup();
      for (const [n, payload] of HEADER_PAYLOAD_SAMPLE.entries()) {
        const { method, path, body } = request(n);
        const { result, changed } = await changesBy(() => send(method, path, { key, body, headers: { "If-Match": payload } }));
        expect({ payload, status: result.status }).toEqual({ payload, status: 200 });
        expectWrite(changed, rows, ...events(n));
      }
    },
    60_000,
  );
});

it("leaves the database consistent after all of the above", async () => {
  await scheduler.wait(REQUEST_LOG_BURST_MS); // the last requests' log line is written while the log is still quiet
  expect(await databaseProblems()).toEqual([]);
});
