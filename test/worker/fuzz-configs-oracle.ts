import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_ENVIRONMENTS, send } from "./fixtures";
import { ConfigBody, type EnvironmentRow, type Model, plantedWorld, type Ref, type Refs } from "./fuzz-model";
import {
  type Answer,
  BY_KEY,
  type Changes,
  type Check,
  deployed,
  fuzzPost,
  KeyLedger,
  type PostFuzzing,
  type RouteRef,
  refusedWithOneOf,
  type Sent,
  unchanged,
} from "./fuzz-posts";
import {
  anyString,
  appEvent,
  asObject,
  bodySpec,
  deploymentEvent,
  depthOf,
  environmentNameIsValid,
  FORBIDDEN,
  fieldValue,
  type Holder,
  hasLoneSurrogate,
  idStrings,
  lengthWithin,
  likelyValidName,
  MAX_BODY_BYTES,
  MAX_BODY_DEPTH,
  MAX_PARAMS_DEPTH,
  newNameIsValid,
  own,
  type Replay,
  RUNS,
  readJsonBody,
  recording,
  revisionData,
  runsShare,
  TIMEOUT,
  TIMESTAMP,
  uuidValidity,
  type Verdict,
  worldIds,
} from "./fuzz-support";
import { databaseProblems, type ExpectedEvent, expectEvents } from "./harness";

/*
 * The fuzzing of the config registry, POST /variants/configs/{add,commit,fetch,fork,deploy} (run by fuzz-configs.test.ts,
 * fuzz-configs-lookups.test.ts and fuzz-deployments.test.ts), through fuzz-posts.ts's runner: with Idempotency-Key,
 * and If-Match on deploy. Bodies are mostly planned from the database as it is when the request is made (refs
 * that name existing apps, configs, versions and revisions, or nearly), else anything. The oracle reads each body by
 * the contract (docs/LEGACY-API.md), resolves its refs in fuzz-model.ts and predicts the answer and the rows written; after
 * each request the rows that changed must be exactly those.
 */

const MAX_COMMIT_BYTES = 256 * 1024;
const ACTIONS = {
  add: { maxBytes: MAX_BODY_BYTES, fields: ["variant_ref", "application_ref"] },
  commit: {
    maxBytes: MAX_COMMIT_BYTES,
    fields: ["params", "variant_ref", "application_ref", "url", "environment_ref", "config"],
  },
  fetch: { maxBytes: MAX_BODY_BYTES, fields: ["variant_ref", "environment_ref", "application_ref"] },
  fork: { maxBytes: MAX_BODY_BYTES, fields: ["variant_ref", "environment_ref", "application_ref"] },
  deploy: { maxBytes: MAX_BODY_BYTES, fields: ["variant_ref", "environment_ref", "application_ref"] },
} as const;
type Action = keyof typeof ACTIONS;

/**
 * The world the requests are made in, the database as the oracle tracks it, the Idempotency-Keys used (set up by
 * `describeConfigFuzzing`).
 */
export const fuzzing = {} as PostFuzzing;

type Loc = (string | number)[];

// ---------------------------------------------------------------------------------------------------------------
// Reading a body as the contract does.

/** A slug that names an app or a config: a name (NFC); a blank one: no claim. */
const nameSlugValidity = (value: string): boolean | undefined => {
  const name = value.normalize("NFC");
  if (/[\p{Cc}\u2028\u2029]/u.test(name) || hasLoneSurrogate(name) || !lengthWithin(name)) return false;
  return name.trim() === "" ? undefined : true;
};

/** A commit's url by the contract: "" (none), or what a browser opens as an absolute http(s) URL. */
function urlIsValid(url: string): boolean {
  if (url === "") return true;
  if (!/^https?:\/\/[^\s\p{Cc}]+$/iu.test(url) || hasLoneSurrogate(url)) return false;
  try {
    return new URL(url).host !== "";
  } catch {
    return false;
  }
}

/** A version: an integer from 0 to 2^53 - 1 (a larger one is refused as a number); a digit string or a boolean: no claim. */
function versionValidity(verdict: Verdict, version: unknown): boolean | undefined {
  if (typeof version === "number") return Number.isSafeInteger(version) && version >= 0;
  if (typeof version === "boolean" || (typeof version === "string" && /^[0-9]+$/.test(version))) {
    verdict.unpredictable = true; // read as a number, or refused: the contract does not say
    return undefined;
  }
  return false;
}

/**
 * A ref {slug, version, id}: null when absent or all null; "invalid" when a part is (each a 422 at its loc). `names`:
 * an app's or a config's slug (NFC); else an environment's.
 */
