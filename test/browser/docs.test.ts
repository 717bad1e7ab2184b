/**
 * GET /docs in a real browser, as a person uses it: headless Chromium (the machine's own, driven by playwright-core)
 * opens the page on `wrangler dev` with the demo seed, at the root and under BASE_PATH=/api, enters the demo key,
 * sends GET /apps/{app_id}/revisions/production and reads the 200 body. Every request that would leave the Worker's
 * origin is refused and recorded, as with no network. A screenshot of the operation answered is kept under
 * .artifacts/docs/ (docs-root.png, docs-api.png).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeTempDir } from "../cli/helpers";
import { ROOT } from "../support/processes";
import { type DevServer, startDev } from "../support/wrangler";
import { chromiumOrSkip, DEMO_APP_ID, DEMO_KEY, launchChromium, openPage as openOffline, POLL, seededFolder } from "./browser";

const REVISIONS = "/apps/{app_id}/revisions/{environment_name}";

const SCREENSHOTS = join(ROOT, ".artifacts", "docs");

const hasChromium = chromiumOrSkip("test/browser/docs.test.ts");

let dir: string;
let browser: Browser;

beforeAll(async () => {
  if (!hasChromium) return;
  dir = await seededFolder("docs");
  browser = await launchChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await removeTempDir(dir);
});

const openPage = (origin: string, path: string) => openOffline(browser, origin, path);

/** Authorize: the demo key into the ApiKey scheme's field, as a person pastes it. */
async function enterKey(page: Page, key: string) {
  await page.locator(".auth-wrapper button.authorize").click();
  const dialog = page.locator(".dialog-ux");
  await dialog.locator("input").fill(key);
  await dialog.locator(".auth-btn-wrapper button.authorize").click();
  await dialog.locator("button.btn-done").click();
}

describe.skipIf(!hasChromium).each([
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
