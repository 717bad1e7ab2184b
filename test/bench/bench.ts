/**
 * `npm run bench`: the service against its floor, under the same wrangler dev, on one local D1 folder.
 *
 *   0. a copy of the working tree (node_modules linked) in a temporary folder, from which every wrangler command
 *      below runs: edits made to src/ or wrangler.toml during the run neither reload the Worker mid-measurement
 *      nor mix two versions of the code in one set of figures
 *   1. a temporary --persist-to folder: migrations applied, bench data loaded (test/bench/seed.ts) and checked
 *   2. the deployed bundle's size (`wrangler deploy --dry-run --outdir`, gzipped here)
 *   3. `wrangler dev` of the service (./wrangler.toml) and of the floor (test/bench/floor/), each on a free
 *      loopback port in its own process group; ready once GET /health (service) and GET /static (floor) are 200
 *   4. one scenario at a time: each checked with one request (status and body) and warmed up, then measured with
 *      autocannon for a fixed duration, split into rounds in which the scenarios take turns. Any non-2xx answer,
 *      connection error or timeout fails the scenario (a 401 means a wrong key, a 409 a duplicate name, a 429 a
 *      rate limit, a 500 a broken service); the others still run.
 *   5. a table, the ratios against their targets and the scale figures, on stdout and as markdown in a file
 *
 * Timings are reported, never asserted: a missed target never changes the exit code. It is 1 when the harness
 * itself failed (setup, data, wrangler) or when a scenario failed as above, 0 otherwise.
 *
 * Options (flags, or the environment variables in brackets):
 *   --duration S        seconds measured per scenario [BENCH_DURATION] (default 10)
 *   --warmup S          seconds of warm-up per scenario [BENCH_WARMUP] (default 2)
 *   --connections N     concurrent connections of the throughput scenarios [BENCH_CONNECTIONS] (default 10)
 *   --rounds N          measure each scenario in N slices of duration/N, the scenarios taking turns in each round
 *                       (each round starting one scenario further on) [BENCH_ROUNDS] (default 5; 1 with --quick)
 *   --quick             --duration 3 --warmup 1 --rounds 1, for checking the harness (figures are noisier)
 *   --out FILE          where the markdown goes [BENCH_OUT] (default test/bench/results/bench-<time>.md)
 *   --log-level LEVEL   wrangler dev's --log-level for both workers [BENCH_WRANGLER_LOG_LEVEL] (default: wrangler's)
 *   --keep              keep the temporary folder (its path is printed)
 *   --code DIR          measure the service in DIR instead of this working tree, e.g. an older commit unpacked
 *                       with `git archive <commit> | tar -x -C DIR` (this tree's node_modules and floor are used)
 */

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { HarnessError, killAllGroups, ROOT } from "../support/processes";
import { snapshot, startDev } from "../support/wrangler";
import { checkCreatedApps, type Outcome, runScenarios } from "./load";
import { bundleSize, loadData } from "./prepare";
import { fixed, gitState, kib, loadAverage, machine, report } from "./report";
import { benchScenarios } from "./scenarios";

/** The floor is the bench's own, and the same whatever code is measured. */
const FLOOR_CONFIG = join(ROOT, "test/bench/floor/wrangler.toml");

/** The command line, and the environment variables it falls back on (see the top of this file). */
function options() {
  const { values } = parseArgs({
    options: {
      duration: { type: "string" },
      warmup: { type: "string" },
      connections: { type: "string" },
      quick: { type: "boolean", default: false },
      out: { type: "string" },
      "log-level": { type: "string" },
      keep: { type: "boolean", default: false },
      code: { type: "string" },
      rounds: { type: "string" },
    },
    strict: true,
  });
  const number = (name: string, flag: string | undefined, env: string | undefined, fallback: number, min: number) => {
    const text = flag ?? env;
    if (text === undefined || text === "") return fallback;
    const value = Number(text);
    if (!Number.isFinite(value) || value < min)
      throw new HarnessError(`${name} must be a number >= ${min}, got ${JSON.stringify(text)}`);
    return value;
  };
  const quick = values.quick;
  return {
    duration: number("--duration", values.duration, process.env.BENCH_DURATION, quick ? 3 : 10, 1),
    warmup: number("--warmup", values.warmup, process.env.BENCH_WARMUP, quick ? 1 : 2, 0),
    connections: Math.round(number("--connections", values.connections, process.env.BENCH_CONNECTIONS, 10, 1)),
    rounds: Math.round(number("--rounds", values.rounds, process.env.BENCH_ROUNDS, quick ? 1 : 5, 1)),
    out: resolve(
      values.out ??
        process.env.BENCH_OUT ??
        join(ROOT, "test/bench/results", `bench-${new Date().toISOString().replace(/[:.]/g, "-")}.md`),
    ),
    logLevel: values["log-level"] ?? process.env.BENCH_WRANGLER_LOG_LEVEL,
    keep: values.keep,
    /** The tree whose service is measured (a checkout of another commit, say); default this working tree. */
    code: resolve(values.code ?? ROOT),
  };
}

// The temporary folder (copy of the code, local D1), removed whatever way this process ends unless --keep.
let tempDir: string | undefined;
let keepTempDir = false;

function cleanUpNow(): void {
  killAllGroups();
  if (tempDir && !keepTempDir) {
    // The copy links the repository's node_modules: remove the link itself first, whatever rmSync does with links.
    rmSync(join(tempDir, "code", "node_modules"), { force: true });
    rmSync(tempDir, { recursive: true, force: true });
  }
  tempDir = undefined;
}

