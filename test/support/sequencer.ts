import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The order test files start in (test/vitest.config.ts): each project's in turn, as vitest's own, and in a project the
 * largest first, as vitest's own on a machine with no timings kept (CI's), but a folder's test file that runs its
 * `*.cases.ts` (test/worker/cases.ts) weighed with them: by its own three lines it went last, and the longest of them
 * then ran alone at the end of the run.
 */
export class LargestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const bytes = new Map(files.map((file) => [file.moduleId, bytesRun(file.moduleId)]));
    const order = (file: TestSpecification) => file.project.config.sequence.groupOrder;
    return [...files].sort(
      (a, b) =>
        order(a) - order(b) ||
        a.project.name.localeCompare(b.project.name) ||
        (bytes.get(b.moduleId) ?? 0) - (bytes.get(a.moduleId) ?? 0),
    );
  }
}

/** A test file's size, with the `*.cases.ts` beside it when it runs them. */
function bytesRun(file: string): number {
  const own = statSync(file).size;
  if (!readFileSync(file, "utf8").includes("import.meta.glob")) return own;
  const folder = dirname(file);
  return readdirSync(folder)
    .filter((name) => name.endsWith(".cases.ts"))
    .reduce((sum, name) => sum + statSync(join(folder, name)).size, own);
}
