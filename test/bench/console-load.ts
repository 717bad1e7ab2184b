/**
 * The console's time to the apps list (BENCHMARKS.md, "The console"): `wrangler dev` on the demo seed, headless
 * Chromium, seven times each: from pressing "Sign in" to the list shown, and a reload of the apps page's own URL (the
 * key in the tab) from navigation start to the list; then a variant of 1,000 revisions' page, from navigation start to
 * its newest revisions shown. Reported, never asserted. `npx tsx test/bench/console-load.ts` (CHROMIUM_PATH: another browser)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { run } from "../support/processes";
import { applyMigrations, startDev } from "../support/wrangler";

const DEMO_KEY = "localdev.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const RUNS = 7;
const REVISIONS = 1_000;

/** A call to the API with `key` (the demo key by default); fails the run on anything but 200. */
async function call(method: string, path: string, body?: unknown, key = DEMO_KEY) {
  const response = await fetch(`${worker.url}${path}`, {
    method,
    headers: { Authorization: `ApiKey ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

const dir = await mkdtemp(join(tmpdir(), "console-load-"));
await applyMigrations(dir);
await run("npx", ["tsx", "src/cli/seed-demo.ts", "--persist-to", dir]);
const worker = await startDev({ name: "console-load", persistTo: dir, readyPath: "/health" });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium" });
const signIns: number[] = [];
const reloads: number[] = [];
const longVariant: number[] = [];
try {
  for (let i = 0; i < RUNS; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${worker.url}/console`);
    await page.getByLabel("API key").fill(DEMO_KEY);
    const pressed = Date.now();
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: "demo-app" }).waitFor();
    signIns.push(Date.now() - pressed);
    await page.reload();
    await page.getByRole("link", { name: "demo-app" }).waitFor();
    reloads.push(Math.round(Number(await page.evaluate("performance.now()"))));
    await context.close();
  }
  // A variant of REVISIONS revisions (its add makes the first), committed one after another.
  const app = { application_ref: { slug: "demo-app" } };
  await call("POST", "/variants/configs/add", { variant_ref: { slug: "long" }, ...app });
  // Spread over four keys of the demo user: one key may send 600 requests a minute (wrangler.toml's KEY_RATE_LIMITER).
  const keys = [DEMO_KEY];
  for (let i = 0; i < 3; i++)
    keys.push((await call("POST", "/keys?workspace_id=00000000-0000-7000-8000-000000000003")) as string);
  for (let revision = 2; revision <= REVISIONS; revision++) {
    const body = { params: { revision, prompt: "x".repeat(200) }, variant_ref: { slug: "long" }, ...app };
    await call("POST", "/variants/configs/commit", body, keys[revision % keys.length]);
  }
  const variants = (await call("GET", "/apps/00000000-0000-7000-8000-000000000005/variants")) as {
    config_name: string;
    variant_id: string;
  }[];
  const long = variants.find((variant) => variant.config_name === "long")?.variant_id;
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${worker.url}/console`);
  await page.getByLabel("API key").fill(DEMO_KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("link", { name: "demo-app" }).waitFor();
  for (let i = 0; i < RUNS; i++) {
    await page.goto(`${worker.url}/console/variants/${long}`);
    await page.getByRole("list").getByText(`Revision ${REVISIONS}`, { exact: true }).waitFor();
    longVariant.push(Math.round(Number(await page.evaluate("performance.now()"))));
  }
  await context.close();
} finally {
  await browser.close();
  await worker.stop();
  await rm(dir, { recursive: true, force: true });
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(`sign-in to the apps list: median ${median(signIns)} ms (${signIns.join(", ")})`);
console.log(`reload to the apps list: median ${median(reloads)} ms (${reloads.join(", ")})`);
console.log(
  `a variant of ${REVISIONS} revisions, its newest shown: median ${median(longVariant)} ms (${longVariant.join(", ")})`,
);
