import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { en } from "zod/locales";
import type * as z from "zod/mini";
import { zodMessage } from "../../src/http/fields";
import { createAccount, expectJson, send } from "./fixtures";

/*
 * The messages a 422 passes on as zod words them (src/http/fields.ts `zodMessage`) are those of zod's English locale,
 * which the Worker no longer loads whole: issue by issue against `en`, and through the routes as a client reads them.
 */

const english = en().localeError;
const value = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.bigInt());

describe("zod's words for the issues a 422 passes on", () => {
  it("are en's, issue by issue", () => {
    const issue: fc.Arbitrary<z.core.$ZodRawIssue> = fc.oneof(
      fc.array(value, { minLength: 1, maxLength: 4 }).map((values) => ({ code: "invalid_value", values, input: values[0] })),
      fc.array(fc.string(), { minLength: 1, maxLength: 3 }).map((keys) => ({ code: "unrecognized_keys", keys, input: {} })),
      fc.constantFrom(true, false, undefined).map((inclusive) => ({
        code: "invalid_union",
        errors: [],
        input: "",
        ...(inclusive === undefined ? {} : { inclusive }),
      })),
      fc.constantFrom("datetime", "regex").map((format) => ({
        code: "invalid_format",
        format,
        input: "",
        ...(format === "regex" ? { pattern: "/^[a-z]+$/" } : {}),
      })),
      fc
        .constantFrom("invalid_key", "invalid_element")
        .chain((code) => fc.constantFrom("record", "map", "set").map((origin) => ({ code, origin, issues: [], input: "" }))),
      fc.integer({ min: 1, max: 100 }).map((divisor) => ({ code: "not_multiple_of", divisor, input: 1 })),
    ) as fc.Arbitrary<z.core.$ZodRawIssue>;
    fc.assert(
      fc.property(issue, (raw) => {
        expect(zodMessage(raw)).toBe(english(raw));
      }),
      { numRuns: 2_000 },
    );
  });

  it("reach the client as before: an option not among an enum's, a union none of whose options matched, a bad date-time", async () => {
    const { key } = await createAccount();
    const refusals: [path: string, loc: string[], msg: string][] = [
      [
        "/change-requests?environment=qa",
        ["query", "environment"],
        'Value error, Invalid option: expected one of "development"|"staging"|"production"',
      ],
      ["/change-requests?state=done", ["query", "state"], "Value error, Invalid input"],
      ["/events?since=yesterday", ["query", "since"], "Invalid ISO datetime"],
    ];
    for (const [path, loc, msg] of refusals) {
      expect(await expectJson(await send("GET", path, { key }), 422), path).toEqual({
        detail: [{ loc, msg, type: "value_error" }],
      });
    }
  });
});