function readRef(verdict: Verdict, loc: Loc, value: unknown, names: boolean): Ref | null | "invalid" {
  if (value === undefined || value === null) return null;
  const ref = asObject(value);
  if (!ref) {
    verdict.fail(422, loc);
    return "invalid";
  }
  const [slug, version, id] = [own(ref, "slug") ?? null, own(ref, "version") ?? null, own(ref, "id") ?? null];
  const validity = [
    slug === null || (typeof slug === "string" && (names ? nameSlugValidity(slug) : environmentNameIsValid(slug))),
    version === null || versionValidity(verdict, version),
    id === null || (typeof id === "string" && uuidValidity(id)),
  ];
  for (const [i, part] of ["slug", "version", "id"].entries()) verdict.field([...loc, part], validity[i]);
  if (validity.includes(false)) return "invalid";
  if (slug === null && version === null && id === null) return null;
  return {
    slug: slug === null ? null : names ? (slug as string).normalize("NFC") : (slug as string),
    version: version as number | null,
    id: id === null ? null : (id as string).toLowerCase(),
  };
}

interface ConfigRequest {
  refs: Refs;
  /** add: the new config's name. */
  configName: string;
  /** commit: the new params and url (null: keep the latest's). */
  params: Record<string, unknown>;
  url: string | null;
}

/**
 * Reads a body by the contract, recording in the verdict where it is invalid (or where the contract is silent); the
 * request it makes when valid.
 */
function readConfigBody(action: Action, verdict: Verdict, value: unknown): ConfigRequest | undefined {
  let body = asObject(value);
  if (!body) {
    verdict.fail(422, ["body"]);
    return undefined;
  }
  // Commit reads its body again for params' numbers, which a body nesting deeper than 1,000 levels anywhere cannot be.
  if (action === "commit" && depthOf(body) > MAX_BODY_DEPTH) verdict.fail(422, ["body"]);
  // Commit's body may come wrapped as {"config": {...}}: where a 422 points inside it is not said.
  const wrapped = action === "commit" && Object.hasOwn(body, "config") && !Object.hasOwn(body, "params");
  if (wrapped) body = asObject(body.config);
  const at = (...path: string[]): Loc => ["body", ...path];
  if (!body) {
    verdict.fail(422, at());
    return undefined;
  }
  const ref = (key: string, names: boolean) => readRef(verdict, at(key), own(body, key), names);
  const application = ref("application_ref", true);
  const variant = action === "add" ? null : ref("variant_ref", true);
  const environment = action === "add" ? null : ref("environment_ref", false);
  const request: ConfigRequest = {
    refs: { application: null, variant: null, environment: null },
    configName: "",
    params: {},
    url: null,
  };
  let valid = ![application, variant, environment].includes("invalid");

  // A ref that names nothing (neither slug nor id) is refused; so is an app that cannot be named.
  for (const [key, parsed] of [
    ["variant_ref", variant],
    ["environment_ref", environment],
    ["application_ref", application],
  ] as const) {
    if (parsed && parsed !== "invalid" && parsed.slug === null && parsed.id === null) {
      // add names its app {slug|id} only: a ref with neither is refused or finds nothing, the contract does not say.
      if (action === "add") verdict.field(at(key), undefined);
      else {
        verdict.fail(422, at(key));
        valid = false;
      }
    }
  }
  if (action === "add") {
    const config = asObject(own(body, "variant_ref"));
    const slug = own(config, "slug");
    // Only the slug is read; other parts of the ref the contract says nothing of.
    for (const part of ["version", "id"]) if (own(config, part) != null) verdict.field(at("variant_ref", part), undefined);
    // A new name: more than a slug that looks one up (docs/design.md, "Choices", `app_name`).
    const validity = !config ? false : newNameIsValid(slug);
    verdict.field(at("variant_ref", ...(config ? ["slug"] : [])), validity);
    if (!application) verdict.fail(422, at("application_ref"));
    if (validity === false || !application) valid = false;
    request.configName = typeof slug === "string" ? slug.normalize("NFC") : "";
  } else if (!application) {
    // The app must be named unless a ref names a revision by id: the variant ref, or (where the route reads it, all
    // but commit) the environment ref; a deploy without a variant ref is refused for that already.
    const hasId = (ref: typeof variant) => ref !== "invalid" && ref?.id != null;
    const byId = hasId(variant) || (action !== "commit" && hasId(environment));
    const undetermined =
      (!byId && (variant === "invalid" || (action !== "commit" && environment === "invalid"))) ||
      (action === "deploy" && !variant);
    if (undetermined) verdict.field(at("application_ref"), undefined);
    else if (!byId) {
      verdict.fail(422, at("application_ref"));
      valid = false;
    }
  }
  if (action === "commit") {
    if (!variant) verdict.fail(422, at("variant_ref"));
    let params = asObject(own(body, "params"));
    if (params && depthOf(params) > MAX_PARAMS_DEPTH) params = undefined;
    if (!params) verdict.fail(422, at("params"));
    const url = own(body, "url") ?? null;
    // A url is "" or an absolute http(s) URL without spaces or controls; over 2048 characters, the contract is silent.
    const urlValidity = url === null || (typeof url === "string" && urlIsValid(url) && (url.length <= 2048 || undefined));
    verdict.field(at("url"), urlValidity);
    if (!variant || !params || urlValidity === false) valid = false;
    request.params = params ?? {};
    request.url = typeof url === "string" ? url : null;
  }
  if (action === "deploy") {
    // Both refs are required. An environment ref's version the contract says nothing of for a deploy.
    if (!variant) verdict.fail(422, at("variant_ref"));
    if (!environment) verdict.fail(422, at("environment_ref"));
    if (environment && environment !== "invalid" && environment.version !== null) verdict.unpredictable = true;
    if (!variant || !environment) valid = false;
  }
  if (wrapped) verdict.coarsen(["body"]);
  if (!valid) return undefined;
  request.refs = {
    application: application as Ref | null,
    variant: variant as Ref | null,
    environment: environment as Ref | null,
  };
  return request;
}

