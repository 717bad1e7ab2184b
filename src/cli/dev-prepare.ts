/**
 * `npm run dev`'s first step: the local pool migrated and the demo seeded, in one process (one local runtime), so that a
 * start with nothing to do costs one look: which migrations each database lacks (wrangler's own record of them) and
 * whether the demo data is there. Pending migrations are applied by `wrangler d1 migrations apply`, the databases that
 * lack any in parallel (locally, nothing orders them: the directory goes first only for a deployed pool, `npm run
 * db:migrate -- --remote`), and the runtime is opened again to seed. With no local state at all, the look is skipped:
 * everything is pending.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { type OpenDatabase, openDatabase, openPool } from "./database";
import { seedDemo } from "./demo-data";
import { applyMigrations, migrationFailure, type PoolDatabase, pendingMigrations, poolDatabases } from "./migrations";
import { runCli } from "./run-cli";

const USAGE = "Usage: npm run dev [-- wrangler dev's options]";
/** Where `wrangler dev` serves by default, as the `dev` script's PUBLIC_BASE_URL says. */
const LOCAL_ORIGIN = "http://localhost:8787";
/** Where wrangler keeps the local databases (`wrangler dev`, `wrangler d1 --local`, getPlatformProxy). */
const LOCAL_STATE = resolve(import.meta.dirname, "../../.wrangler/state");

/** The bindings of `databases` whose database in `opened` lacks migrations. */
async function lackingMigrations(opened: OpenDatabase, databases: PoolDatabase[]): Promise<string[]> {
  const env = opened.pool.env as unknown as Record<string, D1Database>;
  const lacking = await Promise.all(databases.map((database) => pendingMigrations(env[database.binding], database)));
  return databases.filter((_, i) => lacking[i].length > 0).map(({ binding }) => binding);
}

/**
 * Applies the migrations of `bindings`, in parallel, each by its own `wrangler d1 migrations apply`; those that failed,
 * once more one after another: on a loaded machine the parallel runtimes can find a local file locked (SQLITE_BUSY),
 * and a migration that failed was applied not at all (each is one transaction with its record), so it can be run again.
 */
async function migrate(bindings: string[]): Promise<void> {
  process.stderr.write(`migrating ${bindings.join(", ")} (in parallel)\n`);
  const codes = await Promise.all(bindings.map((binding) => applyMigrations(binding, ["--local"])));
  const failed = bindings.filter((_, i) => codes[i] !== 0);
  for (const [i, binding] of failed.entries()) {
    process.stderr.write(`migrating ${binding} again, alone (it failed in parallel)\n`);
    const code = await applyMigrations(binding, ["--local"]);
    if (code !== 0) throw migrationFailure(binding, code, failed.slice(i + 1));
  }
  process.stderr.write(`migrated ${bindings.join(", ")}\n`);
}

/** The local pool opened, the migrations its databases lack applied first. */
async function migratedPool(databases: PoolDatabase[]): Promise<OpenDatabase> {
  // No local state yet (a fresh clone, or after `rm -rf .wrangler`): every database lacks every migration, and no
  // runtime need be opened to learn it.
  let lacking = databases.map(({ binding }) => binding);
  if (existsSync(LOCAL_STATE)) {
    const pool = await openPool({});
    lacking = await lackingMigrations(pool, databases).catch(async (error) => {
      await pool.close();
      throw error;
    });
    if (lacking.length === 0) {
      process.stderr.write("migrations: nothing pending\n");
      return pool;
    }
    // wrangler opens the same files: the runtime is closed while it migrates, and opened again after.
    await pool.close();
  }
  await migrate(lacking);
  return openDatabase({});
}

async function main(): Promise<undefined> {
  const opened = await migratedPool(await poolDatabases());
  try {
    for (const line of await seedDemo(opened)) process.stderr.write(`${line}\n`);
  } finally {
    await opened.close();
  }
  // Before wrangler's own "Ready on": where to go next, the console beside the API.
  process.stderr.write(
    `serving: the API at ${LOCAL_ORIGIN} (reference: ${LOCAL_ORIGIN}/docs), the console at ${LOCAL_ORIGIN}/console\n`,
  );
  return undefined;
}

runCli(main, USAGE);
