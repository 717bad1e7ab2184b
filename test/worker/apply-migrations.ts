import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll } from "vitest";
import { BURST_MS } from "../../src/http/request-log";
import { placeFromFirstShard, shards } from "./pool";

/** Every table of `db` dropped, newest first (so that no foreign key points at a table already gone). */
async function emptied(db: D1Database): Promise<D1Database> {
  const { results } = await db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY rowid DESC",
    )
    .all<{ name: string }>();
  if (results.length > 0) await db.batch(results.map(({ name }) => db.prepare(`DROP TABLE "${name}"`)));
  return db;
}

// Runs before each test file (its afterAll, after each). The files of a worker share its runtime (test/vitest.config.ts,
// isolate: false), its storage and the modules' state included: each starts from databases emptied and migrated, and
// places its first organizations as a file alone would.
placeFromFirstShard();
await applyD1Migrations(await emptied(env.DIRECTORY), env.TEST_DIRECTORY_MIGRATIONS);
for (const shard of shards()) await applyD1Migrations(await emptied(shard), env.TEST_SHARD_MIGRATIONS);
for (const spare of [env.TEST_SPARE_SHARD_2, env.TEST_SPARE_SHARD_3]) await emptied(spare);

// A request's log line is written BURST_MS after it (src/http/request-log.ts). A file whose last request ends sooner
// before the file does would have that line reach vitest while it closes the file's connection, an unhandled "Closing
// rpc while onUserConsoleLog was pending" that fails the run: each file waits for its last line.
afterAll(() => scheduler.wait(2 * BURST_MS));
