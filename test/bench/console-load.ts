/**
 * The console's time to the apps list (BENCHMARKS.md, "The console"): `wrangler dev` on the demo seed, headless
 * Chromium, seven times each: from pressing "Sign in" to the list shown, and a reload of the apps page's own URL (the
 * key in the tab) from navigation start to the list. Reported, never asserted. `npx tsx test/bench/console-load.ts` (CHROMIUM_PATH: another browser)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { run } from "../support/processes";
import { applyMigrations, startDev } from "../support/wrangler";

const DEMO_KEY = "localdev.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const RUNS = 7;

const dir = await mkdtemp(join(tmpdir(), "console-load-"));
await applyMigrations(dir);
await run("npx", ["tsx", "src/cli/seed-demo.ts", "--persist-to", dir]);
const worker = await startDev({ name: "console-load", persistTo: dir, readyPath: "/health" });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium" });
const signIns: number[] = [];
const reloads: number[] = [];
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
} finally {
  await browser.close();
  await worker.stop();
  await rm(dir, { recursive: true, force: true });
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(`sign-in to the apps list: median ${median(signIns)} ms (${signIns.join(", ")})`);
console.log(`reload to the apps list: median ${median(reloads)} ms (${reloads.join(", ")})`);
