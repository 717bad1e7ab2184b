/**
 * `npm run bench:capacity`: what a shard's rows cost on disk, and the capacity model built on it (BENCHMARKS.md,
 * "Capacity").
 *
 *   1. a copy of the working tree and a temporary --persist-to folder (as `npm run bench`): the migrations applied,
 *      one user seeded with its organization and API keys
 *   2. `wrangler dev` of the service (without [assets], with WEBHOOKS_ALLOW_LOCAL, as the bench) and the bench's
 *      webhook receiver
 *   3. the workload (./workload.ts), phase by phase through the public HTTP API; after each phase, once the service
 *      is idle (and every delivery settled), the database and its log are copied and measured (./sizes.ts: dbstat)
 *   4. the model (./model.ts), on stdout and as markdown in a file
 *
 * Options:
 *   --scale X        multiplies every phase's count (default 1: about 17,000 requests, 2 to 3 minutes on 2 cores)
 *   --concurrency N  requests in flight (default 8)
 *   --out FILE       the markdown (default test/bench/results/capacity-<time>.md)
 *   --keep           keep the temporary folder (its path is printed)
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { HarnessError, ROOT } from "../../support/processes";
import { applyMigrations, d1Query, snapshot, startDev } from "../../support/wrangler";
import { devConfigWithoutAssets } from "../prepare";
import { startReceiver } from "../receiver";
import { gitState, loadAverage, machine } from "../report";
import { newKey, quote } from "../seed";
import { cleanUpNow, makeWorkFolder } from "../work-folder";
import { buildModel, capacityTables, type Measured } from "./model";
import { checkSqlite, type DatabaseSize, measureDatabase, totalInCopies } from "./sizes";
import { type PhaseId, type PhaseResult, scaled, Workload } from "./workload";

const KEYS = 64;
const EMAIL = "capacity@example.com";

function options() {
  const { values } = parseArgs({
    options: {
      scale: { type: "string", default: "1" },
      concurrency: { type: "string", default: "8" },
      out: { type: "string" },
      keep: { type: "boolean", default: false },
    },
    strict: true,
  });
  const scale = Number(values.scale);
  const concurrency = Number(values.concurrency);
  if (!(scale > 0)) throw new HarnessError(`--scale must be a number above 0, got ${values.scale}`);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new HarnessError(`--concurrency must be a whole number >= 1, got ${values.concurrency}`);
  const out = resolve(
    values.out ?? join(ROOT, "test/bench/results", `capacity-${new Date().toISOString().replace(/[:.]/g, "-")}.md`),
  );
  return { scale, concurrency, out, keep: values.keep };
}

/** One user owning one organization (workspace, project) and KEYS keys of its project: the SQL, and the keys. */
function seed(): { sql: string; keys: string[] } {
  const [user, organization, workspace, project] = [1, 2, 3, 4].map(
    (n) => `0195cafe-0000-7000-8000-${String(n).padStart(12, "0")}`,
  );
  const keys = Array.from({ length: KEYS }, () => newKey(project));
  const sql = [
    `INSERT INTO users (id, username, email) VALUES (${quote(user)}, 'capacity', ${quote(EMAIL)});`,
    `INSERT INTO organizations (id, name, is_personal) VALUES (${quote(organization)}, 'capacity', 1);`,
    `INSERT INTO organization_members (organization_id, user_id, role) VALUES (${quote(organization)}, ${quote(user)}, 'owner');`,
    `INSERT INTO workspaces (id, organization_id, name, is_default) VALUES (${quote(workspace)}, ${quote(organization)}, 'Default', 1);`,
    `INSERT INTO projects (id, workspace_id, name, is_default) VALUES (${quote(project)}, ${quote(workspace)}, 'Default', 1);`,
    `INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id) VALUES ${keys
      .map(
        (key, n) =>
          `(${quote(`0195cafe-0005-7000-8000-${String(n).padStart(12, "0")}`)}, ${quote(key.prefix)}, ${quote(key.hash)}, ${quote(user)}, ${quote(project)})`,
      )
      .join(", ")};`,
  ].join("\n");
  return { sql, keys: keys.map((key) => key.key) };
}

const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));

/**
 * Measures the database once every delivery is settled: the receiver has got them all and the consumer has recorded
 * each attempt (up to 60 s; a delivery still pending then fails the run, as its bytes would be missing).
 */
