declare namespace Cloudflare {
  interface Env {
    /** The migrations of the directory (migrations-directory/) and of every shard (migrations/), read by
     * test/vitest.config.ts and applied by apply-migrations.ts. */
    TEST_DIRECTORY_MIGRATIONS: import("cloudflare:test").D1Migration[];
    TEST_SHARD_MIGRATIONS: import("cloudflare:test").D1Migration[];
    /** Databases a test may bind as SHARD_2 and SHARD_3 (test/worker/pool.ts's fourShardPool). */
    TEST_SPARE_SHARD_2: D1Database;
    TEST_SPARE_SHARD_3: D1Database;
    /** Emulated rate limiters with small budgets (test/vitest.config.ts), for rate-limits.test.ts. */
    TEST_STRICT_KEY_LIMITER: RateLimit;
    TEST_STRICT_AUTH_FAILURE_LIMITER: RateLimit;
    TEST_STRICT_KEYLESS_LIMITER: RateLimit;
    /** Requests per fuzz property (fuzz-support.ts's RUNS): the environment variable FUZZ_RUNS, or CI's count. */
    FUZZ_RUNS: string;
    /** How fuzz properties are seeded (fuzz-support.ts's SEEDING): the environment variable FUZZ_SEED, or "label". */
    FUZZ_SEED: string;
    /** The injection payloads of injection-registry and injection-teams (injection-payloads.ts's PAYLOAD_SAMPLE): the
     * environment variable INJECTION_PAYLOADS, "sample" (the everyday run) or "all". */
    INJECTION_PAYLOADS: string;
  }
}
