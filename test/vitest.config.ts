import { execFile, execFileSync } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { keepRunnerConnections } from "./support/loopback-keep-alive";
import "./support/orphan-reaper";
import { LargestFirst } from "./support/sequencer";

const root = path.resolve(import.meta.dirname, "..");
keepRunnerConnections();

/**
 * Requests per fuzz property (test/worker/fuzz-support.ts's RUNS; pure properties take a multiple of it): FUZZ_RUNS
 * from the environment, else the everyday sample `npm test` and CI run: 250, which with the rest keeps `bash .ci/run`
 * within ten minutes on two busy cores (500 no longer did); each property still checks that its sample met every answer
 * it must see (a 412, a kept and a reused Idempotency-Key ...), which the generators lean toward (test/worker/
 * fuzz-posts.ts's key and If-Match plans). `npm run test:deep` (and the scheduled workflow,
 * .github/workflows/deep-tests.yml) runs every property at full strength: 5000.
 */
const FUZZ_RUNS = process.env.FUZZ_RUNS ?? "250";
/**
 * How each fuzz property is seeded (test/worker/fuzz-support.ts): FUZZ_SEED from the environment, else "label" (a seed
 * per property, the same every run: the everyday sample's checks cannot fail on the draw); `npm run test:deep` draws
 * new ones ("random").
 */
const FUZZ_SEED = process.env.FUZZ_SEED ?? "label";
/**
 * The SQL injection payloads injection-registry and injection-teams send through every route (test/worker/
 * injection-payloads.ts's PAYLOAD_SAMPLE): INJECTION_PAYLOADS from the environment, else "sample", the first payload
 * of each kind (12 of 38), for `npm test` and CI; `npm run test:deep` sends them all ("all").
 */
const INJECTION_PAYLOADS = process.env.INJECTION_PAYLOADS ?? "sample";

