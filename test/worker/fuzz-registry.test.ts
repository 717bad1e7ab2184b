import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { DEFAULT_ENVIRONMENTS, parseKeepingNumbers, send } from "./fixtures";
import { newRevision, newVariant, paramsPlan, weighted } from "./fuzz-configs-oracle";
import {
  AppVariantBody,
  BasesBody,
  expectDeployment,
  type Model,
  plantedWorld,
  RegistryConfigBody,
  type RevisionRow,
  type VariantRow,
  visibleFirst,
  writerOf,
} from "./fuzz-model";
import {
  type Answer,
  type Changes,
  type Check,
  fuzzPost,
  KeyLedger,
  type PostFuzzing,
  refusedWithOneOf,
  unchanged,
} from "./fuzz-posts";
import {
  anyString,
  appEvent,
  asObject,
  bodySpec,
  certainParameters,
  chooseId,
  deploymentEvent,
  depthOf,
  environmentNameIsValid,
  expectDetail,
  FORBIDDEN,
  fieldValue,
  fuzz,
  fuzzRead,
  type Holder,
  headersOf,
  type IdChoice,
  idChoice,
  likelyValidName,
  MAX_BODY_DEPTH,
  MAX_PARAMS_DEPTH,
  nameIsValid,
  newNameIsValid,
  own,
  type QueryPart,
  queryPart,
  type Replay,
  RUNS,
  readJsonBody,
  requestInput,
  revisionData,
  routedAnswer,
  runsShare,
  type SegmentChoice,
  segmentChoice,
  segmentOf,
  TIMEOUT,
  TIMESTAMP,
  UUID_V7,
  uuidValidity,
  Verdict,
} from "./fuzz-support";
import { databaseProblems, expectEvents } from "./harness";

/*
 * Generated requests to the registry of the platform's older SDK (docs/LEGACY-API.md, "The rest of the registry"), against
 * the real local D1: DELETE /variants/{variant_id} first (the world planted by fuzz-model.ts holds removed variants
 * already; more follow), then POST /variants/from-base, POST /configs and PUT /variants/{variant_id}/parameters (with
 * Idempotency-Key, through fuzz-posts.ts's runner), then the reads GET /configs, GET /configs/deployment/{id} and GET
 * /bases. Ids, names and bodies are mostly planned from the database as it is when the request is made (an app or a
 * variant the caller can see, a config name the app has, had or never had, params that are {}), else anything. The
 * oracle predicts each answer, body included, from the request, the caller's role and every row of the database;
 * after each write the rows that changed must be exactly those it says (params stored digit for digit as sent); reads
 * write nothing. Seeds, REPLAY and the runner: fuzz-support.ts.
 */
const REPLAY: Replay = {};

/** The world, the database as tracked, the Idempotency-Keys used (set up below). */
const fuzzing = {} as PostFuzzing;

/** The body limit of the routes that carry params (docs/http-contract.md, the contract table: 413). */
const MAX_CONFIG_BODY_BYTES = 256 * 1024;

const APP_NOT_FOUND = "App not found";
const VARIANT_NOT_FOUND = "Variant not found";
const CONFIG_NOT_FOUND = "Config not found.";
const CONFIG_EXISTS = "Config already exists.";
const NAME_TAKEN = "Config name already exists. Please use a different name or set overwrite to True.";

/** What the oracle predicted, by property and outcome: each property must reach the outcomes it names. */
const outcomes = new Map<string, Map<string, number>>();
const count = (label: string, outcome: string) => {
  const counts = outcomes.get(label) ?? new Map<string, number>();
  outcomes.set(label, counts.set(outcome, (counts.get(outcome) ?? 0) + 1));
};
function expectOutcomes(label: string, expected: string[]) {
  const counts = outcomes.get(label) ?? new Map<string, number>();
  console.info(`${label}: predicted outcomes: ${JSON.stringify(Object.fromEntries([...counts].sort()))}`);
  if (REPLAY[label]?.path !== undefined) return;
  for (const outcome of expected) expect(counts.get(outcome) ?? 0, `${label}: ${outcome} never predicted`).toBeGreaterThan(0);
}

beforeAll(async () => {
  Object.assign(fuzzing, await plantedWorldWithEmptyConfigs(), { keys: new KeyLedger() });
});

afterAll(() => {
  vi.restoreAllMocks();
});

/**
 * The planted world, and in two apps a config whose params are still {} (a save over it commits and deploys even
 * without overwrite).
 */
async function plantedWorldWithEmptyConfigs() {
  const planted = await plantedWorld();
  const { world, db } = planted;
  for (const name of ["fuzz-own", "fuzz-team"]) {
    const app = [...db.model.apps.values()].find((row) => row.name === name)!;
    const body = { application_ref: { id: app.id }, variant_ref: { slug: "empty" } };
    const response = await send("POST", "/variants/configs/add", { key: writerOf(world, app.project_id).key, body });
    expect(response.status).toBe(200);
  }
  await db.changes();
  return planted;
}

// ---------------------------------------------------------------------------------------------------------------
// Reading a body as the contract does.

/** The body's `parameters`: an object of at most 100 levels, else a 422 there; its numbers as written, for the row. */
function readParameters(verdict: Verdict, body: Record<string, unknown>, text: string) {
  // The body is read again for the numbers, which a body nesting deeper than 1,000 levels anywhere cannot be.
  if (depthOf(body) > MAX_BODY_DEPTH) verdict.fail(422, ["body"]);
  const parameters = asObject(own(body, "parameters"));
  const valid = parameters !== undefined && depthOf(parameters) <= MAX_PARAMS_DEPTH;
  verdict.field(["body", "parameters"], valid);
  return valid ? { params: parameters, exact: exactly(text) } : undefined;
}

