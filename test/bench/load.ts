/**
 * The load: each scenario checked, warmed up and measured with autocannon in rounds, with the CPU time other
 * programs took meanwhile.
 */
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import autocannon from "autocannon";
import { HarnessError, runningGroups } from "../support/processes";
import { type DevServer, d1Query } from "../support/wrangler";
import type { ReceiverCounts } from "./receiver";
import { fixed, thousands } from "./report";
import { type CheckInfo, committedRevisionsSql, type Scenario, ScenarioError, type ScenarioId, savedSql } from "./scenarios";
import { type BenchData, DEPLOY_APPS, type KeyName, LARGE_HISTORY, SMALL_HISTORY, WEBHOOKS } from "./seed";

/** Seconds of warm-up and of measurement per scenario, and in how many rounds the measurement is split. */
export interface Rounds {
  warmup: number;
  duration: number;
  rounds: number;
}

// On 2 cores anything else running skews the figures. During each measurement the CPU time of the whole machine
// (/proc/stat) and of this process and the workers' process groups (/proc/<pid>/stat) are sampled; the
// difference is what other programs used. The CPU time of this process (the load generator) and of the measured
// server's process group (its wrangler and workerd) per request answered is a second measure of each scenario's
// cost, which other programs skew far less than throughput. Linux only; elsewhere these columns read n/a.

/** Clock ticks per second of /proc/stat and /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

interface CpuSample {
  busy: number;
  total: number;
  /** This process and every group the bench started. */
  mine: number;
  /** This process and the measured server's group. */
  target: number;
}

/** A process's group and the CPU ticks it has used so far (user + system), from /proc/<pid>/stat; null once gone. */
function procStat(pid: number | string): { pgrp: number; ticks: number } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null; // gone meanwhile
  }
  // Fields after "(comm)": state ppid pgrp ... utime (14th field overall) stime (15th).
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { pgrp: Number(rest[2]), ticks: Number(rest[11]) + Number(rest[12]) };
}

function cpuSample(targetGroup: number | undefined): CpuSample | null {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, value) => sum + value, 0);
    const idle = fields[3] + (fields[4] ?? 0); // idle + iowait
    const groups = runningGroups();
    let mine = 0;
    let target = 0;
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = procStat(entry);
      if (!stat) continue;
      const pid = Number(entry);
      const { pgrp, ticks } = stat;
      if (pid === process.pid || groups.has(pgrp)) mine += ticks;
      if (pid === process.pid || (targetGroup !== undefined && pgrp === targetGroup)) target += ticks;
    }
    return { busy: total - idle, total, mine, target };
  } catch {
    return null;
  }
}

// The process group of the wrangler dev listening on a URL's port: the group whose leader was started with that
// --port (test/support/wrangler.ts starts each wrangler dev as the leader of its own group).
const groups = new Map<string, number | undefined>();
function groupOf(url: string): number | undefined {
  if (!groups.has(url)) {
    const port = new URL(url).port;
    let found: number | undefined;
    for (const group of runningGroups()) {
      if (group === undefined) continue;
      try {
        if (readFileSync(`/proc/${group}/cmdline`, "utf8").includes(`\0--port\0${port}\0`)) found = group;
      } catch {
        // gone
      }
    }
    groups.set(url, found);
  }
  return groups.get(url);
}

/** CPU ticks the processes of a group have used so far; `members` caches which pids belong to it. */
function groupTicks(group: number, members: number[]): number {
  if (members.length === 0) {
    for (const entry of readdirSync("/proc")) {
      if (/^\d+$/.test(entry) && procStat(entry)?.pgrp === group) members.push(Number(entry));
    }
  }
  let ticks = 0;
  for (const pid of members) ticks += procStat(pid)?.ticks ?? 0;
  return ticks;
}

/**
 * Waits (up to 3 s) until the server's processes are idle: wrangler relays each log line and devtools event of the
 * Worker after the response, so the work a slice of load caused ends a little after the slice itself. Sampling only
 * then charges that work to the slice that caused it, rather than to the next scenario on the same server or to none.
 */
