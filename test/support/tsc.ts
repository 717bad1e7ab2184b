/**
 * The project's TypeScript programs, which `npm run typecheck` (test/support/typecheck.ts) and the suite
 * (test/static/types.test.ts) check, longest first.
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

export const PROGRAMS = [
  "test/tsconfig.json", // the Worker's tests, and src/
  "test/tsconfig.node.json", // the tests and tools that run in Node
  "tsconfig.json", // src/ with the Workers runtime's types alone
  "console/tsconfig.json",
];

// TypeScript 7, the native compiler (package.json's `typescript-native`): the same errors as 5.9's tsc for a quarter
// of its CPU on these programs. 5.9 stays the `typescript` package, for the checks that read the compiler's API
// (test/static/sql.test.ts, pure-schemas.test.ts), which 7 does not offer yet.
const TSC = resolve(ROOT, "node_modules/typescript-native/bin/tsc");

/** `tsc -p program`: its exit code and what it printed. */
export function tsc(program: string): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [TSC, "-p", program], { cwd: ROOT, maxBuffer: 1 << 26 }, (error, out, err) =>
      done({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, output: out + err }),
    );
  });
}
