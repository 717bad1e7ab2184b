// import.meta.glob, which vite (under vitest) expands in the folders' test files.
/// <reference types="vite/types/importMeta.d.ts" />
import { describe } from "vitest";

/**
 * Small test files, run together. vitest starts a runtime for each test file (a workerd with its databases: about 4 s
 * of CPU here), and most files of a folder run for less than a second: a folder's `<name>.cases.ts` files are run by
 * the folder's one `.test.ts`, which passes them here as `import.meta.glob("./*.cases.ts")` finds them. Each file's
 * tests and hooks go under a describe of its name, so that its `beforeEach` stays its own; the files share the
 * runtime's databases, as the tests of one file do.
 */
export function describeCases(files: Record<string, () => Promise<unknown>>) {
  for (const [path, load] of Object.entries(files)) {
    describe(path.replace(/^.*\//, "").replace(/\.cases\.ts$/, ""), async () => {
      await load();
    });
  }
}