/**
 * The body's parameters with each number as `{ number: "<its text>" }` (the last "parameters" wins, as JSON.parse
 * says), to compare digit for digit; undefined when the body nests too deep elsewhere to be read so (the reviver
 * recurses).
 */
function exactly(text: string): unknown {
  try {
    return parseKeepingNumbers(text).parameters;
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

/** A UUID body field: a string that is one, certainly (true), certainly not (false), or no claim. */
const uuidFieldValidity = (value: unknown) => (typeof value === "string" ? uuidValidity(value) : false);

/** The body as an object, once the key, size and media type are judged (`readJsonBody`); a 422 at body else. */
function readObject(body: string | Uint8Array | undefined, isJsonType: boolean | undefined) {
  const { verdict, parsed, text } = readJsonBody(body, isJsonType, MAX_CONFIG_BODY_BYTES);
  const fields = asObject(parsed?.value);
  if (parsed && !fields) verdict.fail(422, ["body"]);
  return { verdict, fields, text };
}

/** A config's params as a request sends them: parsed, and each number as written (when the body can be read so). */
interface Params {
  params: Record<string, unknown>;
  exact: unknown;
}

interface SaveRequest extends Params {
  appId: string;
  configName: string;
  overwrite: boolean;
}

function readSave(body: string | Uint8Array | undefined, isJsonType: boolean | undefined) {
  const { verdict, fields, text } = readObject(body, isJsonType);
  if (!fields) return { verdict };
  const [baseId, name, overwrite] = ["base_id", "config_name", "overwrite"].map((key) => own(fields, key));
  const validity = [uuidFieldValidity(baseId), newNameIsValid(name), typeof overwrite === "boolean"];
  for (const [i, key] of ["base_id", "config_name", "overwrite"].entries()) verdict.field(["body", key], validity[i]);
  const params = readParameters(verdict, fields, text);
  if (validity.includes(false) || !params) return { verdict };
  const request: SaveRequest = {
    appId: (baseId as string).toLowerCase(),
    configName: (name as string).normalize("NFC"),
    overwrite: overwrite as boolean,
    ...params,
  };
  return { verdict, request };
}

interface FromBaseRequest extends Params {
  appId: string;
  configName: string;
}

function readFromBase(body: string | Uint8Array | undefined, isJsonType: boolean | undefined) {
  const { verdict, fields, text } = readObject(body, isJsonType);
  if (!fields) return { verdict };
  const [baseId, variantName, name] = ["base_id", "new_variant_name", "new_config_name"].map((key) => own(fields, key));
  // new_variant_name is read (a string, when given) and ignored.
  const validity = [
    uuidFieldValidity(baseId),
    variantName === undefined || typeof variantName === "string",
    newNameIsValid(name),
  ];
  for (const [i, key] of ["base_id", "new_variant_name", "new_config_name"].entries()) verdict.field(["body", key], validity[i]);
  const params = readParameters(verdict, fields, text);
  if (validity.includes(false) || !params) return { verdict };
  const request: FromBaseRequest = {
    appId: (baseId as string).toLowerCase(),
    configName: (name as string).normalize("NFC"),
    ...params,
  };
  return { verdict, request };
}

// ---------------------------------------------------------------------------------------------------------------
// Planning bodies from the database as it is when the request is made.

/** Params nested around the limit: `depth` levels (`{}` is one). */
const nested = (depth: number): Record<string, unknown> => {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < depth; level++) value = { n: value };
  return value;
};

/** Numbers as a person or another language writes them, which the service must keep as written. */
const exactNumber = fc.constantFrom(
  "9007199254740993",
  "123456789012345678901234567890",
  "1.0",
  "0.10",
  "1e400",
  "-1E-400",
  "1E2",
  "-0",
  "0.1000000000000000055511151231257827",
  "-12.50e+3",
);
/** Params planned as JSON text, sent as written. */
class RawParams {
  constructor(readonly text: string) {}
}

/** Params as raw JSON text holding such numbers. */
const exactParams = fc
  .array(
    fc.tuple(
      fc.string({ maxLength: 6 }),
      fc.oneof(
        exactNumber,
        exactNumber.map((number) => `[${number},{"n":${number}}]`),
      ),
    ),
    {
      minLength: 1,
      maxLength: 4,
    },
  )
  .map((entries) => new RawParams(`{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(",")}}`));

/**
 * A config name: one the app has (mostly), one of them whose latest params are {}, one a removed config of it had
 * (free), a new one, or anything.
 */
type NamePlan = { taken: number } | { empty: number } | { removed: number } | { value: unknown };

/**
 * A body of POST /configs, POST /variants/from-base or PUT .../parameters, its values chosen when it is sent:
 * base_id an app (the caller's first) or an id of another kind, upper-cased, too long, random; with `messy`, also
 * fields left out, null or of another type; parameters often {}, sometimes nested around the limit, large, or
 * holding numbers to keep as written.
 */
const bodyPlan = (messy: number) =>
  fc.record({
    app: idChoice,
    base: weighted<"id" | { value: unknown }>(
      [fc.constant("id"), 12],
      [fc.constantFrom<unknown>(undefined, null, 1, "", "app", "not-a-uuid", [], {}).map((value) => ({ value })), messy],
    ),
    name: weighted<NamePlan>(
      [fc.nat().map((n) => ({ taken: n })), 4],
      [fc.nat().map((n) => ({ empty: n })), 2],
      [fc.nat().map((n) => ({ removed: n })), 3],
      [
        fc.oneof(likelyValidName, fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 10 })).map((value) => ({ value })),
        4,
      ],
      [fc.oneof(anyString, fc.constantFrom<unknown>(undefined, null, 1, [], "")).map((value) => ({ value })), messy],
    ),
    parameters: weighted<unknown>(
      [fc.constant({}), 2],
      [paramsPlan(messy), 10],
      [exactParams, 2],
      [fc.integer({ min: MAX_PARAMS_DEPTH - 2, max: MAX_PARAMS_DEPTH + 2 }).map(nested), 1],
    ),
    overwrite: weighted<unknown>([fc.boolean(), 10], [fc.constantFrom<unknown>(undefined, null, "true", 1, 0), messy]),
    variantName: weighted<unknown>(
      [fc.oneof(likelyValidName, anyString), 6],
      [fc.constant(undefined), 2],
      [fc.constantFrom<unknown>(null, 1, [], {}), messy],
    ),
    extra: fc.option(
      fc.dictionary(
        fc.oneof(anyString, fc.constantFrom("__proto__", "config", "params", "base_name")),
        fc.jsonValue({ maxDepth: 1 }),
        {
          maxKeys: 2,
        },
      ),
      { freq: 4 },
    ),
  });
