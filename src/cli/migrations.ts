/**
 * The pool's migrations (docs/SHARDING.md §4): which D1 databases wrangler.toml declares, with their migrations folders,
 * what each local database still lacks, and two ways to apply them: `wrangler d1 migrations apply`, and, for a local
 * database already open in this process's runtime, `applyLocally`, which does what that command does locally (each file
 * split into statements and run with its record in wrangler's own `d1_migrations`, in one batch), so that wrangler
 * reads the record as its own.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { retryTransient } from "./database";

const ROOT = resolve(import.meta.dirname, "../..");
const CONFIG_PATH = resolve(ROOT, "wrangler.toml");
const WRANGLER = resolve(ROOT, "node_modules", ".bin", "wrangler");
const DIRECTORY = "DIRECTORY";

/** A D1 database of wrangler.toml: its binding and the folder of its migrations. */
export interface PoolDatabase {
  binding: string;
  migrationsDir: string;
}

/** The D1 databases of wrangler.toml in the order they are migrated one after another: the directory, then the rest as declared. */
export async function poolDatabases(): Promise<PoolDatabase[]> {
  const { unstable_readConfig } = await import("wrangler");
  const declared: { binding: string; migrations_dir?: string }[] = unstable_readConfig({ config: CONFIG_PATH }).d1_databases;
  const databases: PoolDatabase[] = declared.map((database) => ({
    binding: database.binding,
    migrationsDir: resolve(ROOT, database.migrations_dir ?? "migrations"),
  }));
  return [
    ...databases.filter(({ binding }) => binding === DIRECTORY),
    ...databases.filter(({ binding }) => binding !== DIRECTORY),
  ];
}

/** The migration files of a folder, as wrangler names them in `d1_migrations`. */
const migrationFiles = (folder: string) =>
  readdirSync(folder)
    .filter((name) => name.endsWith(".sql"))
    .sort();

const APPLIED = "SELECT name FROM d1_migrations";
const HAS_RECORD = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'd1_migrations'";

/** The migration files `db` has not applied yet, by wrangler's record (all of them where there is none). */
export async function pendingMigrations(db: D1Database, database: PoolDatabase): Promise<string[]> {
  const applied = (await retryTransient(() => db.prepare(HAS_RECORD).first()))
    ? new Set((await retryTransient(() => db.prepare(APPLIED).all<{ name: string }>())).results.map(({ name }) => name))
    : new Set<string>();
  return migrationFiles(database.migrationsDir).filter((name) => !applied.has(name));
}

/** `wrangler d1 migrations apply <binding> <where...>` (the deployed pool's: --remote) with this process's streams: its exit code. */
export function applyMigrations(binding: string, where: string[]): Promise<number> {
  return new Promise((resolveExit, reject) => {
    const child = spawn(WRANGLER, ["d1", "migrations", "apply", binding, ...where], {
      cwd: ROOT,
      stdio: "inherit",
      env: { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", ...process.env },
    });
    child.once("error", reject);
    child.once("exit", (code, signal) => resolveExit(code ?? (signal ? 1 : 0)));
  });
}

/** The error of a binding whose migrations failed (`why`), naming what was not attempted, and how to resume. */
export function migrationFailure(binding: string, why: string, notAttempted: string[]): Error {
  return new Error(
    `migrating ${binding} failed (${why})` +
      (notAttempted.length ? `; not attempted: ${notAttempted.join(", ")}` : "") +
      "; run the command again once the cause is fixed (migrations already applied are skipped)",
  );
}

// wrangler's record of the migrations applied (`wrangler d1 migrations apply`'s own statement).
const RECORD_TABLE = `CREATE TABLE IF NOT EXISTS d1_migrations(
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT UNIQUE,
  applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
)`;
const RECORD = "INSERT INTO d1_migrations (name) VALUES (?1)";

/**
 * Applies `pending` (migration files of `database`, in order) to its local `db`, as `wrangler d1 migrations apply
 * --local` does: each file's statements and its record in one batch, so a migration that fails leaves nothing of itself.
 * Stops at the first that fails: what failed, as migrationFailure's `why`; null once all are applied.
 */
export async function applyLocally(db: D1Database, database: PoolDatabase, pending: string[]): Promise<string | null> {
  const { unstable_splitSqlQuery } = await import("wrangler");
  await retryTransient(() => db.prepare(RECORD_TABLE).run());
  for (const name of pending) {
    const statements = unstable_splitSqlQuery(readFileSync(resolve(database.migrationsDir, name), "utf8"));
    try {
      // A batch is all or nothing, so one the local tooling lost (retryTransient) is safe to send again.
      await retryTransient(() =>
        db.batch([...statements.map((statement) => db.prepare(statement)), db.prepare(RECORD).bind(name)]),
      );
    } catch (error) {
      return `${name}: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  return null;
}
