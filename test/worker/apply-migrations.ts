import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll } from "vitest";
import { BURST_MS } from "../../src/http/request-log";
import { shards } from "./pool";

// Runs before each test file (its afterAll, after each); storage is isolated per file, and applying is a no-op once applied.
await applyD1Migrations(env.DIRECTORY, env.TEST_DIRECTORY_MIGRATIONS);
for (const shard of shards()) await applyD1Migrations(shard, env.TEST_SHARD_MIGRATIONS);

// A request's log line is written BURST_MS after it (src/http/request-log.ts). A file whose last request ends sooner
// before the file does would have that line reach vitest while it closes the file's connection, an unhandled "Closing
// rpc while onUserConsoleLog was pending" that fails the run: each file waits for its last line.
afterAll(() => scheduler.wait(2 * BURST_MS));