type BodyPlan = typeof bodyPlan extends (messy: number) => fc.Arbitrary<infer T> ? T : never;
/** Mostly clean plans, some messy ones. */
const bodyPlans = fc.oneof({ arbitrary: bodyPlan(0), weight: 4 }, { arbitrary: bodyPlan(1), weight: 1 });

/** Ids of other kinds than an app's: variants', variant revisions', environment revisions'. */
const notAppIds = (model: Model) => [...model.variants.keys(), ...model.revisions.keys(), ...model.environmentRevisions.keys()];

/** JSON text of the fields (undefined ones left out), `parameters` last, written as planned (raw text, or a value). */
function bodyText(fields: Record<string, unknown>, parameters: unknown): string {
  const { parameters: _, ...others } = fields;
  if (!(parameters instanceof RawParams)) return JSON.stringify({ ...others, parameters });
  const text = JSON.stringify(others);
  return `${text.slice(0, -1)}${text === "{}" ? "" : ","}"parameters":${parameters.text}}`;
}

/** The body a plan makes of the database as it is now, for a save or a from-base (`configNameField`) or a PUT (none). */
function plannedBody(
  plan: BodyPlan,
  model: Model,
  holder: Holder | undefined,
  configNameField?: "config_name" | "new_config_name",
) {
  const { extra } = plan;
  if (!configNameField) return bodyText({ ...extra }, plan.parameters);
  // The names removed configs of an app had that no config has now; its configs whose latest params are {}.
  const freed = (appId: string) => {
    const live = model.variantsOf(appId).map((variant) => variant.name);
    return model
      .everyVariantOf(appId)
      .flatMap((variant) => variant.removed_name ?? [])
      .filter((name) => !live.includes(name));
  };
  const empty = (appId: string) =>
    model
      .variantsOf(appId)
      .filter((variant) => model.latest(variant.id)?.params === "{}")
      .map((variant) => variant.name);
  // An app (one that has such names, when the plan is for one of them), or an id of another kind.
  const apps = [...model.apps.keys()];
  const having =
    "removed" in plan.name
      ? apps.filter((id) => freed(id).length > 0)
      : "empty" in plan.name
        ? apps.filter((id) => empty(id).length > 0)
        : apps;
  const baseId =
    plan.base === "id"
      ? chooseId(plan.app, visibleFirst(model, holder, having.length > 0 ? having : apps), notAppIds(model))
      : plan.base.value;
  const app = typeof baseId === "string" ? model.apps.get(baseId.toLowerCase()) : undefined;
  const live = app ? model.variantsOf(app.id).map((variant) => variant.name) : [];
  const choose = (names: string[], n: number) => {
    const pool = [names, live, ["main"]].find((each) => each.length > 0)!;
    return pool[n % pool.length];
  };
  const name =
    "taken" in plan.name
      ? choose(live, plan.name.taken)
      : "empty" in plan.name
        ? choose(app ? empty(app.id) : [], plan.name.empty)
        : "removed" in plan.name
          ? choose(app ? freed(app.id) : [], plan.name.removed)
          : plan.name.value;
  const fields =
    configNameField === "config_name"
      ? { base_id: baseId, config_name: name, overwrite: plan.overwrite }
      : { base_id: baseId, new_variant_name: plan.variantName, new_config_name: name };
  return bodyText({ ...extra, ...fields }, plan.parameters);
}

/** Bodies of any kind for the fields given (ids of the database as it is, params as planned, or anything). */
function unplannedBody(fields: readonly string[], model: Model) {
  const ids = [...model.apps.keys(), ...notAppIds(model)];
  const value = fieldValue(ids);
  const arbitraries = Object.fromEntries(
    fields.map((field) => [
      field,
      field === "parameters" ? paramsPlan(1) : field === "overwrite" ? fc.oneof(fc.boolean(), value) : value,
    ]),
  );
  const structured = fc
    .tuple(fc.record(arbitraries, { requiredKeys: [] }), fc.dictionary(anyString, value, { maxKeys: 2 }))
    .map(([known, extra]) => JSON.stringify({ ...extra, ...known }));
  return bodySpec({ wellFormed: structured, structured, fields, values: value, maxBytes: MAX_CONFIG_BODY_BYTES });
}

