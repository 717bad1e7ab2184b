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

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import autocannon from "autocannon";
import { type BenchData, type BenchKey, buildBenchData, FULL_PROJECT_APPS, LARGE_HISTORY, SMALL_HISTORY } from "./seed";

const ROOT = resolve(import.meta.dirname, "../..");
const WRANGLER = join(ROOT, "node_modules/.bin/wrangler");
/**
 * Where the code under test is run from: a copy of the working tree taken when the bench starts (see `snapshot`),
 * so that edits made meanwhile neither reload wrangler dev mid-run nor mix two versions of the code in one run.
 */
let CODE = ROOT;
const serviceConfigPath = () => join(CODE, "wrangler.toml");
/** The floor is the bench's own, and the same whatever code is measured. */
const floorConfigPath = () => join(ROOT, "test/bench/floor/wrangler.toml");
const ENV: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

const TARGETS = { get: 0.8, post: 0.6 } as const;
const BUNDLE_TARGET_KIB = 64;

/** A failure of the harness (as opposed to a missed target): exit code 1. */
class HarnessError extends Error {}

// ---------------------------------------------------------------------------------------------------- options

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
type Options = ReturnType<typeof options>;

// ------------------------------------------------------------------------------------------------ processes

/** Process groups still running (wrangler dev and its workerd), killed whatever way this process ends. */
const running = new Set<ChildProcess>();
let tempDir: string | undefined;
let keepTempDir = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

function cleanUpNow(): void {
  for (const child of running) killGroup(child, "SIGKILL");
  running.clear();
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

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program from the copy of the code in its own process group and collects its output. */
function run(command: string, args: string[], timeoutMs = 120_000): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { cwd: CODE, env: ENV, stdio: ["ignore", "pipe", "pipe"], detached: true });
    running.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      running.delete(child);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      if (signal) stderr += `\n[killed by ${signal}]`;
      resolveRun({ code, stdout, stderr });
    });
  });
}