async function measureSettled(
  state: string,
  into: string,
  deliveries: () => Promise<number>,
  wanted: number,
): Promise<DatabaseSize> {
  const deadline = Date.now() + 60_000;
  while ((await deliveries()) < wanted && Date.now() < deadline) await sleep(200);
  for (;;) {
    const size = await measureDatabase(state, into);
    const pending = await totalInCopies(into, "webhook_deliveries", "COUNT(*)", "status <> 'succeeded'");
    const attempts = size.tables.webhook_attempts?.rows ?? 0;
    if (pending === 0 && attempts >= wanted) return size;
    if (Date.now() > deadline)
      throw new HarnessError(`${pending} deliveries not settled, ${attempts} attempts recorded of ${wanted}, after 60 s`);
    await sleep(1_000);
  }
}

async function main(): Promise<void> {
  const opts = options();
  const sqliteVersion = await checkSqlite();
  const counts = scaled(opts.scale);
  const git = gitState(ROOT);
  console.log(`bench:capacity, scale ${opts.scale}, ${opts.concurrency} requests in flight; code ${git}`);
  for (const line of [...machine(), `sqlite3 ${sqliteVersion} (dbstat)`, `load average ${loadAverage()}`])
    console.log(`  ${line}`);

  const work = makeWorkFolder("app-management-capacity-", opts.keep);
  process.env.WRANGLER_LOG_PATH ??= join(work, "wrangler-logs");
  const code = snapshot(ROOT, work);
  const state = join(work, "state");
  mkdirSync(state);
  await applyMigrations(state, { cwd: code });
  const seeded = seed();
  await d1Query(state, seeded.sql, { cwd: code });
  const before = await measureDatabase(state, join(work, "sizes", "before"));

  const { unstable_readConfig } = await import("wrangler");
  const vars = unstable_readConfig({ config: join(code, "wrangler.toml") }).vars as Record<string, unknown> | undefined;
  const basePath = String(vars?.BASE_PATH ?? "").replace(/\/+$/, "");
  const receiver = await startReceiver();
  const service = await startDev({
    name: "service",
    persistTo: state,
    cwd: code,
    configArgs: ["-c", devConfigWithoutAssets(code), "--var", "WEBHOOKS_ALLOW_LOCAL:true"],
    readyPath: `${basePath}/health`,
  });
  console.log(`  service on ${service.url}, receiver on ${receiver.url}; local D1 in ${state}\n`);

  const workload = new Workload(
    { base: `${service.url}${basePath}`, keys: seeded.keys, email: EMAIL, concurrency: opts.concurrency },
    counts,
    receiver,
  );
  const phases: PhaseResult[] = [];
  const after = {} as Record<PhaseId, DatabaseSize>;
  for (const [id, phase] of Object.entries(workload.phases) as [PhaseId, Workload["phases"][PhaseId]][]) {
    const start = performance.now();
    const operations = await phase.run();
    const seconds = (performance.now() - start) / 1000;
    phases.push({ id, operations, seconds });
    const into = join(work, "sizes", id);
    after[id] =
      id === "hookedDeploys"
        ? await measureSettled(state, into, async () => (await receiver.counts()).deliveries, operations)
        : await measureDatabase(state, into);
    console.log(`  ${phase.label}: ${operations} in ${seconds.toFixed(1)} s (${(operations / seconds).toFixed(0)}/s)`);
  }
  const settled = join(work, "sizes", "hookedDeploys");
  const committed = "revision > 1";
  const chars =
    (await totalInCopies(settled, "app_variant_revisions", "SUM(length(params))", committed)) /
    (await totalInCopies(settled, "app_variant_revisions", "COUNT(*)", committed));
  const errors = service.errorCount();
  await service.stop();
  receiver.stop();
  if (errors > 0) throw new HarnessError(`wrangler dev logged ${errors} error(s):\n${service.errorsSince(0).join("\n")}`);

  const labels = Object.fromEntries(Object.entries(workload.phases).map(([id, phase]) => [id, phase.label])) as Record<
    PhaseId,
    string
  >;
  const measured: Measured = { before, after, phases, labels, paramsChars: chars, concurrency: opts.concurrency };
  const tables = capacityTables(measured, buildModel(measured));
  console.log(`\n${tables}`);
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(
    opts.out,
    `# Capacity: ${new Date().toISOString()}\n\nCode ${git}; scale ${opts.scale}.\n${[
      ...machine(),
      `sqlite3 ${sqliteVersion}`,
      `load average at the end ${loadAverage()}`,
    ]
      .map((line) => `- ${line}`)
      .join("\n")}\n\n${tables}\n`,
  );
  console.log(`\nmarkdown: ${relative(process.cwd(), opts.out)}`);
  if (opts.keep) console.log(`temporary folder kept: ${work}`);
}

main().then(
  () => {
    cleanUpNow();
    process.exit(0);
  },
  (error: unknown) => {
    console.error(
      `\nbench:capacity failed: ${error instanceof HarnessError ? error.message : error instanceof Error ? error.stack : String(error)}`,
    );
    cleanUpNow();
    process.exit(1);
  },
);
