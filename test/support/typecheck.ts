/*
 * `npm run typecheck`'s TypeScript programs, two at a time: tsc works on one core, and CI has two. Each program's
 * output is printed when it ends (not interleaved); the run fails if any program does. `npm test` checks them as
 * test/static/types.test.ts, beside the other files.
 */
import { exit, stdout } from "node:process";
import { PROGRAMS, tsc } from "./tsc";

const AT_ONCE = 2;
const queue = [...PROGRAMS];
let failed = false;

async function lane() {
  for (let program = queue.shift(); program; program = queue.shift()) {
    const ended = await tsc(program);
    stdout.write(`tsc -p ${program}: ${ended.code === 0 ? "ok" : `failed (${ended.code})`}\n${ended.output}`);
    if (ended.code !== 0) failed = true;
  }
}

await Promise.all(Array.from({ length: AT_ONCE }, lane));
exit(failed ? 1 : 0);
