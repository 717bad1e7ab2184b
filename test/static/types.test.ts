import { describe, expect, it } from "vitest";
import { PROGRAMS, tsc } from "../support/tsc";

/*
 * `npm run typecheck`'s programs, as part of the suite: run beside the other test files, where the cores have room,
 * rather than for a minute before any of them starts.
 */
describe.concurrent("TypeScript", () => {
  it.each(PROGRAMS)(
    "tsc -p %s finds no error",
    async (program) => {
      const { code, output } = await tsc(program);
      expect(output).toBe("");
      expect(code).toBe(0);
    },
    300_000,
  );
});
