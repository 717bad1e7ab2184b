/**
 * `npm run bench`: the service against its floor, under the same wrangler dev, on one local D1 folder.
 *
 *   0. a copy of the working tree (node_modules linked) in a temporary folder, from which every wrangler command
 *      below runs: edits made to src/ or wrangler.toml during the run neither reload the Worker mid-measurement
 *      nor mix two versions of the code in one set of figures
 *   1. a temporary --persist-to folder: migrations applied, bench data loaded (test/bench/seed.ts) and checked
 *   2. the deployed bundle's size (`wrangler deploy --dry-run --outdir`, gzipped here)
 *   3. `wrangler dev` of the service (./wrangler.toml without its [assets], whose router the deployed Worker does not
 *      pay for; with `--var WEBHOOKS_ALLOW_LOCAL:true`, as `npm run dev`: webhooks may target the receiver below) and
 *      of the floor (test/bench/floor/), and of the bare handlers (test/bench/bare/: the service's config with the
 *      bare entry as `main`, on a copy of the data) when a scenario of theirs runs, each on a free loopback port in
 *      its own process group; ready once GET /health (service), GET /static (floor) and GET /ready (bare) are 200.
 *      When "deploy, three webhooks" runs, the webhook receiver too (test/bench/receiver.ts: 127.0.0.1, answers 200
 *      at once, counts)
 *   4. one scenario at a time: each checked with one request (status and body) and warmed up, then measured with
 *      autocannon for a fixed duration, split into rounds in which the scenarios take turns. Any non-2xx answer,
 *      connection error or timeout fails the scenario (a 401 means a wrong key, a 409 a duplicate name, a 429 a
 *      rate limit, a 500 a broken service); the others still run. Besides throughput and latency, the CPU time the
 *      load generator and the measured wrangler dev spent per request (test/bench/load.ts), which other programs on
 *      the machine skew far less than throughput.
 *   5. what the writing scenarios wrote, counted in the database: apps, claimed Idempotency-Keys, variant revisions,
 *      deployments, webhook deliveries (and what the receiver got, after giving the queue consumer a few seconds)
 *   6. a table, the ratios against their targets and the scale figures, on stdout and as markdown in a file
 *
 * With --log-variants, copies of the service that differ only in the per-request log line (test/bench/logging/)
 * run beside it, each under its own wrangler dev on its own copy of the data, and the GET of a record is measured
 * on each in the same rounds: what the line costs, and what each way of writing it costs.
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
 *   --base DIR          also measure the service in DIR (an older commit, say: `git archive <commit> | tar -x -C DIR`)
 *                       on the GET of a record, the config fetch, POST /apps and a deploy, in the same rounds as the code under
 *                       test, each scenario right after its twin: before and after in one run (its own wrangler dev,
 *                       its own copy of the data; this tree's node_modules) [BENCH_BASE] (default: none)
 *   --log-variants L    also measure the GET of a record on copies of the service that differ only in how the
 *                       per-request log line is written (test/bench/logging/): "all", or names separated by commas
 *                       [BENCH_LOG_VARIANTS] (default: none)
 *   --only L            run only these scenarios: ids of test/bench/scenarios.ts separated by commas, "log" for every
 *                       log variant, e.g. `--only select1,get,log` [BENCH_ONLY] (default: all; for experiments)
 */

