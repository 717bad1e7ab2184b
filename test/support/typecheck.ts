/*
 * `npm run typecheck`'s TypeScript programs, one after another (the native tsc spreads each over the cores). Each
 * program's output is printed when it ends; the run fails if any program does. `npm test` checks them as
 * test/static/types.test.ts, beside the other files.
 */
import { exit, stdout } from "node:process";
import { PROGRAMS, tsc } from "./tsc";

let failed = false;
for (const program of PROGRAMS) {
  const ended = await tsc(program);
  stdout.write(`tsc -p ${program}: ${ended.code === 0 ? "ok" : `failed (${ended.code})`}\n${ended.output}`);
  if (ended.code !== 0) failed = true;
}
exit(failed ? 1 : 0);
