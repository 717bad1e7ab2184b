/**
 * `npm run dev`'s first step (src/cli/dev.ts): the local pool migrated and the demo seeded, in one process and one local
 * runtime, so that a start with nothing to do costs one look (which migrations each database lacks, by wrangler's own
 * record of them, and whether the demo data is there), and a first start opens no other runtime: the migrations
 * pending are applied there, one database after another, as `wrangler d1 migrations apply --local` would. (A
 * `wrangler d1 migrations apply` per database, in parallel, each starting a runtime of its own on the one local state
 * folder, found its files locked on a loaded machine: SQLITE_BUSY and "The Workers runtime failed to start".)
 */
import { openPool } from "./database";
import { seedDemo } from "./demo-data";
import { applyLocally, migrationFailure, pendingMigrations, poolDatabases } from "./migrations";

/**
 * wrangler dev's --var values under `npm run dev`, serving at `origin`: webhooks to local addresses, invitations mailed
 * (to a file) with accept links at `origin`, and their tokens answered too.
 */
export const devVars = (origin: string) => ({
  WEBHOOKS_ALLOW_LOCAL: "true",
  INVITATION_EMAIL_FROM: "invitations@localhost",
  PUBLIC_BASE_URL: origin,
  INVITATION_TOKEN_IN_ANSWER: "true",
});

/**
 * wrangler dev's own options under `npm run dev`: `/__scheduled?cron=…` runs the Worker's cron triggers, which
 * `wrangler dev` never fires by itself (with [assets], its /cdn-cgi/handler/scheduled does not reach the Worker).
 */
export const DEV_OPTIONS = ["--test-scheduled"];

/** Migrates the local pool (`.wrangler/state`) where it lacks migrations, then seeds the demo; says what it did on stderr. */
export async function prepareLocalPool(): Promise<void> {
  const opened = await openPool({});
  try {
    const env = opened.pool.env as unknown as Record<string, D1Database>;
    const databases = await poolDatabases();
    const pending = await Promise.all(databases.map((database) => pendingMigrations(env[database.binding], database)));
    const lacking = databases.filter((_, i) => pending[i].length > 0);
    if (lacking.length === 0) {
      process.stderr.write("migrations: nothing pending\n");
    } else {
      const bindings = lacking.map(({ binding }) => binding).join(", ");
      process.stderr.write(`migrating ${bindings}\n`);
      for (const [i, database] of lacking.entries()) {
        const failed = await applyLocally(env[database.binding], database, pending[databases.indexOf(database)]);
        if (failed)
          throw migrationFailure(
            database.binding,
            failed,
            lacking.slice(i + 1).map(({ binding }) => binding),
          );
      }
      process.stderr.write(`migrated ${bindings}\n`);
    }
    for (const line of await seedDemo(opened)) process.stderr.write(`${line}\n`);
  } finally {
    await opened.close();
  }
}