import { cpSync, existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { HarnessError, ROOT, run } from "../support/processes";
import { snapshot, startDev } from "../support/wrangler";
import { checkWrites, type Outcome, runScenarios } from "./load";
import { type LogVariant, logVariantCopy, selectLogVariants } from "./logging/variants";
import { BARE_ENTRY, bareConfig, bundleSize, devConfigWithoutAssets, loadData } from "./prepare";
import { type Receiver, type ReceiverCounts, startReceiver } from "./receiver";
import { fixed, gitState, kib, loadAverage, machine, report } from "./report";
import { BARE_PAIRS, benchScenarios, type Scenario } from "./scenarios";
import { cleanUpNow, makeWorkFolder } from "./work-folder";

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
      base: { type: "string" },
      rounds: { type: "string" },
      "log-variants": { type: "string" },
      only: { type: "string" },
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
    /** Another tree whose service is measured beside it, scenario by scenario (before and after). */
    base: (values.base ?? process.env.BENCH_BASE) ? resolve(values.base ?? process.env.BENCH_BASE ?? "") : undefined,
    logVariants: selectLogVariants(values["log-variants"] ?? process.env.BENCH_LOG_VARIANTS ?? ""),
    only: (values.only ?? process.env.BENCH_ONLY ?? "")
      .split(",")
      .map((id) => id.trim())
      .filter(Boolean),
  };
}

/**
 * `startDev`, again (up to 3 times) when wrangler dev lost its port: the port is picked free, then bound by wrangler a
 * moment later, and another program (or another wrangler dev starting alongside) may take it in between.
 */
async function startDevRetrying(options: Parameters<typeof startDev>[0]): ReturnType<typeof startDev> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDev(options);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof HarnessError) || !/Address already in use/.test(error.message)) throw error;
      console.log(`  wrangler dev (${options.name}): its port was taken meanwhile, starting it again`);
    }
  }
}

/**
 * The receiver's counts once they stop moving (no new request for 2 s, at most 20 s): the queue consumer's last
 * deliveries, and those of deploys cut off at the end of a measurement, after the load.
 */
async function finalCounts(receiver: Receiver): Promise<ReceiverCounts> {
  let counts = await receiver.counts();
  let still = 0;
  for (let waited = 0; still < 2_000 && waited < 20_000; waited += 250) {
    await new Promise((wait) => setTimeout(wait, 250));
    const now = await receiver.counts();
    still = now.requests === counts.requests ? still + 250 : 0;
    counts = now;
  }
  return counts;
}

/** How long `work` took, in seconds, alongside its result. */
async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, (performance.now() - start) / 1000];
}

