import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { shards } from "./pool";

// Runs before each test file; storage is isolated per file, and applying is a no-op once applied.
await applyD1Migrations(env.DIRECTORY, env.TEST_DIRECTORY_MIGRATIONS);
for (const shard of shards()) await applyD1Migrations(shard, env.TEST_SHARD_MIGRATIONS);
