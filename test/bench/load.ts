/**
 * The load: each scenario checked, warmed up and measured with autocannon in rounds, with the CPU time other
 * programs took meanwhile.
 */
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import autocannon from "autocannon";
import { HarnessError, runningGroups } from "../support/processes";
import { type DevServer, d1Query } from "../support/wrangler";
import { fixed, thousands } from "./report";
import { type CheckInfo, type Scenario, ScenarioError, type ScenarioId } from "./scenarios";
import type { BenchData } from "./seed";

/** Seconds of warm-up and of measurement per scenario, and in how many rounds the measurement is split. */
export interface Rounds {
  warmup: number;
  duration: number;
  rounds: number;
}

// On 2 cores anything else running skews the figures. During each measurement the CPU time of the whole machine
// (/proc/stat) and of this process and the workers' process groups (/proc/<pid>/stat) are sampled; the
// difference is what other programs used. Linux only; elsewhere the column reads n/a.

interface CpuSample {
  busy: number;
  total: number;
  mine: number;
}

function cpuSample(): CpuSample | null {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, value) => sum + value, 0);
    const idle = fields[3] + (fields[4] ?? 0); // idle + iowait
    const groups = runningGroups();
    let mine = 0;
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      } catch {
        continue; // gone meanwhile
      }
      // Fields after "(comm)": state ppid pgrp ... utime (14th field overall) stime (15th).
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const pid = Number(entry);
      const pgrp = Number(rest[2]);
      if (pid === process.pid || groups.has(pgrp)) mine += Number(rest[11]) + Number(rest[12]);
    }
    return { busy: total - idle, total, mine };
  } catch {
    return null;
  }
}

/** CPUs' worth of time other programs used between two samples (0.5: half a core on average). */
function otherCpus(before: CpuSample | null, after: CpuSample | null): number {
  if (!before || !after || after.total <= before.total) return Number.NaN;
  const cpus = os.availableParallelism();
  return Math.max(0, ((after.busy - before.busy - (after.mine - before.mine)) / (after.total - before.total)) * cpus);
}

export interface Measurement {
  seconds: number;
  ok: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  meanBytes: number;
  /** 2xx answers of the warm-up run (POSTs: apps created). */
  warmupOk: number;
  /** CPUs' worth of time other programs used during the measurement. */
  otherCpus: number;
  /** req/s of each round. */
  perRound: number[];
}

export interface Outcome {
  scenario: Scenario;
  measurement?: Measurement;
  info?: CheckInfo;
  error?: string;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]; // nearest rank
}

/** One autocannon run; latencies (ms, sub-millisecond) of the 2xx answers kept from its response events. */
function cannon(
  base: string,
  scenario: Scenario,
  seconds: number,
): Promise<{ result: autocannon.Result; latencies: number[]; bytes: number }> {
  return new Promise((resolveRun, reject) => {
    const latencies: number[] = [];
    let bytes = 0;
    let turn = 0;
    const authorizations = scenario.keys.map((key) => `ApiKey ${key.key}`);
    const instance = autocannon(
      {
        url: `${base}${scenario.path}`,
        method: scenario.method,
        headers: scenario.headers,
        body: scenario.body,
        // The next key of the pool on every request, so that no key reaches the service's per-key rate limit.
        requests: [
          {
            setupRequest: (request) => {
              request.headers = { ...request.headers, Authorization: authorizations[turn++ % authorizations.length] };
              return request;
            },
          },
        ],
        idReplacement: scenario.body?.includes("[<id>]") ?? false,
        connections: scenario.connections,
        duration: seconds,
        timeout: 60,
      },
      (error, result) => (error ? reject(error) : resolveRun({ result, latencies, bytes })),
    );
    instance.on("response", (_client, statusCode, resBytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) {
        latencies.push(responseTime);
        bytes += resBytes;
      }
    });
  });
}

function assertClean(phase: string, result: autocannon.Result): void {
  if (result.non2xx === 0 && result.errors === 0 && result.timeouts === 0 && result.mismatches === 0) return;
  const statuses = Object.entries(result.statusCodeStats ?? {})
    .map(([status, { count }]) => `${status} x${count}`)
    .join(", ");
  throw new ScenarioError(
    `${phase}: ${result.non2xx} non-2xx answers, ${result.errors} connection errors, ${result.timeouts} timeouts (status codes: ${statuses || "none"}); ` +
      `a 401 means the key is wrong, a 409 a duplicate app name, a 404 the data, a 429 a rate limit (more keys: KEYS_PER_PROJECT in test/bench/seed.ts)`,
  );
}

/** What a scenario's measured slices add up to. */
interface Tally {
  seconds: number;
  ok: number;
  bytes: number;
  latencies: number[];
  /** Other programs' CPU time, in CPU-seconds. */
  otherCpuSeconds: number;
  warmupOk: number;
  /** req/s of each round. */
  perRound: number[];
}

/** Why a scenario failed, with what wrangler dev logged meanwhile. */
async function failure(error: unknown, server: DevServer, errorsBefore: number): Promise<string> {
  if (error instanceof HarnessError) throw error;
  const message = error instanceof Error ? error.message : String(error);
  await new Promise((wait) => setTimeout(wait, 500)); // wrangler dev logs an error just after answering
  if (server.exited())
    return `${message}; wrangler dev (${server.name}) has exited, its last output:\n${server.tail().slice(-3_000)}`;
  const logged = [...new Set(server.errorsSince(errorsBefore))].slice(0, 3);
  return message + (logged.length > 0 ? `; wrangler dev logged: ${logged.join(" | ").slice(0, 600)}` : "");
}

