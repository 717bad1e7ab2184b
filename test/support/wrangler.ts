/**
 * wrangler as the CLI tests and the bench run it: its d1 commands on a --persist-to folder, and `wrangler dev` on
 * free loopback ports until stopped, from the repository or from a copy of it.
 */
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import {
  freePort,
  HarnessError,
  killGroup,
  programEnv,
  ROOT,
  type RunResult,
  run,
  type SpawnOptions,
  spawnGroup,
} from "./processes";

// The binaries `npx wrangler` and `npx tsx` resolve to, called directly: the same programs without npx's start-up cost.
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
const TSX = join(ROOT, "node_modules", ".bin", "tsx");

/** `npx wrangler <args>` from `cwd`; a non-zero exit is a HarnessError saying what failed. */
export async function wrangler(args: string[], what: string, options: SpawnOptions = {}): Promise<RunResult> {
  const result = await run(WRANGLER, args, options);
  if (result.code !== 0) {
    throw new HarnessError(
      `${what} failed (npx wrangler ${args.join(" ")}, exit ${result.code}):\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

/**
 * Migrates every database of the pool (the directory, then each shard) kept in `dir`: `npm run db:migrate --
 * --persist-to dir`, run from `options.cwd` (default the repository). From the repository, a copy of the folder
 * `migratedTemplate` migrated once for these migrations, wrangler.toml and lockfile: the same files a migration writes,
 * without its processes per call (tsx, then a wrangler and a workerd per database), which cost a CLI or browser test
 * file seconds each. test/cli/migrate-pool.test.ts runs the migration itself.
 */
export async function applyMigrations(dir: string, options: SpawnOptions = {}): Promise<void> {
  if (options.cwd !== undefined && options.cwd !== ROOT) return migrate(dir, options);
  cpSync(await migratedTemplate(), dir, { recursive: true });
}

async function migrate(dir: string, options: SpawnOptions & { timeoutMs?: number }): Promise<void> {
  const args = ["src/cli/migrate-pool.ts", "--persist-to", dir];
  const result = await run(TSX, args, options);
  if (result.code !== 0) {
    throw new HarnessError(`migrating the pool failed (tsx ${args.join(" ")}, exit ${result.code}):\n${result.stderr}`);
  }
}

/** A digest of these files of the repository, their names and contents. */
function digestOf(files: string[]): string {
  const hash = createHash("sha256");
  for (const file of files) hash.update(file).update(readFileSync(join(ROOT, file)));
  return hash.digest("hex").slice(0, 16);
}

/** The files of these folders of the repository, every level down, in a stable order. */
const filesUnder = (...folders: string[]) =>
  folders.flatMap((folder) =>
    readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
      .sort(),
  );

/** What a migrated folder is made from: the migrations, the pool (wrangler.toml) and wrangler itself (the lockfile). */
const MIGRATION_INPUTS = () => [...filesUnder("migrations", "migrations-directory"), "wrangler.toml", "package-lock.json"];

/**
 * The folder `make` filled, under the OS temp dir, named `name` and a digest of `inputs`: made once for those inputs
 * (kept between runs), made aside then renamed into place, so that no file copies a folder half made.
 */
async function madeOnce(name: string, inputs: string[], make: (dir: string) => Promise<void>): Promise<string> {
  const template = join(tmpdir(), `app-management-${name}-${digestOf(inputs)}`);
  if (existsSync(template)) return template;
  const aside = mkdtempSync(`${template}-`);
  try {
    await make(aside);
    renameSync(aside, template);
  } catch (error) {
    if (!existsSync(template)) throw error;
    // Another project's setup renamed its own first: the same files.
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
  return template;
}

/**
 * The folder every database of the pool was migrated in, for these inputs: made once (the cli project's globalSetup,
 * test/support/migrated-pool.ts, makes it before their first file).
 */
export const migratedTemplate = (): Promise<string> =>
  // Once per run, before any test: on two busy cores three migrations may outlast `run`'s two minutes.
  madeOnce("migrated", MIGRATION_INPUTS(), (dir) => migrate(dir, { timeoutMs: 600_000 }));

/**
 * The migrated folder seeded with the demo data (`npm run db:seed`), for these migrations and this code (src/, which
 * seeds): made once (the browser project's globalSetup, test/support/seeded-pool.ts), and copied by each browser file
 * (test/browser/browser.ts's `seededFolder`), which then starts its `wrangler dev` without seeding again.
 */
export const seededTemplate = (): Promise<string> =>
  madeOnce("seeded", [...MIGRATION_INPUTS(), ...filesUnder("src")], async (dir) => {
    cpSync(await migratedTemplate(), dir, { recursive: true });
    const args = ["src/cli/seed-demo.ts", "--persist-to", dir];
    const result = await run(TSX, args, { timeoutMs: 600_000 });
    if (result.code !== 0) {
      throw new HarnessError(`seeding the demo data failed (tsx ${args.join(" ")}, exit ${result.code}):\n${result.stderr}`);
    }
  });

/**
 * Rows of one query against the local D1 in `dir` (SHARD_0's unless `binding` names another database of the pool),
 * through `wrangler d1 execute --json`, whose output is its log: printed whatever WRANGLER_LOG this process has.
 */
export async function d1Query<Row = Record<string, unknown>>(
  dir: string,
  sql: string,
  { binding = "SHARD_0", ...options }: SpawnOptions & { binding?: string } = {},
): Promise<Row[]> {
  const result = await wrangler(
    ["d1", "execute", binding, "--local", "--persist-to", dir, "--command", sql, "--json"],
    "querying the local D1",
    { env: programEnv({ WRANGLER_LOG: "log" }), ...options },
  );
  try {
    return JSON.parse(result.stdout)[0].results;
  } catch {
    throw new HarnessError(`unexpected output of wrangler d1 execute --json:\n${result.stdout}\n${result.stderr}`);
  }
}

// Not copied: dependencies (linked instead), history, local state, reports.
const NOT_COPIED = new Set(["node_modules", ".git", ".wrangler", "coverage", "test/bench/results"]);

/**
 * A copy of the tree `from` in `dir`/code (this repository's node_modules linked), for wrangler to run from: edits
 * made to the tree meanwhile neither reload wrangler dev nor mix two versions of the code in one run. The static assets
 * the suite built come along with their times, so that the copy's first start finds them up to date rather than
 * building them again (src/cli/build-assets.ts: about 9 s of CPU).
 */
export function snapshot(from: string, dir: string): string {
  const code = join(dir, "code");
  cpSync(from, code, {
    recursive: true,
    preserveTimestamps: true,
    filter: (source) => {
      const path = relative(from, source);
      return !NOT_COPIED.has(path) && !NOT_COPIED.has(path.split(sep)[0]);
    },
  });
  symlinkSync(join(ROOT, "node_modules"), join(code, "node_modules"), "dir");
  return code;
}

export interface DevServer {
  name: string;
  /** e.g. http://127.0.0.1:8787, no trailing slash. */
  url: string;
  /** Times wrangler dev said it reloaded the Worker (a file it watches changed) since it was first ready. */
  reloads(): number;
  /** Error lines wrangler dev printed (ANSI colours removed), from the given index on. */
  errorsSince(index: number): string[];
  errorCount(): number;
  /** The last part of what wrangler dev printed (ANSI colours removed). */
  tail(): string;
  /** Whether wrangler dev has exited (it should run until `stop`). */
  exited(): boolean;
  stop(): Promise<void>;
}

export interface DevServerOptions {
  /** Names the server in messages. */
  name: string;
  /** The local D1 state it serves (wrangler's --persist-to). */
  persistTo: string;
  /** Answers 200 once the Worker is ready. */
  readyPath: string;
  /** wrangler dev's other options, e.g. `-c path/to/wrangler.toml` (default the wrangler.toml of `cwd`). */
  configArgs?: string[];
  /** Vars set for this run (wrangler's --var), over wrangler.toml's [vars]. */
  vars?: Record<string, string>;
  /** wrangler dev's --log-level; default wrangler's. */
  logLevel?: string;
  /** Where wrangler runs (and finds wrangler.toml by default); default the repository. */
  cwd?: string;
}

// What wrangler dev prints when a watched source file changed and it rebuilt the Worker.
const RELOAD = /Reloading local server|Local server updated/;
const ERROR_LINE = /✘|"level":"error"|Uncaught/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC; matching them is the point.
const ANSI = /\x1b\[[0-9;]*m/g;
const TAIL_CHARS = 20_000;

/**
 * `wrangler dev` on free loopback ports (HTTP and inspector); resolves once GET `readyPath` answers 200. A port is free
 * when picked, not when wrangler binds it: another process of the suite may take it in between, so a start refused
 * with "Address already in use" is tried again on new ports, three times at most.
 */
export async function startDev(options: DevServerOptions): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevOnPorts(options);
    } catch (error) {
      if (attempt === 3 || !(error instanceof HarnessError && error.message.includes("Address already in use"))) throw error;
    }
  }
}

async function startDevOnPorts(options: DevServerOptions): Promise<DevServer> {
  const { name, readyPath } = options;
  const [port, inspectorPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const args = [
    "dev",
    ...(options.configArgs ?? []),
    "--port",
    String(port),
    "--ip",
    "127.0.0.1",
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    options.persistTo,
    "--show-interactive-dev-session=false",
    ...(options.logLevel ? ["--log-level", options.logLevel] : []),
    ...Object.entries(options.vars ?? {}).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  // In the repository, the assets are as the suite built them before any file started (wrangler.toml [build]).
  const env = programEnv(options.cwd ? {} : { ASSETS_BUILT: "1" });
  const child = spawnGroup(WRANGLER, args, { cwd: options.cwd, env });
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