/** A body part: planned (mostly), or of any kind. */
const bodyPart = (fields: readonly string[], model: Model) =>
  fc.oneof(
    { arbitrary: bodyPlans.map((plan) => ({ plan })), weight: 2 },
    { arbitrary: unplannedBody(fields, model).map((spec) => ({ spec })), weight: 1 },
  );

// ---------------------------------------------------------------------------------------------------------------
// What the writes must write.

/** The variant revision a write added: the only row of app_variant_revisions it changed. */
const addedRevision = (changed: Changes) => changed.app_variant_revisions?.added[0] as unknown as RevisionRow | undefined;

/** The revision a write made holds the params as sent, every number as written. */
const expectParamsAsSent = (revision: RevisionRow | undefined, { params, exact }: Params) =>
  exact === undefined
    ? expect(revision && JSON.parse(revision.params), "params as sent").toEqual(params)
    : expect(revision && parseKeepingNumbers(revision.params), "params as sent").toEqual(exact);

/** A new config of the app: its variant, its revision 1 holding the params, url "", and its event. */
const expectNewConfig =
  (
    model: Model,
    holder: Holder,
    app: Parameters<typeof appEvent>[3],
    configName: string,
    params: Params,
    check: (variantId: string, after: Model) => void = () => {},
  ): Check =>
  (changed, after) => {
    const appId = app.id;
    const variantId = (changed.app_variants?.added[0]?.id as string | undefined) ?? "";
    expect(variantId).toMatch(UUID_V7);
    const made = {
      config_name: configName,
      variant_id: variantId,
      revision: 1,
      revision_id: addedRevision(changed)?.id,
      message: null,
    };
    expect(expectEvents(changed, appEvent(model, holder, "config.added", app, made))).toEqual({
      app_variants: { added: [newVariant(variantId, appId, configName)], removed: [] },
      app_variant_revisions: { added: [newRevision(expect.stringMatching(UUID_V7), variantId, 1, holder, "")], removed: [] },
    });
    expectParamsAsSent(addedRevision(changed), params);
    check(variantId, after);
  };

/**
 * The variant's next revision, holding the params (url kept); then, when `deployedTo`, that revision deployed there;
 * an event for each.
 */
const expectCommitted =
  (
    model: Model,
    holder: Holder,
    variant: VariantRow,
    latest: RevisionRow,
    params: Params,
    deployedTo?: Parameters<typeof expectDeployment>[1],
  ): Check =>
  (changed) => {
    const made = addedRevision(changed);
    const data = { ...revisionData(model, latest), revision: latest.revision + 1, revision_id: made?.id, message: null };
    const committed = appEvent(model, holder, "config.committed", model.apps.get(variant.app_id)!, data);
    const deployed = deployedTo && made ? [deploymentEvent(model, holder, deployedTo, made)] : [];
    const { app_variant_revisions, ...rest } = expectEvents(changed, committed, ...deployed);
    expect(app_variant_revisions).toEqual({
      added: [newRevision(expect.stringMatching(UUID_V7), variant.id, latest.revision + 1, holder, latest.url)],
      removed: [],
    });
    expectParamsAsSent(made, params);
    if (deployedTo) expectDeployment(rest, deployedTo, made!, holder.userId);
    else expect(rest).toEqual({});
  };

// ---------------------------------------------------------------------------------------------------------------
// The writes.

const SAVE = "POST /configs";

/**
 * POST /configs: the app (visible), by a writer; a name no config of it has (removed ones aside) makes a config at
 * revision 1, deploying nothing; a taken one, with overwrite or while its latest params are {}, its next revision,
 * deployed to production; else a 400.
 */
function predictSave(request: SaveRequest, holder: Holder, model: Model, answer: Answer): Check {
  const app = model.visibleApp(holder, request.appId);
  if (!app) {
    count(SAVE, "404: no app");
    return refusedWithOneOf(answer, [[404, APP_NOT_FOUND]]);
  }
  if (model.role(holder, app.id) === "viewer") {
    count(SAVE, "403: a viewer");
    return refusedWithOneOf(answer, [[403, FORBIDDEN]]);
  }
  const variant = model.variantsOf(app.id).find((row) => row.name === request.configName);
  if (!variant) {
    count(
      SAVE,
      model.everyVariantOf(app.id).some((row) => row.removed_name === request.configName) ? "made over a removed one" : "made",
    );
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: null });
    return expectNewConfig(model, holder, app, request.configName, request);
  }
  const latest = model.latest(variant.id)!;
  const empty = Object.keys(JSON.parse(latest.params)).length === 0;
  if (!request.overwrite && !empty) {
    count(SAVE, "400: taken");
    return refusedWithOneOf(answer, [[400, NAME_TAKEN]]);
  }
  count(SAVE, request.overwrite ? "overwritten and deployed" : "{} overwritten and deployed without overwrite");
  expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: null });
  const production = model.environmentsOf(app.id).find((row) => row.name === "production")!;
  return expectCommitted(model, holder, variant, latest, request, production);
}

const FROM_BASE = "POST /variants/from-base";

