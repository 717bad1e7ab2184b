/**
 * `npm run dev` (src/cli/dev.ts) as a developer meets it, in a copy of the repository (its own .wrangler/state), each
 * start run until it serves (GET /health answers 200) or exits: the first start migrates every database in its one
 * local runtime, with no fatal error, and seeds the demo; a start with nothing to do applies nothing and seeds nothing;
 * a new migration is applied to the databases that lack it only; a failing one stops the start, saying which database.
 * Started with `--port`/`--ip`, it names that origin, and invitation links use it.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, killGroup, ROOT, spawnGroup } from "../support/processes";
import { snapshot } from "../support/wrangler";
import { closeDatabases, makeTempDir, queryDirectory, queryShard, removeTempDir } from "./helpers";

const TSX = join(ROOT, "node_modules", ".bin", "tsx");
const DEMO_KEY = "localdev.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const DEMO_ORGANIZATION_ID = "00000000-0000-7000-8000-000000000002";
const DEMO_WORKSPACE_ID = "00000000-0000-7000-8000-000000000003";
/** What the runtime prints when it cannot start (SQLITE_BUSY among parallel runtimes on one state folder). */
const FATAL = /Fatal uncaught|failed to start|SQLITE_BUSY/;

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

interface Start {
  /** Its exit code, or null: it served until stopped. */
  code: number | null;
  /** The lines it writes itself (wrangler's output comes between). */
  lines: string[];
  output: string;
  port: number;
}

/**
 * `npm run dev -- --port P --ip 127.0.0.1` in the copy until it serves or exits (at most 240 s on a loaded machine);
 * while it serves, `whileServing` runs; then it is stopped. A port is free when picked, not when the runtime binds it:
 * another process of the suite may take it in between (as test/support/wrangler.ts's startDev knows), so a start that
 * exits on "Address already in use" is tried again on new ports, three times at most.
 */
async function start(whileServing?: (port: number, output: () => string) => Promise<void>): Promise<Start> {
  for (let attempt = 1; ; attempt++) {
    const started = await startOnFreePorts(whileServing);
    if (attempt === 3 || started.code === null || !started.output.includes("Address already in use")) return started;
  }
}

async function startOnFreePorts(
  whileServing: (port: number, output: () => string) => Promise<void> = async () => {},
): Promise<Start> {
  await closeDatabases(); // the copy's databases, which the start opens itself
  const [port, inspector] = [await freePort(), await freePort()];
  const args = ["src/cli/dev.ts", "--port", `${port}`, "--ip", "127.0.0.1", "--inspector-port", `${inspector}`];
  const child = spawnGroup(TSX, args, { cwd: copy });
  let output = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolveExit) => child.once("exit", (code) => resolveExit(code)));
  let code: number | null = null;
  try {
    for (const deadline = Date.now() + 240_000; ; ) {
      if (child.exitCode !== null) {
        code = await exited;
        break;
      }
      if (Date.now() > deadline) throw new Error(`npm run dev neither served nor exited:\n${output}`);
      const health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
      if (health?.status === 200) {
        await whileServing(port, () => output);
        break;
      }
      await new Promise((wait) => setTimeout(wait, 200));
    }
  } finally {
    killGroup(child, "SIGTERM");
    await Promise.race([exited, new Promise((wait) => setTimeout(wait, 5_000))]);
    killGroup(child, "SIGKILL");
  }
  const lines = output.split("\n").filter((line) => /^(migrat|demo data|directory filled|serving|error:)/.test(line));
  return { code, lines, output, port };
}

// The addresses `npm run dev -- --port P --ip 127.0.0.1` serves at, the console's beside the API's.
const serving = (port: number) =>
  `serving: the API at http://127.0.0.1:${port} (reference: http://127.0.0.1:${port}/docs), the console at http://127.0.0.1:${port}/console`;

const state = () => join(copy, ".wrangler", "state");
const PROBE = "SELECT name FROM sqlite_master WHERE name = 'dev_prepare_probe'";

// A start may take minutes on a loaded machine (start's own bound: 240 s).
const START_TIMEOUT = 300_000;

