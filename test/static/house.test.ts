import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The house rules a reviewer would otherwise check by hand (docs/code-map.md): where errors live, what a routes file
 * may import, how long a file may grow, and the layering the code map states.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

/** The names a module exports by declaration (`export const x`, `export class X`, ...). */
const exportsOf = (text: string) =>
  [...text.matchAll(/^export (?:const|let|class|type|interface|function|async function) (\w+)/gm)].map(([, name]) => name);

describe("errors", () => {
  it("src/http/errors.ts holds the generic machinery only: a feature's errors live in its own folder", () => {
    expect(new Set(exportsOf(readFileSync(path.join(ROOT, "src/http/errors.ts"), "utf8")))).toEqual(
      new Set([
        // The error bodies' schemas and the one error class.
        "ValidationIssue",
        "ErrorBody",
        "ValidationErrorBody",
        "SlugConflict",
        "CodedConflict",
        "CodedConflictError",
        "ApiError",
        // Auth, rate limits, bodies, validation, Idempotency-Key, routing, fences: every route's middleware's.
        "unauthorized",
        "forbidden",
        "tooManyRequests",
        "slugTaken",
        "badIdempotencyKey",
        "idempotencyKeyInFlight",
        "idempotencyKeyReused",
        "payloadTooLarge",
        "unsupportedMediaType",
        "validationFailed",
        "notFound",
        "methodNotAllowed",
        "bucketFenced",
        "handleError",
      ]),
    );
  });
});
