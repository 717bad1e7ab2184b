/**
 * `npm run dev`'s preparation (src/cli/dev-prepare.ts) as a developer meets it, in a copy of the repository (its own
 * .wrangler/state): the first start migrates every database and seeds the demo; a start with nothing to do applies
 * nothing and seeds nothing; a new migration is applied to the databases that lack it only; a failing one stops the
 * start, saying which database.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, run } from "../support/processes";
import { snapshot } from "../support/wrangler";
import { closeDatabases, makeTempDir, queryDirectory, queryShard, removeTempDir } from "./helpers";

const TSX = join(ROOT, "node_modules", ".bin", "tsx");

let dir: string;
let copy: string;

beforeAll(async () => {
  dir = await makeTempDir("dev-prepare");
  copy = snapshot(ROOT, dir);
});

afterAll(async () => {
  await closeDatabases();
  await removeTempDir(dir);
});

/** Runs the preparation in the copy: its exit code and the lines it writes itself (wrangler's output comes between). */
async function prepare() {
  await closeDatabases(); // the copy's databases, which the preparation opens itself
  const result = await run(TSX, ["src/cli/dev-prepare.ts"], { cwd: copy, timeoutMs: 90_000 });
  const lines = result.stderr.split("\n").filter((line) => /^(migrat|demo data|directory filled|serving|error:)/.test(line));
  return { code: result.code, lines, output: result.stderr };
}

// The addresses `npm run dev` serves at, the console's beside the API's.
const SERVING =
  "serving: the API at http://localhost:8787 (reference: http://localhost:8787/docs), the console at http://localhost:8787/console";

const state = () => join(copy, ".wrangler", "state");
const PROBE = "SELECT name FROM sqlite_master WHERE name = 'dev_prepare_probe'";

describe("npm run dev's preparation", () => {
  it("a first start migrates the directory and the shards in parallel, and seeds the demo", async () => {
    const { code, lines, output } = await prepare();
    expect(code, output).toBe(0);
    expect(lines).toEqual([
      "migrating DIRECTORY, SHARD_0, SHARD_1 (in parallel)",
      "migrated DIRECTORY, SHARD_0, SHARD_1",
      "demo data seeded: user, key, app, config main, config experiment, 5 deployments, second organization",
      "directory filled: 1 users, 2 memberships added",
      SERVING,
    ]);
    expect(await queryShard(state(), "SHARD_0", "SELECT username FROM users")).toEqual([{ username: "demo" }]);
  });

  it("a start with nothing to do applies no migration and seeds nothing", async () => {
    const { code, lines, output } = await prepare();
    expect(code, output).toBe(0);
    expect(lines).toEqual([
      "migrations: nothing pending",
      "demo data already present",
      "directory filled: 0 users, 0 memberships added",
      SERVING,
    ]);
  });

  it("a new migration of the shards is applied to the shards alone", async () => {
    await writeFile(join(copy, "migrations", "9999_dev_prepare_probe.sql"), "CREATE TABLE dev_prepare_probe (x);\n");
    const { code, lines, output } = await prepare();
    expect(code, output).toBe(0);
    expect(lines).toEqual([
      "migrating SHARD_0, SHARD_1 (in parallel)",
      "migrated SHARD_0, SHARD_1",
      "demo data already present",
      "directory filled: 0 users, 0 memberships added",
      SERVING,
    ]);
    expect([
      await queryShard(state(), "SHARD_0", PROBE),
      await queryShard(state(), "SHARD_1", PROBE),
      await queryDirectory(state(), PROBE),
    ]).toEqual([[{ name: "dev_prepare_probe" }], [{ name: "dev_prepare_probe" }], []]);
  });

  it("a migration that fails stops the start, tried once more alone, saying which database, and seeds nothing", async () => {
    // A table the directory already has: its migration fails, in parallel and again alone.
    await writeFile(join(copy, "migrations-directory", "9999_broken.sql"), "CREATE TABLE memberships (x);\n");
    const { code, lines } = await prepare();
    expect(code).toBe(1);
    expect(lines).toEqual([
      "migrating DIRECTORY (in parallel)",
      "migrating DIRECTORY again, alone (it failed in parallel)",
      "error: migrating DIRECTORY failed (wrangler exited 1); run the command again once the cause is fixed (migrations already applied are skipped)",
    ]);
  });
});
