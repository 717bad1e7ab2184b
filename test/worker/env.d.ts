declare namespace Cloudflare {
  interface Env {
    /** The migrations under migrations/, read by test/vitest.config.ts and applied by apply-migrations.ts. */
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
  }
}
