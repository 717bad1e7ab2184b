/**
 * `npm run db:migrate [-- --remote | --persist-to DIR]`: applies the migrations of every D1 database wrangler.toml
 * declares, the directory first, then each shard (docs/SHARDING.md §4), one `wrangler d1 migrations apply` after
 * another; stops at the first that fails, saying which. Local by default (wrangler's `.wrangler/state`).
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { runCli, UsageError } from "./run-cli";

const ROOT = resolve(import.meta.dirname, "../..");
const CONFIG_PATH = resolve(ROOT, "wrangler.toml");
const WRANGLER = resolve(ROOT, "node_modules", ".bin", "wrangler");
const DIRECTORY = "DIRECTORY";

const USAGE = "Usage: npm run db:migrate [-- --remote | --persist-to DIR]";

/** The D1 bindings of wrangler.toml in the order they are migrated: the directory, then the rest as declared. */
async function poolBindings(): Promise<string[]> {
  const { unstable_readConfig } = await import("wrangler");
  const bindings = unstable_readConfig({ config: CONFIG_PATH }).d1_databases.map((database) => database.binding);
  return [...bindings.filter((binding) => binding === DIRECTORY), ...bindings.filter((binding) => binding !== DIRECTORY)];
}

/** `wrangler <args>` with this process's streams: its exit code. */
function wrangler(args: string[]): Promise<number> {
  return new Promise((resolveExit, reject) => {
    const child = spawn(WRANGLER, args, {
      cwd: ROOT,
      stdio: "inherit",
      env: { WRANGLER_SEND_METRICS: "false", ...process.env },
    });
    child.once("error", reject);
    child.once("exit", (code, signal) => resolveExit(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<undefined> {
  const { values } = parseArgs({ options: { remote: { type: "boolean" }, "persist-to": { type: "string" } }, strict: true });
  if (values.remote && values["persist-to"]) throw new UsageError("--remote and --persist-to cannot be used together");
  const where = values.remote
    ? ["--remote"]
    : ["--local", ...(values["persist-to"] ? ["--persist-to", values["persist-to"]] : [])];
  const bindings = await poolBindings();
  for (const [i, binding] of bindings.entries()) {
    process.stderr.write(`migrating ${binding} (${i + 1} of ${bindings.length})\n`);
    const code = await wrangler(["d1", "migrations", "apply", binding, ...where]);
    if (code !== 0) {
      const notMigrated = bindings.slice(i + 1);
      throw new Error(
        `migrating ${binding} failed (wrangler exited ${code})` +
          (notMigrated.length ? `; not attempted: ${notMigrated.join(", ")}` : "") +
          "; run the command again once the cause is fixed (migrations already applied are skipped)",
      );
    }
  }
  process.stderr.write(`migrated ${bindings.join(", ")}\n`);
  return undefined;
}

runCli(main, USAGE);