// ---------------------------------------------------------------------------------------------------------------
// Planning bodies from the database as it is when the request is made.

/** How one part of a ref is written: left out, null, one of the values that fit (mostly) or that do not, or anything. */
type PartPlan = "absent" | "null" | { pick: number } | { value: unknown };
interface RefPlan {
  form: "absent" | "null" | "object" | "not an object";
  naming: "slug" | "id" | "both" | "neither";
  slug: PartPlan;
  version: PartPlan;
  id: PartPlan;
  other: unknown;
}

/** Weighted choices, leaving out those of weight 0. */
export const weighted = <T>(...choices: [fc.Arbitrary<T>, number][]) =>
  fc.oneof(...choices.filter(([, weight]) => weight > 0).map(([arbitrary, weight]) => ({ arbitrary, weight })));

/** A part: given (out of 7) `present` times, else left out; with `messy`, also null or anything. */
const partPlan = (anything: fc.Arbitrary<unknown>, present: number, messy: number) =>
  weighted<PartPlan>(
    [fc.constant("absent"), 7 - present],
    [fc.constant("null"), messy],
    [fc.nat(9).map((pick) => ({ pick })), present],
    [anything.map((value) => ({ value })), messy],
  );

const notVersions = fc.constantFrom<unknown>(-1, 1.5, "1", true, 2 ** 53, 1e308, "latest", [], {});

/**
 * A ref: an object (or, out of 8, `absent` times none) that names things of the focused app, or nearly: by slug, by
 * id or both (with `messy`, by neither), with a version (out of 7) `version` times.
 */
const refPlan = (absent: number, version: number, messy: number) =>
  fc.record({
    form: weighted<RefPlan["form"]>(
      [fc.constant("object"), 8 - absent],
      [fc.constant("absent"), absent],
      [fc.constantFrom("null", "not an object"), messy],
    ),
    naming: weighted<RefPlan["naming"]>(
      [fc.constant("slug"), 4],
      [fc.constant("id"), 3],
      [fc.constant("both"), 1],
      [fc.constant("neither"), messy],
    ),
    slug: partPlan(fc.oneof(anyString, likelyValidName), 7, messy),
    version: partPlan(notVersions, version, messy),
    id: partPlan(fc.oneof(anyString, fc.uuid()), 7, messy),
    other: fc.oneof(anyString, fc.constantFrom<unknown>(1, true, [], ["main"])),
  });

/** Values that fit the focused app (picked 7 times in 10), and values of the same kind that do not. */
type Pool<T> = [fitting: T[], other: T[]];
const pick = <T>([fitting, other]: Pool<T>, n: number): T | undefined => {
  const pool = n < 7 && fitting.length > 0 ? fitting : other.length > 0 ? other : fitting;
  return pool[n % pool.length];
};

/** A ref's JSON as planned: `versions` are those around the latest of what its slug or id names. */
function refJson(
  plan: RefPlan,
  slugs: Pool<string>,
  ids: Pool<string>,
  versions: (slug: unknown, id: unknown) => number[],
): unknown {
  if (plan.form === "absent") return undefined;
  if (plan.form === "null") return null;
  if (plan.form === "not an object") return plan.other;
  const part = <T>(partPlan: PartPlan, pool: Pool<T>) =>
    partPlan === "absent"
      ? undefined
      : partPlan === "null"
        ? null
        : "value" in partPlan
          ? partPlan.value
          : pick(pool, partPlan.pick);
  const slug = ["slug", "both"].includes(plan.naming) ? part(plan.slug, slugs) : undefined;
  const id = ["id", "both"].includes(plan.naming) ? part(plan.id, ids) : undefined;
  const version = part(plan.version, [versions(slug, id), [0, 1, 2]]);
  return { slug, version, id };
}

