/**
 * `npm run dev [-- wrangler dev's options]`: the local pool prepared (src/cli/dev-prepare.ts), then `wrangler dev`
 * with the options given, serving the API and the console at the origin they make (--port, --ip, --local-protocol;
 * wrangler's defaults otherwise), which is also its PUBLIC_BASE_URL, the origin of invitation links.
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEV_OPTIONS, devVars, prepareLocalPool } from "./dev-prepare";
import { runCli, UsageError } from "./run-cli";

const USAGE = "Usage: npm run dev [-- wrangler dev's options, e.g. --port 8788]";
const WRANGLER = resolve(import.meta.dirname, "../../node_modules/.bin/wrangler");

/** The origin `wrangler dev` serves at with these options of its own (the rest are left to it). */
function servedOrigin(args: string[]): string {
  const { values } = parseArgs({
    args,
    options: { port: { type: "string" }, ip: { type: "string" }, "local-protocol": { type: "string" } },
    strict: false,
    allowPositionals: true,
  });
  const port = values.port ?? "8787";
  const protocol = values["local-protocol"] ?? "http";
  if (typeof port !== "string" || !/^\d{1,5}$/.test(port)) throw new UsageError(`--port: not a port: ${port}`);
  if (protocol !== "http" && protocol !== "https") throw new UsageError(`--local-protocol: http or https, not ${protocol}`);
  // Every interface (or none given): the browser reaches it as localhost.
  const ip = typeof values.ip === "string" && !["0.0.0.0", "::", "*"].includes(values.ip) ? values.ip : "localhost";
  return `${protocol}://${ip.includes(":") ? `[${ip}]` : ip}:${port}`;
}

/** wrangler dev with the local vars and `args`, this process's streams, until it exits: its exit code (0 once stopped). */
function serve(origin: string, args: string[]): Promise<number> {
  const vars = Object.entries(devVars(origin)).flatMap(([name, value]) => ["--var", `${name}:${value}`]);
  // Without what src/cli/database.ts set for the preparation's own runtime (errors only, out of the dev registry):
  // wrangler dev logs as it does by default (its "Ready on", requests, mails' files) and registers itself.
  const { WRANGLER_LOG, WRANGLER_REGISTRY_PATH, ...env } = process.env;
  const child = spawn(WRANGLER, ["dev", ...DEV_OPTIONS, ...vars, ...args], {
    stdio: "inherit",
    env: { ...env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
  });
  // Ctrl-C reaches wrangler too (one process group): this process waits for it to stop. A signal sent to this process
  // alone is passed on.
  let stopped = false;
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(signal, () => {
      stopped = true;
      child.kill(signal);
    });
  }
  return new Promise((resolveExit, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => resolveExit(stopped ? 0 : (code ?? 1)));
  });
}

async function main(): Promise<undefined> {
  const args = process.argv.slice(2);
  const origin = servedOrigin(args);
  await prepareLocalPool();
  // Before wrangler's own "Ready on": where to go next, the console beside the API.
  process.stderr.write(`serving: the API at ${origin} (reference: ${origin}/docs), the console at ${origin}/console\n`);
  const code = await serve(origin, args);
  if (code !== 0) throw new Error(`wrangler dev exited ${code}`);
  return undefined;
}

runCli(main, USAGE);
