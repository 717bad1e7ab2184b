import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DEFAULT_ENVIRONMENTS, send } from "./fixtures";
import { appNamed, describeConfigFuzzing, fuzzing, VARIANT_REMOVED } from "./fuzz-configs-oracle";
import { CreatedBody, etagOf, type Model, visibleFirst } from "./fuzz-model";
import { deployed, fuzzPost, refusedWithOneOf, type Sent } from "./fuzz-posts";
import {
  anyString,
  appEvent,
  asObject,
  bodySpec,
  certainParameters,
  chooseId,
  deploymentEvent,
  environmentNameIsValid,
  FORBIDDEN,
  fieldValue,
  idChoice,
  idStrings,
  likelyValidName,
  MAX_BODY_BYTES,
  mayWriteIn,
  newNameIsValid,
  own,
  type Replay,
  readJsonBody,
  recording,
  runsShare,
  segmentChoice,
  segmentOf,
  TIMEOUT,
  TIMESTAMP,
  UUID_V7,
  uuidValidity,
  Verdict,
  worldIds,
} from "./fuzz-support";
import { databaseProblems, expectEvents, withEvents } from "./harness";

/*
 * Generated requests to the deployments, against the real local D1: POST /variants/configs/deploy (its oracle and plans
 * are fuzz-configs-oracle.ts's), POST /environments/deploy and POST /configs/deployment/{id}/revert, each with
 * If-Match and Idempotency-Key; and POST /apps with Idempotency-Key. Each answer is predicted from the request, the
 * caller's role, every row of the database and the keys used so far (fuzz-posts.ts); each deploy or revert must write
 * exactly one deployment, the environment's next revision, and move the environment onto it. Seeds, REPLAY and the
 * runner: fuzz-support.ts.
 */
const REPLAY: Replay = {};

// The file's first property with Idempotency-Key, its ledger empty at first: when a kept key was reused only by a
// request to the same shard, 1,000 runs saw a reused key's 422 about 12 times, once in 16 runs only once (about 20 on
// one shard); 1,500, about 28. A key now names one request over the pool (fuzz-posts.ts), which only adds 422s.
describeConfigFuzzing(["deploy"], REPLAY, runsShare(3 / 2));

const REVERTED = "Environment was reverted to deployment revision successful";

/** Ids of another kind than the one asked for: apps', variants', variant revisions', environments', deployments'. */
const otherIds = (model: Model) => [
  ...model.apps.keys(),
  ...model.variants.keys(),
  ...model.revisions.keys(),
  ...model.environments.keys(),
  ...model.rows.deployments.map((row) => row.id as string),
];

/** Runs of the routes whose requests share most of their paths with POST /variants/configs/deploy's (a share of RUNS). */
const RUNS_SHARED = runsShare(3 / 5);

