/**
 * `npm run dev`'s start, timed as a newcomer meets it (BENCHMARKS.md, "npm run dev's start"): in a copy of a tree (the
 * repository's, or --tree's), a first start with no local state (`rm -rf .wrangler`; `dist` kept, built once before),
 * then a start with nothing to do. Each is timed from the command to its "serving:" line and to the first 200 of
 * GET /health; its output is searched for a fatal error. Then the server is stopped.
 *
 *   npx tsx test/bench/dev-start.ts [--runs N] [--tree DIR]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freePort, killGroup, ROOT, spawnGroup } from "../support/processes";
import { snapshot } from "../support/wrangler";

const FATAL = /Fatal uncaught|failed to start|SQLITE_BUSY/;

interface Start {
  serving_s: number | null;
  health_s: number | null;
  fatal_lines: number;
}

/** One `npm run dev -- --port P` in `code`, until /health answers 200 (at most 120 s); then stopped. */
async function start(code: string): Promise<Start> {
  const [port, inspector] = [await freePort(), await freePort()];
  const began = performance.now();
  const child = spawnGroup("npm", ["run", "dev", "--", "--port", String(port), "--inspector-port", String(inspector)], {
    cwd: code,
  });
  let output = "";
  let serving: number | null = null;
  const onOutput = (chunk: string) => {
    output += chunk;
    if (serving === null && /^serving:/m.test(output)) serving = performance.now() - began;
  };
  child.stdout?.setEncoding("utf8").on("data", onOutput);
  child.stderr?.setEncoding("utf8").on("data", onOutput);
  let health: number | null = null;
  while (performance.now() - began < 120_000 && child.exitCode === null) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) {
        health = performance.now() - began;
        break;
      }
    } catch {
      // not listening yet
    }
    await new Promise((wait) => setTimeout(wait, 100));
  }
  const exited = new Promise((resolveExit) => child.once("exit", resolveExit));
  killGroup(child, "SIGTERM");
  await Promise.race([exited, new Promise((wait) => setTimeout(wait, 5_000))]);
  killGroup(child, "SIGKILL");
  if (health === null) process.stderr.write(output);
  const seconds = (ms: number | null) => (ms === null ? null : Math.round(ms / 100) / 10);
  return {
    serving_s: seconds(serving),
    health_s: seconds(health),
    fatal_lines: output.split("\n").filter((line) => FATAL.test(line)).length,
  };
}

const { values } = parseArgs({ options: { runs: { type: "string", default: "3" }, tree: { type: "string", default: ROOT } } });
const dir = mkdtempSync(join(tmpdir(), "dev-start-"));
try {
  const code = snapshot(values.tree, dir);
  // The assets (and the console) built once, as after any earlier start: what is timed is the databases' part.
  await start(code);
  for (let run = 1; run <= Number(values.runs); run++) {
    rmSync(join(code, ".wrangler"), { recursive: true, force: true });
    const first = await start(code);
    const second = await start(code);
    process.stdout.write(`${JSON.stringify({ run, first, second })}\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
