/**
 * The console (docs/CONSOLE.md) in a real browser, as a team uses it: headless Chromium (playwright-core) on `wrangler
 * dev` with the demo seed, under BASE_PATH=/api. Every request that would leave the Worker's origin is refused and
 * recorded, as with no network; each page is checked with axe-core (no serious or critical violation) and kept as a
 * screenshot under .artifacts/console/.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, makeTempDir, removeTempDir, seedDemo } from "../cli/helpers";
import { ROOT } from "../support/processes";
import { applyMigrations, type DevServer, startDev } from "../support/wrangler";
import { chromiumOrSkip, DEMO_KEY, launchChromium, openPage, POLL } from "./browser";

const BASE_PATH = "/api";
const DEMO_ORG = "00000000-0000-7000-8000-000000000002";
const DEMO_WORKSPACE = "00000000-0000-7000-8000-000000000003";
const DEMO_PROJECT = "00000000-0000-7000-8000-000000000004";
const SCREENSHOTS = join(ROOT, ".artifacts", "console");
const AXE = readFileSync(join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");
// A number JSON.parse would round (to 12345678901234567000): the console shows and sends it as typed.
const BIG = "12345678901234567890";

const hasChromium = chromiumOrSkip("test/browser/console.test.ts");

let dir: string;
let browser: Browser;
let worker: DevServer;
/** Keys of the demo organization's members, made through the API as a team would. */
const keys = { owner: DEMO_KEY, editor: "", viewer: "", readOnly: "" };

/** A new member of the demo organization in `role`, by invitation; their first key. */
async function invite(email: string, role: string): Promise<string> {
  const workspace = `${BASE_PATH}/organizations/${DEMO_ORG}/workspaces/${DEMO_WORKSPACE}`;
  const invited = await api(worker, "POST", `${workspace}/invite`, DEMO_KEY, [{ email, roles: [role] }]);
  expect(invited.status, JSON.stringify(invited.body)).toBe(200);
  const accepted = await fetch(`${worker.url}${workspace}/invite/accept?project_id=${DEMO_PROJECT}`, {
    method: "POST",
    headers: { Authorization: "", "Content-Type": "application/json" },
    body: JSON.stringify({ token: invited.body.token }),
  });
  expect(accepted.status).toBe(200);
  return ((await accepted.json()) as { api_key: string }).api_key;
}

beforeAll(async () => {
  if (!hasChromium) return;
  dir = await makeTempDir("console");
  await applyMigrations(dir);
  const seeded = await seedDemo("--persist-to", dir);
  expect(seeded.code, seeded.stderr).toBe(0);
  worker = await startDev({
    name: "console",
    persistTo: dir,
    readyPath: `${BASE_PATH}/health`,
    // As `npm run dev`: invitations mailed (nowhere) with their token in the answer, so that a new member's key is made.
    vars: {
      BASE_PATH,
      INVITATION_EMAIL_FROM: "invitations@localhost",
      PUBLIC_BASE_URL: "http://localhost:8787",
      INVITATION_TOKEN_IN_ANSWER: "true",
    },
  });
  keys.editor = await invite("ed@example.com", "editor");
  keys.viewer = await invite("vic@example.com", "viewer");
  const readOnly = await api(worker, "POST", `${BASE_PATH}/keys?workspace_id=${DEMO_WORKSPACE}&read_only=true`, DEMO_KEY);
  expect(readOnly.status).toBe(200);
  keys.readOnly = readOnly.body;
  browser = await launchChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await removeTempDir(dir);
});

