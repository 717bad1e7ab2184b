import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The order test files start in (test/vitest.config.ts). In a project, the largest first, as vitest's own on a machine
 * with no timings kept (CI's), but a folder's test file that runs its `*.cases.ts` (test/worker/cases.ts) weighed with
 * them: by its own three lines it went last, and the longest of them then ran alone at the end of the run.
 * The projects are not run in turn. The files that run in Node spend much of their time waiting on the processes they
 * start (wrangler dev, Chromium, tsc's four programs), a minute or more each whatever their size, and the worker files
 * hardly any: in turn, the first minutes left a core idle, and a Node file that started late (the README's walk-through
 * waits a minute for a split's step) ran on alone at the end. So two Node files start for each worker file until
 * none is left, the Node projects' files spread through one another (each file's place is its rank in its project over
 * the project's size), and the short worker files end the run. A file that says it mostly waits (a line starting
 * `// Starts first:`, saying on what) starts before all of these: its waiting is then filled by the others' work, where
 * late in a run it left the cores half idle for a minute.
 */
export class LargestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const bytes = new Map(files.map((file) => [file.moduleId, bytesRun(file.moduleId)]));
    const projects = new Map<string, TestSpecification[]>();
    for (const file of files) projects.set(file.project.name, [...(projects.get(file.project.name) ?? []), file]);
    const place = new Map<TestSpecification, number>();
    for (const inProject of projects.values()) {
      inProject.sort((a, b) => (bytes.get(b.moduleId) ?? 0) - (bytes.get(a.moduleId) ?? 0));
      for (const [rank, file] of inProject.entries()) place.set(file, (rank + 0.5) / inProject.length);
    }
    const inPlace = (group: TestSpecification[]) =>
      group.sort((a, b) => (place.get(a) ?? 0) - (place.get(b) ?? 0) || a.project.name.localeCompare(b.project.name));
    // The worker project's files run in workerd (the Workers pool); the others in Node's child processes ("forks").
    const inNode = inPlace(files.filter((file) => file.pool === "forks"));
    const inWorkerd = inPlace(files.filter((file) => file.pool !== "forks"));
    const order: TestSpecification[] = [];
    while (inNode.length > 0 || inWorkerd.length > 0) order.push(...inNode.splice(0, 2), ...inWorkerd.splice(0, 1));
    const group = (file: TestSpecification) => file.project.config.sequence.groupOrder;
    const first = (file: TestSpecification) => (STARTS_FIRST.test(readFileSync(file.moduleId, "utf8")) ? 0 : 1);
    return order.sort((a, b) => group(a) - group(b) || first(a) - first(b));
  }
}

const STARTS_FIRST = /^\/\/ Starts first: /m;

/** A test file's size, with the `*.cases.ts` beside it when it runs them. */
function bytesRun(file: string): number {
  const own = statSync(file).size;
  if (!readFileSync(file, "utf8").includes("import.meta.glob")) return own;
  const folder = dirname(file);
  return readdirSync(folder)
    .filter((name) => name.endsWith(".cases.ts"))
    .reduce((sum, name) => sum + statSync(join(folder, name)).size, own);
}
