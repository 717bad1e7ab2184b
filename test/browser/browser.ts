/**
 * What the browser tests share: the machine's Chromium (driven by playwright-core), skipped with a warning where there
 * is none (CI must have one), and pages opened offline: every request that would leave the Worker's origin is refused
 * and recorded, with the page's script errors.
 */
import { cpSync, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { type Browser, type BrowserContextOptions, chromium } from "playwright-core";
import { expect, it } from "vitest";
import { makeTempDir } from "../cli/helpers";
import { seededTemplate } from "../support/wrangler";

// The README's demo values, written out as it documents them.
export const DEMO_KEY = "localdev.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
export const DEMO_APP_ID = "00000000-0000-7000-8000-000000000005";
// A page renders and answers in well under a second on a quiet machine; CI runs this beside the rest of the suite, on
// two cores whose speed varies from run to run (the same suite: 13 to 17 minutes of CPU), and 30 s was once too short.
export const POLL = { timeout: 60_000 };

/** CHROMIUM_PATH, or the first Chromium or Chrome on PATH. */
function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const names = ["chromium", "chromium-browser", "google-chrome"];
  const dirs = (process.env.PATH ?? "").split(delimiter).filter(Boolean);
  return names.flatMap((name) => dirs.map((dir) => join(dir, name))).find((path) => existsSync(path));
}

export const executablePath = findChromium();

/**
 * Whether the file's tests run: CI (.ci/run installs Chromium and sets CI) must run them; a newcomer's machine without
 * a browser skips them, saying so. Declares the test that fails CI without a browser.
 */
export function chromiumOrSkip(file: string): boolean {
  const skip = !executablePath && !process.env.CI;
  if (skip) console.warn(`SKIPPED ${file}: no Chromium found (apt-get install chromium, or set CHROMIUM_PATH)`);
  it.skipIf(skip)("finds Chromium to run in (CI installs Debian's)", () => {
    expect(executablePath, "no Chromium found: apt-get install chromium, or set CHROMIUM_PATH").toBeDefined();
  });
  return !!executablePath;
}

// Playwright's default bound on a launch is 180 s, as long as the hooks that launch: fail as a launch first.
export const launchChromium = () => chromium.launch({ executablePath, timeout: 60_000 });

/** A new folder holding a copy of the migrated and seeded pool (test/support/wrangler.ts), for one file's server. */
export async function seededFolder(label: string): Promise<string> {
  const dir = await makeTempDir(label);
  cpSync(await seededTemplate(), dir, { recursive: true });
  return dir;
}

/** A page at `origin`'s `path`, with what it did that it should not: scripts' errors, CSP refusals, requests off the origin. */
export async function openPage(browser: Browser, origin: string, path: string, options: BrowserContextOptions = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, ...options });
  const page = await context.newPage();
  const problems = { pageErrors: [] as string[], consoleErrors: [] as string[], offOrigin: [] as string[] };
  page.on("pageerror", (error) => problems.pageErrors.push(error.message));
  page.on("console", (message) => {
    // An environment with no split: the API's answer is 404 "No split", which the browser logs as a failed load.
    const noSplit = message.text().includes("status of 404") && message.location().url.endsWith("/split");
    if (message.type() === "error" && !noSplit) problems.consoleErrors.push(message.text());
  });
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || url.startsWith("data:")) return route.continue();
    problems.offOrigin.push(url);
    return route.abort("internetdisconnected");
  });
  const response = await page.goto(`${origin}${path}`);
  return { context, page, response, problems, close: () => context.close() };
}