process.on("exit", cleanUpNow);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping the workers${tempDir && !keepTempDir ? ` and removing ${tempDir}` : ""}`);
    cleanUpNow();
    process.exit(signal === "SIGINT" ? 130 : 143);
  });
}

/** How long `work` took, in seconds, alongside its result. */
async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, (performance.now() - start) / 1000];
}

async function main(): Promise<number> {
  const opts = options();
  keepTempDir = opts.keep;
  const started = performance.now();
  const phases: [string, number][] = [];
  const loadAtStart = loadAverage();
  console.log(
    `bench: ${opts.duration} s per scenario (${opts.rounds} round(s)) after ${opts.warmup} s of warm-up, ${opts.connections} connections`,
  );
  for (const line of machine()) console.log(`  ${line}`);

  tempDir = mkdtempSync(join(os.tmpdir(), "app-management-bench-"));
  const work = tempDir;
  const git = gitState(opts.code);
  // Every wrangler command runs from this copy: edits made meanwhile neither reload wrangler dev mid-run nor mix
  // two versions of the code in one run.
  const code = snapshot(opts.code, work);
  const serviceConfigPath = join(code, "wrangler.toml");
  const dir = join(work, "state");
  mkdirSync(dir);
  const { unstable_readConfig } = await import("wrangler");
  const serviceConfig = unstable_readConfig({ config: serviceConfigPath });
  const floorConfig = unstable_readConfig({ config: FLOOR_CONFIG });
  const basePath = String((serviceConfig.vars as Record<string, unknown> | undefined)?.BASE_PATH ?? "").replace(/\/+$/, "");
  const warnings: string[] = [];
  if (serviceConfig.compatibility_date !== floorConfig.compatibility_date) {
    warnings.push(
      `compatibility_date differs: service ${serviceConfig.compatibility_date}, floor ${floorConfig.compatibility_date} (test/bench/floor/wrangler.toml)`,
    );
  }
  console.log(`  code under test: ${git}${basePath ? `, BASE_PATH ${basePath}` : ""}, copied to ${code}`);
  console.log(`\nlocal D1 in ${dir}`);
  const [data, loadSeconds] = await timed(() => loadData(code, dir));
  phases.push(["migrations, bench data (apply, load, check)", loadSeconds]);
  console.log(`  migrations applied, bench data loaded and checked in ${loadSeconds.toFixed(1)} s`);

  const [[bundle, minified], bundleSeconds] = await timed(
    async () => [await bundleSize(code, work), await bundleSize(code, work, true)] as const,
  );
  phases.push(["bundle (wrangler deploy --dry-run, as configured and --minify)", bundleSeconds]);
  console.log(
    `  bundle: ${bundle.files.join(", ")} ${kib(bundle.rawBytes)}, gzip -9 ${kib(bundle.gzipBytes)} (with --minify: gzip -9 ${kib(minified.gzipBytes)})`,
  );
  const loadBefore = loadAverage();

  const dev = { persistTo: dir, logLevel: opts.logLevel, cwd: code };
  const [[service, floor], startSeconds] = await timed(() =>
    Promise.all([
      startDev({ ...dev, name: "service", configArgs: ["-c", serviceConfigPath], readyPath: `${basePath}/health` }),
      startDev({ ...dev, name: "floor", configArgs: ["-c", FLOOR_CONFIG], readyPath: "/static" }),
    ]),
  );
  phases.push(["start both wrangler dev", startSeconds]);
  console.log(`  service on ${service.url}, floor on ${floor.url} (ready in ${startSeconds.toFixed(1)} s)`);

  console.log(`\nscenarios, one at a time:`);
  const [outcomes, measureSeconds] = await timed(() =>
    runScenarios(
      benchScenarios(data, opts.connections),
      (scenario) =>
        scenario.server === "floor" ? { server: floor, base: floor.url } : { server: service, base: `${service.url}${basePath}` },
      opts,
    ),
  );
  phases.push(["scenarios (check, warm-up, measurement)", measureSeconds]);
  const busy = (Object.values(outcomes) as Outcome[]).filter((outcome) => (outcome.measurement?.otherCpus ?? 0) > 0.1);
  if (busy.length > 0) {
    warnings.push(
      `other programs used the CPUs during ${busy.map((outcome) => `"${outcome.scenario.label}" (${fixed(outcome.measurement?.otherCpus ?? 0, 2)})`).join(", ")}: ` +
        `those figures, and the ratios built on them, are skewed; run again on a quiet machine`,
    );
  }
  const serviceReloads = service.reloads();
  if (serviceReloads > 0)
    warnings.push(
      `wrangler dev rebuilt the service ${serviceReloads} time(s) during the run (a file it watches changed: in the copy of the code, or in node_modules, which the copy links, e.g. by an npm install): figures may mix versions of the code`,
    );
  await Promise.all([service.stop(), floor.stop()]);
  const creations = await checkCreatedApps(code, dir, data, outcomes, opts);

  report({ opts, outcomes, bundle, minified, git, basePath, creations, loadAtStart, loadBefore, warnings, phases, started });
  if (opts.keep) console.log(`temporary folder kept: ${work} (code/: the copy run, state/: the --persist-to folder)`);
  const failures = (Object.values(outcomes) as Outcome[]).filter((outcome) => outcome.error);
  if (failures.length > 0) {
    console.error(`\n${failures.length} scenario(s) failed (non-2xx answers or errors), see above: exit 1`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => {
    cleanUpNow();
    process.exit(code);
  },
  (error: unknown) => {
    console.error(
      `\nbench failed: ${error instanceof HarnessError ? error.message : error instanceof Error ? error.stack : String(error)}`,
    );
    cleanUpNow();
    process.exit(1);
  },
);