/**
 * Every scenario checked and warmed up, then measured in `rounds` slices, the scenarios taking turns within each
 * round: a burst of load from another program skews every scenario a little rather than one a lot, and the
 * ratios, which compare scenarios, stay meaningful. A scenario that fails drops out of the later rounds.
 */
export async function runScenarios<Id extends string>(
  scenarios: Record<Id, Scenario>,
  serverOf: (scenario: Scenario) => { server: DevServer; base: string },
  opts: Rounds,
): Promise<Record<Id, Outcome>> {
  const ids = Object.keys(scenarios) as Id[];
  const outcomes = {} as Record<Id, Outcome>;
  const tallies = {} as Record<Id, Tally>;
  const width = Math.max(...ids.map((id) => scenarios[id].label.length));

  console.log(`  check and ${opts.warmup} s warm-up each:`);
  for (const id of ids) {
    const scenario = scenarios[id];
    const { server, base } = serverOf(scenario);
    const errorsBefore = server.errorCount();
    process.stdout.write(`    ${scenario.label.padEnd(width)}  `);
    outcomes[id] = { scenario };
    try {
      outcomes[id].info = (await scenario.check(base)) ?? undefined;
      let warmupOk = 0;
      if (opts.warmup > 0) {
        const warm = await cannon(base, scenario, opts.warmup);
        assertClean("warm-up", warm.result);
        warmupOk = warm.result["2xx"];
      }
      tallies[id] = { seconds: 0, ok: 0, bytes: 0, latencies: [], otherCpuSeconds: 0, warmupOk, perRound: [] };
      console.log("ok");
    } catch (error) {
      outcomes[id].error = await failure(error, server, errorsBefore);
      console.log("FAILED");
    }
  }

  const slice = opts.duration / opts.rounds;
  for (let round = 1; round <= opts.rounds; round++) {
    console.log(`  round ${round} of ${opts.rounds}, ${fixed(slice, 1)} s each:`);
    // Each round starts one scenario further on, so that no scenario always follows the same one.
    const order = ids.map((_, index) => ids[(index + round - 1) % ids.length]);
    for (const id of order) {
      if (outcomes[id].error) continue;
      const scenario = scenarios[id];
      const { server, base } = serverOf(scenario);
      const errorsBefore = server.errorCount();
      const reloadsBefore = server.reloads();
      const tally = tallies[id];
      process.stdout.write(`    ${scenario.label.padEnd(width)}  `);
      try {
        const cpuBefore = cpuSample();
        const { result, latencies, bytes } = await cannon(base, scenario, slice);
        const other = otherCpus(cpuBefore, cpuSample());
        assertClean(`measurement, round ${round}`, result);
        if (server.reloads() !== reloadsBefore)
          throw new ScenarioError(
            `wrangler dev reloaded the Worker during round ${round} (a watched file changed, e.g. node_modules by an npm install); run again`,
          );
        tally.seconds += result.duration;
        tally.ok += result["2xx"];
        tally.bytes += bytes;
        for (const latency of latencies) tally.latencies.push(latency);
        tally.otherCpuSeconds += other * result.duration;
        tally.perRound.push(result["2xx"] / result.duration);
        console.log(`${fixed(result["2xx"] / result.duration, 0).padStart(7)} req/s   other CPU ${fixed(other, 2)}`);
      } catch (error) {
        outcomes[id].error = await failure(error, server, errorsBefore);
        console.log("FAILED");
      }
    }
  }

  for (const id of ids) {
    const tally = tallies[id];
    if (outcomes[id].error || !tally) continue;
    tally.latencies.sort((a, b) => a - b);
    outcomes[id].measurement = {
      seconds: tally.seconds,
      ok: tally.ok,
      requestsPerSecond: tally.ok / tally.seconds,
      p50: percentile(tally.latencies, 50),
      p99: percentile(tally.latencies, 99),
      meanBytes: tally.ok > 0 ? tally.bytes / tally.ok : 0,
      warmupOk: tally.warmupOk,
      otherCpus: tally.otherCpuSeconds / tally.seconds,
      perRound: tally.perRound,
    };
  }
  return outcomes;
}

/**
 * Every 2xx POST created an app: counted in the database once wrangler dev is stopped (nothing holds the file).
 * A request in flight when a run ends is cut off by autocannon but may still have been served: up to one per
 * connection per run more than counted. A POST scenario whose count is off fails. Returns what was found, per project.
 */
export async function checkCreatedApps(
  code: string,
  dir: string,
  data: BenchData,
  outcomes: Record<ScenarioId, Outcome>,
  opts: Rounds,
): Promise<string[]> {
  const creations: string[] = [];
  const createdRows = await d1Query(
    dir,
    `SELECT ${(["post", "empty", "full"] as const).map((which) => `(SELECT COUNT(*) FROM apps WHERE project_id = '${data.keys[which][0].projectId}' AND name NOT LIKE 'seed-app-%') AS ${which}`).join(", ")}`,
    { cwd: code },
  );
  for (const [which, id] of [
    ["post", "post"],
    ["empty", "postEmpty"],
    ["full", "postFull"],
  ] as const) {
    const outcome = outcomes[id];
    const found = Number(createdRows[0]?.[which]);
    creations.push(`${which} project ${thousands(found)}`);
    if (!outcome.measurement) continue;
    const counted = (outcome.info?.created ?? 0) + outcome.measurement.warmupOk + outcome.measurement.ok;
    const runs = opts.rounds + (opts.warmup > 0 ? 1 : 0);
    const slack = runs * outcome.scenario.connections;
    if (!(found >= counted && found <= counted + slack)) {
      outcome.error = `${thousands(counted)} POSTs answered 200 but ${thousands(found)} apps are in the ${which} project`;
      outcome.measurement = undefined;
    }
  }
  return creations;
}
