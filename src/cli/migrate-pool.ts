/**
 * `npm run db:migrate [-- --remote | --persist-to DIR]`: applies the migrations of every D1 database wrangler.toml
 * declares, the directory first, then each shard (docs/SHARDING.md §4), one `wrangler d1 migrations apply` after
 * another; stops at the first that fails, saying which. Local by default (wrangler's `.wrangler/state`).
 * (`npm run dev` applies only what is pending, in parallel: src/cli/dev-prepare.ts.)
 */
import { parseArgs } from "node:util";
import { applyMigrations, migrationFailure, poolDatabases } from "./migrations";
import { runCli, UsageError } from "./run-cli";

const USAGE = "Usage: npm run db:migrate [-- --remote | --persist-to DIR]";

async function main(): Promise<undefined> {
  const { values } = parseArgs({ options: { remote: { type: "boolean" }, "persist-to": { type: "string" } }, strict: true });
  if (values.remote && values["persist-to"]) throw new UsageError("--remote and --persist-to cannot be used together");
  const where = values.remote
    ? ["--remote"]
    : ["--local", ...(values["persist-to"] ? ["--persist-to", values["persist-to"]] : [])];
  const bindings = (await poolDatabases()).map(({ binding }) => binding);
  for (const [i, binding] of bindings.entries()) {
    process.stderr.write(`migrating ${binding} (${i + 1} of ${bindings.length})\n`);
    const code = await applyMigrations(binding, where);
    if (code !== 0) throw migrationFailure(binding, code, bindings.slice(i + 1));
  }
  process.stderr.write(`migrated ${bindings.join(", ")}\n`);
  return undefined;
}

runCli(main, USAGE);
