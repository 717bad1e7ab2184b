/**
 * Shared setup of the CLI tests: the admin CLI and the demo seed as an operator runs them, against a temporary
 * --persist-to folder. No mocks. A process costs seconds (tsx, wrangler, a workerd of its own), so the admin CLI's
 * commands run in this process (`admin`, src/cli/admin-commands.ts's runAdmin, every command line parsed and checked
 * as typed), each folder's database opened once and kept open; a few tests spawn the script itself (`adminProcess`)
 * to prove it as an operator runs it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect } from "vitest";
import { runAdmin } from "../../src/cli/admin-commands";
import { type OpenDatabase, openDatabase, retryTransient, type Target } from "../../src/cli/database";
import { type RunResult as ProgramResult, programEnv, ROOT, run } from "../support/processes";
import type { DevServer } from "../support/wrangler";

// The binaries `npm run admin` and `npm run db:seed` resolve to, called directly: same programs, without npm's
// banner on stdout.
const TSX = join(ROOT, "node_modules", ".bin", "tsx");

export interface RunResult extends ProgramResult {
  /** stdout parsed as JSON; undefined when it is not (exactly) one JSON value. */
  json: any;
}

const withJson = (result: ProgramResult): RunResult => {
  let json: unknown;
  try {
    json = JSON.parse(result.stdout);
  } catch {
    json = undefined;
  }
  return { ...result, json };
};

/** Runs a tsx entry point from the repository root and collects its exit code and output. */
async function runTsx(args: string[], env = programEnv()): Promise<RunResult> {
  return withJson(await run(TSX, args, { env, timeoutMs: 90_000 }));
}

const persistArgs = (persistTo: string | null) => (persistTo ? ["--persist-to", persistTo] : []);

/** `npm run admin -- <args...>` as its own process, with `--persist-to dir` appended when a folder is given. */
export function adminProcess(persistTo: string | null, ...args: string[]): Promise<RunResult> {
  return runTsx(["src/cli/admin.ts", ...args, ...persistArgs(persistTo)]);
}

/** The admin CLI run with `--remote` as someone who never logged in to Cloudflare (no token, an empty config home). */
export function adminRemoteLoggedOut(configHome: string, ...args: string[]): Promise<RunResult> {
  const { CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID, ...rest } = programEnv();
  return runTsx(["src/cli/admin.ts", ...args, "--remote"], { ...rest, XDG_CONFIG_HOME: configHome, WRANGLER_HOME: configHome });
}

/** The databases of the folders the in-process commands named, each opened (and its schema checked) once. */
const keptOpen = new Map<string, Promise<OpenDatabase>>();

/** openDatabase for a local folder, opened the first time and kept open (closing it is `closeDatabases`'s). */
async function openKept(target: Target): Promise<OpenDatabase> {
  if (target.remote || !target.persistTo) return openDatabase(target);
  const folder = target.persistTo;
  let opening = keptOpen.get(folder);
  if (!opening) {
    opening = openDatabase(target);
    keptOpen.set(folder, opening);
    // A folder that could not be opened (missing, unmigrated) is tried again by the next command naming it.
    opening.catch(() => keptOpen.delete(folder));
  }
  return { ...(await opening), close: async () => {} };
}

/** Closes every database `admin` and `query` kept open. */
export async function closeDatabases(): Promise<void> {
  const opened = await Promise.allSettled(keptOpen.values());
  keptOpen.clear();
  for (const database of opened) if (database.status === "fulfilled") await database.value.close();
}

// And at the end of every file that imports this, whether or not it closed them itself: a database is a workerd of its
// own, which the pool's ending of the file's process leaves orphaned, spinning half a core for the rest of the run.
afterAll(closeDatabases);

/** Runs one command line in this process with output collected; each command opens its database as it would alone. */
async function runInProcess(args: string[], open: typeof openDatabase): Promise<RunResult> {
  let [stdout, stderr] = ["", ""];
  const streams = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  };
  const code = await runAdmin(args, streams, open);
  return withJson({ code, stdout, stderr });
}

/** `npm run admin -- <args...>` (`--persist-to dir` appended when a folder is given), in this process. */
export function admin(persistTo: string | null, ...args: string[]): Promise<RunResult> {
  return runInProcess([...args, ...persistArgs(persistTo)], openKept);
}

/** `admin`, but opening the database for this command alone (its own workerd), as a separate process would. */
export function adminOwnDatabase(persistTo: string, ...args: string[]): Promise<RunResult> {
  return runInProcess([...args, ...persistArgs(persistTo)], openDatabase);
}

/** Runs `statements` in one batch on `db`: the rows of the last. */
async function rowsOf<Row>(db: D1Database, statements: string[]): Promise<Row[]> {
  const results = await retryTransient(() => db.batch<Row>(statements.map((sql) => db.prepare(sql))));
  return results.at(-1)?.results ?? [];
}

/** Rows of one query against SHARD_0's local D1 in `persistTo`, through the database `admin` keeps open there. */
export async function query<Row = Record<string, unknown>>(persistTo: string, ...statements: string[]): Promise<Row[]> {
  return rowsOf<Row>((await openKept({ persistTo })).db, statements);
}

/** `query`, against the shard of the pool named `shard` (e.g. SHARD_1). */
export async function queryShard<Row = Record<string, unknown>>(
  persistTo: string,
  shard: string,
  ...statements: string[]
): Promise<Row[]> {
  const named = (await openKept({ persistTo })).pool.shards.find(({ name }) => name === shard);
  if (!named) throw new Error(`the pool has no shard ${shard}`);
  return rowsOf<Row>(named.db, statements);
}

/** `query`, against the pool's directory. */
export async function queryDirectory<Row = Record<string, unknown>>(persistTo: string, ...statements: string[]): Promise<Row[]> {
  return rowsOf<Row>((await openKept({ persistTo })).pool.directory, statements);
}

/** `npm run db:migrate -- <args...>` */
export function migratePool(...args: string[]): Promise<RunResult> {
  return runTsx(["src/cli/migrate-pool.ts", ...args]);
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

const API_TIMEOUT_MS = 60_000;

/** A request to the worker with an API key, as a client sends it; the body, when given, as JSON. */
export async function api(
  worker: DevServer,
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
  path: string,
  key: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { Accept: "application/json", Authorization: `ApiKey ${key}`, ...extraHeaders };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  // Bounded, so that a request that never ends fails as itself rather than as the hook or test that made it.
  const response = await fetch(`${worker.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(API_TIMEOUT_MS),
  }).catch((error: unknown) => {
    throw new Error(`${method} ${path} (${worker.name}) got no answer: ${error}`);
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // left as text
  }
  return { status: response.status, body: parsed, headers: response.headers };
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
