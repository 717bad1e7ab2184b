import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Runs before each test file; storage is isolated per file, and applying is a no-op once applied.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
