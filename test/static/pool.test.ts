import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The single database the service had, bound as `DB`, is gone (docs/SHARDING.md §4): every database is reached through
 * the pool (src/db/pool.ts) or, in the tests, test/worker/pool.ts. Nothing in src/ or test/ may name that binding again,
 * but where it is named on purpose (EXEMPT).
 */

const ROOT = path.resolve(import.meta.dirname, "../..");
/**
 * What names the binding on purpose: the bench's floor; the upgrade test, which makes a database under it as before
 * the pool; this file's examples.
 */
const EXEMPT = [
  path.join("test", "bench", "floor"),
  path.join("test", "cli", "migrate-pool.test.ts"),
  path.relative(ROOT, import.meta.filename),
];

/** The retired binding as code names it: read from an env, declared as a property, or named as a string. */
const NAMINGS: [what: string, pattern: RegExp][] = [
  ["an env's binding", /\benv\.DB\b/],
  ["a property (a binding in place of the real one, or a declaration)", /\bDB\??:/],
  ["a string (a wrangler command's binding)", /["'`]DB["'`]/],
  ["a wrangler.toml binding", /^\s*binding\s*=\s*"DB"/m],
];

/** Every source, config and text file under src/ and test/ (and the root wrangler.toml), but the exempt folder. */
function files(): string[] {
  const found = ["src", "test"].flatMap((folder) =>
    readdirSync(path.join(ROOT, folder), { recursive: true, encoding: "utf8" })
      .map((file) => path.join(folder, file))
      .filter((file) => /\.(ts|toml|json|sql)$/.test(file) && !EXEMPT.some((exempt) => file.startsWith(exempt))),
  );
  return [...found, "wrangler.toml"];
}

describe("the retired single-database binding", () => {
  it("is named nowhere in src/ or test/ (but where it is on purpose)", () => {
    const namings = files().flatMap((file) => {
      const text = readFileSync(path.join(ROOT, file), "utf8");
      return NAMINGS.filter(([, pattern]) => pattern.test(text)).map(([what]) => `${file}: ${what}`);
    });
    expect(namings).toEqual([]);
  });

  it("would be found: each pattern matches what it stands for", () => {
    const examples = [
      "await env.DB.prepare(sql)",
      "{ bindings: { DB: db } }",
      'wrangler(["d1", "execute", "DB"])',
      'binding = "DB"',
    ];
    expect(NAMINGS.map(([, pattern], i) => pattern.test(examples[i]))).toEqual([true, true, true, true]);
  });
});