describe("npm run dev", () => {
  it(
    "a first start migrates the directory and the shards in one runtime, with no fatal error, seeds the demo, and serves",
    async () => {
      const { code, lines, output, port } = await start();
      expect(code, output).toBeNull();
      expect(lines).toEqual([
        "migrating DIRECTORY, SHARD_0, SHARD_1",
        "migrated DIRECTORY, SHARD_0, SHARD_1",
        "demo data seeded: user, key, app, config main, config experiment, 5 deployments, second organization",
        "directory filled: 1 users, 2 memberships added",
        serving(port),
      ]);
      expect(output.split("\n").filter((line) => FATAL.test(line))).toEqual([]);
      expect(await queryShard(state(), "SHARD_0", "SELECT username FROM users")).toEqual([{ username: "demo" }]);
    },
    START_TIMEOUT,
  );

  it(
    "a start with nothing to do applies no migration and seeds nothing; its invitation links name the port it serves on",
    async () => {
      let mail = "";
      const { code, lines, output, port } = await start(async (port, printed) => {
        const invite = await fetch(
          `http://127.0.0.1:${port}/organizations/${DEMO_ORGANIZATION_ID}/workspaces/${DEMO_WORKSPACE_ID}/invite`,
          {
            method: "POST",
            headers: { Authorization: `ApiKey ${DEMO_KEY}`, "Content-Type": "application/json" },
            body: JSON.stringify([{ email: "invited@example.com", roles: ["viewer"] }]),
          },
        );
        expect(invite.status, await invite.text()).toBe(200);
        // wrangler dev writes each mail's text to a file and logs its path.
        const MAILED = /send_email binding called[\s\S]*?Text: (\S+\.txt)/;
        for (let waited = 0; !MAILED.test(printed()) && waited < 10_000; waited += 100)
          await new Promise((wait) => setTimeout(wait, 100));
        const [, file] = MAILED.exec(printed()) ?? [];
        expect(file, printed()).toBeDefined();
        mail = await readFile(file, "utf8");
      });
      expect(code, output).toBeNull();
      expect(lines).toEqual([
        "migrations: nothing pending",
        "demo data already present",
        "directory filled: 0 users, 0 memberships added",
        serving(port),
      ]);
      const links = mail.match(/https?:\/\/[^\s'/]+\/organizations\/[^\s']+/g);
      expect(new Set(links)).toEqual(
        new Set([
          `http://127.0.0.1:${port}/organizations/${DEMO_ORGANIZATION_ID}/workspaces/${DEMO_WORKSPACE_ID}/invite/accept?project_id=00000000-0000-7000-8000-000000000004`,
        ]),
      );
    },
    START_TIMEOUT,
  );

  it(
    "a new migration of the shards is applied to the shards alone",
    async () => {
      await writeFile(join(copy, "migrations", "9999_dev_prepare_probe.sql"), "CREATE TABLE dev_prepare_probe (x);\n");
      const { code, lines, output, port } = await start();
      expect(code, output).toBeNull();
      expect(lines).toEqual([
        "migrating SHARD_0, SHARD_1",
        "migrated SHARD_0, SHARD_1",
        "demo data already present",
        "directory filled: 0 users, 0 memberships added",
        serving(port),
      ]);
      expect([
        await queryShard(state(), "SHARD_0", PROBE),
        await queryShard(state(), "SHARD_1", PROBE),
        await queryDirectory(state(), PROBE),
      ]).toEqual([[{ name: "dev_prepare_probe" }], [{ name: "dev_prepare_probe" }], []]);
    },
    START_TIMEOUT,
  );

  it(
    "a migration that fails stops the start, saying which database and which migration, and seeds nothing",
    async () => {
      // A table the directory already has: its migration fails.
      await writeFile(join(copy, "migrations-directory", "9999_broken.sql"), "CREATE TABLE memberships (x);\n");
      const { code, lines } = await start();
      expect(code).toBe(1);
      expect(lines).toEqual([
        "migrating DIRECTORY",
        expect.stringMatching(
          /^error: migrating DIRECTORY failed \(9999_broken\.sql: .*table memberships already exists.*\); run the command again once the cause is fixed \(migrations already applied are skipped\)$/,
        ),
      ]);
    },
    START_TIMEOUT,
  );
});
