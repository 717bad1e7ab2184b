import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_ENVIRONMENTS, send } from "./fixtures";
import { AppVariantBody, expectOldestFirst, type Model, plantedWorld, type Tracked, VariantRevisionBody } from "./fuzz-model";
import {
  chooseId,
  environmentNameIsValid,
  expectDetail,
  fuzzRead,
  type Holder,
  type IdChoice,
  idChoice,
  idStrings,
  queryPart,
  type Replay,
  RUNS,
  type SegmentChoice,
  segment,
  segmentChoice,
  segmentOf,
  TIMEOUT,
  uuidValidity,
  type World,
} from "./fuzz-support";

/*
 * Generated requests to the reads of variants: GET /apps/{app_id}/variants, /apps/get_variant_by_env,
 * /variants/{variant_id}, /variants/{variant_id}/revisions[/{revision_number}], against the real local D1 (seeds,
 * REPLAY and the runner: fuzz-support.ts). The oracle (fuzz-model.ts) predicts every answer, body included, from the
 * request, the caller's role and every row of the database; nothing may be written.
 */
const REPLAY: Replay = {};

let world: World;
let db: Tracked;
let model: Model;

beforeAll(async () => {
  ({ world, db } = await plantedWorld());
  model = db.model;
});

afterAll(async () => {
  vi.restoreAllMocks();
  expect(await db.changes(), "a read wrote").toEqual({});
});

/** An id path segment: of the kind given (mostly), or of another kind ("gone"), random, ...; written one way or another. */
const idSegment = fc.record({ choice: segmentChoice, pick: idChoice });
const idPath = ({ choice, pick }: { choice: SegmentChoice; pick: IdChoice }, known: string[], others: string[]) =>
  segmentOf(choice, chooseId(pick, known, others));

const appIds = () => [...model.apps.keys()];
const variantIds = () => [...model.variants.keys()];
/**
 * A variant id path segment (removed variants' too), or one of an id of another kind: an app's, a variant revision's, an
 * environment revision's.
 */
const variantPath = ({ variant }: { variant: { choice: SegmentChoice; pick: IdChoice } }) =>
  idPath(variant, variantIds(), [...model.apps.keys(), ...model.revisions.keys(), ...model.environmentRevisions.keys()]);

/** The variant, when it exists, was not removed and the caller can see its app. */
const visibleVariant = (holder: Holder, id: string) => {
  const variant = model.liveVariant(id.toLowerCase());
  return variant && model.role(holder, variant.app_id) ? variant : undefined;
};

/** The answer is 200 with `body`. */
const expectOk = (answer: { status: number; body: unknown }, body: unknown) => expect(answer).toEqual({ status: 200, body });

describe("fuzzing GET /apps/{app_id}/variants", () => {
  it(
    `answers ${RUNS} generated requests as documented: an app's variants with their latest revisions, to members only`,
    async () => {
      await fuzzRead(world, REPLAY, "/apps/:app_id/variants", {
        parts: { app: idSegment },
        segments: ({ app }) => [idPath(app, appIds(), variantIds())],
        ok: AppVariantBody.array(),
        predict: (holder, [appId], _, answer) => {
          const visible = model.visibleApp(holder, appId.toLowerCase());
          if (!visible) return expectDetail(answer.status, answer.body, 404, "App not found");
          expect(answer.status).toBe(200);
          const variants = answer.body as { variant_id: string }[];
          expectOldestFirst(
            variants.map((variant) => variant.variant_id),
            model.variantsOf(visible.id),
          );
          expect(variants).toEqual(variants.map((variant) => model.appVariant(model.variants.get(variant.variant_id)!)));
        },
      });
    },
    TIMEOUT,
  );
});

describe("fuzzing GET /apps/get_variant_by_env", () => {
  it(
    `answers ${RUNS} generated requests as documented: the variant deployed to an environment, to members only`,
    async () => {
      const environments = fc.oneof(
        { arbitrary: fc.constantFrom(...DEFAULT_ENVIRONMENTS), weight: 6 },
        { arbitrary: fc.constantFrom("Production", "qa", " staging", "a".repeat(256), "development%"), weight: 1 },
      );
      const ids = fc.oneof(
        { arbitrary: idStrings(appIds()), weight: 6 },
        { arbitrary: fc.constantFrom(...variantIds()), weight: 1 },
      );
      await fuzzRead(world, REPLAY, "/apps/get_variant_by_env", {
        parts: { app: queryPart("app_id", ids, 12), environment: queryPart("environment", environments, 12) },
        query: ({ app, environment }) => [app, environment],
        ok: AppVariantBody,
        judge: (verdict, _, { app_id, environment }) => {
          verdict.field(["query", "app_id"], app_id === undefined ? false : uuidValidity(app_id));
          verdict.field(["query", "environment"], environment === undefined ? false : environmentNameIsValid(environment));
        },
        predict: (holder, _, { app_id, environment }, answer) => {
          const visible = model.visibleApp(holder, app_id.toLowerCase());
          const found = visible && model.environmentsOf(visible.id).find((row) => row.name === environment);
          const deployed = found?.deployed_app_variant_id && model.variants.get(found.deployed_app_variant_id);
          if (!found) expectDetail(answer.status, answer.body, 404, "App environment not found");
          else if (!deployed) expectDetail(answer.status, answer.body, 404, "No variant is deployed to this environment");
          else expectOk(answer, model.appVariant(deployed));
        },
      });
    },
    TIMEOUT,
  );
});

