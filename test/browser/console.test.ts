/**
 * The console (docs/CONSOLE.md) in a real browser, as a team uses it: headless Chromium (playwright-core) on `wrangler
 * dev` with the demo seed, under BASE_PATH=/api. Every request that would leave the Worker's origin is refused and
 * recorded, as with no network; each page is checked with axe-core (no serious or critical violation) and kept as a
 * screenshot under .artifacts/console/.
 */
import { describe, expect, it } from "vitest";
import { api } from "../cli/helpers";
import { openPage, POLL } from "./browser";
import { BASE_PATH, checkPage, consoleWorld, DEMO_ORG, DEMO_WORKSPACE } from "./console-world";

const world = consoleWorld("test/browser/console.test.ts");
const { keys } = world;

/** Where the key could have been kept or sent besides sessionStorage and the Authorization header. */
async function keyLeaks(opened: Awaited<ReturnType<typeof openPage>>, key: string, urls: string[]) {
  return {
    cookies: await opened.context.cookies(),
    localStorage: await opened.page.evaluate("Object.keys(localStorage)"),
    urls: [opened.page.url(), ...urls].filter((url) => url.includes(key) || url.includes(key.split(".")[1])),
  };
}

describe.skipIf(!world.hasChromium)("the console", () => {
  it("signs an editor in, keeping the key in sessionStorage only, and out again", async () => {
    const opened = await openPage(world.browser, world.worker.url, `${BASE_PATH}/console`);
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
    const opened = await openPage(world.browser, world.worker.url, `${BASE_PATH}/console`);
    try {
      await opened.page.getByLabel("API key").fill("wrongkey.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
      await opened.page.getByRole("button", { name: "Sign in" }).click();
      const alert = opened.page.getByRole("alert");
      await alert.waitFor(POLL);
      const direct = await api(
        world.worker,
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