/** POST /variants/from-base: the app (visible), by a writer, a name no config of it has: its AppVariant at revision 1. */
function predictFromBase(request: FromBaseRequest, holder: Holder, model: Model, answer: Answer): Check {
  const app = model.visibleApp(holder, request.appId);
  if (!app) {
    count(FROM_BASE, "404: no app");
    return refusedWithOneOf(answer, [[404, APP_NOT_FOUND]]);
  }
  if (model.role(holder, app.id) === "viewer") {
    count(FROM_BASE, "403: a viewer");
    return refusedWithOneOf(answer, [[403, FORBIDDEN]]);
  }
  if (model.variantsOf(app.id).some((row) => row.name === request.configName)) {
    count(FROM_BASE, "400: taken");
    return refusedWithOneOf(answer, [[400, CONFIG_EXISTS]]);
  }
  count(
    FROM_BASE,
    model.everyVariantOf(app.id).some((row) => row.removed_name === request.configName) ? "made over a removed one" : "made",
  );
  expect(answer.status).toBe(200);
  return expectNewConfig(model, holder, app, request.configName, request, (variantId, after) => {
    expect(answer.body).toEqual(after.appVariant(after.variants.get(variantId)!));
  });
}

const PARAMETERS = "PUT /variants/:variant_id/parameters";

/**
 * PUT /variants/{variant_id}/parameters: the variant (visible, not removed), by a writer: its next revision holds the
 * params, url kept. A removed one is not found (a viewer may be told 403: the contract does not order them).
 */
function predictParameters(request: Params & { variantId: string }, holder: Holder, model: Model, answer: Answer): Check {
  const variant = model.variants.get(request.variantId);
  const role = variant && model.role(holder, variant.app_id);
  if (!variant || !role) {
    count(PARAMETERS, "404: no variant");
    return refusedWithOneOf(answer, [[404, VARIANT_NOT_FOUND]]);
  }
  if (!model.liveVariant(variant.id)) {
    count(PARAMETERS, "404: removed");
    return refusedWithOneOf(answer, [
      [404, VARIANT_NOT_FOUND],
      ...(role === "viewer" ? [[403, FORBIDDEN] as [number, string]] : []),
    ]);
  }
  if (role === "viewer") {
    count(PARAMETERS, "403: a viewer");
    return refusedWithOneOf(answer, [[403, FORBIDDEN]]);
  }
  count(PARAMETERS, "committed");
  expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: null });
  return expectCommitted(model, holder, variant, model.latest(variant.id)!, request);
}

/**
 * The variant path segment: a variant (one the caller can see twice as often; a removed one a third of the time), or
 * ("gone") a removed one at least as often as an id of another kind (a variant revision's, an app's); upper-cased, too
 * long, random; written one way or another.
 */
const variantSegment = fc.record({ choice: segmentChoice, pick: idChoice });
function variantPath(model: Model, { choice, pick }: { choice: SegmentChoice; pick: IdChoice }, holder: Holder | undefined) {
  const appOf = (id: string) => model.variants.get(id)!.app_id;
  const [live, removed] = [true, false].map((alive) =>
    [...model.variants.values()].filter((row) => (row.removed_at === null) === alive).map((row) => row.id),
  );
  const others = [...model.revisions.keys(), ...model.apps.keys()];
  const times = Math.max(1, Math.floor(others.length / Math.max(1, removed.length)));
  const gone = [
    ...Array<string[]>(times)
      .fill(visibleFirst(model, holder, removed, appOf))
      .flat(),
    ...others,
  ];
  const known = [live, live, removed].flatMap((ids) => visibleFirst(model, holder, ids, appOf));
  return segmentOf(choice, chooseId(pick, known, gone));
}

