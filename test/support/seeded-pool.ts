/**
 * The browser project's globalSetup (test/vitest.config.ts): the pool migrated and seeded with the demo data once, in
 * the folder each browser file copies (test/support/wrangler.ts's `seededTemplate`), before any file starts: every
 * file starts from the same demo organization without a seed of its own (a process, seconds of CPU on two cores).
 */
import { seededTemplate } from "./wrangler";

export default async function setup(): Promise<void> {
  await seededTemplate();
}