export default defineConfig(async () => {
  // Every route's round-trip budget, for round-trips.cases.ts and buckets.test.ts: built in Node, as the facts only the
  // tests read are left out of the Worker (wrangler.toml [define]); in a process of its own while the rest is made.
  const routeFacts = promisify(execFile)("npx", ["tsx", "test/support/route-facts.ts"], { cwd: root, maxBuffer: 1 << 26 });
  // The OpenAPI documents the route declarations make, for openapi-fixture.cases.ts to compare the served one with: built
  // in Node, as the declarations' text is left out of the Worker (wrangler.toml [define]); in a process of its own too.
  const openApiDocuments = promisify(execFile)("npx", ["tsx", "test/support/openapi-documents.ts"], {
    cwd: root,
    maxBuffer: 1 << 26,
  });
  // The static assets the Worker serves (wrangler.toml [assets]): the OpenAPI document and Swagger UI's files.
  execFileSync("npx", ["tsx", "src/cli/build-assets.ts"], { cwd: root, stdio: "inherit" });
  // The pool's two schemas: the directory's, and every shard's (test/worker/apply-migrations.ts).
  const directoryMigrations = await readD1Migrations(path.join(root, "migrations-directory"));
  const shardMigrations = await readD1Migrations(path.join(root, "migrations"));
  return {
    root,
    test: {
      // Three test files at a time, whatever the cores (vitest's default on two cores is one): a file spends much of
      // its time waiting (webhook deliveries timing out, wrangler dev starting, a browser's page), which the others'
      // work fills. Two at a time left about 30 % of the two cores idle over a CI run (751 s: 1,056 s of CPU).
      maxWorkers: 3,
      sequence: { sequencer: LargestFirst },
      projects: [
        {
          // Inside workerd, through the Worker's fetch handler, against a real local D1 (isolated per file).
          plugins: [
            cloudflareTest({
              wrangler: { configPath: path.join(root, "wrangler.toml") },
              miniflare: {
                // Webhooks may target the tests' receiver on 127.0.0.1 (webhook-receiver.ts). Invitations are mailed,
                // with accept links at the tests' origin (fixtures.ts BASE_URL), and their tokens handed back too, as
                // under `npm run dev` (invitations.cases.ts turns each off).
                bindings: {
                  TEST_DIRECTORY_MIGRATIONS: directoryMigrations,
                  TEST_SHARD_MIGRATIONS: shardMigrations,
                  FUZZ_RUNS,
                  FUZZ_SEED,
                  INJECTION_PAYLOADS,
                  WEBHOOKS_ALLOW_LOCAL: "true",
                  INVITATION_EMAIL_FROM: "invitations@apps.example.test",
                  PUBLIC_BASE_URL: "https://apps.example.test",
                  INVITATION_TOKEN_IN_ANSWER: "true",
                  // Most files write rows straight into D1 and read them back through the Worker at once: they read
                  // uncached. The cache's own tests (edge-cache.test.ts, round-trips.cases.ts) pass a bound per request.
                  FRESHNESS_BOUND_SECONDS: "0",
                },
                // Two more databases, no shards of the pool unless a test binds them as SHARD_2 and SHARD_3 (a pool of
                // four: test/worker/pool.ts's fourShardPool); unused, they cost nothing.
                d1Databases: ["TEST_SPARE_SHARD_2", "TEST_SPARE_SHARD_3"],
                // The suite sends thousands of requests with few keys from one address: wrangler.toml's limits
                // are raised here, and rate-limits.test.ts swaps in the strict emulated limiters below.
                ratelimits: {
                  KEY_RATE_LIMITER: { simple: { limit: 1_000_000, period: 60 } },
                  AUTH_FAILURE_RATE_LIMITER: { simple: { limit: 1_000_000, period: 60 } },
                  KEYLESS_RATE_LIMITER: { simple: { limit: 1_000_000, period: 60 } },
                  TEST_STRICT_KEY_LIMITER: { simple: { limit: 5, period: 60 } },
                  TEST_STRICT_AUTH_FAILURE_LIMITER: { simple: { limit: 3, period: 60 } },
                  TEST_STRICT_KEYLESS_LIMITER: { simple: { limit: 3, period: 60 } },
                },
              },
            }),
          ],
          test: {
            name: "worker",
            root,
            // The files of one worker run in one runtime, one after another, rather than each in a runtime of its own:
            // starting a runtime and loading the Worker's modules into it cost each file about 4 s of CPU (a fifth of
            // the project's). Each file still starts from emptied, migrated databases (apply-migrations.ts), and the
            // mocks and globals a test changes are put back after it.
            isolate: false,
            restoreMocks: true,
            unstubGlobals: true,
            // The Worker's logs go straight to the runtime's output, not through vitest (which would show them only for
            // tests that fail): a line logged by another request's context as a file ends (a request log's burst, a
            // waitUntil) left vitest waiting for it forever, after every test had passed (cloudflare/workers-sdk#15719). Not
            // sending every line to vitest also cut the project's CPU from about 390 s to 295 s.
            disableConsoleIntercept: true,
            include: ["test/worker/**/*.test.ts"],
            // Many tests send hundreds of requests and diff every table after each; on CI's two busy cores these
            // run past vitest's 5 s default (injection-teams: 3.9 s alone, over 5 s in the full suite).
            testTimeout: 60_000,
            hookTimeout: 60_000,
            setupFiles: ["test/worker/apply-migrations.ts"],
            provide: {
              openApiDocuments: JSON.parse((await openApiDocuments).stdout),
              routeFacts: JSON.parse((await routeFacts).stdout),
            },
            globalSetup: ["test/worker/webhook-receiver.ts"],
          },
        },
        {
          // Static checks of src/ with TypeScript's compiler API, in Node (loading typescript inside workerd is heavy).
          // Building and typing a program of src/ takes seconds, more when the files run side by side on a busy machine.
          test: {
            name: "static",
            root,
            include: ["test/static/**/*.test.ts"],
            environment: "node",
            testTimeout: 60_000,
          },
        },
        {
          // The admin CLI as an operator runs it: spawned processes against a temporary --persist-to folder.
          test: {
            name: "cli",
            root,
            include: ["test/cli/**/*.test.ts"],
            environment: "node",
            globalSetup: ["test/support/migrated-pool.ts"],
            testTimeout: 120_000,
            hookTimeout: 120_000,
          },
        },
        {
          // GET /docs in headless Chromium against wrangler dev (skipped, saying so, where no Chromium is installed).
          test: {
            name: "browser",
            root,
            include: ["test/browser/**/*.test.ts"],
            environment: "node",
            globalSetup: ["test/support/seeded-pool.ts"],
            testTimeout: 120_000,
            hookTimeout: 120_000,
          },
        },
      ],
    },
  };
});
