import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { programEnv } from "../support/processes";

/*
 * `npm run check:generated` (the Worker's generated types are what wrangler.toml makes; the assets, which
 * test/vitest.config.ts built before any file, are up to date) and `npm run lint`, as part of the suite: run beside the
 * other test files, where the cores have room, rather than one after the other before any of them starts.
 */
const ROOT = resolve(import.meta.dirname, "../..");

/** `npm run <script>` from the root: its exit code and what it printed. */
function npmRun(script: string): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile("npm", ["run", "--silent", script], { cwd: ROOT, env: programEnv(), maxBuffer: 1 << 26 }, (error, out, err) =>
      done({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, output: out + err }),
    );
  });
}

describe.concurrent("package scripts", () => {
  it.each(["check:generated", "lint"])(
    "npm run %s passes",
    async (script) => {
      const { code, output } = await npmRun(script);
      expect(code, output).toBe(0);
    },
    120_000,
  );
});
