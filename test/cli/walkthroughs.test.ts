/**
 * The walk-throughs as a reader runs them: every ```sh block marked `<!-- runnable -->` in the README and the guides,
 * one document's blocks in order in one bash, against `wrangler dev` serving a freshly seeded demo with the vars
 * `npm run dev` sets, http://localhost:8787 replaced by the served address. Every command must exit 0, and every curl
 * must answer the status the document gives it: "# 200 ..." after the command, else ": 200" on the comment line just
 * above it. The documents run one after another on the same data, so each one names its own new apps and configs.
 */
import { cpSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_OPTIONS, devVars } from "../../src/cli/dev-prepare";
import { ROOT, run } from "../support/processes";
import { type DevServer, seededTemplate, startDev } from "../support/wrangler";
import { makeTempDir, removeTempDir } from "./helpers";

// Starts first: the README's splits wait a minute for a step to come due, spent waiting.

/** The documents whose runnable blocks run, in this order. */
const DOCUMENTS = ["README.md", "docs/guides/2024-client.md", "docs/guides/todays-sdk.md", "docs/guides/teams.md"];

// The README's splits wait a minute for a step to come due, as a reader does (a step is at least a minute away).
const SCRIPT_TIMEOUT_MS = 150_000;
const DOCUMENTED_BASE = "http://localhost:8787";
const RUNNABLE_BLOCK = /<!-- runnable -->\n+```sh\n([\s\S]*?)\n```/g;
const INVOKES_CURL = /(^|[\s|(;&])curl\s/g;
const STATUS_AFTER = /\s#\s*(\d{3})\b/;
const STATUS_ABOVE = /:\s*(\d{3})\b/;

interface Call {
  /** The command's first line, to name it in a failure. */
  command: string;
  status: number;
}

/** The curls of a script and the status each must answer, in order; throws for a curl the script gives none. */
function expectedCalls(script: string): Call[] {
  const calls: Call[] = [];
  let comment = "";
  const lines = script.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const start = index;
    const first = lines[index];
    if (first.trim().startsWith("#")) {
      comment = first;
      continue;
    }
    let last = first;
    while (last.trimEnd().endsWith("\\") && index + 1 < lines.length) last = lines[++index];
    const command = lines.slice(start, index + 1).join("\n");
    const curls = [...command.matchAll(INVOKES_CURL)].length;
    if (curls > 1) throw new Error(`one curl per command, so that each has its status: ${first}`);
    if (curls === 1) {
      const status = STATUS_AFTER.exec(last)?.[1] ?? STATUS_ABOVE.exec(comment)?.[1];
      if (!status) throw new Error(`no status given for: ${first}`);
      calls.push({ command: first.trim(), status: Number(status) });
    }
    if (first.trim()) comment = "";
  }
  return calls;
}

/** A document's runnable blocks, one script, pointed at `base`. */
async function runnableScript(document: string, base: string): Promise<string> {
  const text = await readFile(join(ROOT, document), "utf8");
  const blocks = [...text.matchAll(RUNNABLE_BLOCK)].map((match) => match[1]);
  return blocks.join("\n").replaceAll(DOCUMENTED_BASE, base);
}

let dir: string;
let worker: DevServer;
let scratch: string;

beforeAll(async () => {
  dir = await makeTempDir("walkthroughs");
  scratch = await mkdtemp(join(tmpdir(), "app-management-walkthrough-statuses-"));
  // The pool migrated and seeded with the demo, as `npm run dev` leaves it: a copy of the suite's one seed.
  cpSync(await seededTemplate(), dir, { recursive: true });
  worker = await startDev({
    name: "walkthroughs",
    persistTo: dir,
    readyPath: "/health",
    configArgs: DEV_OPTIONS,
    vars: devVars(DOCUMENTED_BASE),
  });
});

afterAll(async () => {
  await worker?.stop();
  await removeTempDir(dir);
  await rm(scratch, { recursive: true, force: true });
});

describe("the walk-throughs, run as written against the seeded demo", { timeout: SCRIPT_TIMEOUT_MS + 30_000 }, () => {
  it.each(DOCUMENTS)("%s: every command exits 0 and every curl answers the status written beside it", async (document) => {
    const script = await runnableScript(document, worker.url);
    const expected = expectedCalls(script);
    expect(expected.length).toBeGreaterThan(3);
    const statuses = join(scratch, document.replaceAll("/", "_"));
    // Each curl writes its status to the file (curl's -w switched to stderr), leaving its output as the reader sees it.
    const prelude = [
      "set -euo pipefail",
      `trap 'echo "exit $? at: $BASH_COMMAND" >&2' ERR`,
      `curl() { command curl --write-out '%{stderr}%{http_code}\\n' "$@" 2>>'${statuses}'; }`,
    ].join("\n");
    const result = await run("bash", ["-c", `${prelude}\n${script}`], { timeoutMs: SCRIPT_TIMEOUT_MS });
    const answered = (await readFile(statuses, "utf8").catch(() => ""))
      .split("\n")
      .filter((line) => /^\d{3}$/.test(line))
      .map(Number);
    expect(expected.map(({ command }, index) => ({ command, status: answered[index] }))).toEqual(expected);
    expect(result.code, `${result.stderr}\n${result.stdout.slice(-4_000)}`).toBe(0);
  });
});
