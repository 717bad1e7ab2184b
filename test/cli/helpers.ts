/**
 * Shared setup of the CLI tests: the admin CLI, the demo seed and wrangler are run as an operator runs them,
 * as separate processes from the repository root, against a temporary --persist-to folder. No mocks.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { type RunResult as ProgramResult, programEnv, ROOT, run } from "../support/processes";
import type { DevServer } from "../support/wrangler";

// The binaries `npm run admin` and `npm run db:seed` resolve to, called directly: same programs, without npm's
// banner on stdout.
const TSX = join(ROOT, "node_modules", ".bin", "tsx");

export interface RunResult extends ProgramResult {
  /** stdout parsed as JSON; undefined when it is not (exactly) one JSON value. */
  json: any;
}

/** Runs a tsx entry point from the repository root and collects its exit code and output. */
async function runTsx(args: string[], env = programEnv()): Promise<RunResult> {
  const result = await run(TSX, args, { env, timeoutMs: 90_000 });
  let json: unknown;
  try {
    json = JSON.parse(result.stdout);
  } catch {
    json = undefined;
  }
  return { ...result, json };
}

/** `npm run admin -- <args...>`, with `--persist-to dir` appended when a folder is given. */
export function admin(persistTo: string | null, ...args: string[]): Promise<RunResult> {
  return runTsx(["src/cli/admin.ts", ...args, ...(persistTo ? ["--persist-to", persistTo] : [])]);
}

/** The admin CLI run with `--remote` as someone who never logged in to Cloudflare (no token, an empty config home). */
export function adminRemoteLoggedOut(configHome: string, ...args: string[]): Promise<RunResult> {
  const { CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID, ...rest } = programEnv();
  return runTsx(["src/cli/admin.ts", ...args, "--remote"], { ...rest, XDG_CONFIG_HOME: configHome, WRANGLER_HOME: configHome });
}

/** `npm run db:seed -- <args...>` */
export function seedDemo(...args: string[]): Promise<RunResult> {
  return runTsx(["src/cli/seed-demo.ts", ...args]);
}

/** A fresh, empty folder under the OS temp dir; remove it with `removeTempDir`. */
export function makeTempDir(label = "cli"): Promise<string> {
  return mkdtemp(join(tmpdir(), `app-management-clitest-${label}-`));
}

export async function removeTempDir(dir: string | undefined): Promise<void> {
  if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** A request to the worker with an API key, as a client sends it; the body, when given, as JSON. */
export async function api(
  worker: DevServer,
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