async function wrangler(args: string[], what: string, timeoutMs?: number): Promise<RunResult> {
  const result = await run(WRANGLER, args, timeoutMs);
  if (result.code !== 0) {
    throw new HarnessError(
      `${what} failed (npx wrangler ${args.join(" ")}, exit ${result.code}):\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no free port")),
      );
    });
  });
}

/** How long `work` took, in seconds, alongside its result. */
async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, (performance.now() - start) / 1000];
}

// ------------------------------------------------------------------------------------------------- wrangler dev

interface DevServer {
  name: string;
  url: string;
  /** Times wrangler dev said it reloaded the Worker (a file it watches changed) since it was first ready. */
  reloads(): number;
  /** Error lines wrangler dev printed (ANSI colours removed), from the given index on. */
  errorsSince(index: number): string[];
  errorCount(): number;
  /** The last part of what wrangler dev printed. */
  tail(): string;
  /** Whether wrangler dev has exited (it should run until `stop`). */
  exited(): boolean;
  stop(): Promise<void>;
}

// What wrangler dev prints when a watched source file changed and it rebuilt the Worker.
const RELOAD = /Reloading local server|Local server updated/;
const ERROR_LINE = /✘|"level":"error"|Uncaught/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC; matching them is the point.
const ANSI = /\x1b\[[0-9;]*m/g;
const TAIL_CHARS = 20_000;

async function startDev(
  name: string,
  configArgs: string[],
  persistTo: string,
  readyPath: string,
  logLevel: string | undefined,
): Promise<DevServer> {
  const [port, inspectorPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const args = [
    "dev",
    ...configArgs,
    "--port",
    String(port),
    "--ip",
    "127.0.0.1",
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    persistTo,
    "--show-interactive-dev-session=false",
    ...(logLevel ? ["--log-level", logLevel] : []),
  ];
  const child = spawn(WRANGLER, args, { cwd: CODE, env: ENV, stdio: ["ignore", "pipe", "pipe"], detached: true });
  running.add(child);
  let tail = "";
  let reloads = 0;
  let ready = false;
  const errors: string[] = [];
  const onOutput = (chunk: string) => {
    // Under load this is a few lines per request: test the whole chunk first, split only when it matters.
    if (ready && RELOAD.test(chunk)) reloads++;
    if (ERROR_LINE.test(chunk)) {
      for (const line of chunk.replace(ANSI, "").split("\n")) if (ERROR_LINE.test(line)) errors.push(line.trim());
      errors.splice(0, Math.max(0, errors.length - 1_000));
    }
    tail = (tail + chunk).slice(-TAIL_CHARS);
  };
  child.stdout?.setEncoding("utf8").on("data", onOutput);
  child.stderr?.setEncoding("utf8").on("data", onOutput);
  let exited = false;
  const exit = new Promise<void>((resolveExit) =>
    child.once("exit", () => {
      exited = true;
      running.delete(child);
      resolveExit();
    }),
  );
  const stop = async () => {
    if (exited) return;
    killGroup(child, "SIGTERM");
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), 5_000);
    await exit;
    clearTimeout(timer);
    killGroup(child, "SIGKILL"); // whatever of the group outlived wrangler itself
  };
  const waitReady = async (timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (exited)
        throw new HarnessError(`wrangler dev (${name}) exited:\nnpx wrangler ${args.join(" ")}\n${tail.replace(ANSI, "")}`);
      try {
        const response = await fetch(`${url}${readyPath}`, { signal: AbortSignal.timeout(2_000) });
        await response.arrayBuffer();
        if (response.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((wait) => setTimeout(wait, 100));
    }
    throw new HarnessError(
      `wrangler dev (${name}) did not answer GET ${readyPath} with 200 within ${timeoutMs / 1000} s:\n${tail.replace(ANSI, "")}`,
    );
  };
  try {
    await waitReady(90_000);
  } catch (error) {
    await stop();
    throw error;
  }
  ready = true;
  return {
    name,
    url,
    reloads: () => reloads,
    errorsSince: (index) => errors.slice(index),
    errorCount: () => errors.length,
    tail: () => tail.replace(ANSI, ""),
    exited: () => exited,
    stop,
  };
}

// --------------------------------------------------------------------------------------------------- snapshot

// Not copied: dependencies (linked instead), history, local state, outputs.
const NOT_COPIED = new Set(["node_modules", ".git", ".wrangler", "dist", "coverage", "test/bench/results"]);

/** A copy of the tree `from` (this tree's node_modules linked) in `dir`, from which wrangler runs everything. */
function snapshot(from: string, dir: string): string {
  const code = join(dir, "code");
  cpSync(from, code, {
    recursive: true,
    filter: (source) => {
      const path = relative(from, source);
      return !NOT_COPIED.has(path) && !NOT_COPIED.has(path.split(sep)[0]);
    },
  });
  symlinkSync(join(ROOT, "node_modules"), join(code, "node_modules"), "dir");
  return code;
}

// ------------------------------------------------------------------------------------------------------- data

async function loadData(dir: string): Promise<BenchData> {
  await wrangler(["d1", "migrations", "apply", "DB", "--local", "--persist-to", dir], "applying the migrations");
  const data = buildBenchData();
  const file = join(dir, "bench-data.sql");
  writeFileSync(file, data.sql);
  await wrangler(["d1", "execute", "DB", "--local", "--persist-to", dir, "--file", file], "loading the bench data");
  // All checks in one query (D1 limits compound SELECTs, so one column each).
  const checks = await d1Query(dir, `SELECT ${data.checks.map((check, index) => `(${check.sql}) AS c${index}`).join(", ")}`);
  const failed = data.checks.filter((check, index) => checks[0]?.[`c${index}`] !== check.expected);
  if (failed.length > 0) {
    throw new HarnessError(
      `the bench data is not what it should be:\n${failed.map((check) => `  ${check.what}: ${checks[0]?.[`c${data.checks.indexOf(check)}`]} (expected ${check.expected})`).join("\n")}`,
    );
  }
  return data;
}

async function d1Query(dir: string, sql: string): Promise<Record<string, unknown>[]> {
  const result = await wrangler(
    ["d1", "execute", "DB", "--local", "--persist-to", dir, "--command", sql, "--json"],
    "querying the local D1",
  );
  try {
    return JSON.parse(result.stdout)[0].results;
  } catch {
    throw new HarnessError(`unexpected output of wrangler d1 execute --json:\n${result.stdout}\n${result.stderr}`);
  }
}

// ----------------------------------------------------------------------------------------------------- bundle

interface BundleSize {
  files: string[];
  rawBytes: number;
  gzipBytes: number;
  /** What wrangler itself printed ("Total Upload: x KiB / gzip: y KiB"), for comparison. */
  wranglerSummary: string | null;
  /** Bytes of the emitted bundle by npm package or the service's own source, largest first. */
  contributors: [string, number][];
}

/** The bundle `wrangler deploy` would upload, as configured (or with --minify, for comparison). */
async function bundleSize(dir: string, minify = false): Promise<BundleSize> {
  const outdir = join(dir, minify ? "bundle-minified" : "bundle");
  const metafile = join(dir, minify ? "bundle-minified-meta.json" : "bundle-meta.json");
  const result = await wrangler(
    [
      "deploy",
      "--dry-run",
      "--outdir",
      outdir,
      "--metafile",
      metafile,
      "-c",
      serviceConfigPath(),
      ...(minify ? ["--minify"] : []),
    ],
    `bundling the service (wrangler deploy --dry-run${minify ? " --minify" : ""})`,
  );
  const files = readdirSync(outdir, { recursive: true, encoding: "utf8" })
    .filter((file) => /\.(m?js|cjs)$/.test(file))
    .sort();
  if (files.length === 0) throw new HarnessError(`wrangler deploy --dry-run emitted no .js into ${outdir}:\n${result.stdout}`);
  let rawBytes = 0;
  let gzipBytes = 0;
  for (const file of files) {
    const content = readFileSync(join(outdir, file));
    rawBytes += content.byteLength;
    gzipBytes += gzipSync(content, { level: 9 }).byteLength;
  }
  const summary = /Total Upload:\s*([^\n]+)/.exec(result.stdout + result.stderr);
  return {
    files,
    rawBytes,
    gzipBytes,
    wranglerSummary: summary ? summary[1].trim() : null,
    contributors: contributors(metafile),
  };
}

/** Bytes of the bundle by npm package (or by the service's own source), largest first, from esbuild's metafile. */
function contributors(metafile: string): [string, number][] {
  let meta: { outputs?: Record<string, { inputs?: Record<string, { bytesInOutput?: number }> }> };
  try {
    meta = JSON.parse(readFileSync(metafile, "utf8"));
  } catch {
    return [];
  }
  const totals = new Map<string, number>();
  for (const output of Object.values(meta.outputs ?? {})) {
    for (const [input, { bytesInOutput = 0 }] of Object.entries(output.inputs ?? {})) {
      const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
      const owner = inPackage ? inPackage[1] : /(^|\/)src\//.test(input) ? "src/ (the service)" : "other (wrangler shims)";
      totals.set(owner, (totals.get(owner) ?? 0) + bytesInOutput);
    }
  }
  return [...totals.entries()].sort((a, b) => b[1] - a[1]);
}

// ---------------------------------------------------------------------------------------------- CPU accounting

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
    const groups = new Set([...running].map((child) => child.pid));
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

// ---------------------------------------------------------------------------------------------------- scenarios

/** A scenario that did not run cleanly: reported, the others still run, and the bench exits non-zero. */
class ScenarioError extends Error {}

interface Scenario {
  label: string;
  server: "service" | "floor";
  method: "GET" | "POST";
  /** Below the server's URL (and the service's BASE_PATH). */
  path: string;
  headers: Record<string, string>;
  /** Each request carries `Authorization: ApiKey <key>` with the next key of this pool. */
  keys: BenchKey[];
  /** With `[<id>]`, replaced by autocannon with a unique id per request. */
  body?: string;
  connections: number;
  /** One request, checked in full before any load; what it returns goes into the report. */
  // biome-ignore lint/suspicious/noConfusingVoidType: most checks only throw; those that measure return their figures.
  check(base: string): Promise<CheckInfo | void>;
}

interface CheckInfo {
  /** Size of the checked response's body, and gzipped. */
  bytes?: number;
  gzipBytes?: number;
  /** Apps the check created. */
  created?: number;
}

interface Measurement {
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

interface Outcome {
  scenario: Scenario;
  measurement?: Measurement;
  info?: CheckInfo;
  error?: string;
}

async function request(url: string, init: RequestInit = {}): Promise<{ status: number; text: string; bytes: number }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) });
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, text: body.toString("utf8"), bytes: body.byteLength };
}

function expectJson(what: string, response: { status: number; text: string }): any {
  if (response.status !== 200)
    throw new ScenarioError(`${what}: status ${response.status}, expected 200: ${response.text.slice(0, 300)}`);
  try {
    return JSON.parse(response.text);
  } catch {
    throw new ScenarioError(`${what}: the body is not JSON: ${response.text.slice(0, 300)}`);
  }
}

const authorization = (key: BenchKey) => ({ Authorization: `ApiKey ${key.key}`, Accept: "application/json" });
const postHeaders = (key: BenchKey) => ({ ...authorization(key), "Content-Type": "application/json" });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** GET of an environment: 200, the record of the right app at revision `count`, revisions 1..count in order. */
function checkRecord(path: string, key: BenchKey, appId: string, count: number) {
  return async (base: string): Promise<CheckInfo> => {
    const what = `GET ${path}`;
    const response = await request(`${base}${path}`, { headers: authorization(key) });
    const record = expectJson(what, response);
    const revisions = record.revisions;
    if (
      record.name !== "production" ||
      record.app_id !== appId ||
      record.revision !== count ||
      !Array.isArray(revisions) ||
      revisions.length !== count
    ) {
      throw new ScenarioError(
        `${what}: expected production of ${appId} at revision ${count} with ${count} revisions, got ${record.name} of ${record.app_id} at revision ${record.revision} with ${Array.isArray(revisions) ? revisions.length : "no"} revisions`,
      );
    }
    if (revisions.some((entry: { revision: number }, index: number) => entry.revision !== index + 1))
      throw new ScenarioError(`${what}: revisions are not 1..${count} in order`);
    return { bytes: response.bytes, gzipBytes: gzipSync(Buffer.from(response.text)).byteLength };
  };
}

/** POST /apps with the key: 200 {app_id, app_name} for a new name. */
function checkCreate(path: string, key: BenchKey, label: string) {
  return async (base: string): Promise<CheckInfo> => {
    const name = `bench-check-${label}-${Date.now()}`;
    const what = `POST ${path} {"app_name": "${name}"}`;
    const created = expectJson(
      what,
      await request(`${base}${path}`, { method: "POST", headers: postHeaders(key), body: JSON.stringify({ app_name: name }) }),
    );
    if (typeof created.app_id !== "string" || !UUID.test(created.app_id) || created.app_name !== name)
      throw new ScenarioError(`${what}: answered ${JSON.stringify(created)}`);
    return { created: 1 };
  };
}

function checkBody(path: string, expected: unknown) {
  return async (base: string): Promise<void> => {
    const body = expectJson(`GET ${path}`, await request(`${base}${path}`));
    if (JSON.stringify(body) !== JSON.stringify(expected))
      throw new ScenarioError(`GET ${path}: answered ${JSON.stringify(body)}, expected ${JSON.stringify(expected)}`);
  };
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
async function runScenarios<Id extends string>(
  scenarios: Record<Id, Scenario>,
  serverOf: (scenario: Scenario) => { server: DevServer; base: string },
  opts: Options,
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

// ------------------------------------------------------------------------------------------------------ report

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : "n/a");
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const thousands = (n: number) => n.toLocaleString("en");

function table(header: string[], rows: string[][], align: ("l" | "r")[]): string {
  const widths = header.map((cell, index) => Math.max(cell.length, ...rows.map((row) => row[index].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, index) => (align[index] === "r" ? cell.padStart(widths[index]) : cell.padEnd(widths[index]))).join(" | ")} |`;
  const rule = `|${widths.map((width, index) => (align[index] === "r" ? `${"-".repeat(width + 1)}:` : "-".repeat(width + 2))).join("|")}|`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

function spawnText(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return "";
  }
}

/** The commit, and which files of the code under test differ from it (others may be editing them). */
function gitState(tree: string): string {
  if (tree !== ROOT) return `the tree in ${tree}`;
  const rev = spawnText("git", ["rev-parse", "--short", "HEAD"]).trim() || "unknown";
  const dirty = spawnText("git", ["status", "--porcelain", "--", "src", "migrations", "wrangler.toml", "package.json"])
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => line.slice(3));
  return dirty.length > 0 ? `${rev} with uncommitted changes to ${dirty.join(", ")}` : rev;
}

function packageVersion(name: string): string {
  try {
    return JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return "unknown";
  }
}

function machine(): string[] {
  const model = /^model name\s*:\s*(.+)$/m.exec(spawnText("cat", ["/proc/cpuinfo"]))?.[1] ?? os.cpus()[0]?.model ?? "unknown CPU";
  return [
    `${os.availableParallelism()} CPUs (nproc), ${model}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ${os.type()} ${os.release()}`,
    `node ${process.version}, wrangler ${packageVersion("wrangler")}, workerd ${packageVersion("workerd")}, autocannon ${packageVersion("autocannon")}`,
  ];
}

/** The 1-minute load average: on 2 cores, anything else running skews the figures. */
function load(): string {
  return os.loadavg()[0].toFixed(2);
}

// -------------------------------------------------------------------------------------------------------- main

type ScenarioId = "static" | "select1" | "get" | "post" | "getSmall1" | "getLarge1" | "postEmpty" | "postFull";

async function main(): Promise<number> {
  const opts = options();
  keepTempDir = opts.keep;
  const started = performance.now();
  const phases: [string, number][] = [];
  const loadAtStart = load();
  console.log(
    `bench: ${opts.duration} s per scenario (${opts.rounds} round(s)) after ${opts.warmup} s of warm-up, ${opts.connections} connections`,
  );
  for (const line of machine()) console.log(`  ${line}`);

  tempDir = mkdtempSync(join(os.tmpdir(), "app-management-bench-"));
  const work = tempDir;
  const git = gitState(opts.code);
  CODE = snapshot(opts.code, work);
  const dir = join(work, "state");
  mkdirSync(dir);
  const { unstable_readConfig } = await import("wrangler");
  const serviceConfig = unstable_readConfig({ config: serviceConfigPath() });
  const floorConfig = unstable_readConfig({ config: floorConfigPath() });
  const basePath = String((serviceConfig.vars as Record<string, unknown> | undefined)?.BASE_PATH ?? "").replace(/\/+$/, "");
  const warnings: string[] = [];
  if (serviceConfig.compatibility_date !== floorConfig.compatibility_date) {
    warnings.push(
      `compatibility_date differs: service ${serviceConfig.compatibility_date}, floor ${floorConfig.compatibility_date} (test/bench/floor/wrangler.toml)`,
    );
  }
  console.log(`  code under test: ${git}${basePath ? `, BASE_PATH ${basePath}` : ""}, copied to ${CODE}`);
  console.log(`\nlocal D1 in ${dir}`);
  const [data, loadSeconds] = await timed(() => loadData(dir));
  phases.push(["migrations, bench data (apply, load, check)", loadSeconds]);
  console.log(`  migrations applied, bench data loaded and checked in ${loadSeconds.toFixed(1)} s`);

  const [[bundle, minified], bundleSeconds] = await timed(
    async () => [await bundleSize(work), await bundleSize(work, true)] as const,
  );
  phases.push(["bundle (wrangler deploy --dry-run, as configured and --minify)", bundleSeconds]);
  console.log(
    `  bundle: ${bundle.files.join(", ")} ${kib(bundle.rawBytes)}, gzip -9 ${kib(bundle.gzipBytes)} (with --minify: gzip -9 ${kib(minified.gzipBytes)})`,
  );
  const loadBefore = load();

  const [[service, floor], startSeconds] = await timed(() =>
    Promise.all([
      startDev("service", ["-c", serviceConfigPath()], dir, `${basePath}/health`, opts.logLevel),
      startDev("floor", ["-c", floorConfigPath()], dir, "/static", opts.logLevel),
    ]),
  );
  phases.push(["start both wrangler dev", startSeconds]);
  console.log(`  service on ${service.url}, floor on ${floor.url} (ready in ${startSeconds.toFixed(1)} s)`);

  const c = opts.connections;
  const postBody = '{"app_name": "bench-[<id>]"}';
  const getPath = (which: "small" | "large") => `/apps/${data.apps[which]}/revisions/production`;
  // Every scenario, floors included, sends an Authorization header taken in turn from a pool of keys (the floor
  // ignores it): the same request shape and the same load-generator work per request everywhere.
  const k = data.keys;
  const json = { Accept: "application/json" };
  const post = { ...json, "Content-Type": "application/json" };
  const scenarios: Record<ScenarioId, Scenario> = {
    static: {
      label: "floor: static JSON",
      server: "floor",
      method: "GET",
      path: "/static",
      headers: json,
      keys: k.read,
      connections: c,
      check: checkBody("/static", { status: "ok" }),
    },
    select1: {
      label: "floor: SELECT 1 on D1",
      server: "floor",
      method: "GET",
      path: "/select1",
      headers: json,
      keys: k.read,
      connections: c,
      check: checkBody("/select1", { one: 1 }),
    },
    get: {
      label: `GET production, ${SMALL_HISTORY} revisions`,
      server: "service",
      method: "GET",
      path: getPath("small"),
      headers: json,
      keys: k.read,
      connections: c,
      check: checkRecord(getPath("small"), k.read[0], data.apps.small, SMALL_HISTORY),
    },
    post: {
      label: "POST /apps, new app_name each",
      server: "service",
      method: "POST",
      path: "/apps",
      headers: post,
      keys: k.post,
      body: postBody,
      connections: c,
      check: checkCreate("/apps", k.post[0], "post"),
    },
    getSmall1: {
      label: `GET production, ${SMALL_HISTORY} revisions, 1 conn.`,
      server: "service",
      method: "GET",
      path: getPath("small"),
      headers: json,
      keys: k.read,
      connections: 1,
      check: checkRecord(getPath("small"), k.read[0], data.apps.small, SMALL_HISTORY),
    },
    getLarge1: {
      label: `GET production, ${thousands(LARGE_HISTORY)} revisions, 1 conn.`,
      server: "service",
      method: "GET",
      path: getPath("large"),
      headers: json,
      keys: k.read,
      connections: 1,
      check: checkRecord(getPath("large"), k.read[0], data.apps.large, LARGE_HISTORY),
    },
    postEmpty: {
      label: "POST /apps into an empty project",
      server: "service",
      method: "POST",
      path: "/apps",
      headers: post,
      keys: k.empty,
      body: postBody,
      connections: c,
      check: checkCreate("/apps", k.empty[0], "empty"),
    },
    postFull: {
      label: `POST /apps into a project of ${thousands(FULL_PROJECT_APPS)} apps`,
      server: "service",
      method: "POST",
      path: "/apps",
      headers: post,
      keys: k.full,
      body: postBody,
      connections: c,
      check: checkCreate("/apps", k.full[0], "full"),
    },
  };

  console.log(`\nscenarios, one at a time:`);
  const [outcomes, measureSeconds] = await timed(() =>
    runScenarios(
      scenarios,
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

  // Every 2xx POST created an app: count them in the database (wrangler dev is stopped, nothing holds the file).
  // A request in flight when a run ends is cut off by autocannon but may still have been served: up to one per
  // connection per run more than counted.
  const creations: string[] = [];
  const createdRows = await d1Query(
    dir,
    `SELECT ${(["post", "empty", "full"] as const).map((which) => `(SELECT COUNT(*) FROM apps WHERE project_id = '${data.keys[which][0].projectId}' AND name NOT LIKE 'seed-app-%') AS ${which}`).join(", ")}`,
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

  // ---- report
  const m = (id: ScenarioId) => outcomes[id].measurement;
  const rps = (id: ScenarioId) => m(id)?.requestsPerSecond ?? Number.NaN;
  const getRatio = rps("get") / rps("select1");
  const postRatio = rps("post") / rps("select1");
  const fullRatio = rps("postFull") / rps("postEmpty");
  const verdict = (value: number, target: number) =>
    !Number.isFinite(value) ? "n/a (a scenario failed)" : value >= target ? "met" : "**missed**";
  const failures = (Object.keys(outcomes) as ScenarioId[]).filter((id) => outcomes[id].error);

  const mainTable = table(
    ["scenario", "conns", "req/s", "p50 ms", "p99 ms", "2xx", "bytes/resp.", "other CPU"],
    (Object.keys(outcomes) as ScenarioId[]).map((id) => {
      const { scenario, measurement: x } = outcomes[id];
      return x
        ? [
            scenario.label,
            String(scenario.connections),
            fixed(x.requestsPerSecond, 0),
            fixed(x.p50, 2),
            fixed(x.p99, 2),
            thousands(x.ok),
            thousands(Math.round(x.meanBytes)),
            fixed(x.otherCpus, 2),
          ]
        : [scenario.label, String(scenario.connections), "**FAILED**", "", "", "", "", ""];
    }),
    ["l", "r", "r", "r", "r", "r", "r", "r"],
  );
  // The same ratio within each round (scenarios measured a few seconds apart): its spread shows how much the
  // machine's other work moved the figures.
  const spread = (a: ScenarioId, b: ScenarioId) => {
    const [x, y] = [m(a)?.perRound ?? [], m(b)?.perRound ?? []];
    const ratios = x.map((value, index) => value / y[index]).filter(Number.isFinite);
    return ratios.length > 1 ? `${fixed(Math.min(...ratios), 2)} to ${fixed(Math.max(...ratios), 2)}` : "";
  };
  const ratioTable = table(
    ["throughput ratio", "value", "rounds", "target", ""],
    [
      [
        "GET / one-query floor",
        fixed(getRatio, 2),
        spread("get", "select1"),
        `>= ${TARGETS.get}`,
        verdict(getRatio, TARGETS.get),
      ],
      [
        "POST / one-query floor",
        fixed(postRatio, 2),
        spread("post", "select1"),
        `>= ${TARGETS.post}`,
        verdict(postRatio, TARGETS.post),
      ],
      ["one-query floor / static floor", fixed(rps("select1") / rps("static"), 2), spread("select1", "static"), "", "context"],
      ["GET / static floor", fixed(rps("get") / rps("static"), 2), spread("get", "static"), "", "context"],
      ["POST / static floor", fixed(rps("post") / rps("static"), 2), spread("post", "static"), "", "context"],
      [
        `POST into ${thousands(FULL_PROJECT_APPS)}-app project / into empty project`,
        fixed(fullRatio, 2),
        spread("postFull", "postEmpty"),
        "near 1",
        "scale",
      ],
    ],
    ["l", "r", "l", "l", "l"],
  );
  const large = outcomes.getLarge1;
  const small = outcomes.getSmall1;
  const scaleTable = table(
    ["scale", "value", "target"],
    [
      [
        `GET ${thousands(LARGE_HISTORY)} revisions, 1 conn.: p50 / p99`,
        large.measurement
          ? `${fixed(large.measurement.p50, 1)} / ${fixed(large.measurement.p99, 1)} ms`
          : "**FAILED** (see below)",
        "",
      ],
      [
        `GET ${SMALL_HISTORY} revisions, 1 conn.: p50 / p99`,
        small.measurement ? `${fixed(small.measurement.p50, 2)} / ${fixed(small.measurement.p99, 2)} ms` : "**FAILED**",
        "",
      ],
      [
        `GET ${thousands(LARGE_HISTORY)} revisions: response body`,
        large.info?.bytes !== undefined
          ? `${thousands(large.info.bytes)} bytes (${kib(large.info.bytes)}; gzip ${kib(large.info.gzipBytes ?? 0)})`
          : "n/a (no 200 answer)",
        "",
      ],
      [
        `GET ${SMALL_HISTORY} revisions: response body`,
        small.info?.bytes !== undefined
          ? `${thousands(small.info.bytes)} bytes (gzip ${thousands(small.info.gzipBytes ?? 0)})`
          : "n/a",
        "",
      ],
      [
        `POST into ${thousands(FULL_PROJECT_APPS)}-app project / into empty project`,
        `${fixed(fullRatio, 2)} (${fixed(rps("postFull"), 0)} / ${fixed(rps("postEmpty"), 0)} req/s)`,
        "near 1",
      ],
      [
        `bundle, gzip -9 of ${bundle.files.join(", ")} (wrangler.toml as is)`,
        `${kib(bundle.gzipBytes)} (raw ${kib(bundle.rawBytes)}${bundle.wranglerSummary ? `; wrangler says ${bundle.wranglerSummary}` : ""})`,
        `<= ${BUNDLE_TARGET_KIB} KiB: ${bundle.gzipBytes <= BUNDLE_TARGET_KIB * 1024 ? "met" : "**missed**"}`,
      ],
      [`bundle with --minify (for comparison), gzip -9`, `${kib(minified.gzipBytes)} (raw ${kib(minified.rawBytes)})`, "context"],
    ],
    ["l", "l", "l"],
  );
  const failureLines = failures.map((id) => `- **${outcomes[id].scenario.label}** failed: ${outcomes[id].error}`);
  const loadAtEnd = load();
  const totalSeconds = (performance.now() - started) / 1000;
  phases.push(["total", totalSeconds]);
  const phaseTable = table(
    ["phase", "seconds"],
    phases.map(([name, seconds]) => [name, seconds.toFixed(1)]),
    ["l", "r"],
  );

  const markdown = [
    `# Benchmark run ${new Date().toISOString()}`,
    "",
    ...machine().map((line) => `- ${line}`),
    `- code under test: ${git}${basePath ? `, BASE_PATH ${basePath}` : ""}; run from a copy of the working tree taken when the bench started`,
    `- \`npm run bench -- --duration ${opts.duration} --warmup ${opts.warmup} --rounds ${opts.rounds} --connections ${opts.connections}${opts.logLevel ? ` --log-level ${opts.logLevel}` : ""}${opts.code !== ROOT ? ` --code ${opts.code}` : ""}\`: ` +
      `each scenario checked with one request and warmed up ${opts.warmup} s, then measured ${opts.duration} s in all with autocannon, one scenario at a time, ` +
      `in ${opts.rounds} round(s) of ${fixed(opts.duration / opts.rounds, 1)} s per scenario; latencies of 2xx answers (any other answer fails the scenario)`,
    `- data: ${thousands(FULL_PROJECT_APPS + 2)} apps, ${thousands(3 * (FULL_PROJECT_APPS + 2))} environments, ${thousands(SMALL_HISTORY + LARGE_HISTORY)} environment revisions; ` +
      `apps created by the POST scenarios (check, warm-up, measurement): ${creations.join(", ")}`,
    `- 1-minute load average: ${loadAtStart} at start, ${loadBefore} before starting the workers, ${loadAtEnd} at the end; ` +
      `"other CPU" below is the CPUs' worth of time programs other than the bench and its two wrangler dev used during each measurement (0 on a quiet machine)`,
    ...warnings.map((warning) => `- warning: ${warning}`),
    "",
    "## Throughput and latency",
    "",
    mainTable,
    ...(failureLines.length > 0 ? ["", ...failureLines] : []),
    "",
    "## Ratios",
    "",
    ratioTable,
    "",
    "## Scale and bundle",
    "",
    scaleTable,
    "",
    `Largest parts of the bundle (bytes each contributes to the emitted index.js, as configured): ${bundle.contributors
      .slice(0, 8)
      .map(([owner, bytes]) => `${owner} ${kib(bytes)}`)
      .join(", ")}.`,
    "",
    "## Time taken",
    "",
    phaseTable,
    "",
  ].join("\n");

  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, markdown);
  console.log(
    `\n${mainTable}\n${failureLines.length > 0 ? `\n${failureLines.join("\n")}\n` : ""}\n${ratioTable}\n\n${scaleTable}\n\n${phaseTable}\n`,
  );
  console.log(
    `bundle by package: ${bundle.contributors
      .slice(0, 8)
      .map(([owner, bytes]) => `${owner} ${kib(bytes)}`)
      .join(", ")}`,
  );
  console.log(
    `1-minute load average: ${loadAtStart} at start, ${loadBefore} before the workers started, ${loadAtEnd} at the end`,
  );
  for (const warning of warnings) console.log(`warning: ${warning}`);
  console.log(`markdown written to ${relative(process.cwd(), opts.out) || opts.out}`);
  if (opts.keep) console.log(`temporary folder kept: ${work} (code/: the copy run, state/: the --persist-to folder)`);
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