describe("fuzzing DELETE /variants/{variant_id}", () => {
  const runs = RUNS;
  const label = "DELETE /variants/:variant_id";
  it(
    `answers ${runs} generated requests as documented, and removes exactly the variant a 200 names, history kept`,
    async () => {
      const { world, db } = fuzzing;
      const route = "/variants/:variant_id";
      let replanted = 0;
      await fuzz(
        label,
        REPLAY,
        requestInput(world, { variant: variantSegment }),
        async ({ auth, variant, slash, extra }) => {
          const model = db.model;
          const segment = variantPath(model, variant, auth.holder);
          const path = `/variants/${segment.raw}${slash ? "/" : ""}`;
          const response = await send("DELETE", path, { headers: headersOf(auth, extra) });
          const changed = await db.changes();
          const answer = await routedAnswer(response, { path, route, auth }, z.null());
          const [variantId] = certainParameters(segment) ?? [];
          if (!answer || variantId === undefined) {
            if (response.status !== 200) unchanged(changed);
            return response.status;
          }
          const verdict = new Verdict();
          verdict.field(["path", "variant_id"], uuidValidity(variantId));
          if (!verdict.accepted(response.status, answer.body)) {
            unchanged(changed);
            return response.status;
          }
          // Not visible, or removed already: 404; a viewer: 403; running somewhere: 409 naming where; else removed.
          const id = variantId.toLowerCase();
          const target = model.liveVariant(id);
          const role = target && model.role(answer.holder, target.app_id);
          const runsIn = target ? model.environmentsOf(target.app_id).filter((row) => row.deployed_app_variant_id === id) : [];
          const { status } = response;
          const { body } = answer;
          if (!target || !role) {
            const removed = model.variants.get(id);
            count(label, removed && model.role(answer.holder, removed.app_id) ? "404: removed" : "404: no variant");
            expectDetail(status, body, 404, VARIANT_NOT_FOUND);
          } else if (role === "viewer") {
            count(label, "403: a viewer");
            expectDetail(status, body, 403, FORBIDDEN);
          } else if (runsIn.length > 0) {
            count(label, "409: deployed");
            const names = runsIn.map((row) => row.name).join(", ");
            expectDetail(
              status,
              body,
              409,
              `Variant is deployed to ${names}: deploy another variant there first, then remove this one`,
            );
          } else {
            count(label, "removed");
            expect({ status, body }).toEqual({ status: 200, body: null });
            // The row stays (its revisions are history): removed now, its name moved aside for a tombstone; with its
            // event, config.removed.
            const after = {
              ...target,
              name: `\u0001${id}`,
              removed_at: expect.stringMatching(TIMESTAMP),
              removed_name: target.name,
            };
            const app = model.apps.get(target.app_id)!;
            const removal = appEvent(model, answer.holder, "config.removed", app, { config_name: target.name, variant_id: id });
            expect(expectEvents(changed, removal)).toEqual({ app_variants: { added: [after], removed: [target] } });
            // A new config in its place, so that removals keep finding configs; the name it had stays free (for the
            // saves below to take again).
            const again = { base_id: app.id, new_variant_name: "x", new_config_name: `replanted-${replanted}`, parameters: {} };
            const made = await send("POST", "/variants/from-base", { key: writerOf(world, app.project_id).key, body: again });
            expect({ status: made.status, revision: ((await made.json()) as { revision?: number }).revision }).toEqual({
              status: 200,
              revision: 1,
            });
            replanted += 1;
            await db.changes();
            return response.status;
          }
          unchanged(changed);
          return response.status;
        },
        [200, 401, 403, 404, 409, 422],
        runs,
      );
      expectOutcomes(label, ["404: no variant", "404: removed", "403: a viewer", "409: deployed", "removed"]);
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("fuzzing POST /variants/from-base", () => {
  // The file's first property with Idempotency-Key, its ledger empty at first: a key kept by an API key is reused only
  // by a request to the same shard (fuzz-posts.ts), so 500 runs saw a reused key's 422 about 4 times (9 on one shard),
  // too few to be sure of one; 1,000, about 17.
  const runs = RUNS;
  it(
    `answers ${runs} generated requests as documented, and makes exactly the config the oracle says`,
    async () => {
      const fields = ["base_id", "new_variant_name", "new_config_name", "parameters"] as const;
      await fuzzPost(fuzzing, REPLAY, "/variants/from-base", {
        parts: { body: bodyPart(fields, fuzzing.db.model) },
        plan: ({ body, slash, auth }, model) => ({
          path: `/variants/from-base${slash ? "/" : ""}`,
          body: "plan" in body ? plannedBody(body.plan, model, auth.holder, "new_config_name") : body.spec.body,
        }),
        read: ({ body, type: [, isJsonType] }) => readFromBase(body, isJsonType),
        routedBy: ({ appId }) => [appId],
        predict: predictFromBase,
        ok: AppVariantBody,
        keeps: true,
        mustSee: [200, 400, 401, 403, 404, 413, 415, 422],
        runs,
      });
      expectOutcomes(FROM_BASE, ["404: no app", "403: a viewer", "made", "made over a removed one", "400: taken"]);
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("fuzzing POST /configs", () => {
  it(
    `answers ${RUNS} generated requests as documented, and writes (and deploys) exactly what the oracle says`,
    async () => {
      const fields = ["base_id", "config_name", "parameters", "overwrite"] as const;
      await fuzzPost(fuzzing, REPLAY, "/configs", {
        parts: { body: bodyPart(fields, fuzzing.db.model) },
        plan: ({ body, slash, auth }, model) => ({
          path: `/configs${slash ? "/" : ""}`,
          body: "plan" in body ? plannedBody(body.plan, model, auth.holder, "config_name") : body.spec.body,
        }),
        read: ({ body, type: [, isJsonType] }) => readSave(body, isJsonType),
        routedBy: ({ appId }) => [appId],
        predict: predictSave,
        ok: z.null(),
        keeps: true,
        mustSee: [200, 400, 401, 403, 404, 413, 415, 422],
      });
      expectOutcomes(SAVE, [
        "404: no app",
        "403: a viewer",
        "made",
        "made over a removed one",
        "400: taken",
        "overwritten and deployed",
        "{} overwritten and deployed without overwrite",
      ]);
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("fuzzing PUT /variants/{variant_id}/parameters", () => {
  const runs = runsShare(1 / 2);
  it(
    `answers ${runs} generated requests as documented, and commits exactly what the oracle says`,
    async () => {
      await fuzzPost(fuzzing, REPLAY, "/variants/:variant_id/parameters", {
        method: "PUT",
        parts: { variant: variantSegment, body: bodyPart(["parameters"], fuzzing.db.model) },
        plan: ({ variant, body, slash, auth }, model) => {
          const segment = variantPath(model, variant, auth.holder);
          return {
            path: `/variants/${segment.raw}/parameters${slash ? "/" : ""}`,
            body: "plan" in body ? plannedBody(body.plan, model, auth.holder) : body.spec.body,
            parameters: certainParameters(segment),
          };
        },
        read: ({ body, type: [, isJsonType], parameters }) => {
          const { verdict, fields, text } = readObject(body, isJsonType);
          const [id] = parameters ?? [];
          if (id === undefined) {
            // An encoding that leaves the id uncertain: refused, or read one way or another.
            verdict.possible.push({ status: 422, loc: ["path", "variant_id"] });
            verdict.unpredictable = true;
          } else verdict.field(["path", "variant_id"], uuidValidity(id));
          const params = fields && readParameters(verdict, fields, text);
          return { verdict, request: id !== undefined && params ? { variantId: id.toLowerCase(), ...params } : undefined };
        },
        routedBy: ({ variantId }) => [variantId],
        predict: predictParameters,
        ok: z.null(),
        keeps: true,
        mustSee: [200, 400, 401, 403, 404, 413, 415, 422],
        runs,
      });
      expectOutcomes(PARAMETERS, ["404: no variant", "404: removed", "403: a viewer", "committed"]);
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// The reads, after the writes: the world then holds the configs saved, the production deploys and the removals.

/** An app id query parameter (left out 1 time in 12), chosen when the request is made by `appQueryPart`. */
const appQuery = fc.option(fc.record({ choice: segmentChoice, pick: idChoice }), { nil: undefined, freq: 12 });

/** The app id: an app (one the caller can see twice as often), or an id of another kind, upper-cased, ... */
const appQueryPart = (
  name: string,
  plan: { choice: SegmentChoice; pick: IdChoice } | undefined,
  model: Model,
  holder: Holder | undefined,
): QueryPart | undefined => {
  if (!plan) return undefined;
  const id = chooseId(plan.pick, visibleFirst(model, holder, [...model.apps.keys()]), notAppIds(model));
  return { name, value: segmentOf(plan.choice, id) };
};

describe("fuzzing GET /configs", () => {
  it(
    `answers ${RUNS} generated requests as documented: what an environment runs, or a config's latest revision, to members`,
    async () => {
      const { world, db } = fuzzing;
      const model = db.model;
      const environments = fc.oneof(
        { arbitrary: fc.constantFrom(...DEFAULT_ENVIRONMENTS), weight: 8 },
        { arbitrary: fc.constantFrom("Production", "qa", " staging", "staging ", "", "a".repeat(256), "dev\u0000"), weight: 1 },
        { arbitrary: anyString, weight: 1 },
      );
      // Another name than one the app has or had (chosen when the request is made).
      const otherNames = fc.oneof(
        { arbitrary: fc.constantFrom("nope", "MAIN", "main ", " main", "cafe\u0301", "\u0001", "", " "), weight: 1 },
        { arbitrary: likelyValidName, weight: 1 },
        { arbitrary: anyString, weight: 1 },
      );
      await fuzzRead(world, REPLAY, "/configs", {
        parts: {
          base: appQuery,
          environment: queryPart("environment_name", environments, 2),
          config: fc.option(fc.record({ choice: segmentChoice, kind: fc.nat(9), pick: fc.nat(), other: otherNames }), {
            nil: undefined,
            freq: 4,
          }),
        },
        // A config name mostly of the app base_id names: one it has (6 in 10), one a removed config of it had (2), or another.
        query: ({ base: plan, environment, config }, holder) => {
          const base = appQueryPart("base_id", plan, model, holder);
          if (!config) return [base, environment];
          const app = model.apps.get(base?.value.decoded?.toLowerCase() ?? "");
          const names = !app
            ? []
            : config.kind < 6
              ? model.variantsOf(app.id).map((row) => row.name)
              : config.kind < 8
                ? model.everyVariantOf(app.id).flatMap((row) => row.removed_name ?? [])
                : [];
          const name = names.length > 0 ? names[config.pick % names.length] : config.other;
          const part: QueryPart = { name: "config_name", value: segmentOf(config.choice, name) };
          return [base, environment, part];
        },
        ok: RegistryConfigBody,
        judge: (verdict, _, { base_id, environment_name, config_name }) => {
          const base = base_id === undefined ? false : uuidValidity(base_id);
          verdict.field(["query", "base_id"], base);
          if (environment_name !== undefined)
            verdict.field(["query", "environment_name"], environmentNameIsValid(environment_name));
          if (config_name !== undefined) verdict.field(["query", "config_name"], nameIsValid(config_name));
          // Neither: a 422 naming environment_name (whether it is told along with base_id's, the contract does not say).
          if (environment_name === undefined && config_name === undefined)
            verdict.field(["query", "environment_name"], base === true ? false : undefined);
        },
        // The app (visible); what the environment runs now (it wins), or the config's latest revision: never a
        // removed config's by its name.
        predict: (holder, _, { base_id, environment_name, config_name }, answer) => {
          const application = { slug: null, version: null, id: base_id.toLowerCase() };
          const named = { version: null, id: null };
          const { revision, through } =
            environment_name !== undefined
              ? model.fetched(holder, { application, variant: null, environment: { ...named, slug: environment_name } })
              : model.fetched(holder, {
                  application,
                  variant: { ...named, slug: config_name.normalize("NFC") },
                  environment: null,
                });
          if (!revision) return expectDetail(answer.status, answer.body, 404, CONFIG_NOT_FOUND);
          expect(environment_name === undefined || through !== undefined).toBe(true);
          expect(answer).toEqual({ status: 200, body: model.registryConfig(revision, revision.revision) });
        },
      });
      unchanged(await db.changes());
    },
    TIMEOUT,
  );
});

describe("fuzzing GET /configs/deployment/{deployment_revision_id}", () => {
  const runs = runsShare(1 / 2);
  it(
    `answers ${runs} generated requests as documented: what an environment revision deployed, removed configs' too`,
    async () => {
      const { world, db } = fuzzing;
      const model = db.model;
      const appOf = (id: string) => model.environments.get(model.environmentRevisions.get(id)!.environment_id)!.app_id;
      const others = [...model.revisions.keys(), ...model.variants.keys(), ...model.apps.keys()];
      await fuzzRead(world, REPLAY, "/configs/deployment/:deployment_revision_id", {
        parts: { revision: fc.record({ choice: segmentChoice, pick: idChoice }) },
        segments: ({ revision }, holder) => [
          segmentOf(
            revision.choice,
            chooseId(revision.pick, visibleFirst(model, holder, [...model.environmentRevisions.keys()], appOf), others),
          ),
        ],
        ok: RegistryConfigBody,
        runs,
        predict: (holder, [id], _, answer) => {
          const environment = { slug: null, version: null, id: id.toLowerCase() };
          const { revision, through } = model.fetched(holder, { application: null, variant: null, environment });
          if (!revision || !through) return expectDetail(answer.status, answer.body, 404, CONFIG_NOT_FOUND);
          expect(answer).toEqual({ status: 200, body: model.registryConfig(revision, through.revision) });
        },
      });
      unchanged(await db.changes());
    },
    TIMEOUT,
  );
});

describe("fuzzing GET /bases", () => {
  const runs = runsShare(1 / 2);
  it(
    `answers ${runs} generated requests as documented: an app's one base "app", to members only`,
    async () => {
      const { world, db } = fuzzing;
      const model = db.model;
      const names = fc.oneof(
        { arbitrary: fc.constant("app"), weight: 4 },
        { arbitrary: fc.constantFrom("App", "app ", " app", "", "apps", "app.main", "base", "%61pp"), weight: 2 },
        { arbitrary: anyString, weight: 1 },
      );
      await fuzzRead(world, REPLAY, "/bases", {
        parts: { app: appQuery, name: queryPart("base_name", names, 2) },
        query: ({ app, name }, holder) => [appQueryPart("app_id", app, model, holder), name],
        ok: BasesBody,
        runs,
        // Any string is a base name; only "app" names the base.
        judge: (verdict, _, { app_id }) =>
          verdict.field(["query", "app_id"], app_id === undefined ? false : uuidValidity(app_id)),
        predict: (holder, _, { app_id, base_name }, answer) => {
          const app = model.visibleApp(holder, app_id.toLowerCase());
          if (!app) return expectDetail(answer.status, answer.body, 404, APP_NOT_FOUND);
          const bases = base_name === undefined || base_name === "app" ? [{ base_id: app.id, base_name: "app" }] : [];
          expect(answer).toEqual({ status: 200, body: bases });
        },
      });
      unchanged(await db.changes());
    },
    TIMEOUT,
  );
});

describe("cases found by fuzzing", () => {
  /** A valid body text but for one more field, unknown (so ignored), holding arrays nested `depth` levels deep. */
  const besideDeep = (fields: Record<string, unknown>, depth = 3000) =>
    `{"unknown":${"[".repeat(depth)}${"]".repeat(depth)},${JSON.stringify(fields).slice(1)}`;

  /** The owner's request with that body text: its status and detail, and the rows it changed. */
  const ownerSends = async (method: string, path: string, body: string) => {
    const response = await send(method, path, {
      key: fuzzing.world.owner.key,
      rawBody: body,
      headers: { "Content-Type": "application/json" },
    });
    return { status: response.status, body: await response.json(), changed: await fuzzing.db.changes() };
  };
  const ownApp = () => [...fuzzing.db.model.apps.values()].find((app) => app.name === "fuzz-own")!;

  // Found by fuzzing PUT /variants/{variant_id}/parameters (seed 1048703047, a body with `"__proto__"` holding arrays
  // 2,600 levels deep beside valid parameters): the routes that keep params as sent parse the body text again with a
  // reviver, which recursed past the stack on such an ignored field (a 500). A body deeper than 1,000 levels is a 422.
  for (const [route, request] of [
    [
      "POST /configs",
      () =>
        ownerSends(
          "POST",
          "/configs",
          besideDeep({ base_id: ownApp().id, config_name: "beside deep", parameters: { a: 1 }, overwrite: true }),
        ),
    ],
    [
      "POST /variants/from-base",
      () =>
        ownerSends(
          "POST",
          "/variants/from-base",
          besideDeep({ base_id: ownApp().id, new_config_name: "beside deep 2", parameters: { a: 1 } }),
        ),
    ],
    [
      "PUT /variants/{variant_id}/parameters",
      () =>
        ownerSends(
          "PUT",
          `/variants/${fuzzing.db.model.variantsOf(ownApp().id)[0].id}/parameters`,
          besideDeep({ parameters: { a: 1 } }),
        ),
    ],
  ] as const) {
    it(`${route}: valid params beside an unknown field 3,000 levels deep: a 422 for the body, nothing written`, async () => {
      const answer = await request();
      expect({ status: answer.status, body: answer.body, changed: answer.changed }).toEqual({
        status: 422,
        body: {
          detail: [{ loc: ["body"], msg: "Value error, the body must not nest deeper than 1000 levels", type: "value_error" }],
        },
        changed: {},
      });
    });
  }
});
