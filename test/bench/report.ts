/** The figures as tables: on stdout, and as markdown in a file. */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join, relative } from "node:path";
import { ROOT } from "../support/processes";
import type { Outcome, Writes } from "./load";
import type { LogVariant } from "./logging/variants";
import type { BundleSize } from "./prepare";
import { BARE_PAIRS, BASE_SCENARIOS, type ScenarioId } from "./scenarios";
import {
  AUDIT_DEEP,
  AUDIT_EVENTS,
  DEPLOY_APPS,
  FULL_PROJECT_APPS,
  LARGE_HISTORY,
  SMALL_HISTORY,
  TOTAL_APPS,
  TOTAL_HISTORY_ENTRIES,
  WEBHOOKS,
} from "./seed";

/** Throughput against the one-query floor (issue #10), and the bundle's size. */
const TARGETS = { get: 0.85, fetch: 0.85, retrieve: 0.9, getConfig: 0.85, post: 0.6, postKeyed: 0.6, deploy: 0.6 } as const;
/** Issue 17's "cost and scale": deploys with three webhooks against none, and the audit log's deep page against its first. */
const WEBHOOK_TARGET = 0.9;
const DEEP_PAGE_TARGET = 0.9;
/** Issue 33: each read against its bare handler (test/bench/bare/), by CPU per request. */
const BARE_TARGET = 0.95;
/** docs/SPLITS.md §5: a read with a split running costs at most 3% more CPU than without (as a ratio, higher better). */
const SPLIT_TARGET = 1 / 1.03;
/** Requests sent with a key homed on the other shard (two round trips), each against its twin (one round trip). */
const ACROSS_PAIRS = [
  { label: "GET of a record, key on the other shard / on the same shard", across: "getAcross", same: "get" },
  { label: "config fetch, key on the other shard / on the same shard", across: "fetchAcross", same: "fetch" },
] as const;
// The budget for the whole surface: 95 KiB gzip since issue 38, leaving room for the next issues (100 since issue 16,
// 64 while the surface was smaller).
const BUNDLE_TARGET_KIB = 95;

export const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : "n/a");
export const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
export const thousands = (n: number) => n.toLocaleString("en");

