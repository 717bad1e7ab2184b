import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, vi } from "vitest";
import { BURST_MS } from "../../src/http/request-log";
import { shards } from "./pool";

// Runs before each test file (its afterAll, after each). A workerd runs its files one after another (the worker
// project's `isolate: false`, test/vitest.config.ts, where each file had a workerd of its own): each file starts from
// empty databases all the same, every trigger and table of every D1 binding dropped, then the pool migrated.
await Promise.all(Object.values(env).filter(isD1).map(emptied));
// And from fresh modules: the file imports the helpers and src/ anew (their state, such as the shard the next
// organization goes to, starts over), and its mocks are restored after it.
vi.resetModules();
afterAll(() => {
  vi.restoreAllMocks();
});
await applyD1Migrations(env.DIRECTORY, env.TEST_DIRECTORY_MIGRATIONS);
for (const shard of shards()) await applyD1Migrations(shard, env.TEST_SHARD_MIGRATIONS);

// A request's log line is written BURST_MS after it (src/http/request-log.ts). A file whose last request ends sooner
// before the file does would have that line reach vitest while it closes the file's connection, an unhandled "Closing
// rpc while onUserConsoleLog was pending" that fails the run: each file waits for its last line.
afterAll(() => scheduler.wait(2 * BURST_MS));

function isD1(binding: unknown): binding is D1Database {
  return typeof binding === "object" && binding !== null && binding.constructor.name === "D1Database";
}

/** `db` as a new database: every trigger and table (with its indexes) dropped, checked to be gone. */
async function emptied(db: D1Database): Promise<void> {
  const objects = async () =>
    (
      await db
        .prepare(
          `SELECT m.type AS type, m.name AS name, p."table" AS parent
             FROM sqlite_master m LEFT JOIN pragma_foreign_key_list(m.name) p ON m.type = 'table'
            WHERE m.type IN ('trigger', 'table') AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_cf_%'`,
        )
        .all<{ type: string; name: string; parent: string | null }>()
    ).results;
  const found = await objects();
  if (found.length === 0) return;
  // Triggers first, as a table's drop deletes its rows (an owner's removal would be refused); then each table before
  // the tables its foreign keys name.
  const triggers = [...new Set(found.filter(({ type }) => type === "trigger").map(({ name }) => name))];
  const parents = new Map<string, Set<string>>();
  for (const { type, name, parent } of found) {
    if (type !== "table") continue;
    const named = parents.get(name) ?? new Set<string>();
    if (parent && parent !== name) named.add(parent);
    parents.set(name, named);
  }
  const tables: string[] = [];
  while (parents.size > 0) {
    const referenced = new Set([...parents.values()].flatMap((named) => [...named]));
    const leaves = [...parents.keys()].filter((name) => !referenced.has(name));
    if (leaves.length === 0) throw new Error(`foreign keys in a cycle: ${[...parents.keys()].join(", ")}`);
    for (const name of leaves) parents.delete(name);
    tables.push(...leaves);
  }
  await db.batch([
    ...triggers.map((name) => db.prepare(`DROP TRIGGER "${name}"`)),
    ...tables.map((name) => db.prepare(`DROP TABLE "${name}"`)),
  ]);
  const left = await objects();
  if (left.length > 0) throw new Error(`left from the previous file: ${JSON.stringify(left)}`);
}
