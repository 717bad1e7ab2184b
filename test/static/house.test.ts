import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The house rules a reviewer would otherwise check by hand (docs/code-map.md): where errors live, what a routes file
 * may import, how long a file may grow, and the layers the code map states.
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

/** The code map's table: each folder (`src/db/`) or root file (`src/app.ts`) of src/, by its layer. */
function layersOfTheMap(): Map<string, number> {
  const map = readFileSync(path.join(ROOT, "docs/code-map.md"), "utf8");
  return new Map(
    [...map.matchAll(/^\| (\d+)\s*\| `(src\/[^`]+)`/gm)].map(([, layer, where]) => [where.replace(/\/$/, ""), Number(layer)]),
  );
}

/** Where a src/ file is in the map: its folder under src/, or the file itself at src/'s root. */
function placeOf(file: string): string {
  const [src, first, ...rest] = file.split(path.sep);
  return rest.length > 0 || /\.tsx?$/.test(first) ? `${src}/${first}` : `${src}/${first}.ts`;
}

/** The imports of these files that go up the map's layers. */
function upwardImports(files: Map<string, string>): string[] {
  const layers = layersOfTheMap();
  const layerOf = (file: string) => layers.get(placeOf(file));
  return [...files].flatMap(([file, text]) =>
    importsOf(file, text)
      .filter((imported) => (layerOf(imported) ?? Infinity) > (layerOf(file) ?? -1))
      .map((imported) => `${file} (layer ${layerOf(file)}) imports ${imported} (layer ${layerOf(imported)})`),
  );
}

describe("the code map (docs/code-map.md)", () => {
  it("names every folder and root file of src/, and nothing else", () => {
    const there = readdirSync(path.join(ROOT, "src")).map((entry) => `src/${entry}`);
    expect([...layersOfTheMap().keys()].sort()).toEqual(there.sort());
  });

  it("every import of src/ goes to the importer's own layer or a lower one", () => {
    expect(upwardImports(sources())).toEqual([]);
  });

  it("would see an import up the layers, and one of a place the map does not name", () => {
    const planted = new Map([
      [path.join("src", "core", "planted.ts"), 'import { forbidden } from "../http/errors";\nimport { x } from "../nowhere/x";'],
    ]);
    expect(upwardImports(planted)).toEqual([
      "src/core/planted.ts (layer 2) imports src/http/errors (layer 3)",
      "src/core/planted.ts (layer 2) imports src/nowhere/x (layer undefined)",
    ]);
  });
});