/** No axe-core violation of impact serious or critical on the page as it is; then its screenshot, as `name`.png. */
async function checkPage(page: Page, name: string) {
  // Evaluated through the DevTools protocol, which the page's CSP (no inline script) does not govern.
  await page.evaluate(AXE);
  const violations = await page.evaluate(`axe.run(document, { resultTypes: ["violations"] }).then((results) =>
    results.violations
      .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
      .map((violation) => ({ id: violation.id, targets: violation.nodes.map((node) => node.target.join(" ")) })))`);
  expect(violations, name).toEqual([]);
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** The console opened at `path` and signed in with `key`. */
async function signedIn(key: string, path = "/console") {
  const opened = await openPage(browser, worker.url, `${BASE_PATH}${path}`);
  await opened.page.getByLabel("API key").fill(key);
  await opened.page.getByRole("button", { name: "Sign in" }).click();
  await opened.page.getByRole("button", { name: "Sign out" }).waitFor(POLL);
  return opened;
}

/** Where the key could have been kept or sent besides sessionStorage and the Authorization header. */
async function keyLeaks(opened: Awaited<ReturnType<typeof openPage>>, key: string, urls: string[]) {
  return {
    cookies: await opened.context.cookies(),
    localStorage: await opened.page.evaluate("Object.keys(localStorage)"),
    urls: [opened.page.url(), ...urls].filter((url) => url.includes(key) || url.includes(key.split(".")[1])),
  };
}

describe.skipIf(!hasChromium)("the console", () => {
  it("signs an editor in, keeping the key in sessionStorage only, and out again", async () => {
    const opened = await openPage(browser, worker.url, `${BASE_PATH}/console`);
    const { page, response, problems } = opened;
    try {
      expect(response?.status()).toBe(200);
      await page.getByLabel("API key").waitFor(POLL);
      await checkPage(page, "sign-in");
      const urls: string[] = [];
      page.on("request", (request) => urls.push(request.url()));
      const profile = page.waitForRequest((request) => request.url().endsWith(`${BASE_PATH}/profile`));
      await page.getByLabel("API key").fill(keys.editor);
      await page.getByRole("button", { name: "Sign in" }).click();
      expect((await profile).headers().authorization).toBe(`ApiKey ${keys.editor}`);
      // The demo organization's workspace: its apps, the seed's demo-app among them.
      await page.getByRole("heading", { name: "Apps" }).waitFor(POLL);
      await page.getByRole("link", { name: "demo-app" }).waitFor(POLL);
      expect(new URL(page.url()).pathname).toBe(`${BASE_PATH}/console/organizations/${DEMO_ORG}/workspaces/${DEMO_WORKSPACE}`);
      expect(await page.evaluate("Object.values(sessionStorage)")).toEqual([keys.editor]);
      expect(await keyLeaks(opened, keys.editor, urls)).toEqual({ cookies: [], localStorage: [], urls: [] });

      // A reload keeps the session (the tab's sessionStorage); signing out forgets the key.
      await page.reload();
      await page.getByRole("link", { name: "demo-app" }).waitFor(POLL);
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByLabel("API key").waitFor(POLL);
      expect(await page.evaluate("sessionStorage.length")).toBe(0);
      expect(problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await opened.close();
    }
  });

  it("tells a wrong key so, with the API's message, and keeps nothing", async () => {
    const opened = await openPage(browser, worker.url, `${BASE_PATH}/console`);
    try {
      await opened.page.getByLabel("API key").fill("wrongkey.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
      await opened.page.getByRole("button", { name: "Sign in" }).click();
      const alert = opened.page.getByRole("alert");
      await alert.waitFor(POLL);
      const direct = await api(
        worker,
        "GET",
        `${BASE_PATH}/profile`,
        "wrongkey.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
      );
      expect(direct.status).toBe(401);
      expect(await alert.textContent()).toBe(`This key was refused: 401 ${direct.body.detail}`);
      expect(await opened.page.evaluate("sessionStorage.length")).toBe(0);
      await checkPage(opened.page, "wrong-key");
      // The browser logs the 401 itself; nothing else went wrong.
      expect(opened.problems.pageErrors).toEqual([]);
      expect(opened.problems.offOrigin).toEqual([]);
    } finally {
      await opened.close();
    }
  });
});
