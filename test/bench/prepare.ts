/** What the bench measures on: the bench data in a local D1, and the bundle's size. */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { HarnessError } from "../support/processes";
import { applyMigrations, d1Query, wrangler } from "../support/wrangler";
import { BENCH_SHARDS, type BenchData, buildBenchData } from "./seed";

/** `text` (a wrangler.toml) less its table `header` (e.g. `[assets]`), which runs to the next table's header. */
function withoutTable(text: string, header: string, file: string): string {
  const name = header.replace(/[[\]]/g, "").replace(/\./g, "\\.");
  const left = text.replace(new RegExp(`^\\[{1,2}${name}\\]{1,2}\\n(?:(?!\\[).*\\n?)*`, "m"), "");
  if (new RegExp(`^\\s*\\[{1,2}\\s*${name}\\b`, "m").test(left))
    throw new HarnessError(`${file}: its ${header} could not be left out`);
  return left;
}

/**
 * The config `wrangler dev` runs a copy of the service in `code` with: its wrangler.toml without the [assets] table,
 * written beside it (paths in it stay relative to the copy). With assets, wrangler dev puts its asset router (a Worker
 * of its own in the same workerd) in front of every request, which with run_worker_first hands each one on to the
 * service: CPU a request that a deployed Worker is not charged (the platform routes it) and the floor does not pay,
 * 0.2 to 0.3 ms (BENCHMARKS.md round 10). No scenario requests an asset.
 */
export function devConfigWithoutAssets(code: string): string {
  const config = join(code, "wrangler.bench.toml");
  writeFileSync(config, withoutTable(readFileSync(join(code, "wrangler.toml"), "utf8"), "[assets]", `${code}/wrangler.toml`));
  return config;
}

/** The bare handlers' entry (BENCHMARKS.md round 15), in the copy of the code. */
export const BARE_ENTRY = "test/bench/bare/index.ts";

/**
 * The config the bare handlers (test/bench/bare/) run with, written beside the service's in its copy `code`: the
 * service's own (`devConfigWithoutAssets`: the same bindings, vars, [define] and compatibility date, so that the bare
 * handlers' batches bind and route as the service's), with `main` the bare entry, and neither the [build] of the
 * service's assets nor its queue consumer (the bare Worker has no queue handler).
 */
export function bareConfig(code: string): string {
  const config = join(code, "wrangler.bare.toml");
  const file = `${code}/wrangler.toml`;
  let text = readFileSync(devConfigWithoutAssets(code), "utf8");
  for (const table of ["[build]", "[[queues.consumers]]"]) text = withoutTable(text, table, file);
  const withMain = text.replace(/^main = .*$/m, `main = "${BARE_ENTRY}"`);
  if (!withMain.includes(`main = "${BARE_ENTRY}"`))
    throw new HarnessError(`${file}: no main = ... line to point at ${BARE_ENTRY}`);
  writeFileSync(config, withMain);
  return config;
}

/**
 * Migrations applied to the local D1 pool in `dir`, the bench data loaded into each shard and checked there; wrangler
 * run from `code`.
 */
export async function loadData(code: string, dir: string): Promise<BenchData> {
  await applyMigrations(dir, { cwd: code });
  const data = buildBenchData();
  const failed: string[] = [];
  for (const shard of BENCH_SHARDS) {
    const file = join(dir, `bench-data-${shard}.sql`);
    writeFileSync(file, data.sql[shard]);
    const load = ["d1", "execute", shard, "--local", "--persist-to", dir, "--file", file];
    await wrangler(load, `loading the bench data into ${shard}`, { cwd: code });
    // All checks in one query (D1 limits compound SELECTs, so one column each).
    const checks = data.checks[shard];
    const [found] = await d1Query(dir, `SELECT ${checks.map((check, index) => `(${check.sql}) AS c${index}`).join(", ")}`, {
      cwd: code,
      binding: shard,
    });
    for (const [index, check] of checks.entries()) {
      const value = found?.[`c${index}`];
      if (value !== check.expected) failed.push(`  ${shard}, ${check.what}: ${value} (expected ${check.expected})`);
    }
  }
  if (failed.length > 0) throw new HarnessError(`the bench data is not what it should be:\n${failed.join("\n")}`);
  return data;
}

export interface BundleSize {
  files: string[];
  rawBytes: number;
  gzipBytes: number;
  /** What wrangler itself printed ("Total Upload: x KiB / gzip: y KiB"), for comparison. */
  wranglerSummary: string | null;
  /** Bytes of the emitted bundle by npm package or the service's own source, largest first. */
  contributors: [string, number][];
}

/** The bundle `wrangler deploy` would upload of the service in `code`, as configured (or with --minify, for comparison). */
export async function bundleSize(code: string, dir: string, minify = false): Promise<BundleSize> {
  const outdir = join(dir, minify ? "bundle-minified" : "bundle");
  const metafile = join(dir, minify ? "bundle-minified-meta.json" : "bundle-meta.json");
  const result = await wrangler(
    [
      "deploy",
      "--dry-run",
      "--outdir",
      outdir,
      "--metafile",
      metafile,
      "-c",
      join(code, "wrangler.toml"),
      ...(minify ? ["--minify"] : []),
    ],
    `bundling the service (wrangler deploy --dry-run${minify ? " --minify" : ""})`,
    { cwd: code },
  );
  const files = readdirSync(outdir, { recursive: true, encoding: "utf8" })
    .filter((file) => /\.(m?js|cjs)$/.test(file))
    .sort();
  if (files.length === 0) throw new HarnessError(`wrangler deploy --dry-run emitted no .js into ${outdir}:\n${result.stdout}`);
  let rawBytes = 0;
  let gzipBytes = 0;
  for (const file of files) {
    const content = readFileSync(join(outdir, file));
    rawBytes += content.byteLength;
    gzipBytes += gzipSync(content, { level: 9 }).byteLength;
  }
  const summary = /Total Upload:\s*([^\n]+)/.exec(result.stdout + result.stderr);
  return {
    files,
    rawBytes,
    gzipBytes,
    wranglerSummary: summary ? summary[1].trim() : null,
    contributors: contributors(metafile),
  };
}

/** Bytes of the bundle by npm package (or by the service's own source), largest first, from esbuild's metafile. */
function contributors(metafile: string): [string, number][] {
  let meta: { outputs?: Record<string, { inputs?: Record<string, { bytesInOutput?: number }> }> };
  try {
    meta = JSON.parse(readFileSync(metafile, "utf8"));
  } catch {
    return [];
  }
  const totals = new Map<string, number>();
  for (const output of Object.values(meta.outputs ?? {})) {
    for (const [input, { bytesInOutput = 0 }] of Object.entries(output.inputs ?? {})) {
      const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
      const owner = inPackage ? inPackage[1] : /(^|\/)src\//.test(input) ? "src/ (the service)" : "other (wrangler shims)";
      totals.set(owner, (totals.get(owner) ?? 0) + bytesInOutput);
    }
  }
  return [...totals.entries()].sort((a, b) => b[1] - a[1]);
}
