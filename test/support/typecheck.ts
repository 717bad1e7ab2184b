/*
 * `npm run typecheck`'s TypeScript programs, two at a time: tsc works on one core, and CI has two. Each program's
 * output is printed when it ends (not interleaved); the run fails if any program does.
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { exit, stdout } from "node:process";

const ROOT = resolve(import.meta.dirname, "../..");

/** Longest first, so that the two lanes end about together. */
const PROGRAMS = [
  "test/tsconfig.json", // the Worker's tests, and src/
  "test/tsconfig.node.json", // the tests and tools that run in Node
  "tsconfig.json", // src/ with the Workers runtime's types alone
  "console/tsconfig.json",
];
const AT_ONCE = 2;

const tsc = resolve(ROOT, "node_modules/.bin/tsc");
const queue = [...PROGRAMS];
let failed = false;

async function lane() {
  for (let program = queue.shift(); program; program = queue.shift()) {
    const ended = await new Promise<{ code: number; output: string }>((done) => {
      execFile(tsc, ["-p", program], { cwd: ROOT, maxBuffer: 1 << 26 }, (error, out, err) =>
        done({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, output: out + err }),
      );
    });
    stdout.write(`tsc -p ${program}: ${ended.code === 0 ? "ok" : `failed (${ended.code})`}\n${ended.output}`);
    if (ended.code !== 0) failed = true;
  }
}

await Promise.all(Array.from({ length: AT_ONCE }, lane));
exit(failed ? 1 : 0);
