/**
 * Shared setup of the CLI tests: the admin CLI, the demo seed and wrangler are run as an operator runs them,
 * as separate processes from the repository root, against a temporary --persist-to folder. No mocks.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect } from "vitest";

export const ROOT = resolve(import.meta.dirname, "../..");

// The binaries `npm run admin`, `npm run db:seed` and `npx wrangler` resolve to, called directly: same
// programs, without npm's banner on stdout or npx's start-up cost.
const TSX = join(ROOT, "node_modules", ".bin", "tsx");
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");

const ENV: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON; undefined when it is not (exactly) one JSON value. */
  json: any;
}

/** Runs a program from the repository root and collects its exit code and output. */
export function run(command: string, args: string[], timeoutMs = 90_000, env: NodeJS.ProcessEnv = ENV): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    // Its own process group: on timeout, tsx's node child and workerd go down with it.
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (signal) stderr += `\n[killed by ${signal}]`;
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolvePromise({ code, stdout, stderr, json });
    });
  });
}

/** `npm run admin -- <args...>`, with `--persist-to dir` appended when a folder is given. */
export function admin(persistTo: string | null, ...args: string[]): Promise<RunResult> {
  return run(TSX, ["src/cli/admin.ts", ...args, ...(persistTo ? ["--persist-to", persistTo] : [])]);
}

/** The admin CLI run with `--remote` as someone who never logged in to Cloudflare (no token, an empty config home). */
export function adminRemoteLoggedOut(configHome: string, ...args: string[]): Promise<RunResult> {
  const { CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID, ...rest } = ENV;
  return run(TSX, ["src/cli/admin.ts", ...args, "--remote"], 90_000, {
    ...rest,
    XDG_CONFIG_HOME: configHome,
    WRANGLER_HOME: configHome,
  });
}

/** `npm run db:seed -- <args...>` */
export function seedDemo(...args: string[]): Promise<RunResult> {
  return run(TSX, ["src/cli/seed-demo.ts", ...args]);
}

export function wrangler(...args: string[]): Promise<RunResult> {
  return run(WRANGLER, args);
}

/** A fresh, empty folder under the OS temp dir; remove it with `removeTempDir`. */
export function makeTempDir(label = "cli"): Promise<string> {
  return mkdtemp(join(tmpdir(), `app-management-clitest-${label}-`));
}

export async function removeTempDir(dir: string | undefined): Promise<void> {
  if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** Applies the migrations to the local D1 kept in `dir`, as `npm run db:migrate` does for the default folder. */
export async function migrate(dir: string): Promise<void> {
  const result = await wrangler("d1", "migrations", "apply", "DB", "--local", "--persist-to", dir);
  if (result.code !== 0) throw new Error(`migrations failed (${result.code}):\n${result.stdout}\n${result.stderr}`);
}

/** Rows of a read-only query against the local D1 in `dir`, through `wrangler d1 execute --json`. */
export async function query<Row = Record<string, unknown>>(dir: string, sql: string): Promise<Row[]> {
  const result = await wrangler("d1", "execute", "DB", "--local", "--persist-to", dir, "--command", sql, "--json");
  if (result.code !== 0 || !Array.isArray(result.json)) {
    throw new Error(`d1 execute failed (${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
  return result.json[0].results as Row[];
}

/** A TCP port free on the loopback interface right now. */
export function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolvePromise(address.port) : reject(new Error("no port"))));
    });
  });
}

export interface Worker {
  /** e.g. http://127.0.0.1:8787, no trailing slash. */
  url: string;
  /** What wrangler dev printed so far, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

// Process groups of wrangler dev still running, killed even when the test process exits without afterAll.
const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) killGroup(child, "SIGKILL");
});

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** `wrangler dev` on a free loopback port, serving the local D1 in `persistTo`; resolves once GET /health is 200. */
export async function startWorker(persistTo: string, timeoutMs = 60_000): Promise<Worker> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(WRANGLER, ["dev", "--port", String(port), "--ip", "127.0.0.1", "--persist-to", persistTo], {
    cwd: ROOT,
    env: ENV,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, so that workerd goes down with it
  });
  running.add(child);
  let output = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolveExit) => child.once("exit", () => resolveExit()));
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    running.delete(child);
  });

  const stop = async () => {
    if (hasExited) return;
    killGroup(child, "SIGTERM");
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
    killGroup(child, "SIGKILL"); // whatever of the group outlived wrangler itself
  };

  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (hasExited) throw new Error(`wrangler dev exited before it was ready:\n${output}`);
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) });
      if (response.status === 200) return { url, output: () => output, stop };
    } catch {
      // not listening yet
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
  await stop();
  throw new Error(`wrangler dev did not answer GET /health with 200 within ${timeoutMs} ms:\n${output}`);
}

/** A request to the worker with an API key, as a client sends it; the body, when given, as JSON. */
export async function api(
  worker: Worker,
  method: "GET" | "POST",
  path: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { Accept: "application/json", Authorization: `ApiKey ${key}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`${worker.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // left as text
  }
  return { status: response.status, body: parsed };
}

/** Exit 0, and stdout is exactly one JSON object with exactly these fields (in any order). Returns the object. */
export function expectJsonObject(result: RunResult, fields: string[]): any {
  expect(result.code, `exit code; stderr:\n${result.stderr}`).toBe(0);
  expect(result.json, `stdout is not one JSON value:\n${result.stdout}`).toBeDefined();
  expect(typeof result.json === "object" && result.json !== null && !Array.isArray(result.json), "stdout is a JSON object").toBe(
    true,
  );
  expect(Object.keys(result.json).sort()).toEqual([...fields].sort());
  return result.json;
}

/**
 * Non-zero exit, nothing on stdout, and an `error: ...` message (no stack trace) on stderr. The message need not
 * be stderr's first line: when wrangler dev holds the database lock, workerd logs SQLITE_BUSY there itself.
 */
export function expectCliError(result: RunResult, message: RegExp): void {
  expect(result.code, `exit code; stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).not.toBe(0);
  expect(result.code).not.toBeNull();
  expect(result.stdout).toBe("");
  expect(result.stderr).toMatch(/^error: /m);
  expect(result.stderr).toMatch(message);
  expect(result.stderr, "no stack trace").not.toMatch(/^\s+at /m);
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const API_KEY = /^[A-Za-z0-9]{8}\.[0-9a-f]{64}$/;
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
