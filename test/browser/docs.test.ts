/**
 * GET /docs in a real browser, as a person uses it: headless Chromium (the machine's own, driven by playwright-core)
 * opens the page on `wrangler dev` with the demo seed, at the root and under BASE_PATH=/api, enters the demo key,
 * sends GET /apps/{app_id}/revisions/production and reads the 200 body. Every request that would leave the Worker's
 * origin is refused and recorded, as with no network. A screenshot of the operation answered is kept under
 * .artifacts/docs/ (docs-root.png, docs-api.png).
 */
import { existsSync, mkdirSync } from "node:fs";
import { delimiter, join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTempDir, removeTempDir, seedDemo } from "../cli/helpers";
import { ROOT } from "../support/processes";
import { applyMigrations, type DevServer, startDev } from "../support/wrangler";

// The README's demo values, written out as it documents them.
const DEMO_KEY = "localdev.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const DEMO_APP_ID = "00000000-0000-7000-8000-000000000005";
const REVISIONS = "/apps/{app_id}/revisions/{environment_name}";
// The page renders and answers in well under a second on a quiet machine; CI runs this beside the rest of the suite.
const POLL = { timeout: 30_000 };

const SCREENSHOTS = join(ROOT, ".artifacts", "docs");

/** CHROMIUM_PATH, or the first Chromium or Chrome on PATH. */
function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const names = ["chromium", "chromium-browser", "google-chrome"];
  const dirs = (process.env.PATH ?? "").split(delimiter).filter(Boolean);
  return names.flatMap((name) => dirs.map((dir) => join(dir, name))).find((path) => existsSync(path));
}

const executablePath = findChromium();
// CI (.ci/run installs Chromium and sets CI) must run this test; a newcomer's machine without a browser skips it.
const skip = !executablePath && !process.env.CI;
if (skip) {
  console.warn("SKIPPED test/browser/docs.test.ts: no Chromium found (apt-get install chromium, or set CHROMIUM_PATH)");
}

let dir: string;
let browser: Browser;

it.skipIf(skip)("finds Chromium to run in (CI installs Debian's)", () => {
  expect(executablePath, "no Chromium found: apt-get install chromium, or set CHROMIUM_PATH").toBeDefined();
});

beforeAll(async () => {
  if (!executablePath) return;
  dir = await makeTempDir("docs");
  await applyMigrations(dir);
  const seeded = await seedDemo("--persist-to", dir);
  expect(seeded.code, seeded.stderr).toBe(0);
  browser = await chromium.launch({ executablePath });
  mkdirSync(SCREENSHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await removeTempDir(dir);
});

/** The page at `path`, with what it did that it should not: scripts' errors, CSP refusals, requests off the origin. */
async function openPage(origin: string, path: string) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  const problems = { pageErrors: [] as string[], consoleErrors: [] as string[], offOrigin: [] as string[] };
  page.on("pageerror", (error) => problems.pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") problems.consoleErrors.push(message.text());
  });
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || url.startsWith("data:")) return route.continue();
    problems.offOrigin.push(url);
    return route.abort("internetdisconnected");
  });
  const response = await page.goto(`${origin}${path}`);
  return { page, response, problems, close: () => context.close() };
}

/** Authorize: the demo key into the ApiKey scheme's field, as a person pastes it. */
async function enterKey(page: Page, key: string) {
  await page.locator(".auth-wrapper button.authorize").click();
  const dialog = page.locator(".dialog-ux");
  await dialog.locator("input").fill(key);
  await dialog.locator(".auth-btn-wrapper button.authorize").click();
  await dialog.locator("button.btn-done").click();
}

describe.skipIf(!executablePath).each([
  { basePath: "", name: "root" },
  { basePath: "/api", name: "api" },
])("/docs with BASE_PATH=$basePath", ({ basePath, name }) => {
  let worker: DevServer;

  beforeAll(async () => {
    worker = await startDev({
      name: `docs-${name}`,
      persistTo: dir,
      readyPath: `${basePath}/health`,
      vars: { BASE_PATH: basePath },
    });
  });

  afterAll(async () => {
    await worker?.stop();
  });

  it("sends GET /apps/{app_id}/revisions/production with the demo key and shows its 200 body, offline, under the page's CSP", async () => {
    const { page, response, problems, close } = await openPage(worker.url, `${basePath}/docs`);
    try {
      expect(response?.status()).toBe(200);
      expect(response?.headers()["content-security-policy"]).toMatch(/^default-src 'none'; script-src 'self';/);
      await expect
        .poll(() => page.locator(".information-container .title").textContent(), POLL)
        .toContain("App Management Service");

      await enterKey(page, DEMO_KEY);
      const operation = page.locator(".opblock-get", { has: page.locator(`[data-path="${REVISIONS}"]`) });
      await operation.locator(".opblock-summary").click();
      await operation.locator('tr[data-param-name="app_id"] input').fill(DEMO_APP_ID);
      await operation.locator('tr[data-param-name="environment_name"] input').fill("production");
      const sent = page.waitForRequest((request) => request.url().endsWith("/revisions/production"));
      await operation.locator("button.execute").click();
      // The key as entered, and none of the optional headers' samples: a field left empty sends nothing.
      const headers = (await sent).headers();
      expect(headers.authorization).toBe(DEMO_KEY);
      expect(Object.keys(headers).filter((header) => /^(if-|x-|idempotency)/.test(header))).toEqual([]);

      const live = operation.locator(".live-responses-table");
      await expect.poll(() => live.locator("tbody .response-col_status").textContent(), POLL).toBe("200");
      const path = `${basePath}/apps/${DEMO_APP_ID}/revisions/production`;
      expect(await operation.locator(".request-url pre").textContent()).toBe(`${worker.url}${path}`);
      const shown = JSON.parse((await live.locator("tbody .response-col_description pre").first().textContent()) ?? "");
      const direct = await fetch(`${worker.url}${path}`, { headers: { Authorization: DEMO_KEY } });
      expect(direct.status).toBe(200);
      expect(shown).toEqual(await direct.json());
      expect(shown).toMatchObject({ app_id: DEMO_APP_ID, name: "production" });

      const screenshot = join(SCREENSHOTS, `docs-${name}.png`);
      await operation.screenshot({ path: screenshot }); // the operation as sent: parameters, request URL, the 200 body
      console.log(`screenshot: ${screenshot}`);
      expect(problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await close();
    }
  });
});