describe("fuzzing GET /variants/{variant_id}", () => {
  it(
    `answers ${RUNS} generated requests as documented: a variant with its latest revision, to members only`,
    async () => {
      await fuzzRead(world, REPLAY, "/variants/:variant_id", {
        parts: { variant: idSegment },
        segments: (value) => [variantPath(value)],
        ok: AppVariantBody,
        predict: (holder, [variantId], _, answer) => {
          const visible = visibleVariant(holder, variantId);
          if (!visible) expectDetail(answer.status, answer.body, 404, "Variant not found");
          else expectOk(answer, model.appVariant(visible));
        },
      });
    },
    TIMEOUT,
  );
});

describe("fuzzing GET /variants/{variant_id}/revisions", () => {
  it(
    `answers ${RUNS} generated requests as documented: every revision of a variant in order, to members only`,
    async () => {
      await fuzzRead(world, REPLAY, "/variants/:variant_id/revisions", {
        parts: { variant: idSegment },
        segments: (value) => [variantPath(value)],
        ok: VariantRevisionBody.array(),
        predict: (holder, [variantId], _, answer) => {
          const visible = visibleVariant(holder, variantId);
          if (!visible) expectDetail(answer.status, answer.body, 404, "Variant not found");
          else
            expectOk(
              answer,
              model.revisionsOf(visible.id).map((row) => model.variantRevision(row)),
            );
        },
      });
    },
    TIMEOUT,
  );
});

describe("fuzzing GET /variants/{variant_id}/revisions/{revision_number}", () => {
  it(
    `answers ${RUNS} generated requests as documented: one revision of a variant, to members only`,
    async () => {
      const numbers = fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 6 }).map(String), weight: 8 },
        {
          arbitrary: fc.constantFrom("01", "0000000001", "99999999999", "9".repeat(30), "1.0", "-1", "+1", " 1", "1e1", "0x1"),
          weight: 2,
        },
        { arbitrary: fc.constantFrom("\u0661", "\uff11"), weight: 1 }, // digits, not ASCII ones
      );
      await fuzzRead(world, REPLAY, "/variants/:variant_id/revisions/:revision_number", {
        parts: { variant: idSegment, number: segment(numbers) },
        segments: (value) => [variantPath(value), value.number],
        ok: VariantRevisionBody,
        judge: (verdict, [variantId, revision]) => {
          verdict.field(["path", "variant_id"], uuidValidity(variantId));
          // Digits are a revision number; anything else is not (422 int_parsing); digits of other scripts: no claim.
          const digits = /^[0-9]+$/.test(revision);
          verdict.field(["path", "revision_number"], digits || (/^\p{Nd}+$/u.test(revision) ? undefined : false), "int_parsing");
          verdict.unpredictable = !digits;
        },
        predict: (holder, [variantId, revision], _, answer) => {
          const visible = visibleVariant(holder, variantId);
          const found = visible && model.revisionsOf(visible.id).find((row) => BigInt(row.revision) === BigInt(revision));
          if (!visible) expectDetail(answer.status, answer.body, 404, "Variant not found");
          else if (!found) expectDetail(answer.status, answer.body, 404, "Variant revision not found");
          else expectOk(answer, model.variantRevision(found));
        },
      });
    },
    TIMEOUT,
  );
});

describe("cases found by fuzzing", () => {
  it("reads any digits as a revision number: 0000000001 is revision 1, 99999999999 a revision that does not exist", async () => {
    const variant = [...model.variants.values()].find((row) => model.apps.get(row.app_id)?.name === "fuzz-own")!;
    const get = (number: string) => send("GET", `/variants/${variant.id}/revisions/${number}`, { key: world.owner.key });
    const first = await (await get("1")).json();
    const padded = await get("0000000001");
    expect({ status: padded.status, body: await padded.json() }).toEqual({ status: 200, body: first });
    const beyond = await get("99999999999");
    expect({ status: beyond.status, body: await beyond.json() }).toEqual({
      status: 404,
      body: { detail: "Variant revision not found" },
    });
  });
});