describe("fuzzing POST /environments/deploy", () => {
  it(
    `answers ${RUNS_SHARED} generated requests as documented, and deploys exactly what the oracle says`,
    async () => {
      const fields = ["environment_name", "variant_id"] as const;
      const model = fuzzing.db.model;
      const ids = [...worldIds(fuzzing.world), ...otherIds(model)];
      const variantIds = idStrings([...model.variants.keys()]);
      const names = fc.oneof(fc.constantFrom(...DEFAULT_ENVIRONMENTS), likelyValidName, anyString);
      const structured = fc
        .tuple(
          fc.record(
            { environment_name: fc.oneof(names, fieldValue(ids)), variant_id: fc.oneof(variantIds, fieldValue(ids)) },
            { requiredKeys: [] },
          ),
          fc.dictionary(anyString, fieldValue(ids), { maxKeys: 2 }),
        )
        .map(([known, extra]) => JSON.stringify({ ...extra, ...known }));
      const planned = fc.record({
        environment: fc.oneof(
          { arbitrary: fc.constantFrom(...DEFAULT_ENVIRONMENTS), weight: 8 },
          { arbitrary: fc.constantFrom("Production", "qa", " staging", "staging ", "a".repeat(256), "", "dev\u0000"), weight: 1 },
        ),
        variant: idChoice,
        // Now and then a body over the limit (a 413).
        pad: fc.oneof(
          { arbitrary: fc.constant(null), weight: 15 },
          { arbitrary: fc.integer({ min: MAX_BODY_BYTES - 100, max: MAX_BODY_BYTES + 900 }), weight: 1 },
        ),
      });
      await fuzzPost(fuzzing, REPLAY, "/environments/deploy", {
        parts: {
          body: fc.oneof(
            { arbitrary: planned.map((plan) => ({ plan })), weight: 3 },
            {
              arbitrary: bodySpec({
                wellFormed: structured,
                structured,
                fields,
                values: fieldValue(ids),
                maxBytes: MAX_BODY_BYTES,
              }),
              weight: 1,
            },
          ),
        },
        plan: ({ body, slash, auth }, model) => {
          const path = `/environments/deploy${slash ? "/" : ""}`;
          if (!("plan" in body)) return { path, body: body.body };
          const variants = visibleFirst(model, auth.holder, [...model.variants.keys()], (id) => model.variants.get(id)!.app_id);
          const variantId = chooseId(body.plan.variant, variants, otherIds(model));
          const variant = model.variants.get(variantId);
          const target = variant && model.environmentsOf(variant.app_id).find((row) => row.name === body.plan.environment);
          const pad = body.plan.pad === null ? {} : { pad: "y".repeat(body.plan.pad) };
          return {
            path,
            body: JSON.stringify({ environment_name: body.plan.environment, variant_id: variantId, ...pad }),
            target,
          };
        },
        read: ({ body, type: [, isJsonType] }: Sent) => {
          const { verdict, parsed } = readJsonBody(body, isJsonType, MAX_BODY_BYTES);
          const request = asObject(parsed?.value);
          if (parsed && !request) verdict.fail(422, ["body"]);
          const [name, id] = fields.map((field) => own(request, field));
          const nameValidity = typeof name === "string" && environmentNameIsValid(name);
          const idValidity = typeof id === "string" ? uuidValidity(id) : false;
          verdict.field(["body", "environment_name"], nameValidity);
          verdict.field(["body", "variant_id"], idValidity);
          if (!request || !nameValidity || idValidity === false) return { verdict };
          return { verdict, request: { name: name as string, variantId: (id as string).toLowerCase() } };
        },
        routedBy: ({ variantId }) => [variantId],
        // The variant (visible, not removed), the environment of that name in its app, a writer; its latest revision
        // deployed.
        predict: ({ name, variantId }, holder, model, answer) => {
          const variant = model.variants.get(variantId);
          const role = variant && model.role(holder, variant.app_id);
          if (!variant || !role) return refusedWithOneOf(answer, [[404, "Variant not found"]]);
          const environment = model.environmentsOf(variant.app_id).find((row) => row.name === name);
          const forbidden: [number, string][] = role === "viewer" ? [[403, FORBIDDEN]] : [];
          const noEnvironment: [number, string][] = environment ? [] : [[404, "App environment not found"]];
          // A removed variant is not found by its id (the contract does not order that and a viewer's 403, nor the two 404s).
          if (!model.liveVariant(variant.id))
            return refusedWithOneOf(answer, [[404, "Variant not found"], ...noEnvironment, ...forbidden]);
          if (!environment) return refusedWithOneOf(answer, [...noEnvironment, ...forbidden]);
          if (role === "viewer") return refusedWithOneOf(answer, forbidden);
          const latest = model.latest(variant.id)!;
          return recording(
            answer.status,
            deployed(answer, holder, environment, latest, { tagged: false, ok: () => expect(answer.body).toBeNull() }),
            deploymentEvent(model, holder, environment, latest),
          );
        },
        ok: z.null(),
        keeps: true,
        ifMatch: true,
        mustSee: [200, 400, 401, 403, 404, 412, 413, 415, 422],
        runs: RUNS_SHARED,
      });
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("fuzzing POST /configs/deployment/{deployment_revision_id}/revert", () => {
  it(
    `answers ${RUNS_SHARED} generated requests as documented, and reverts exactly what the oracle says`,
    async () => {
      const route = "/configs/deployment/:deployment_revision_id/revert";
      await fuzzPost(fuzzing, REPLAY, route, {
        parts: {
          revision: fc.record({ choice: segmentChoice, pick: idChoice }),
          // No body is expected; one sent now and then (it is part of what a retry must repeat).
          body: fc.oneof(
            { arbitrary: fc.constant(undefined), weight: 8 },
            { arbitrary: fc.constantFrom("{}", "null", "x", '{"environment_ref":{"slug":"production"}}'), weight: 1 },
          ),
        },
        plan: ({ revision, body, slash, auth }, model) => {
          const revisions = [...model.environmentRevisions.keys()];
          const known = visibleFirst(model, auth.holder, revisions, (id) => {
            return model.environments.get(model.environmentRevisions.get(id)!.environment_id)!.app_id;
          });
          const segment = segmentOf(revision.choice, chooseId(revision.pick, known, otherIds(model)));
          const reverted = model.environmentRevisions.get(segment.decoded?.toLowerCase() ?? "");
          return {
            path: `/configs/deployment/${segment.raw}/revert${slash ? "/" : ""}`,
            body,
            parameters: certainParameters(segment),
            target: reverted && model.environments.get(reverted.environment_id),
          };
        },
        read: ({ body, parameters }: Sent) => {
          const verdict = new Verdict();
          // A body the contract says nothing of: ignored, or refused.
          if (body !== undefined) verdict.possible.push({ status: 413 }, { status: 415 }, { status: 422, loc: ["body"] });
          const [id] = parameters ?? [];
          if (id === undefined) {
            // An encoding that leaves the id uncertain: refused, or read one way or another.
            verdict.possible.push({ status: 422, loc: ["path", "deployment_revision_id"] });
            verdict.unpredictable = true;
            return { verdict };
          }
          verdict.field(["path", "deployment_revision_id"], uuidValidity(id));
          return { verdict, request: id.toLowerCase() };
        },
        routedBy: (id) => [id],
        // The revision (visible), by a writer: what it deployed, deployed again to its environment; never a removed
        // variant's revision (409, whatever If-Match says).
        predict: (id, holder, model, answer) => {
          const reverted = model.environmentRevisions.get(id);
          const environment = reverted && model.environments.get(reverted.environment_id);
          const role = environment && model.role(holder, environment.app_id);
          const again =
            reverted?.deployed_app_variant_revision_id && model.revisions.get(reverted.deployed_app_variant_revision_id);
          if (!environment || !role || !again) return refusedWithOneOf(answer, [[404, "Deployment revision not found"]]);
          if (role === "viewer") return refusedWithOneOf(answer, [[403, FORBIDDEN]]);
          if (model.isRemovedRevision(again)) return refusedWithOneOf(answer, [[409, VARIANT_REMOVED]]);
          return recording(
            answer.status,
            deployed(answer, holder, environment, again, { tagged: false, ok: () => expect(answer.body).toBe(REVERTED) }),
            deploymentEvent(model, holder, environment, again, reverted.id),
          );
        },
        ok: z.literal(REVERTED),
        keeps: true,
        ifMatch: true,
        mustSee: [200, 400, 401, 403, 404, 412, 422],
        runs: RUNS_SHARED,
      });
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("fuzzing Idempotency-Key on POST /apps", () => {
  // Half of RUNS: 250 in the everyday sample, where a quarter (125) met a malformed key's 400 only twice.
  const runs = runsShare(1 / 2);
  it(
    `answers ${runs} generated creates as documented: a retry replays, a key used for another create is a 422`,
    async () => {
      const names = fc.oneof(
        { arbitrary: fc.constantFrom("keyed", "keyed 2", "fuzz-own", "App", "caf\u00e9", "cafe\u0301"), weight: 3 },
        { arbitrary: likelyValidName, weight: 2 },
        { arbitrary: anyString, weight: 1 },
      );
      await fuzzPost(fuzzing, REPLAY, "/apps", {
        parts: { name: names },
        plan: ({ name, slash }) => ({ path: slash ? "/apps/" : "/apps", body: JSON.stringify({ app_name: name }) }),
        read: ({ body, type: [, isJsonType] }: Sent) => {
          const { verdict, parsed } = readJsonBody(body, isJsonType, MAX_BODY_BYTES);
          const name = own(asObject(parsed?.value), "app_name");
          const validity = newNameIsValid(name);
          verdict.field(["body", "app_name"], validity);
          // Unless certainly refused: a name the oracle is not sure of is created, if at all, under its NFC form.
          return { verdict, request: validity !== false ? (name as string).normalize("NFC") : undefined };
        },
        // A create naming no project: the key's.
        routedBy: () => [],
        // Into the key's project: a writer there creates the app with its three environments, unless the name is taken.
        predict: (name, holder, model, answer) => {
          const projectId = holder.keyProjectId;
          if (!mayWriteIn(holder, model.organizationOfProject(projectId)!)) return refusedWithOneOf(answer, [[403, FORBIDDEN]]);
          if (model.appByName(projectId, name)) return refusedWithOneOf(answer, [[409, "App with the same name already exists"]]);
          expect(answer).toMatchObject({ status: 200, body: { app_id: expect.stringMatching(UUID_V7), app_name: name } });
          const appId = (answer.body as { app_id: string }).app_id;
          const at = expect.stringMatching(TIMESTAMP);
          const environment = (name: string) => ({
            id: expect.stringMatching(UUID_V7),
            app_id: appId,
            name,
            revision: 0,
            deployed_app_variant_id: null,
            deployed_app_variant_revision_id: null,
            created_at: at,
          });
          const created = appEvent(model, holder, "app.created", { id: appId, project_id: projectId, name });
          return withEvents(
            (changed) =>
              expect(changed).toEqual({
                apps: {
                  added: [
                    {
                      id: appId,
                      project_id: projectId,
                      name,
                      created_by: holder.userId,
                      created_at: at,
                      updated_at: null,
                      archived_at: null,
                    },
                  ],
                  removed: [],
                },
                environments: { added: expect.arrayContaining(DEFAULT_ENVIRONMENTS.map(environment)), removed: [] },
              }),
            created,
          );
        },
        ok: CreatedBody,
        keeps: true,
        mustSee: [200, 400, 401, 403, 409, 415, 422],
        runs,
      });
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("cases found by fuzzing", () => {
  /** The owner's request: its status and body; the tracker told what it changed. */
  const ownerSends = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await send("POST", path, { key: fuzzing.world.owner.key, body, headers });
    const answer = { status: response.status, body: await response.json(), etag: response.headers.get("ETag") };
    return { ...answer, changed: await fuzzing.db.changes() };
  };
  const deployMain = (environment_ref: object) => ({
    application_ref: { id: appNamed("fuzz-own").id },
    variant_ref: { slug: "main" },
    environment_ref,
  });
  const environmentOf = (name: string) =>
    fuzzing.db.model.environmentsOf(appNamed("fuzz-own").id).find((row) => row.name === name)!;

  it("answers 401, not 500, to a write with an Idempotency-Key and an API key that does not exist", async () => {
    const [prefix, secret] = fuzzing.world.owner.key.split(".");
    for (const key of [`${prefix}.${"0".repeat(64)}`, `Zz9Zz9Zz.${secret}`]) {
      for (const [path, body] of [
        ["/apps", { app_name: "never made" }],
        ["/variants/configs/deploy", deployMain({ slug: "staging" })],
        ["/configs/deployment/01900000-0000-7000-8000-000000000000/revert", undefined],
      ] as const) {
        const response = await send("POST", path, { key, body, headers: { "Idempotency-Key": "k1" } });
        expect({ path, status: response.status, body: await response.json() }).toEqual({
          path,
          status: 401,
          body: { detail: "Unauthorized" },
        });
      }
    }
    expect(await fuzzing.db.changes()).toEqual({});
  });

  it("reports a ref's bad field alone, not also the refs' rule the bad field happens to break (seed 702619565)", async () => {
    // The platform runs its model validators only once every field is valid: version -1 is the error, not the
    // "needs a slug or an id" that a ref holding only that version would break.
    const answer = await ownerSends("/variants/configs/deploy", {
      application_ref: { id: appNamed("fuzz-own").id },
      variant_ref: { slug: null, version: -1, id: null },
    });
    expect(answer).toEqual({
      status: 422,
      etag: null,
      changed: {},
      body: {
        detail: [
          {
            loc: ["body", "variant_ref", "version"],
            msg: "Input should be greater than or equal to 0",
            type: "greater_than_equal",
          },
          {
            loc: ["body", "environment_ref"],
            msg: "Value error, environment_ref needs a slug (or an environment revision's id)",
            type: "value_error",
          },
        ],
      },
    });
  });

  it("deploys nowhere when an environment ref's slug and revision id disagree, or its id names no revision", async () => {
    // A revision of the same app's development (planted with two deployments), named with staging's slug.
    const development = fuzzing.db.model.environmentRevisionsOf(environmentOf("development").id).at(-1);
    expect(development).toBeDefined();
    for (const ref of [
      { slug: "staging", id: development!.id },
      { slug: "staging", id: "01900000-0000-7000-8000-000000000000" },
    ]) {
      const answer = await ownerSends("/variants/configs/deploy", deployMain(ref));
      expect({ ref, status: answer.status, body: answer.body, changed: answer.changed }).toEqual({
        ref,
        status: 404,
        body: { detail: "App environment not found" },
        changed: {},
      });
    }
  });

  it("without application_ref, deploys the config a slug names in the app of the environment revision named by id", async () => {
    // docs/design.md, "Fetch": a revision's id names its app, and a config slug is then looked up in that app; so for deploy.
    const model = fuzzing.db.model;
    const development = environmentOf("development");
    const revision = model.environmentRevisionsOf(development.id).at(-1)!;
    const answer = await ownerSends("/variants/configs/deploy", {
      variant_ref: { slug: "main" },
      environment_ref: { id: revision.id },
    });
    expect({ status: answer.status, body: answer.body }).toMatchObject({
      status: 200,
      body: {
        application_ref: { id: appNamed("fuzz-own").id },
        variant_ref: { slug: "main" },
        environment_ref: { slug: "development", version: development.revision + 1 },
      },
    });
    expect(answer.changed.environment_revisions?.added).toHaveLength(1);
    // A deploy of main's latest revision, whose environment a revision's id names: environment.deployed, no revert.
    const main = model.variantsOf(appNamed("fuzz-own").id).find((variant) => variant.name === "main")!;
    expectEvents(answer.changed, deploymentEvent(model, fuzzing.world.owner, development, model.latest(main.id)!));
  });

  it("refuses an If-Match that names the environment's revision with leading zeros: not the ETag, character for character", async () => {
    const staging = environmentOf("staging");
    const padded = etagOf(staging).replace(/\.(\d+)"$/, '.0$1"');
    const answer = await ownerSends("/variants/configs/deploy", deployMain({ slug: "staging" }), { "If-Match": padded });
    expect({ status: answer.status, changed: answer.changed }).toEqual({ status: 412, changed: {} });
  });
});