/** Versions around a latest one (the latest most often): the latest, the one before, the next, 0, 1. */
const around = (latest: number) => [latest, latest, latest, latest - 1, latest + 1, 0, 1].filter((version) => version >= 0);

/**
 * The versions around the latest of what a ref names: by its id (`byId`: a revision's id to its variant's or
 * environment's), else by its slug; `latest` of that.
 */
const aroundLatest =
  (byId: (id: string) => string | undefined, bySlug: (slug: unknown) => string | undefined, latest: (named: string) => number) =>
  (slug: unknown, id: unknown) => {
    const named = typeof id === "string" ? byId(id.toLowerCase()) : bySlug(slug);
    return around(named ? latest(named) : 1);
  };

/** The refs' values that fit app `focus` of the database as it is, and values of the same kinds that do not. */
function pools(model: Model, focus: number, holder: Holder | undefined) {
  const apps = [...model.apps.values()];
  // The focus is mostly an app of the key's project (where slugs are looked up), or one the caller can see.
  const inProject = apps.filter((app) => app.project_id === holder?.keyProjectId);
  const visible = apps.filter((app) => holder && model.role(holder, app.id));
  const candidates = [inProject, inProject, visible, visible, apps][focus % 5];
  const app = (candidates.length > 0 ? candidates : apps)[Math.floor(focus / 5) % (candidates.length || apps.length)];
  const others = apps.filter((other) => other.id !== app.id);
  const variants = model.variantsOf(app.id);
  // Removed variants' revisions too: they are still reached by their ids.
  const revisions = model.everyVariantOf(app.id).flatMap((variant) => model.revisionsOf(variant.id));
  const environments = model.environmentsOf(app.id);
  const environmentRevisions = environments.flatMap((environment) => model.environmentRevisionsOf(environment.id));
  const otherRevisions = [...model.revisions.values()].filter((revision) => !revisions.includes(revision));
  const otherEnvironmentRevisions = [...model.environmentRevisions.values()].filter((row) => !environmentRevisions.includes(row));
  const configNames = variants.map((variant) => variant.name);
  return {
    focus: app,
    app: {
      slugs: [[app.name], others.map((other) => other.name)] as Pool<string>,
      ids: [[app.id], [...others.map((other) => other.id), revisions[0]?.id ?? app.id]] as Pool<string>,
    },
    variant: {
      slugs: [
        configNames,
        ["nope", "MAIN", ...others.flatMap((other) => model.variantsOf(other.id).map((variant) => variant.name))],
      ] as Pool<string>,
      ids: [
        revisions.map((row) => row.id),
        [...otherRevisions.map((row) => row.id), ...environmentRevisions.map((row) => row.id), app.id],
      ] as Pool<string>,
      versions: aroundLatest(
        (id) => model.revisions.get(id)?.variant_id,
        (slug) => variants.find((variant) => variant.name === slug)?.id,
        (variantId) => model.latest(variantId)!.revision,
      ),
    },
    environment: {
      slugs: [[...DEFAULT_ENVIRONMENTS], ["qa", "Production", "production ", "%"]] as Pool<string>,
      ids: [
        environmentRevisions.map((row) => row.id),
        [...otherEnvironmentRevisions.map((row) => row.id), ...revisions.map((row) => row.id)],
      ] as Pool<string>,
      versions: aroundLatest(
        (id) => model.environmentRevisions.get(id)?.environment_id,
        (slug) => environments.find((row) => row.name === slug)?.id,
        (environmentId) => model.environments.get(environmentId)!.revision,
      ),
    },
    configNames,
  };
}