export function table(header: string[], rows: string[][], align: ("l" | "r")[]): string {
  const widths = header.map((cell, index) => Math.max(cell.length, ...rows.map((row) => row[index].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, index) => (align[index] === "r" ? cell.padStart(widths[index]) : cell.padEnd(widths[index]))).join(" | ")} |`;
  const rule = `|${widths.map((width, index) => (align[index] === "r" ? `${"-".repeat(width + 1)}:` : "-".repeat(width + 2))).join("|")}|`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

function spawnText(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return "";
  }
}

/** The commit, and which files of the code under test differ from it (others may be editing them). */
export function gitState(tree: string): string {
  if (tree !== ROOT) return `the tree in ${tree}`;
  const rev = spawnText("git", ["rev-parse", "--short", "HEAD"]).trim() || "unknown";
  const dirty = spawnText("git", ["status", "--porcelain", "--", "src", "migrations", "wrangler.toml", "package.json"])
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => line.slice(3));
  return dirty.length > 0 ? `${rev} with uncommitted changes to ${dirty.join(", ")}` : rev;
}

function packageVersion(name: string): string {
  try {
    return JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return "unknown";
  }
}

export function machine(): string[] {
  const model = /^model name\s*:\s*(.+)$/m.exec(spawnText("cat", ["/proc/cpuinfo"]))?.[1] ?? os.cpus()[0]?.model ?? "unknown CPU";
  return [
    `${os.availableParallelism()} CPUs (nproc), ${model}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ${os.type()} ${os.release()}`,
    `node ${process.version}, wrangler ${packageVersion("wrangler")}, workerd ${packageVersion("workerd")}, autocannon ${packageVersion("autocannon")}`,
  ];
}

/** The 1-minute load average: on 2 cores, anything else running skews the figures. */
export function loadAverage(): string {
  return os.loadavg()[0].toFixed(2);
}

/** What a run measured and how it went. */
export interface Run {
  opts: {
    duration: number;
    warmup: number;
    rounds: number;
    connections: number;
    logLevel?: string;
    code: string;
    base?: string;
    out: string;
    logVariants: LogVariant[];
    only: string[];
  };
  outcomes: Record<ScenarioId, Outcome>;
  /** The edge cache's memory per entry and its limit holding (test/bench/cache-memory.ts), as a markdown table. */
  cacheMemory?: string;
  bundle: BundleSize;
  minified: BundleSize;
  /** The code under test: its commit and uncommitted changes. */
  git: string;
  basePath: string;
  /** What the writing scenarios left in the database. */
  writes: Writes;
  /** 1-minute load averages. */
  loadAtStart: string;
  loadBefore: string;
  warnings: string[];
  /** Seconds each phase took so far. */
  phases: [string, number][];
  /** performance.now() when the bench started. */
  started: number;
}

/** The tables, the ratios against their targets and the scale figures: on stdout, and as markdown in `opts.out`. */
export function report({
  opts,
  outcomes,
  bundle,
  minified,
  git,
  basePath,
  writes,
  loadAtStart,
  loadBefore,
  warnings,
  phases,
  started,
  cacheMemory,
}: Run): void {
  const ids = Object.keys(outcomes) as ScenarioId[];
  const m = (id: ScenarioId) => outcomes[id]?.measurement;
  const rps = (id: ScenarioId) => m(id)?.requestsPerSecond ?? Number.NaN;
  const ratio = (a: ScenarioId, b: ScenarioId) => rps(a) / rps(b);
  // The same comparison by CPU time per request (load generator and server): b's cost over a's, so that like
  // throughput, higher is better.
  const cpuRatio = (a: ScenarioId, b: ScenarioId) => (m(b)?.cpuPerRequest ?? Number.NaN) / (m(a)?.cpuPerRequest ?? Number.NaN);
  const verdict = (value: number, target: number) =>
    !Number.isFinite(value) ? "n/a (a scenario failed)" : value >= target ? "met" : "**missed**";
  const failures = ids.filter((id) => outcomes[id].error);

  const mainTable = table(
    ["scenario", "conns", "req/s", "p50 ms", "p99 ms", "2xx", "bytes/resp.", "CPU ms/req.", "other CPU"],
    ids.map((id) => {
      const { scenario, measurement: x } = outcomes[id];
      return x
        ? [
            scenario.label,
            String(scenario.connections),
            fixed(x.requestsPerSecond, 0),
            fixed(x.p50, 2),
            fixed(x.p99, 2),
            thousands(x.ok),
            thousands(Math.round(x.meanBytes)),
            fixed(x.cpuPerRequest, 2),
            fixed(x.otherCpus, 2),
          ]
        : [scenario.label, String(scenario.connections), "**FAILED**", "", "", "", "", "", ""];
    }),
    ["l", "r", "r", "r", "r", "r", "r", "r", "r"],
  );
  // The same ratio within each round (scenarios measured a few seconds apart): its spread shows how much the
  // machine's other work moved the figures.
  const spread = (a: ScenarioId, b: ScenarioId) => {
    const [x, y] = [m(a)?.perRound ?? [], m(b)?.perRound ?? []];
    const ratios = x.map((value, index) => value / y[index]).filter(Number.isFinite);
    return ratios.length > 1 ? `${fixed(Math.min(...ratios), 2)} to ${fixed(Math.max(...ratios), 2)}` : "";
  };
  /** A row of the ratio table: `id` against `base`, by throughput (and per round) and by CPU. */
  const ratioRow = (label: string, id: ScenarioId, base: ScenarioId, target: string, kind: string) => [
    label,
    fixed(ratio(id, base), 2),
    spread(id, base),
    fixed(cpuRatio(id, base), 2),
    target,
    kind,
  ];
  // A scenario left out (--only) has no outcome: its row says so rather than that it failed.
  const ran = (...which: ScenarioId[]) => which.every((id) => (outcomes[id] as Outcome | undefined) !== undefined);
  const targetRow = (label: string, id: keyof typeof TARGETS) =>
    ratioRow(
      label,
      id,
      "select1",
      `>= ${TARGETS[id]}`,
      ran(id, "select1") ? verdict(ratio(id, "select1"), TARGETS[id]) : "n/a (not run)",
    );
  const deployFlat = ratio("deployLarge", "deploy");
  /** A row of `id` against `base` with a target of its own (not the floor). */
  const pairRow = (label: string, id: ScenarioId, base: ScenarioId, target: number, shown: string) =>
    ratioRow(label, id, base, shown, ran(id, base) ? verdict(ratio(id, base), target) : "n/a (not run)");
  const ratioTable = table(
    ["throughput ratio", "value", "rounds", "by CPU", "target", ""],
    [
      targetRow(`GET of a record (${SMALL_HISTORY} revisions) / one-query floor`, "get"),
      targetRow("config fetch by environment / one-query floor", "fetch"),
      ...ACROSS_PAIRS.map(({ label, across, same }) => ratioRow(label, across, same, "", "cost")),
      targetRow("retrieve by environment (today's SDK) / one-query floor", "retrieve"),
      targetRow("GET /configs by environment (older SDK) / one-query floor", "getConfig"),
      ratioRow("GET /organizations (accounts) / one-query floor", "organizations", "select1", "", "cost"),
      targetRow("deploy / one-query floor", "deploy"),
      ratioRow("config commit / one-query floor", "commit", "select1", "", "cost"),
      ratioRow("POST /configs with overwrite (commit and deploy) / one-query floor", "saveConfig", "select1", "", "cost"),
      targetRow("POST /apps with an Idempotency-Key / one-query floor", "postKeyed"),
      targetRow("POST /apps / one-query floor", "post"),
      ratioRow(
        `deploy into ${thousands(LARGE_HISTORY)} revisions / into ${SMALL_HISTORY}`,
        "deployLarge",
        "deploy",
        "near 1",
        "scale",
      ),
      ratioRow(
        `POST into ${thousands(FULL_PROJECT_APPS)}-app project / into empty project`,
        "postFull",
        "postEmpty",
        "near 1",
        "scale",
      ),
      pairRow(
        `deploy, ${WEBHOOKS} webhooks / deploy, no webhooks`,
        "deployHooks",
        "deployQuiet",
        WEBHOOK_TARGET,
        `>= ${WEBHOOK_TARGET}`,
      ),
      pairRow(
        `GET /events after the ${thousands(AUDIT_DEEP)}th newest / first page (${thousands(AUDIT_EVENTS)} events)`,
        "eventsDeep",
        "eventsFirst",
        DEEP_PAGE_TARGET,
        `near 1 (>= ${DEEP_PAGE_TARGET})`,
      ),
      ratioRow("one-query floor / static floor", "select1", "static", "", "context"),
    ],
    ["l", "r", "l", "r", "l", "l"],
  );

  // --base: each scenario of the other tree against the same floor, beside its twin, by CPU (the steadier figure on
  // shared cores) and by throughput; "rounds" is the by-CPU ratio of each round.
  const cpuSpread = (a: ScenarioId, b: ScenarioId) => {
    const [x, y] = [m(a)?.cpuPerRound ?? [], m(b)?.cpuPerRound ?? []];
    const ratios = y.map((value, index) => value / x[index]).filter(Number.isFinite);
    return ratios.length > 1 ? `${fixed(Math.min(...ratios), 2)} to ${fixed(Math.max(...ratios), 2)}` : "";
  };
  const baseTable = opts.base
    ? table(
        [
          "scenario / one-query floor",
          "before: by CPU",
          "rounds",
          "CPU ms/req.",
          "by throughput",
          "after: by CPU",
          "rounds",
          "CPU ms/req.",
          "by throughput",
        ],
        BASE_SCENARIOS.filter((id) => ran(id, `base:${id}`)).map((id) => {
          const before = `base:${id}` as const;
          return [
            outcomes[id].scenario.label,
            fixed(cpuRatio(before, "select1"), 2),
            cpuSpread(before, "select1"),
            fixed(m(before)?.cpuPerRequest ?? Number.NaN, 2),
            fixed(ratio(before, "select1"), 2),
            fixed(cpuRatio(id, "select1"), 2),
            cpuSpread(id, "select1"),
            fixed(m(id)?.cpuPerRequest ?? Number.NaN, 2),
            fixed(ratio(id, "select1"), 2),
          ];
        }),
        ["l", "r", "l", "r", "r", "r", "l", "r", "r"],
      )
    : "";

  // The reads against their bare handlers (the least possible read: the same batch and answer, nothing else), by CPU
  // per request (the target's measure) and by throughput, beside each one's ratio to the one-query floor.
  const barePairs = BARE_PAIRS.filter(({ read, bare }) => ran(read, bare));
  const bareTable =
    barePairs.length > 0
      ? table(
          [
            "read / its bare handler",
            "by CPU",
            "rounds",
            "CPU ms/req. (read; bare)",
            "by throughput",
            "/ one-query floor by CPU (read; bare)",
            "target",
            "",
          ],
          barePairs.map(({ read, bare, label }) => [
            label,
            fixed(cpuRatio(read, bare), 2),
            cpuSpread(read, bare),
            `${fixed(m(read)?.cpuPerRequest ?? Number.NaN, 2)}; ${fixed(m(bare)?.cpuPerRequest ?? Number.NaN, 2)}`,
            fixed(ratio(read, bare), 2),
            ran("select1") ? `${fixed(cpuRatio(read, "select1"), 2)}; ${fixed(cpuRatio(bare, "select1"), 2)}` : "n/a (not run)",
            `>= ${BARE_TARGET} by CPU`,
            verdict(cpuRatio(read, bare), BARE_TARGET),
          ]),
          ["l", "r", "l", "r", "r", "r", "l", "l"],
        )
      : "";

  // The edge cache (docs/EDGE-DELIVERY.md §4): the fetch served from memory in the steady state against the one-query
  // floor (at least 2 times) and against a bare handler doing a hit's own work (at least 0.9), by CPU per request; the
  // read asking fresh each time, the service with the cache off, and many keys and environments beside them.
  const cacheRows = (
    [
      ["config fetch, steady state / one-query floor", "fetch", "select1", 2],
      ["config fetch, steady state / bare hit handler", "fetch", "bareFetchHit", 0.9],
      ["config fetch, cache off / one-query floor", "fetchOff", "select1", null],
      ["config fetch, cache off / today's (--base)", "fetchOff", "base:fetch", 1],
      ["config fetch, no-cache each / one-query floor", "fetchFresh", "select1", null],
      ["config fetch, many keys x environments / one-query floor", "fetchMany", "select1", null],
    ] as const
  ).filter(([, id, base]) => ran(id, base));
  const cacheTable =
    cacheRows.length > 0
      ? table(
          ["scenario / against", "by CPU", "rounds", "CPU ms/req.", "by throughput", "target", ""],
          cacheRows.map(([label, id, base, target]) => [
            label,
            fixed(cpuRatio(id, base), 2),
            cpuSpread(id, base),
            `${fixed(m(id)?.cpuPerRequest ?? Number.NaN, 2)}; ${fixed(m(base)?.cpuPerRequest ?? Number.NaN, 2)}`,
            fixed(ratio(id, base), 2),
            target === null ? "" : `>= ${target} by CPU`,
            target === null ? "" : verdict(cpuRatio(id, base), target),
          ]),
          ["l", "r", "l", "r", "r", "l", "l"],
        )
      : "";

  // Splits: a read of an environment a split runs in against the same read of one without, by CPU per request (both
  // with a Targeting-Key, as many cached answers as the fetch's).
  const splitRows = (
    [
      ["config fetch, a split running / no split", "fetchSplit", "fetchUnsplit"],
      ["the same, no-cache each (a confirmation each)", "fetchSplitFresh", "fetchUnsplitFresh"],
    ] as const
  ).filter(([, id, base]) => ran(id, base));
  const splitTable =
    splitRows.length > 0
      ? table(
          ["scenario / against", "by CPU", "rounds", "CPU ms/req.", "by throughput", "target", ""],
          splitRows.map(([label, id, base]) => [
            label,
            fixed(cpuRatio(id, base), 3),
            cpuSpread(id, base),
            `${fixed(m(id)?.cpuPerRequest ?? Number.NaN, 2)}; ${fixed(m(base)?.cpuPerRequest ?? Number.NaN, 2)}`,
            fixed(ratio(id, base), 2),
            `>= ${fixed(SPLIT_TARGET, 3)} by CPU (3% more at most)`,
            verdict(cpuRatio(id, base), SPLIT_TARGET),
          ]),
          ["l", "r", "l", "r", "r", "l", "l"],
        )
      : "";

  const logIds = opts.logVariants.map((variant) => `log:${variant.name}` as const);
  const noLog = logIds.includes("log:none") ? ("log:none" as const) : null;
  const logTable =
    logIds.length > 0
      ? table(
          [
            "service copy",
            "req/s",
            "/ one-query floor",
            "rounds",
            "CPU ms/req.",
            "by CPU",
            ...(noLog ? ["line's CPU ms/req."] : []),
            "the line",
          ],
          [
            ["get", "the code under test (src/http/request-log.ts)", "as shipped"] as const,
            ...opts.logVariants.map((variant, index) => [logIds[index], `log: ${variant.name}`, variant.description] as const),
          ].map(([id, name, description]) => [
            name,
            m(id) ? fixed(rps(id), 0) : "**FAILED**",
            fixed(ratio(id, "select1"), 2),
            spread(id, "select1"),
            fixed(m(id)?.cpuPerRequest ?? Number.NaN, 2),
            fixed(cpuRatio(id, "select1"), 2),
            ...(noLog ? [fixed((m(id)?.cpuPerRequest ?? Number.NaN) - (m(noLog)?.cpuPerRequest ?? Number.NaN), 2)] : []),
            description,
          ]),
          ["l", "r", "r", "l", "r", "r", ...(noLog ? (["r"] as const) : []), "l"],
        )
      : "";

  // Deploys with webhooks: what was delivered, how long the deliveries took to catch up after each slice, and the
  // throughput counted until they had (the deploys of a slice over the slice and its catching up).
  const [quiet, hooked, hooks] = [m("deployQuiet"), m("deployHooks"), writes.webhooks];
  const sustained = hooked ? hooked.ok / (hooked.seconds + hooked.drainSeconds) : Number.NaN;
  const webhookRows =
    (outcomes.deployHooks as Outcome | undefined) === undefined
      ? []
      : [
          [
            `deploy, ${WEBHOOKS} webhooks: deliveries received / ${WEBHOOKS} x deploys made`,
            hooks
              ? `${thousands(hooks.received?.deliveries ?? Number.NaN)} / ${WEBHOOKS} x ${thousands(hooks.deploys)} = ${thousands(WEBHOOKS * hooks.deploys)}` +
                ` (${fixed((hooks.received?.deliveries ?? Number.NaN) / (WEBHOOKS * hooks.deploys), 3)}); rows ${thousands(hooks.deliveries)}: ` +
                `${thousands(hooks.succeeded)} succeeded, ${thousands(hooks.pending)} pending, ${thousands(hooks.failed)} failed; ` +
                `${thousands(hooks.received?.requests ?? Number.NaN)} requests, ${thousands(hooks.received?.events ?? Number.NaN)} distinct events`
              : "n/a",
            "1.000 eventually",
          ],
          [
            `deploy, ${WEBHOOKS} webhooks: deliveries caught up after the slices`,
            hooked
              ? `${fixed(hooked.drainSeconds, 1)} s in all after ${fixed(hooked.seconds, 1)} s of load (${opts.rounds} slices)`
              : "n/a (a scenario failed)",
            "",
          ],
          [
            `deploy, ${WEBHOOKS} webhooks, counted until delivered / deploy, no webhooks`,
            hooked && quiet
              ? `${fixed(sustained / quiet.requestsPerSecond, 2)} (${fixed(sustained, 0)} / ${fixed(quiet.requestsPerSecond, 0)} req/s)`
              : "n/a (a scenario failed)",
            "context",
          ],
        ];
  const [first, deep] = [m("eventsFirst"), m("eventsDeep")];
  const eventsInfo = (id: ScenarioId) => outcomes[id]?.info;
  const eventRows =
    (outcomes.eventsFirst as Outcome | undefined) === undefined && (outcomes.eventsDeep as Outcome | undefined) === undefined
      ? []
      : [
          [
            "GET /events deep page / first page: req/s, p50, p99",
            first && deep
              ? `${fixed(ratio("eventsDeep", "eventsFirst"), 2)} (${fixed(deep.requestsPerSecond, 0)} / ${fixed(first.requestsPerSecond, 0)} req/s); ` +
                `p50 ${fixed(deep.p50, 1)} / ${fixed(first.p50, 1)} ms; p99 ${fixed(deep.p99, 1)} / ${fixed(first.p99, 1)} ms`
              : "n/a (a scenario failed or did not run)",
            "near 1 (flat)",
          ],
          [
            "GET /events page: response body, first / deep",
            `${thousands(eventsInfo("eventsFirst")?.bytes ?? Number.NaN)} / ${thousands(eventsInfo("eventsDeep")?.bytes ?? Number.NaN)} bytes`,
            "",
          ],
        ];
  // A key on the other shard: what its extra round trip adds to each request, in CPU time and latency.
  const acrossRows = ACROSS_PAIRS.filter(({ across, same }) => ran(across, same)).map(({ label, across, same }) => {
    const [a, b] = [m(across), m(same)];
    const added = (a?.cpuPerRequest ?? Number.NaN) - (b?.cpuPerRequest ?? Number.NaN);
    return [
      `${label}: CPU ms/req., p50, p99`,
      a && b
        ? `${fixed(a.cpuPerRequest, 2)} / ${fixed(b.cpuPerRequest, 2)} ms (${added >= 0 ? "+" : ""}${fixed(added, 2)}); ` +
          `p50 ${fixed(a.p50, 2)} / ${fixed(b.p50, 2)} ms; p99 ${fixed(a.p99, 2)} / ${fixed(b.p99, 2)} ms`
        : "n/a (a scenario failed)",
      "cost",
    ];
  });
  const large = outcomes.getLarge1 as Outcome | undefined; // undefined: not run (--only)
  const small = outcomes.getSmall1 as Outcome | undefined;
  const [deploySmall, deployLarge] = [m("deploy"), m("deployLarge")];
  const scaleTable = table(
    ["scale", "value", "target"],
    [
      [
        `deploy into ${thousands(LARGE_HISTORY)} revisions / into ${SMALL_HISTORY}: req/s, p50, p99`,
        deploySmall && deployLarge
          ? `${fixed(deployFlat, 2)} (${fixed(deployLarge.requestsPerSecond, 0)} / ${fixed(deploySmall.requestsPerSecond, 0)} req/s); ` +
            `p50 ${fixed(deployLarge.p50, 1)} / ${fixed(deploySmall.p50, 1)} ms; p99 ${fixed(deployLarge.p99, 1)} / ${fixed(deploySmall.p99, 1)} ms`
          : "n/a (a scenario failed)",
        "near 1 (flat)",
      ],
      [
        "histories at the end of the run",
        `long: ${writes.largeHistoryEnd === null ? "n/a" : thousands(writes.largeHistoryEnd)} revisions (from ${thousands(LARGE_HISTORY)}); ` +
          `short: ${writes.smallHistoryEnd ? `${writes.smallHistoryEnd[0]} to ${writes.smallHistoryEnd[1]}` : "n/a"} revisions (from ${SMALL_HISTORY}, ${DEPLOY_APPS} environments taking turns)`,
        "",
      ],
      [
        `GET ${thousands(LARGE_HISTORY)} revisions, 1 conn.: p50 / p99`,
        large?.measurement
          ? `${fixed(large.measurement.p50, 1)} / ${fixed(large.measurement.p99, 1)} ms`
          : large
            ? "**FAILED** (see below)"
            : "n/a (not run)",
        "",
      ],
      [
        `GET ${SMALL_HISTORY} revisions, 1 conn.: p50 / p99`,
        small?.measurement
          ? `${fixed(small.measurement.p50, 2)} / ${fixed(small.measurement.p99, 2)} ms`
          : small
            ? "**FAILED**"
            : "n/a (not run)",
        "",
      ],
      [
        `GET ${thousands(LARGE_HISTORY)} revisions: response body`,
        large?.info?.bytes !== undefined
          ? `${thousands(large.info.bytes)} bytes (${kib(large.info.bytes)}; gzip ${kib(large.info.gzipBytes ?? 0)})`
          : "n/a (no 200 answer)",
        "",
      ],
      [
        `GET ${SMALL_HISTORY} revisions: response body`,
        small?.info?.bytes !== undefined
          ? `${thousands(small.info.bytes)} bytes (gzip ${thousands(small.info.gzipBytes ?? 0)})`
          : "n/a",
        "",
      ],
      [
        `POST into ${thousands(FULL_PROJECT_APPS)}-app project / into empty project`,
        `${fixed(ratio("postFull", "postEmpty"), 2)} (${fixed(rps("postFull"), 0)} / ${fixed(rps("postEmpty"), 0)} req/s)`,
        "near 1",
      ],
      ...acrossRows,
      ...webhookRows,
      ...eventRows,
      [
        `bundle, gzip -9 of ${bundle.files.join(", ")} (wrangler.toml as is)`,
        `${kib(bundle.gzipBytes)} (raw ${kib(bundle.rawBytes)}${bundle.wranglerSummary ? `; wrangler says ${bundle.wranglerSummary}` : ""})`,
        `<= ${BUNDLE_TARGET_KIB} KiB: ${bundle.gzipBytes <= BUNDLE_TARGET_KIB * 1024 ? "met" : "**missed**"}`,
      ],
      [`bundle with --minify (for comparison), gzip -9`, `${kib(minified.gzipBytes)} (raw ${kib(minified.rawBytes)})`, "context"],
    ],
    ["l", "l", "l"],
  );
  const failureLines = failures.map((id) => `- **${outcomes[id].scenario.label}** failed: ${outcomes[id].error}`);
  const loadAtEnd = loadAverage();
  const totalSeconds = (performance.now() - started) / 1000;
  phases.push(["total", totalSeconds]);
  const phaseTable = table(
    ["phase", "seconds"],
    phases.map(([name, seconds]) => [name, seconds.toFixed(1)]),
    ["l", "r"],
  );
  const contributors = bundle.contributors
    .slice(0, 8)
    .map(([owner, bytes]) => `${owner} ${kib(bytes)}`)
    .join(", ");
  const options = [
    `--duration ${opts.duration} --warmup ${opts.warmup} --rounds ${opts.rounds} --connections ${opts.connections}`,
    opts.logLevel ? ` --log-level ${opts.logLevel}` : "",
    opts.logVariants.length > 0 ? ` --log-variants ${opts.logVariants.map((variant) => variant.name).join(",")}` : "",
    opts.only.length > 0 ? ` --only ${opts.only.join(",")}` : "",
    opts.code !== ROOT ? ` --code ${opts.code}` : "",
    opts.base ? ` --base ${opts.base}` : "",
  ].join("");

  const markdown = [
    `# Benchmark run ${new Date().toISOString()}`,
    "",
    ...machine().map((line) => `- ${line}`),
    `- code under test: ${git}${basePath ? `, BASE_PATH ${basePath}` : ""}; run from a copy of the working tree taken when the bench started`,
    `- \`npm run bench -- ${options}\`: ` +
      `each scenario checked with one request and warmed up ${opts.warmup} s, then measured ${opts.duration} s in all with autocannon, one scenario at a time, ` +
      `in ${opts.rounds} round(s) of ${fixed(opts.duration / opts.rounds, 1)} s per scenario; latencies of 2xx answers (any other answer fails the scenario)`,
    `- data: ${thousands(TOTAL_APPS)} apps, ${thousands(3 * TOTAL_APPS)} environments, ` +
      `${thousands(TOTAL_HISTORY_ENTRIES)} environment revisions, ${thousands(AUDIT_EVENTS)} events at the start`,
    `- written by the scenarios (check, warm-up, measurement), counted in the database afterwards: ${writes.lines.join("; ") || "nothing (no writing scenario ran)"}`,
    `- 1-minute load average: ${loadAtStart} at start, ${loadBefore} before starting the workers, ${loadAtEnd} at the end; ` +
      `"other CPU" below is the CPUs' worth of time programs other than the bench and its wrangler dev used during each measurement (0 on a quiet machine)`,
    ...warnings.map((warning) => `- warning: ${warning}`),
    "",
    "## Throughput and latency",
    "",
    mainTable,
    ...(failureLines.length > 0 ? ["", ...failureLines] : []),
    "",
    "## Ratios",
    "",
    ratioTable,
    "",
    ...(bareTable ? ["## The reads against their bare handlers", "", bareTable, ""] : []),
    ...(cacheTable ? ["## The edge cache", "", cacheTable, ""] : []),
    ...(splitTable ? ["## Splits", "", splitTable, ""] : []),
    ...(cacheMemory ? ["## The edge cache's memory", "", cacheMemory, ""] : []),
    ...(baseTable ? [`## Before (--base ${opts.base}) and after (the code under test)`, "", baseTable, ""] : []),
    ...(logTable ? ["## The per-request log line", "", logTable, ""] : []),
    "## Scale and bundle",
    "",
    scaleTable,
    "",
    `Largest parts of the bundle (bytes each contributes to the emitted index.js, as configured): ${contributors}.`,
    "",
    "## Time taken",
    "",
    phaseTable,
    "",
  ].join("\n");

  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, markdown);
  console.log(
    `\n${mainTable}\n${failureLines.length > 0 ? `\n${failureLines.join("\n")}\n` : ""}\n${ratioTable}\n${bareTable ? `\nagainst the bare handlers:\n${bareTable}\n` : ""}${baseTable ? `\nbefore (--base) and after:\n${baseTable}\n` : ""}${logTable ? `\n${logTable}\n` : ""}\n${scaleTable}\n\n${phaseTable}\n`,
  );
  console.log(`written: ${writes.lines.join("; ") || "nothing (no writing scenario ran)"}`);
  console.log(`bundle by package: ${contributors}`);
  console.log(
    `1-minute load average: ${loadAtStart} at start, ${loadBefore} before the workers started, ${loadAtEnd} at the end`,
  );
  for (const warning of warnings) console.log(`warning: ${warning}`);
  console.log(`markdown written to ${relative(process.cwd(), opts.out) || opts.out}`);
}
