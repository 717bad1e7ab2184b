import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, expectJson, parseKeepingNumbers, postConfigText, send } from "./fixtures";
import { depthOf, fuzz, MAX_PARAMS_DEPTH, type Replay, runsShare, TIMEOUT } from "./fuzz-support";
import { fingerprint } from "./harness";
import { databaseOf } from "./pool";

/*
 * Generated params, written as JSON text (numbers of any spelling and size, strings, nesting of any depth up to
 * 130 levels), committed as sent. The oracle: up to 100 levels the answer, the fetch and the row hold the text
 * exactly as sent, every number digit for digit; deeper, a 422 naming params and no row changed. Seeds, REPLAY:
 * fuzz-support.ts.
 */
const REPLAY: Replay = {};
/** Requests of the property: fuzz-support.ts's RUNS, in part. */
const RUNS = runsShare(3 / 10);

const digits = (minLength: number, maxLength: number) =>
  fc.array(fc.constantFrom(..."0123456789"), { minLength, maxLength }).map((chars) => chars.join(""));

/** A JSON number as a person or another language may write it: any size, any precision, any exponent. */
const numberText = fc
  .tuple(
    fc.constantFrom("", "-"),
    fc.oneof(
      fc.constant("0"),
      fc.tuple(fc.constantFrom(..."123456789"), digits(0, 30)).map(([first, rest]) => first + rest),
    ),
    fc.option(
      digits(1, 25).map((fraction) => `.${fraction}`),
      { nil: "" },
    ),
    fc.option(
      fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), digits(1, 3)).map((parts) => parts.join("")),
      { nil: "" },
    ),
  )
  .map((parts) => parts.join(""));

const leafText = fc.oneof(
  { arbitrary: numberText, weight: 4 },
  { arbitrary: fc.string({ maxLength: 8 }).map((text) => JSON.stringify(text)), weight: 1 },
  { arbitrary: fc.constantFrom("true", "false", "null"), weight: 1 },
);

/** A small JSON value as text; an object's keys are distinct, since a repeated key keeps only its last value. */
const { value: valueText } = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, leafText, tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 4 }).map((items) => `[${items.join(",")}]`),
  object: fc
    .uniqueArray(fc.tuple(fc.string({ maxLength: 6 }), tie("value")), { maxLength: 4, selector: ([key]) => key })
    .map((entries) => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(",")}}`),
}));

/** Params: an object holding a value under a chain of arrays and objects, some chains deeper than the limit. */
const paramsText = fc
  .tuple(
    fc.oneof(
      { arbitrary: fc.array(fc.constantFrom("array", "object"), { maxLength: 20 }), weight: 3 },
      { arbitrary: fc.array(fc.constantFrom("array", "object"), { minLength: 90, maxLength: 130 }), weight: 2 },
    ),
    valueText,
  )
  .map(([chain, inner]) => `{"p":${chain.reduce((text, kind) => (kind === "array" ? `[${text}]` : `{"n":${text}}`), inner)}}`);

let owner: Account;
let appId: string;

beforeAll(async () => {
  owner = await createAccount();
  appId = await createAppVia(owner.key, { app_name: "fuzz-params" });
  const add = { variant_ref: { slug: "main" }, application_ref: { id: appId } };
  await expectJson(await send("POST", "/variants/configs/add", { authorization: owner.key, body: add }));
});

describe("params as written", () => {
  it("depthOf counts levels as the contract does", () => {
    expect([1, {}, [], { a: [] }, [[{ a: 1 }]], { a: [[], {}], b: [[[]]] }].map(depthOf)).toEqual([0, 1, 1, 2, 3, 4]);
  });

  it(
    "are kept digit for digit up to 100 levels, and refused (422, nothing written) deeper",
    async () => {
      const refs = `"variant_ref":{"slug":"main"},"application_ref":{"id":"${appId}"}`;
      await fuzz(
        "POST /variants/configs/commit params",
        REPLAY,
        paramsText,
        async (params) => {
          const before = await fingerprint();
          const response = await postConfigText("commit", owner.key, `{"params":${params},${refs}}`);
          const text = await response.text();
          if (depthOf(JSON.parse(params)) > MAX_PARAMS_DEPTH) {
            expect({ status: response.status, body: JSON.parse(text) }).toEqual({
              status: 422,
              body: {
                detail: [
                  {
                    loc: ["body", "params"],
                    msg: "Value error, params must not nest deeper than 100 levels",
                    type: "value_error",
                  },
                ],
              },
            });
            expect(await fingerprint()).toBe(before);
            return response.status;
          }
          expect(response.status, text).toBe(200);
          const sent = parseKeepingNumbers(params);
          expect(parseKeepingNumbers(text).params).toEqual(sent);
          const fetched = await postConfigText("fetch", owner.key, `{${refs}}`);
          expect(parseKeepingNumbers(await fetched.text()).params).toEqual(sent);
          const { id } = JSON.parse(text).variant_ref;
          // JavaScript puts keys such as "0" first in an object: the order of keys is not kept, their values are.
          const row = await databaseOf(id)
            .prepare("SELECT params FROM app_variant_revisions WHERE id = ?")
            .bind(id)
            .first<{ params: string }>();
          expect(parseKeepingNumbers(row!.params)).toEqual(sent);
          return response.status;
        },
        [200, 422],
        RUNS,
      );
    },
    TIMEOUT,
  );
});