/** Params: an object (its keys may be prototype names or repeat: the last wins, as JSON.parse says); `messy`: or not. */
export const paramsPlan = (messy: number) =>
  weighted<unknown>(
    [
      fc
        .array(
          fc.tuple(
            fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("__proto__", "constructor", "", "' OR 1=1 --")),
            fc.jsonValue({ maxDepth: 2, depthSize: "xsmall" }),
          ),
          { maxLength: 6 },
        )
        .map((entries) =>
          JSON.parse(`{${entries.map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`).join(",")}}`),
        ),
      8,
    ],
    // Large params: a commit may carry 256 KiB (other bodies 16 KiB); kept few and small below it, since every row stored
    // is read again after each request.
    [
      fc
        .oneof(
          { arbitrary: fc.integer({ min: 16_500, max: 17_000 }), weight: 1 },
          { arbitrary: fc.integer({ min: MAX_COMMIT_BYTES, max: MAX_COMMIT_BYTES + 4_000 }), weight: 3 },
        )
        .map((n) => ({ prompt: "y".repeat(n) })),
      1,
    ],
    [fc.constantFrom<unknown>(undefined, null, [], "params", 1, [{ a: 1 }]), messy],
  );

const urlPlan = (messy: number) =>
  weighted<unknown>(
    [fc.constant(undefined), 4],
    [fc.constant(null), 1],
    [fc.webUrl(), 4],
    [fc.constantFrom("", "x".repeat(3000), "a\ud800b", "\udc00", "a\u0000b", "' OR 1=1 --", "https://x.test/\u{1f600}"), 1],
    [fc.constantFrom<unknown>(1, true, {}, []), messy],
  );

/**
 * A body planned for an action: its refs (a deploy's own: both refs given, mostly, the environment's without a
 * version); for add the new config's name; for commit params, url and wrapping.
 */
const bodyPlan = (messy: number) =>
  fc.record({
    focus: fc.nat(),
    application: refPlan(messy, messy, messy),
    variant: refPlan(3, 2, messy),
    environment: refPlan(5, 2, messy),
    source: refPlan(messy, 2, messy),
    target: refPlan(messy, 0, messy),
    configName: weighted<{ pick: number } | { value: unknown }>(
      [fc.nat(9).map((n) => ({ pick: n })), 2],
      [
        fc.oneof(likelyValidName, fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 10 })).map((value) => ({ value })),
        6,
      ],
      [fc.oneof(anyString, fc.constantFrom<unknown>(null, 1, [])).map((value) => ({ value })), messy],
    ),
    params: paramsPlan(messy),
    url: urlPlan(messy),
    wrapped: fc.nat(4).map((n) => n === 0),
    service: fc.option(fc.jsonValue({ maxDepth: 2 }), { freq: 8 }),
  });
type PlanValue = typeof bodyPlan extends (messy: number) => fc.Arbitrary<infer T> ? T : never;
/** Mostly clean plans (every part a value that fits, or nearly), some messy ones. */
const bodyPlans = fc.oneof({ arbitrary: bodyPlan(0), weight: 4 }, { arbitrary: bodyPlan(1), weight: 1 });

/** Large params stand in for a large body where a body has no params (over 16 KiB: a 413). */
const padding = (plan: PlanValue) =>
  typeof plan.params === "object" && plan.params !== null && "prompt" in plan.params ? { pad: plan.params } : {};

/**
 * The body a plan makes of the database as it is now; for a deploy, the environment it most likely targets (that its
 * environment ref names, by a revision's id or in the focused app by name), which If-Match is then mostly about.
 */
function plannedBody(
  action: Action,
  plan: PlanValue,
  model: Model,
  holder: Holder | undefined,
): { body: string; target?: EnvironmentRow } {
  const at = pools(model, plan.focus, holder);
  const application = refJson(plan.application, at.app.slugs, at.app.ids, () => [0]);
  if (action === "add") {
    const slug = "pick" in plan.configName ? pick([at.configNames, ["main"]], plan.configName.pick) : plan.configName.value;
    const forms = { absent: undefined, null: null, "not an object": plan.variant.other, object: { slug } };
    return { body: JSON.stringify({ variant_ref: forms[plan.variant.form], application_ref: application, ...padding(plan) }) };
  }
  const deploying = action === "deploy";
  const environment = refJson(
    deploying ? plan.target : plan.environment,
    at.environment.slugs,
    at.environment.ids,
    at.environment.versions,
  );
  const refs = {
    application_ref: application,
    variant_ref: refJson(deploying ? plan.source : plan.variant, at.variant.slugs, at.variant.ids, at.variant.versions),
    environment_ref: environment,
  };
  if (deploying) {
    const { slug, id } = (asObject(environment) ?? {}) as { slug?: unknown; id?: unknown };
    const revision = typeof id === "string" ? model.environmentRevisions.get(id) : undefined;
    const target = revision
      ? model.environments.get(revision.environment_id)
      : model.environmentsOf(at.focus.id).find((row) => row.name === slug);
    return { body: JSON.stringify({ ...refs, ...padding(plan) }), target };
  }
  if (action !== "commit") return { body: JSON.stringify({ ...refs, ...padding(plan) }) };
  const config = { ...refs, params: plan.params, url: plan.url, service_ref: plan.service ?? undefined };
  return { body: JSON.stringify(plan.wrapped ? { config } : config) };
}

/** Bodies of any kind, for the fields of an action (refs of known names and ids, or anything). */
function unplannedBody(action: Action, model: Model) {
  const ids = [...worldIds(fuzzing.world), ...model.apps.keys(), ...model.revisions.keys(), ...model.environmentRevisions.keys()];
  const names = [
    ...[...model.apps.values()].map((app) => app.name),
    ...[...model.variants.values()].map((variant) => variant.name),
    ...DEFAULT_ENVIRONMENTS,
  ];
  const ref = fc.record(
    {
      slug: fc.oneof(fc.constantFrom(...names), likelyValidName, anyString),
      version: fc.oneof(fc.nat(4), notVersions),
      id: fc.oneof(idStrings(ids), anyString),
    },
    { requiredKeys: [] },
  );
  const value = fc.oneof({ arbitrary: ref, weight: 3 }, { arbitrary: fieldValue(ids), weight: 1 });
  const { fields, maxBytes } = ACTIONS[action];
  const structured = fc
    .tuple(
      fc.record(Object.fromEntries(fields.map((field) => [field, field === "params" ? paramsPlan(1) : value])), {
        requiredKeys: [],
      }),
      fc.dictionary(anyString, fieldValue(ids), { maxKeys: 2 }),
    )
    .map(([known, extra]) => JSON.stringify({ ...extra, ...known }));
  return bodySpec({ wellFormed: structured, structured, fields, values: value, maxBytes });
}

// ---------------------------------------------------------------------------------------------------------------
// The properties.

/** What a write made: its variant revision, and that revision's variant. */
type Made = { revisionId: string; variantId: string };

/**
 * The Config a 200 answers is the one the database now holds, whose params are `params`; the rows that changed are
 * exactly `rows`, and the event it recorded `event`.
 */
const expectMade =
  (body: unknown, params: unknown, rows: (made: Made) => Changes, event: (made: Made) => ExpectedEvent): Check =>
  (changed, after) => {
    const config = body as { variant_ref: { id: string } };
    const revision = after.revisions.get(config.variant_ref.id);
    expect(revision, "the Config answered is not in the database").toBeDefined();
    expect(body).toEqual(after.config(revision!));
    const made = { revisionId: revision!.id, variantId: revision!.variant_id };
    expect(expectEvents(changed, event(made))).toEqual(rows(made));
    expect(JSON.parse(revision!.params)).toEqual(params);
  };

/**
 * A revision row as a write must make it (its params are checked by `expectMade`): with the slug (12 hex) and
 * project that migrations/0010 gives every revision, and no commit message (the legacy writes take none).
 */
export const newRevision = (id: string, variantId: string, revision: number, holder: Holder, url: string) => ({
  id,
  variant_id: variantId,
  revision,
  modified_by: holder.userId,
  created_at: expect.stringMatching(TIMESTAMP),
  params: expect.any(String),
  url,
  slug: expect.stringMatching(/^[0-9a-f]{12}$/),
  project_id: expect.any(String),
  message: null,
});
/** A variant row as a write must make it. */
export const newVariant = (id: string, appId: string, name: string) => ({
  id,
  app_id: appId,
  name,
  created_at: expect.stringMatching(TIMESTAMP),
  removed_at: null,
  removed_name: null,
  archived_at: null,
});

const CONFIG_NOT_FOUND = "Config not found.";
const ENVIRONMENT_NOT_FOUND = "App environment not found";
/** The 409 of a deploy (or revert) of a removed variant's revision. */
export const VARIANT_REMOVED =
  "This revision belongs to a removed variant, which cannot be deployed again: deploy another config";

/**
 * A deploy: the variant revision the variant ref names, in the app the refs name (by application_ref, else by the
 * variant revision's id), to the environment the environment ref names there, by a writer; never a removed variant's
 * revision (409); If-Match decides last.
 */
function predictDeploy({ refs }: ConfigRequest, holder: Holder, model: Model, answer: Answer): Check {
  // Without an application_ref, a revision id names the app (docs/design.md, "Fetch": the same holds for deploy): the variant
  // ref's, else the environment ref's; a config slug is then looked up in that app.
  const app = model.visibleApp(holder, model.namedApp(holder, refs)?.id);
  const role = app && model.role(holder, app.id);
  const revision = app && model.namedRevision(app.id, refs.variant!);
  const environment = app && model.targetEnvironment(app.id, refs.environment!);
  // Nothing to deploy, or nowhere: 404 (a viewer may be told 403: the contract does not order them).
  const viewer = role === "viewer";
  const forbidden: [number, string][] = viewer ? [[403, FORBIDDEN]] : [];
  if (!app) return refusedWithOneOf(answer, [[404, CONFIG_NOT_FOUND], ...forbidden]);
  if (!environment || !revision) {
    const missing: [number, string][] = [];
    if (!environment) missing.push([404, ENVIRONMENT_NOT_FOUND]);
    if (!revision) missing.push([404, CONFIG_NOT_FOUND]);
    return refusedWithOneOf(answer, [...missing, ...forbidden]);
  }
  if (viewer) return refusedWithOneOf(answer, forbidden);
  // A removed variant's revision is never deployed again, whatever If-Match says.
  if (model.isRemovedRevision(revision)) return refusedWithOneOf(answer, [[409, VARIANT_REMOVED]]);
  // The Config as the environment now serves it: through its new revision.
  return recording(
    answer.status,
    deployed(answer, holder, environment, revision, {
      tagged: true,
      ok: (made, after) => expect(answer.body).toEqual(after.config(revision, made)),
    }),
    deploymentEvent(model, holder, environment, revision),
  );
}

/** The outcome the contract gives a valid request, from the database before it (`model`); the check of its writes. */
function predict(action: Action, request: ConfigRequest, holder: Holder, model: Model, answer: Answer): Check {
  if (action === "deploy") return predictDeploy(request, holder, model, answer);
  const { refs } = request;
  const { status, body } = answer;
  const notFound = () => refusedWithOneOf(answer, [[404, CONFIG_NOT_FOUND]]);
  /** Nothing there, for a viewer: 404 or 403, the contract does not order them. */
  const notFoundOrForbidden = () =>
    refusedWithOneOf(answer, [
      [404, CONFIG_NOT_FOUND],
      [403, FORBIDDEN],
    ]);
  if (action === "fetch") {
    const { revision, through } = model.fetched(holder, refs);
    if (!revision) return notFound();
    expect({ status, body }).toEqual({ status: 200, body: model.config(revision, through) });
    return unchanged;
  }
  const app = model.visibleApp(holder, model.namedApp(holder, action === "commit" ? { ...refs, environment: null } : refs)?.id);
  if (!app) return notFound();
  const role = model.role(holder, app.id);
  if (action === "add") {
    if (role === "viewer") return refusedWithOneOf(answer, [[403, FORBIDDEN]]);
    if (model.variantsOf(app.id).some((variant) => variant.name === request.configName))
      return refusedWithOneOf(answer, [[400, "Config already exists."]]);
    expect(status).toBe(200);
    return expectMade(
      body,
      {},
      ({ revisionId, variantId }) => ({
        app_variants: { added: [newVariant(variantId, app.id, request.configName)], removed: [] },
        app_variant_revisions: { added: [newRevision(revisionId, variantId, 1, holder, "")], removed: [] },
      }),
      ({ revisionId, variantId }) =>
        appEvent(model, holder, "config.added", app, {
          config_name: request.configName,
          variant_id: variantId,
          revision: 1,
          revision_id: revisionId,
          message: null,
        }),
    );
  }
  if (action === "fork") {
    const { revision: source } = model.fetched(holder, refs);
    // A viewer may be told 404 or 403 when there is nothing to fork: the contract does not order them.
    if (!source && role === "viewer") return notFoundOrForbidden();
    if (!source) return notFound();
    if (role === "viewer") return refusedWithOneOf(answer, [[403, FORBIDDEN]]);
    expect(status).toBe(200);
    // A removed variant's revision is forked under the name it had.
    const configName = model.configName(model.variants.get(source.variant_id)!);
    // <config_name>_<8 hex>; a name too long for that keeps within 255 characters, its start that of the source's.
    const name = [...configName].length <= 246 ? `${configName}_` : [...configName].slice(0, 200).join("");
    const forked = (body as { variant_ref: { slug: string } }).variant_ref.slug;
    expect(forked.startsWith(name) && /_[0-9a-f]{8}$/.test(forked) && lengthWithin(forked)).toBe(true);
    return expectMade(
      body,
      JSON.parse(source.params),
      ({ revisionId, variantId }) => ({
        app_variants: { added: [newVariant(variantId, app.id, forked)], removed: [] },
        app_variant_revisions: { added: [newRevision(revisionId, variantId, 1, holder, source.url)], removed: [] },
      }),
      ({ revisionId, variantId }) =>
        appEvent(model, holder, "config.forked", app, {
          config_name: forked,
          variant_id: variantId,
          revision: 1,
          revision_id: revisionId,
          message: null,
          source_config_name: configName,
          source_revision: source.revision,
        }),
    );
  }
  // commit: the variant the ref names (by a revision's id, or by slug), at the version it says it saw, if it says.
  const variantRef = refs.variant!;
  const byId = variantRef.id !== null ? model.revisions.get(variantRef.id) : undefined;
  const named = variantRef.id !== null ? model.namedRevision(app.id, { ...variantRef, version: null }) : undefined;
  // Never a removed variant: its revisions are read by their ids, but nothing is committed onto them.
  const variant =
    variantRef.id !== null
      ? named && model.liveVariant(named.variant_id)
      : model.variantsOf(app.id).find((row) => row.name === variantRef.slug);
  // A revision id and a version that disagree name nothing, or a stale version: the contract does not say which.
  const disagree = byId !== undefined && variantRef.version !== null && byId.revision !== variantRef.version;
  if (!variant && role === "viewer") return notFoundOrForbidden();
  if (!variant) return notFound();
  if (role === "viewer") return refusedWithOneOf(answer, [[403, FORBIDDEN]]);
  // Status only: the contract gives no 409 message.
  if (disagree) {
    expect([404, 409]).toContain(status);
    return unchanged;
  }
  const latest = model.latest(variant.id)!;
  const saw = variantRef.version ?? byId?.revision ?? null;
  if (saw !== null && saw !== latest.revision) {
    expect(status).toBe(409);
    expect((body as { detail: string }).detail).toMatch(/./);
    return unchanged;
  }
  expect(status).toBe(200);
  return expectMade(
    body,
    request.params,
    ({ revisionId }) => ({
      app_variant_revisions: {
        added: [newRevision(revisionId, variant.id, latest.revision + 1, holder, request.url ?? latest.url)],
        removed: [],
      },
    }),
    ({ revisionId }) =>
      appEvent(model, holder, "config.committed", app, {
        ...revisionData(model, latest),
        revision: latest.revision + 1,
        revision_id: revisionId,
        message: null,
      }),
  );
}

/**
 * What a request names, in the order the app is resolved (docs/design.md, "Fetch", docs/SHARDING.md §3.1): the app's id; else its
 * name, in the key's project; else the variant revision's id, else the environment revision's (which a commit does not
 * read).
 */
const routedBy = (action: Action, { refs }: ConfigRequest): RouteRef[] => [
  refs.application?.id,
  refs.application?.slug != null ? BY_KEY : null,
  refs.variant?.id,
  action === "commit" ? null : refs.environment?.id,
];

/** The statuses each action's generators must reach. */
const MUST_SEE: Record<Action, number[]> = {
  add: [200, 400, 401, 403, 404, 413, 415, 422],
  commit: [200, 400, 401, 403, 404, 409, 413, 415, 422],
  fetch: [200, 400, 401, 404, 413, 415, 422],
  fork: [200, 400, 401, 403, 404, 413, 415, 422],
  deploy: [200, 400, 401, 403, 404, 412, 413, 415, 422],
};

/**
 * Actions whose rarest answer needs more requests than `runs` to be met: twice RUNS for a commit, whose 409 (a version
 * it saw that is no longer the latest) the everyday sample of 500 met only twice.
 */
const RUNS_SHARE: Partial<Record<Action, number>> = { commit: 2 };

/**
 * The fuzzing of `actions`, each its own property of `actionRuns` requests (more where RUNS_SHARE says; fuzz-posts.ts's
 * runner: with Idempotency-Key, and If-Match on deploy), in a world planted for them (the test file's: its storage is
 * its own), request logs silenced.
 */
export function describeConfigFuzzing(actions: Action[], replay: Replay, actionRuns = RUNS) {
  beforeAll(async () => {
    Object.assign(fuzzing, await plantedWorld(), { keys: new KeyLedger() });
  });

  afterAll(() => {
    vi.restoreAllMocks();
  });

  describe.each(actions)("fuzzing POST /variants/configs/%s", (action) => {
    const share = RUNS_SHARE[action];
    const runs = share === undefined ? actionRuns : Math.max(actionRuns, runsShare(share));
    it(
      `answers ${runs} generated requests as documented, and writes exactly what the oracle says`,
      async () => {
        const route = `/variants/configs/${action}`;
        const { maxBytes } = ACTIONS[action];
        await fuzzPost(fuzzing, replay, route, {
          parts: {
            body: fc.oneof(
              { arbitrary: bodyPlans.map((plan) => ({ plan })), weight: 2 },
              { arbitrary: unplannedBody(action, fuzzing.db.model).map((spec) => ({ spec })), weight: 1 },
            ),
          },
          plan: ({ body, slash, auth }, model) => {
            const path = `${route}${slash ? "/" : ""}`;
            return "plan" in body
              ? { path, ...plannedBody(action, body.plan, model, auth.holder) }
              : { path, body: body.spec.body };
          },
          read: ({ body, type: [, isJsonType] }: Sent) => {
            const { verdict, parsed } = readJsonBody(body, isJsonType, maxBytes);
            return { verdict, request: parsed && readConfigBody(action, verdict, parsed.value) };
          },
          routedBy: (request) => routedBy(action, request),
          predict: (request, holder, model, answer) => predict(action, request, holder, model, answer),
          ok: ConfigBody,
          details: { 409: /./ },
          keeps: action !== "fetch",
          ifMatch: action === "deploy",
          mustSee: MUST_SEE[action],
          runs,
        });
        expect(await databaseProblems()).toEqual([]);
      },
      TIMEOUT,
    );
  });
}

/** A config request as the world's owner sends it (the key names the owner's own project), of a body as written. */
export const ownerCalls = (action: Action, body: string) =>
  send("POST", `/variants/configs/${action}`, {
    key: fuzzing.world.owner.key,
    rawBody: body,
    headers: { "Content-Type": "application/json" },
  });

/** The planted app of that name. */
export const appNamed = (name: string) => [...fuzzing.db.model.apps.values()].find((app) => app.name === name)!;
