/**
 * `npm run dev`'s first step: the local pool migrated and the demo seeded, in one process (one local runtime), so that a
 * start with nothing to do costs one look: which migrations each database lacks (wrangler's own record of them) and
 * whether the demo data is there. Pending migrations are applied by `wrangler d1 migrations apply`, the databases that
 * lack any in parallel (locally, nothing orders them: the directory goes first only for a deployed pool, `npm run
 * db:migrate -- --remote`), and the runtime is opened again to seed.
 */
import { type OpenDatabase, openDatabase, openPool } from "./database";
import { seedDemo } from "./demo-data";
import { applyMigrations, migrationFailure, type PoolDatabase, pendingMigrations, poolDatabases } from "./migrations";
import { runCli } from "./run-cli";

const USAGE = "Usage: npm run dev [-- wrangler dev's options]";

/** The bindings of `databases` whose database in `opened` lacks migrations. */
async function lackingMigrations(opened: OpenDatabase, databases: PoolDatabase[]): Promise<string[]> {
  const env = opened.pool.env as unknown as Record<string, D1Database>;
  const lacking = await Promise.all(databases.map((database) => pendingMigrations(env[database.binding], database)));
  return databases.filter((_, i) => lacking[i].length > 0).map(({ binding }) => binding);
}

/** Applies the migrations of `bindings`, in parallel, each by its own `wrangler d1 migrations apply`. */
async function migrate(bindings: string[]): Promise<void> {
  process.stderr.write(`migrating ${bindings.join(", ")} (in parallel)\n`);
  const codes = await Promise.all(bindings.map((binding) => applyMigrations(binding, ["--local"])));
  const failed = codes.findIndex((code) => code !== 0);
  if (failed >= 0) throw migrationFailure(bindings[failed], codes[failed], []);
  process.stderr.write(`migrated ${bindings.join(", ")}\n`);
}

async function main(): Promise<undefined> {
  let opened = await openPool({});
  const lacking = await lackingMigrations(opened, await poolDatabases()).catch(async (error) => {
    await opened.close();
    throw error;
  });
  if (lacking.length > 0) {
    // wrangler opens the same files: the runtime is closed while it migrates, and opened again to seed.
    await opened.close();
    await migrate(lacking);
    opened = await openDatabase({});
  } else {
    process.stderr.write("migrations: nothing pending\n");
  }
  try {
    for (const line of await seedDemo(opened)) process.stderr.write(`${line}\n`);
  } finally {
    await opened.close();
  }
  return undefined;
}

runCli(main, USAGE);