async function main(): Promise<number> {
  const opts = options();
  const started = performance.now();
  const phases: [string, number][] = [];
  const loadAtStart = loadAverage();
  console.log(
    `bench: ${opts.duration} s per scenario (${opts.rounds} round(s)) after ${opts.warmup} s of warm-up, ${opts.connections} connections`,
  );
  for (const line of machine()) console.log(`  ${line}`);

  const work = makeWorkFolder("app-management-bench-", opts.keep);
  // wrangler appends everything it prints, and every devtools event of the Worker, to a debug log file (tens of MB
  // per wrangler dev per run): into the temporary folder, which goes at the end, rather than ~/.config/.wrangler/logs.
  process.env.WRANGLER_LOG_PATH ??= join(work, "wrangler-logs");
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

  // Copies of the service with another request log, each with its own copy of the data (taken before any wrangler
  // dev opens it), so that no two workerd share a SQLite file.
  const variants: (LogVariant & { code: string; state: string })[] = opts.logVariants.map((variant) => ({
    ...variant,
    ...logVariantCopy(code, dir, work, variant),
  }));
  if (variants.length > 0) console.log(`  request log variants: ${variants.map((variant) => variant.name).join(", ")}`);
  // The tree measured beside the code under test (--base), likewise with its own copy of the data.
  const baseline = opts.base ? { code: snapshot(opts.base, join(work, "base")), state: join(work, "base", "state") } : undefined;
  if (baseline) {
    cpSync(dir, baseline.state, { recursive: true });
    console.log(`  base: ${gitState(opts.base ?? "")}, copied to ${baseline.code}`);
  }

  // The bare handlers (test/bench/bare/, BENCHMARKS.md round 15), when a scenario of theirs runs: the service's own
  // config with the bare entry as `main`, on a copy of the data. From this tree when the code under test has none.
  const bare =
    opts.only.length === 0 || [...BARE_PAIRS.map(({ bare }) => bare), "bareFetchHit"].some((id) => opts.only.includes(id))
      ? { config: bareConfig(code), state: join(work, "bare-state") }
      : undefined;
  if (bare) {
    if (!existsSync(join(code, BARE_ENTRY))) cpSync(join(ROOT, BARE_ENTRY), join(code, BARE_ENTRY));
    cpSync(dir, bare.state, { recursive: true });
  }

  // The service with the cache off (docs/EDGE-DELIVERY.md), when its scenario runs: a copy of the code and the data.
  const uncached =
    opts.only.length === 0 || opts.only.includes("fetchOff")
      ? { code: snapshot(code, join(work, "uncached")), state: join(work, "uncached", "state") }
      : undefined;
  if (uncached) cpSync(dir, uncached.state, { recursive: true });

  const dev = { persistTo: dir, logLevel: opts.logLevel, cwd: code };
  // As `npm run dev`: webhooks may target http://127.0.0.1 (the receiver), secrets sealed with the development key.
  // Only webhook routes and deliveries read it.
  // The edge cache's bound at its most (60 s), here and for the bare hit handler: the steady state of 128 keys' answers
  // whatever the throughput (at 5 s and R requests a second, 128 / (5 R) of them are confirmations: most of them on a
  // busy machine). What a confirmation costs is measured on its own (fetchFresh).
  const cacheVars = ["--var", "FRESHNESS_BOUND_SECONDS:60"];
  const serviceVars = ["--var", "WEBHOOKS_ALLOW_LOCAL:true", ...cacheVars];
  // The copies of the service: the log variants', then the base's.
  const copies = [
    ...variants.map((variant) => ({ ...variant, server: `log:${variant.name}`, label: `service, log: ${variant.name}` })),
    ...(baseline ? [{ ...baseline, server: "base", label: "service, base" }] : []),
    ...(uncached
      ? [{ ...uncached, server: "uncached", label: "service, cache off", vars: ["--var", "FRESHNESS_BOUND_SECONDS:0"] }]
      : []),
  ] as { code: string; state: string; server: string; label: string; vars?: string[] }[];
  const [[service, floor, bareServer, ...copyServers], startSeconds] = await timed(() =>
    Promise.all([
      startDevRetrying({
        ...dev,
        name: "service",
        configArgs: ["-c", devConfigWithoutAssets(code), ...serviceVars],
        readyPath: `${basePath}/health`,
      }),
      startDevRetrying({ ...dev, name: "floor", configArgs: ["-c", FLOOR_CONFIG], readyPath: "/static" }),
      bare &&
        startDevRetrying({
          ...dev,
          name: "bare",
          persistTo: bare.state,
          configArgs: ["-c", bare.config, ...cacheVars],
          readyPath: "/ready",
        }),
      ...copies.map((copy) =>
        startDevRetrying({
          ...dev,
          name: copy.label,
          persistTo: copy.state,
          cwd: copy.code,
          configArgs: ["-c", devConfigWithoutAssets(copy.code), ...serviceVars, ...(copy.vars ?? [])],
          readyPath: `${basePath}/health`,
        }),
      ),
    ]),
  );
  phases.push([`start ${2 + (bare ? 1 : 0) + copies.length} wrangler dev`, startSeconds]);
  console.log(`  service on ${service.url}, floor on ${floor.url} (ready in ${startSeconds.toFixed(1)} s)`);
  const servers = new Map(copies.map((copy, index) => [copy.server, copyServers[index]]));
  const serverOf = (scenario: Scenario) => {
    if (scenario.server === "floor") return { server: floor, base: floor.url };
    if (scenario.server === "bare") {
      if (!bareServer) throw new HarnessError("the bare handlers were not started");
      return { server: bareServer, base: bareServer.url };
    }
    const server = scenario.server === "service" ? service : servers.get(scenario.server);
    if (!server) throw new HarnessError(`no server for ${scenario.server}`);
    return { server, base: `${server.url}${basePath}` };
  };

  console.log(`\nscenarios, one at a time:`);
  // Unique per run: app names and Idempotency-Keys of the scenarios that make new ones.
  const runTag = Date.now().toString(36);
  const receiver = opts.only.length === 0 || opts.only.includes("deployHooks") ? await startReceiver() : undefined;
  if (receiver) console.log(`  webhook receiver on ${receiver.url}`);
  // A copy of the service without the queue consumer (to measure the requests' own cost) never delivers.
  const delivers = (serviceConfig.queues?.consumers ?? []).length > 0;
  if (receiver && !delivers) warnings.push("the service has no queue consumer (wrangler.toml): webhook deliveries stay pending");
  const scenarios = benchScenarios(
    data,
    opts.connections,
    runTag,
    variants,
    { receiver, delivers },
    baseline !== undefined,
    `${service.url}${basePath}`,
  );
  if (opts.only.length > 0) {
    // A base scenario runs with its twin.
    const wanted = (id: string) =>
      opts.only.includes(id.replace(/^base:/, "")) || (id.startsWith("log:") && opts.only.includes("log"));
    const unknown = opts.only.filter((id) => id !== "log" && !(id in scenarios));
    if (unknown.length > 0)
      throw new HarnessError(`--only: unknown scenario(s) ${unknown.join(", ")}; known: ${Object.keys(scenarios).join(", ")}`);
    for (const id of Object.keys(scenarios) as (keyof typeof scenarios)[]) if (!wanted(id)) delete scenarios[id];
  }
  const [outcomes, measureSeconds] = await timed(() => runScenarios(scenarios, serverOf, opts));
  phases.push(["scenarios (check, warm-up, measurement)", measureSeconds]);
  const busy = (Object.values(outcomes) as Outcome[]).filter((outcome) => (outcome.measurement?.otherCpus ?? 0) > 0.1);
  if (busy.length > 0) {
    warnings.push(
      `other programs used the CPUs during ${busy.map((outcome) => `"${outcome.scenario.label}" (${fixed(outcome.measurement?.otherCpus ?? 0, 2)})`).join(", ")}: ` +
        `those figures, and the ratios built on them, are skewed; run again on a quiet machine`,
    );
  }
  for (const server of [service, ...(bareServer ? [bareServer] : []), ...copyServers]) {
    if (server.reloads() > 0)
      warnings.push(
        `wrangler dev rebuilt ${server.name} ${server.reloads()} time(s) during the run (a file it watches changed: in the copy of the code, or in node_modules, which the copy links, e.g. by an npm install): figures may mix versions of the code`,
      );
  }
  const received = receiver && outcomes.deployHooks ? (delivers ? await finalCounts(receiver) : await receiver.counts()) : null;
  receiver?.stop();
  await Promise.all([service.stop(), floor.stop(), bareServer?.stop(), ...copyServers.map((server) => server.stop())]);
  const writes = await checkWrites(code, dir, data, outcomes, opts, received);
  // The edge cache's memory, in a process of its own (with the workers stopped): test/bench/cache-memory.ts.
  const [memory, memorySeconds] = await timed(() =>
    run(join(ROOT, "node_modules", ".bin", "tsx"), [join(code, "test/bench/cache-memory.ts")], { cwd: code, timeoutMs: 300_000 }),
  );
  phases.push(["the edge cache's memory (test/bench/cache-memory.ts)", memorySeconds]);
  if (memory.code !== 0) warnings.push(`test/bench/cache-memory.ts failed: ${memory.stderr.slice(-500)}`);
  const cacheMemory = memory.code === 0 ? memory.stdout.trim() : undefined;

  report({
    opts,
    outcomes,
    bundle,
    minified,
    git,
    basePath,
    writes,
    loadAtStart,
    loadBefore,
    warnings,
    phases,
    started,
    cacheMemory,
  });
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