async function settle(group: number | undefined): Promise<void> {
  if (group === undefined) return;
  const members: number[] = [];
  let last = groupTicks(group, members);
  for (let waited = 0; waited < 3_000; waited += 100) {
    await new Promise((wait) => setTimeout(wait, 100));
    const now = groupTicks(group, members);
    if (now - last <= 1) return; // at most 10 ms of CPU in 100 ms
    last = now;
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
  /** CPU milliseconds of the load generator and the measured server per 2xx answer (NaN: not measured). */
  cpuPerRequest: number;
  /** req/s of each round. */
  perRound: number[];
  /** CPU ms per request of each round (NaN: not measured). */
  cpuPerRound: number[];
  /** Seconds the scenario's `drain` waited after its slices, in all (0: it has none). */
  drainSeconds: number;
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

// Requests sent per scenario so far (warm-up and rounds): key rotation and `perRequest` carry on across runs.
const sent = new WeakMap<Scenario, number>();

/** One autocannon run; latencies (ms, sub-millisecond) of the 2xx answers kept from its response events. */
function cannon(
  base: string,
  scenario: Scenario,
  seconds: number,
): Promise<{ result: autocannon.Result; latencies: number[]; bytes: number }> {
  return new Promise((resolveRun, reject) => {
    const latencies: number[] = [];
    let bytes = 0;
    const authorizations = scenario.keys.map((key) => `ApiKey ${key.key}`);
    const { perRequest } = scenario;
    const instance = autocannon(
      {
        url: `${base}${scenario.path}`,
        method: scenario.method,
        headers: scenario.headers,
        body: scenario.body,
        // The next key of the pool on every request, so that no key reaches the service's per-key rate limit; and
        // what else changes per request (autocannon's own `[<id>]` replacement only covers the body).
        requests: [
          {
            setupRequest: (request) => {
              const n = sent.get(scenario) ?? 0;
              sent.set(scenario, n + 1);
              const varied = perRequest?.(n);
              request.headers = {
                ...request.headers,
                ...varied?.headers,
                Authorization: authorizations[n % authorizations.length],
              };
              if (varied?.body !== undefined) request.body = varied.body;
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
  /** The load generator's and the measured server's CPU time, in clock ticks (NaN once a sample failed). */
  targetTicks: number;
  warmupOk: number;
  /** req/s of each round. */
  perRound: number[];
  /** CPU ms per request of each round. */
  cpuPerRound: number[];
  /** Seconds `drain` waited after the slices. */
  drainSeconds: number;
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

  /** Seconds of warm-up load each server has had. */
  const warmed = new Map<string, number>();
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
      // What the check and the warm-up set going is done before any measurement.
      await scenario.drain?.((outcomes[id].info?.created ?? 0) + warmupOk);
      tallies[id] = {
        seconds: 0,
        ok: 0,
        bytes: 0,
        latencies: [],
        otherCpuSeconds: 0,
        targetTicks: 0,
        warmupOk,
        perRound: [],
        cpuPerRound: [],
        drainSeconds: 0,
      };
      warmed.set(scenario.server, (warmed.get(scenario.server) ?? 0) + opts.warmup);
      console.log("ok");
    } catch (error) {
      outcomes[id].error = await failure(error, server, errorsBefore);
      console.log("FAILED");
    }
  }

  // The service has now served every one of its scenarios' warm-ups, a copy of it (--log-variants, --base) fewer: its
  // code is less optimised by the runtime, and it would pay for that in the first rounds. Each copy gets more
  // warm-up on its scenario, up to as much as the service had (at most 4 warm-ups more).
  const serviceWarmed = warmed.get("service") ?? 0;
  for (const id of ids) {
    const scenario = scenarios[id];
    if (outcomes[id].error || scenario.server === "service" || scenario.server === "floor") continue;
    const extra = Math.min(serviceWarmed - (warmed.get(scenario.server) ?? 0), 4 * opts.warmup);
    if (extra < 0.5) continue;
    const { server, base } = serverOf(scenario);
    const errorsBefore = server.errorCount();
    process.stdout.write(`    ${scenario.label.padEnd(width)}  ${fixed(extra, 0)} s more warm-up: `);
    try {
      const warm = await cannon(base, scenario, extra);
      assertClean("warm-up", warm.result);
      tallies[id].warmupOk += warm.result["2xx"];
      warmed.set(scenario.server, (warmed.get(scenario.server) ?? 0) + extra);
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
        const group = groupOf(server.url);
        await settle(group);
        const cpuBefore = cpuSample(group);
        const { result, latencies, bytes } = await cannon(base, scenario, slice);
        // The work the slice set going after its answers (webhook deliveries) is the slice's: waited for here.
        const drained = scenario.drain
          ? await scenario.drain((outcomes[id].info?.created ?? 0) + tally.warmupOk + tally.ok + result["2xx"])
          : 0;
        await settle(group);
        const cpuAfter = cpuSample(group);
        const other = otherCpus(cpuBefore, cpuAfter);
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
        tally.targetTicks += cpuBefore && cpuAfter && group !== undefined ? cpuAfter.target - cpuBefore.target : Number.NaN;
        tally.perRound.push(result["2xx"] / result.duration);
        tally.drainSeconds += drained;
        const cpu =
          cpuBefore && cpuAfter ? ((cpuAfter.target - cpuBefore.target) * 1000) / TICKS_PER_SECOND / result["2xx"] : Number.NaN;
        tally.cpuPerRound.push(cpu);
        console.log(
          `${fixed(result["2xx"] / result.duration, 0).padStart(7)} req/s   ${fixed(cpu, 2).padStart(6)} CPU ms/req   other CPU ${fixed(other, 2)}` +
            (scenario.drain ? `   caught up ${fixed(drained, 2)} s after` : ""),
        );
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
      cpuPerRequest: tally.ok > 0 ? ((tally.targetTicks / TICKS_PER_SECOND) * 1000) / tally.ok : Number.NaN,
      perRound: tally.perRound,
      cpuPerRound: tally.cpuPerRound,
      drainSeconds: tally.drainSeconds,
    };
  }
  return outcomes;
}

/** What the write scenarios left in the database, for the report. */
export interface Writes {
  /** One line per scenario that writes: what was counted and found. */
  lines: string[];
  /** Revisions of the long-history environment at the end (it started at LARGE_HISTORY). */
  largeHistoryEnd: number | null;
  /** Fewest and most revisions among the short-history deploy environments at the end (they started at SMALL_HISTORY). */
  smallHistoryEnd: [number, number] | null;
  /** The hooked organization's deploys and their deliveries, when "deploy, three webhooks" ran. */
  webhooks: WebhookCounts | null;
}

/** What the deploys into the hooked organization left: in the database, and at the receiver. */
export interface WebhookCounts {
  /** Environment revisions made, and `environment.deployed` events of the organization. */
  deploys: number;
  events: number;
  /** webhook_deliveries rows of the organization's webhooks, by status, and attempts made. */
  deliveries: number;
  succeeded: number;
  pending: number;
  failed: number;
  attempts: number;
  /** What the receiver counted, after the consumer was given a few seconds more. */
  received: ReceiverCounts | null;
}

/**
 * Every 2xx answer of a writing scenario wrote what it says, counted in the database once wrangler dev is stopped
 * (nothing holds the file): an app per POST (and a claimed Idempotency-Key per keyed POST), an environment revision
 * per deploy, a variant revision per commit, and per save with overwrite a revision of `main` and a production deploy
 * of it. A request in flight when a run ends is cut off by autocannon but may still have been served: up to
 * one per connection per run more than counted. A scenario whose count is off fails. With webhooks, each deploy's
 * event must have made one delivery per webhook; how many were delivered (`received`: the receiver's counts) is
 * reported, not checked.
 */
export async function checkWrites(
  code: string,
  dir: string,
  data: BenchData,
  outcomes: Record<ScenarioId, Outcome>,
  opts: Rounds,
  received: ReceiverCounts | null = null,
): Promise<Writes> {
  const quote = (text: string) => `'${text}'`;
  const projectApps = (which: KeyName) =>
    `(SELECT COUNT(*) FROM apps WHERE project_id = ${quote(data.keys[which][0].projectId)} AND name NOT LIKE 'seed-app-%')`;
  const smallEnvironments = data.deploy.small.map((target) => quote(target.environmentId)).join(", ");
  const saved = savedSql(data.save);
  const environments = (targets: { environmentId: string }[]) => targets.map((target) => quote(target.environmentId)).join(", ");
  const hooked = quote(data.webhooks.hookedOrganizationId);
  const hookedDeliveries = (status: string) =>
    `(SELECT COUNT(*) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE w.organization_id = ${hooked}${status ? ` AND d.status = '${status}'` : ""})`;
  const [row] = await d1Query<Record<string, number>>(
    dir,
    `SELECT ${projectApps("post")} AS post, ${projectApps("empty")} AS empty, ${projectApps("full")} AS full,
            ${projectApps("keyed")} AS keyed,
            (SELECT COUNT(*) FROM idempotency_keys i JOIN api_keys k ON k.key_hash = i.key_hash
              WHERE k.project_id = ${quote(data.keys.keyed[0].projectId)}) AS keyedClaims,
            ${committedRevisionsSql(data.get.small)} AS committed,
            ${saved.revisions} AS saved, ${saved.deploys} AS saveDeploys,
            ${saved.environmentRevision} AS saveRevision, ${saved.runs} AS saveRuns,
            (SELECT COUNT(*) FROM environment_revisions WHERE environment_id IN (${smallEnvironments})) AS deploy,
            (SELECT MIN(revision) FROM environments WHERE id IN (${smallEnvironments})) AS deployMin,
            (SELECT MAX(revision) FROM environments WHERE id IN (${smallEnvironments})) AS deployMax,
            (SELECT COUNT(*) FROM environment_revisions WHERE environment_id = ${quote(data.deploy.large.environmentId)}) AS deployLarge,
            (SELECT revision FROM environments WHERE id = ${quote(data.deploy.large.environmentId)}) AS deployLargeRevision,
            (SELECT COUNT(*) FROM environment_revisions WHERE environment_id IN (${environments(data.webhooks.quiet)})) AS deployQuiet,
            (SELECT COUNT(*) FROM environment_revisions WHERE environment_id IN (${environments(data.webhooks.hooked)})) AS deployHooks,
            (SELECT COUNT(*) FROM events WHERE organization_id = ${hooked} AND type = 'environment.deployed') AS hookedEvents,
            ${hookedDeliveries("")} AS deliveries, ${hookedDeliveries("succeeded")} AS succeeded,
            ${hookedDeliveries("pending")} AS pending, ${hookedDeliveries("failed")} AS failed,
            (SELECT COUNT(*) FROM webhook_attempts) AS attempts`,
    { cwd: code },
  );
  const runs = opts.rounds + (opts.warmup > 0 ? 1 : 0);
  const lines: string[] = [];
  const verify = (id: ScenarioId, found: number, before: number, what: string, extra = "") => {
    const outcome = outcomes[id];
    if (!outcome) return; // not run (--only)
    const counted = outcome.measurement
      ? (outcome.info?.created ?? 0) + outcome.measurement.warmupOk + outcome.measurement.ok
      : Number.NaN;
    const made = found - before;
    lines.push(`${outcome.scenario.label}: ${thousands(made)} ${what}${extra}`);
    if (!outcome.measurement) return;
    const slack = runs * outcome.scenario.connections;
    if (!(made >= counted && made <= counted + slack)) {
      outcome.error = `${thousands(counted)} requests answered 2xx but ${thousands(made)} ${what} were made`;
      outcome.measurement = undefined;
    }
  };
  const n = (name: string) => Number(row?.[name]);
  verify("post", n("post"), 0, "apps");
  verify("postEmpty", n("empty"), 0, "apps");
  verify("postFull", n("full"), 0, "apps");
  verify("postKeyed", n("keyed"), 0, "apps", `, ${thousands(n("keyedClaims"))} Idempotency-Keys claimed`);
  if (outcomes.postKeyed?.measurement && n("keyedClaims") !== n("keyed")) {
    outcomes.postKeyed.error = `${thousands(n("keyed"))} apps created with an Idempotency-Key, but ${thousands(n("keyedClaims"))} keys claimed`;
    outcomes.postKeyed.measurement = undefined;
  }
  // Revision 1 is the check's add, whose commit the check counts.
  verify("commit", n("committed"), 1, "variant revisions");
  // Each save commits `main`'s next revision and deploys it to production: as many deploys as revisions, and
  // production at its last revision, running `main`'s latest.
  verify(
    "saveConfig",
    n("saved"),
    SMALL_HISTORY,
    "revisions of main",
    `, ${thousands(n("saveDeploys") - SMALL_HISTORY)} production deploys (production now at revision ${n("saveRevision")}, running main revision ${n("saveRuns")})`,
  );
  if (
    outcomes.saveConfig?.measurement &&
    !(n("saveDeploys") === n("saved") && n("saveRevision") === n("saveDeploys") && n("saveRuns") === n("saved"))
  ) {
    outcomes.saveConfig.error =
      `${thousands(n("saved") - SMALL_HISTORY)} revisions of main saved but ${thousands(n("saveDeploys") - SMALL_HISTORY)} production deploys; ` +
      `production at revision ${n("saveRevision")} of ${n("saveDeploys")}, running main revision ${n("saveRuns")} of ${n("saved")}`;
    outcomes.saveConfig.measurement = undefined;
  }
  verify(
    "deploy",
    n("deploy"),
    data.deploy.small.length * SMALL_HISTORY,
    "environment revisions",
    ` (each of the ${data.deploy.small.length} environments now at revision ${n("deployMin")} to ${n("deployMax")})`,
  );
  verify(
    "deployLarge",
    n("deployLarge"),
    LARGE_HISTORY,
    "environment revisions",
    ` (the environment now at revision ${thousands(n("deployLargeRevision"))})`,
  );
  const seeded = DEPLOY_APPS * SMALL_HISTORY;
  verify("deployQuiet", n("deployQuiet"), seeded, "environment revisions");
  verify(
    "deployHooks",
    n("deployHooks"),
    seeded,
    "environment revisions",
    `, ${thousands(n("deliveries"))} deliveries (${thousands(n("succeeded"))} succeeded, ${thousands(n("pending"))} pending, ` +
      `${thousands(n("failed"))} failed), ${thousands(n("attempts"))} attempts` +
      (received
        ? `; the receiver got ${thousands(received.requests)} requests: ${thousands(received.deliveries)} deliveries of ${thousands(received.events)} events`
        : ""),
  );
  // Every deploy's event fans out to each webhook in its own statement: as many deliveries as that, exactly. Those
  // not yet delivered are reported, not failed.
  if (outcomes.deployHooks?.measurement && n("deliveries") !== WEBHOOKS * n("hookedEvents")) {
    outcomes.deployHooks.error = `${thousands(n("hookedEvents"))} environment.deployed events but ${thousands(n("deliveries"))} deliveries (expected ${WEBHOOKS} each)`;
    outcomes.deployHooks.measurement = undefined;
  }
  if (n("deployLargeRevision") !== n("deployLarge") && outcomes.deployLarge?.measurement) {
    outcomes.deployLarge.error = `the environment is at revision ${n("deployLargeRevision")} but has ${n("deployLarge")} revisions`;
    outcomes.deployLarge.measurement = undefined;
  }
  return {
    lines,
    largeHistoryEnd: Number.isFinite(n("deployLargeRevision")) ? n("deployLargeRevision") : null,
    smallHistoryEnd: Number.isFinite(n("deployMin")) ? [n("deployMin"), n("deployMax")] : null,
    webhooks: outcomes.deployHooks
      ? {
          deploys: n("deployHooks") - seeded,
          events: n("hookedEvents"),
          deliveries: n("deliveries"),
          succeeded: n("succeeded"),
          pending: n("pending"),
          failed: n("failed"),
          attempts: n("attempts"),
          received,
        }
      : null,
  };
}
