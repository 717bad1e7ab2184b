/**
 * The cli project's globalSetup (test/vitest.config.ts): the pool migrated once, in the folder every test file's
 * `applyMigrations` copies (test/support/wrangler.ts), before any file starts, so that no file's hook waits on a
 * migration and no two files migrate at once. (The browser project's, seeded-pool.ts, migrates it on the way.)
 */
import { migratedTemplate } from "./wrangler";

export default async function setup(): Promise<void> {
  await migratedTemplate();
}
