import { describe, expect, it } from "vitest";
import { run } from "../support/processes";

/*
 * `npm run check:generated` (the Worker's generated types are what wrangler.toml makes; the assets, which
 * test/vitest.config.ts built before any file, are up to date) and `npm run lint`, as part of the suite: run beside the
 * other test files, where the cores have room, rather than one after the other before any of them starts.
 */
describe.concurrent("package scripts", () => {
  it.each(["check:generated", "lint"])(
    "npm run %s passes",
    async (script) => {
      const { code, stdout, stderr } = await run("npm", ["run", "--silent", script]);
      expect(code, stdout + stderr).toBe(0);
    },
    120_000,
  );
});
