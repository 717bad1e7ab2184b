/**
 * `npm run db:migrate [-- --remote | --persist-to DIR]`: applies the migrations of every D1 database wrangler.toml
 * declares, the directory first, then each shard (docs/SHARDING.md §4), one after another; stops at the first that
 * fails, saying which. Deployed (`--remote`): one `wrangler d1 migrations apply` after another. Local (wrangler's
 * `.wrangler/state` by default): all in this process's one local runtime (src/cli/migrations.ts `applyLocally`), as
 * `npm run dev` does what is pending (src/cli/dev-prepare.ts).
 */
import { parseArgs } from "node:util";
import { openPool } from "./database";
import {
  applyLocally,
  applyMigrations,
  migrationFailure,
  type PoolDatabase,
  pendingMigrations,
  poolDatabases,
} from "./migrations";
import { runCli, UsageError } from "./run-cli";

const USAGE = "Usage: npm run db:migrate [-- --remote | --persist-to DIR]";

/** Every database's migrations applied, one database after another, by `migrateOne`: what failed (null: nothing). */
async function migrateEach(migrateOne: (database: PoolDatabase) => Promise<string | null>): Promise<void> {
  const databases = await poolDatabases();
  const bindings = databases.map(({ binding }) => binding);
  for (const [i, database] of databases.entries()) {
    process.stderr.write(`migrating ${database.binding} (${i + 1} of ${bindings.length})\n`);
    const failed = await migrateOne(database);
    if (failed) throw migrationFailure(database.binding, failed, bindings.slice(i + 1));
  }
  process.stderr.write(`migrated ${bindings.join(", ")}\n`);
}

async function main(): Promise<undefined> {
  const { values } = parseArgs({ options: { remote: { type: "boolean" }, "persist-to": { type: "string" } }, strict: true });
  if (values.remote && values["persist-to"]) throw new UsageError("--remote and --persist-to cannot be used together");
  if (values.remote) {
    await migrateEach(async ({ binding }) => {
      const code = await applyMigrations(binding, ["--remote"]);
      return code === 0 ? null : `wrangler exited ${code}`;
    });
    return undefined;
  }
  const opened = await openPool({ persistTo: values["persist-to"] });
  try {
    const env = opened.pool.env as unknown as Record<string, D1Database>;
    await migrateEach(async (database) => {
      const db = env[database.binding];
      return applyLocally(db, database, await pendingMigrations(db, database));
    });
  } finally {
    await opened.close();
  }
  return undefined;
}

runCli(main, USAGE);
