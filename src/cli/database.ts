import { AssertionError } from "node:assert";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { bucketedSince } from "../db/buckets";
import { declaredShards, type ShardName } from "../db/pool";
import { UsageError } from "./run-cli";

// Keep wrangler's own chatter off stdout, which belongs to the command's JSON.
process.env.WRANGLER_LOG ??= "error";
process.env.WRANGLER_SEND_METRICS ??= "false";
// Out of wrangler's dev registry (an empty path turns it off): entries there are keyed by the Worker's name, so
// getPlatformProxy's would replace that of a running `wrangler dev` and, on exit, delete it. The CLI binds no
// other Worker, so it has no use for the registry.
process.env.WRANGLER_REGISTRY_PATH = "";

const CONFIG_PATH = resolve(import.meta.dirname, "../../wrangler.toml");

export interface Target {
  /** wrangler's --persist-to: the folder holding local state (`.wrangler/state` by default). */
  persistTo?: string;
  /** The deployed database instead of the local one. */
  remote?: boolean;
}

/** The pool's databases (docs/SHARDING.md §1): the directory, and every shard wrangler.toml declares, by number. */
export interface DatabasePool {
  /** The Worker's env as wrangler.toml declares it: the bindings and [vars] (SHARD_MAP, OPEN_SHARDS, BUCKETED_SINCE). */
  env: Env;
  directory: D1Database;
  shards: { name: ShardName; db: D1Database }[];
}

export interface OpenDatabase {
  db: D1Database;
  pool: DatabasePool;
  close(): Promise<void>;
}

/** BUCKETED_SINCE as wrangler.toml declares it, in ms (src/db/buckets.ts): the CLI places organizations by it, as the Worker does. */
export async function configuredBucketedSince(): Promise<number> {
  const { unstable_readConfig } = await import("wrangler");
  return bucketedSince(unstable_readConfig({ config: CONFIG_PATH }).vars as { BUCKETED_SINCE?: string });
}

/** getPlatformProxy reaches the deployed database for bindings marked remote: a temporary config marks ours. */
async function remoteConfig(): Promise<{ path: string; remove: () => void }> {
  const { unstable_readConfig } = await import("wrangler");
  const config = unstable_readConfig({ config: CONFIG_PATH });
  const folder = mkdtempSync(join(tmpdir(), "app-management-admin-"));
  const path = join(folder, "wrangler.json");
  writeFileSync(
    path,
    JSON.stringify({
      name: config.name,
      compatibility_date: config.compatibility_date,
      vars: config.vars,
      d1_databases: config.d1_databases.map((database: object) => ({ ...database, remote: true })),
    }),
  );
  return { path, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

/**
 * The D1 bindings the Worker sees, opened from Node through wrangler: local state (shared with `wrangler dev`
 * and `wrangler d1 ... --local`) or, with `remote`, the deployed databases. Checks that the schema is there.
 */
export async function openDatabase(target: Target): Promise<OpenDatabase> {
  const opened = await openPool(target);
  try {
    await assertMigrated(opened.pool, target);
  } catch (error) {
    await opened.close();
    throw error;
  }
  return opened;
}

/** The pool as `openDatabase` opens it, whatever its schema (`npm run dev` migrates what it lacks). */
export async function openPool(target: Target): Promise<OpenDatabase> {
  if (target.persistTo && !existsSync(target.persistTo)) throw new UsageError(`--persist-to: no such folder ${target.persistTo}`);
  const { getPlatformProxy } = await import("wrangler");
  const config = target.remote ? await remoteConfig() : { path: CONFIG_PATH, remove: () => {} };
  let proxy: Awaited<ReturnType<typeof getPlatformProxy<Env>>>;
  try {
    proxy = await getPlatformProxy<Env>({
      configPath: config.path,
      remoteBindings: Boolean(target.remote),
      persist: target.persistTo ? { path: join(resolve(target.persistTo), "v3") } : true,
    });
  } catch (error) {
    config.remove();
    if (!target.remote) throw error;
    const reason = error instanceof Error ? error.message.split("\n").filter(Boolean).at(-1) : String(error);
    throw new UsageError(
      `cannot reach the deployed database (${reason}); run \`npx wrangler login\` or set CLOUDFLARE_API_TOKEN`,
    );
  }
  const close = async () => {
    await proxy.dispose();
    config.remove();
  };
  // Every organization is on SHARD_0 until the CLI places them by bucket (docs/SHARDING.md §8, milestone 5).
  const db = proxy.env.SHARD_0;
  const env = proxy.env as unknown as Record<ShardName, D1Database>;
  const pool = {
    env: proxy.env,
    directory: proxy.env.DIRECTORY,
    shards: declaredShards(proxy.env).map((name) => ({ name, db: env[name] })),
  };
  return { db, pool, close };
}

/**
 * Runs `work` again after a failure of the local tooling rather than of the work, a bounded number of times:
 * - the database was busy: `wrangler dev` and this process each open the same SQLite file, and workerd sets no busy
 *   timeout, so one may find the other's lock; the D1 error then only says "internal error".
 * - getPlatformProxy lost the call: its Node side frees a statement on workerd once the statement's object is
 *   collected, which may be while a call naming it (a batch of statements nothing else holds) is still on its way
 *   (on a loaded machine); workerd's end of the proxy then fails its assertion that the statement is there, before it
 *   calls anything, and miniflare hands that on as a plain Error named "AssertionError": `isLostCall`.
 * Either way the statement or batch that failed did not run, so running the work again is safe.
 */
export async function retryTransient<T>(work: () => Promise<T>, attempts = 6): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isTransient(error) || attempt >= attempts) throw error;
      await new Promise((resolveLater) => setTimeout(resolveLater, 50 * 2 ** attempt));
    }
  }
}

const isTransient = (error: unknown): boolean =>
  isLostCall(error) ||
  /SQLITE_BUSY|database is locked|internal error/i.test(error instanceof Error ? error.message : String(error));

/**
 * The call workerd refused, as it reaches us: miniflare's proxy server asserts without a message
 * (node_modules/miniflare/dist/src/workers/core/entry.worker.js, ProxyServer's `Native` reviver), and
 * Miniflare#dispatchFetch revives the error by its name, which is no global: an Error, not node:assert's class (that
 * of the proxy's Node side, whose assertions may fail after workerd ran the call).
 */
const isLostCall = (error: unknown): boolean =>
  error instanceof Error &&
  !(error instanceof AssertionError) &&
  error.name === "AssertionError" &&
  error.message === "false == true";

/** Whether `db` has the table `name`. */
const hasTable = (db: D1Database, name: string) =>
  retryTransient(() => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1").bind(name).first());

/** Every database of the pool has its schema: the directory's memberships, each shard's apps. */
async function assertMigrated(pool: DatabasePool, target: Target): Promise<void> {
  const tables = [hasTable(pool.directory, "memberships"), ...pool.shards.map(({ db }) => hasTable(db, "apps"))];
  if ((await Promise.all(tables)).every(Boolean)) return;
  const where = target.remote ? " -- --remote" : target.persistTo ? ` -- --persist-to ${target.persistTo}` : "";
  throw new UsageError(`the database has no schema yet: apply the migrations first (npm run db:migrate${where})`);
}
