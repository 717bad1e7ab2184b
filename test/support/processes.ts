/**
 * Programs run by the CLI tests and the bench, each in its own process group, so that whatever it starts (tsx's
 * node child, wrangler's workerd) goes down with it; every group still running is killed when this process exits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../..");

/**
 * wrangler without telemetry or the network, and out of the dev registry unless one is named (so that the dev
 * servers and CLI runs of tests and benchmarks leave a developer's own `npm run dev` registered); anything given
 * is added.
 */
export const programEnv = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_REGISTRY_PATH: process.env.WRANGLER_REGISTRY_PATH ?? "",
  ...extra,
});

/** A failure of the harness itself (a program it needs failed or never got ready), not of what it tests or measures. */
export class HarnessError extends Error {}

const running = new Set<ChildProcess>();

export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

export function killAllGroups(): void {
  for (const child of running) killGroup(child, "SIGKILL");
  running.clear();
}

process.on("exit", killAllGroups);

/** Process group ids of the programs still running (the bench tells their CPU time from other programs'). */
export function runningGroups(): Set<number | undefined> {
  return new Set([...running].map((child) => child.pid));
}

export interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/** Starts a program in its own process group, its output piped, until it exits or this process does. */
export function spawnGroup(command: string, args: string[], { cwd = ROOT, env = programEnv() }: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  running.add(child);
  child.once("exit", () => running.delete(child));
  child.once("error", () => running.delete(child));
  return child;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end and collects its exit code and output; past `timeoutMs` its group is killed. */
export function run(command: string, args: string[], options: SpawnOptions & { timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawnGroup(command, args, options);
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), options.timeoutMs ?? 120_000);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (signal) stderr += `\n[killed by ${signal}]`;
      resolveRun({ code, stdout, stderr });
    });
  });
}

/** A TCP port free on the loopback interface right now. */
export function freePort(): Promise<number> {
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
