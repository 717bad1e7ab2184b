import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

// Keep wrangler's own chatter off stdout, which belongs to the command's JSON.
process.env.WRANGLER_LOG ??= "error";
process.env.WRANGLER_SEND_METRICS ??= "false";

const CONFIG_PATH = resolve(import.meta.dirname, "../../wrangler.toml");

export interface Target {
  /** wrangler's --persist-to: the folder holding local state (`.wrangler/state` by default). */
  persistTo?: string;
  /** The deployed database instead of the local one. */
  remote?: boolean;
}

export interface OpenDatabase {
  db: D1Database;
  close(): Promise<void>;
}

/**
 * The D1 binding the Worker sees, opened from Node through wrangler: local state (shared with `wrangler dev`
 * and `wrangler d1 ... --local`) or, with `remote`, the deployed database.
 */
export async function openDatabase(target: Target): Promise<OpenDatabase> {
  const { getPlatformProxy, unstable_readConfig } = await import("wrangler");
  let configPath = CONFIG_PATH;
  let cleanup = () => {};
  if (target.remote) {
    // getPlatformProxy reaches the deployed database for bindings marked remote; mark ours in a temporary copy.
    const config = unstable_readConfig({ config: CONFIG_PATH });
    const folder = mkdtempSync(join(tmpdir(), "app-management-admin-"));
    configPath = join(folder, "wrangler.json");
    writeFileSync(
      configPath,
      JSON.stringify({
        name: config.name,
        compatibility_date: config.compatibility_date,
        d1_databases: config.d1_databases.map((database: object) => ({ ...database, remote: true })),
      }),
    );
    cleanup = () => rmSync(folder, { recursive: true, force: true });
  }
  const proxy = await getPlatformProxy<Env>({
    configPath,
    remoteBindings: Boolean(target.remote),
    persist: target.persistTo ? { path: join(resolve(target.persistTo), "v3") } : true,
  });
  return {
    db: proxy.env.DB,
    close: async () => {
      await proxy.dispose();
      cleanup();
    },
  };
}

/** Fails with a clear message when the migrations have not been applied to this database. */
export async function assertMigrated(db: D1Database): Promise<void> {
  const table = await db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'apps'").first();
  if (!table) {
    throw new UsageError("the database has no schema yet: apply the migrations first (npm run db:migrate, or with --remote: npx wrangler d1 migrations apply DB --remote)");
  }
}

/** A mistake of the operator's: printed as a message, never as a stack trace. */
export class UsageError extends Error {}
