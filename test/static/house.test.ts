import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The house rules a reviewer would otherwise check by hand: where errors live, what a routes file
 * may import, how long a file may grow, and the layering the code map states.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Every source file under src/ (but declaration files), as a path relative to the root, with its text. */
function sources(): Map<string, string> {
  return new Map(
    readdirSync(path.join(ROOT, "src"), { recursive: true, encoding: "utf8" })
      .filter((file) => /\.tsx?$/.test(file) && !file.endsWith(".d.ts"))
      .map((file) => [path.join("src", file), readFileSync(path.join(ROOT, "src", file), "utf8")]),
  );
}

/** The src/ files a module imports (relative imports only), as paths relative to the root, without extension. */
function importsOf(file: string, text: string): string[] {
  return [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom "(\.[^"]+)";/gm)].map(([, specifier]) =>
    path.join(path.dirname(file), specifier).replace(/\.tsx?$/, ""),
  );
}

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

describe("routes files", () => {
  it("no *.routes.ts imports another folder's *.routes.ts: what several share lives in a module of its own", () => {
    const crossings = [...sources()]
      .filter(([file]) => file.endsWith(".routes.ts"))
      .flatMap(([file, text]) =>
        importsOf(file, text)
          .filter((imported) => imported.endsWith(".routes") && path.dirname(imported) !== path.dirname(file))
          .map((imported) => `${file} imports ${imported}.ts`),
      );
    expect(crossings).toEqual([]);
  });
});

describe("file length", () => {
  it("no src/ file is over 600 lines: a longer one is split along a seam of what it does", () => {
    const long = [...sources()]
      .map(([file, text]) => ({ file, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) }))
      .filter(({ lines }) => lines > 600);
    expect(long).toEqual([]);
  });
});
