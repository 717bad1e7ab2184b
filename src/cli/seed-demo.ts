/**
 * `npm run db:seed [-- --persist-to DIR]`: seeds the local database with the demo account of the README
 * (src/cli/demo-data.ts), then fills the directory. Idempotent. Local only: there is no way to point it at --remote.
 */
import { parseArgs } from "node:util";
import { openDatabase } from "./database";
import { seedDemo } from "./demo-data";
import { runCli, UsageError } from "./run-cli";

const USAGE = "Usage: npm run db:seed [-- --persist-to DIR]   (local only)";

async function main(): Promise<undefined> {
  const { values } = parseArgs({ options: { "persist-to": { type: "string" }, remote: { type: "boolean" } }, strict: true });
  if (values.remote) throw new UsageError("the demo seed is local only; it never runs against the deployed database");
  const opened = await openDatabase({ persistTo: values["persist-to"] });
  try {
    for (const line of await seedDemo(opened)) process.stderr.write(`${line}\n`);
  } finally {
    await opened.close();
  }
  return undefined;
}

runCli(main, USAGE);
