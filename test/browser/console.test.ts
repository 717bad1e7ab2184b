/**
 * The console (docs/CONSOLE.md) in a real browser, as a team uses it: headless Chromium (playwright-core) on `wrangler
 * dev` with the demo seed, under BASE_PATH=/api. Every request that would leave the Worker's origin is refused and
 * recorded, as with no network; each page is checked with axe-core (no serious or critical violation) and kept as a
 * screenshot under .artifacts/console/.
 */
import { describe, expect, it } from "vitest";
import { api } from "../cli/helpers";
import { DEMO_KEY, openPage, POLL } from "./browser";
import { BASE_PATH, checkPage, consoleWorld, DEMO_ORG, DEMO_WORKSPACE, signedIn } from "./console-world";

// A number JSON.parse would round (to 12345678901234567000): the console shows and sends it as typed.
const BIG = "12345678901234567890";

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
  it("signs an editor in with the keyboard alone, keeping the key in sessionStorage only, and out again", async () => {
    // In a time zone of its own: dates are shown in the browser's zone, the exact instant on hover.
    const opened = await openPage(world.browser, world.worker.url, `${BASE_PATH}/console`, { timezoneId: "Asia/Kolkata" });
    const { page, response, problems } = opened;
    try {
      expect(response?.status()).toBe(200);
      await page.getByLabel("API key").waitFor(POLL);
      await checkPage(page, "sign-in");
      const urls: string[] = [];
      page.on("request", (request) => urls.push(request.url()));
      const profile = page.waitForRequest((request) => request.url().endsWith(`${BASE_PATH}/profile`));
      await page.keyboard.press("Tab");
      expect(await page.evaluate("document.activeElement.id")).toBe("api-key");
      await page.keyboard.type(keys.editor);
      await page.keyboard.press("Enter");
      expect((await profile).headers().authorization).toBe(`ApiKey ${keys.editor}`);
      // The demo organization's workspace: its apps, the seed's demo-app among them.
      await page.getByRole("heading", { name: "Apps" }).waitFor(POLL);
      await page.getByRole("link", { name: "demo-app" }).waitFor(POLL);
      expect(new URL(page.url()).pathname).toBe(`${BASE_PATH}/console/organizations/${DEMO_ORG}/workspaces/${DEMO_WORKSPACE}`);
      expect(await page.evaluate("Object.values(sessionStorage)")).toEqual([keys.editor]);
      expect(await keyLeaks(opened, keys.editor, urls)).toEqual({ cookies: [], localStorage: [], urls: [] });
      const demoApp = page.locator("tbody tr", { has: page.getByRole("link", { name: "demo-app" }) }).locator("time");
      const instant = (await demoApp.getAttribute("title")) ?? "";
      expect(instant).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      const shown = new Date(instant).toLocaleString("en-US", { timeZone: "Asia/Kolkata" });
      expect((await demoApp.textContent())?.replace(/\s/g, " ")).toBe(shown.replace(/\s/g, " "));

      // To an app's page and back by keyboard: Tab to its link, Enter.
      for (let tabs = 0; tabs < 30 && (await page.evaluate("document.activeElement.textContent")) !== "demo-app"; tabs++)
        await page.keyboard.press("Tab");
      await page.keyboard.press("Enter");
      await page.getByRole("heading", { name: "App demo-app" }).waitFor(POLL);
      await page.goBack();

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
  it("shows a deep link with a malformed escape as such, with a way home, not a blank page", async () => {
    const opened = await signedIn(world, keys.viewer, { path: "/console/apps/%E0%A4%A" });
    const { page, problems } = opened;
    try {
      const alert = page.getByRole("alert");
      await alert.waitFor(POLL);
      expect(await alert.textContent()).toMatch(/^This link is malformed: /);
      await checkPage(page, "malformed-link");
      await page.getByRole("link", { name: "Go to the apps" }).click();
      await page.getByRole("heading", { name: "Apps" }).waitFor(POLL);
      expect(problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await opened.close();
    }
  });

  it("takes an editor from a new app through two commits, a deploy to staging and a previewed revert", async () => {
    // The patch is copied to the clipboard, which the page may write and the test read.
    const opened = await signedIn(world, keys.editor, { permissions: ["clipboard-read", "clipboard-write"] });
    const { page, problems } = opened;
    try {
      // 1. Apps: create one; it is listed, and found by search.
      await page.getByLabel("New app's name").fill("journey");
      await page.getByRole("button", { name: "Create app" }).click();
      await page.getByRole("link", { name: "journey" }).waitFor(POLL);
      await page.getByLabel("Search by name").fill("JOUR");
      await expect.poll(() => page.locator("tbody th").allTextContents(), POLL).toEqual(["journey"]);
      await checkPage(page, "apps");
      // Rename one, then delete it: the delete asks for its name first.
      await page.getByLabel("Search by name").fill("");
      await page.getByLabel("New app's name").fill("scratch");
      await page.getByRole("button", { name: "Create app" }).click();
      const scratch = page.locator("tbody tr", { has: page.getByRole("link", { name: "scratch" }) });
      await scratch.getByRole("button", { name: "Rename" }).click();
      await scratch.getByLabel("New name of scratch").fill("scratch-renamed");
      await scratch.getByRole("button", { name: "Save name" }).click();
      const renamed = page.locator("tbody tr", { has: page.getByRole("link", { name: "scratch-renamed" }) });
      await renamed.getByRole("button", { name: "Delete" }).click();
      const deleteForGood = renamed.getByRole("button", { name: "Delete for good" });
      expect(await deleteForGood.isDisabled()).toBe(true);
      await renamed.getByLabel("Type “scratch-renamed” to delete it with its variants and history").fill("scratch-renamed");
      await deleteForGood.click();
      await expect.poll(() => page.locator("tbody th").allTextContents(), POLL).toEqual(["demo-app", "journey"]);

      // 2. The app: no variants yet; add one. Its three environments run nothing.
      await page.getByRole("link", { name: "journey" }).click();
      await page.getByText("No variants yet").waitFor(POLL);
      await expect.poll(() => page.locator(".card h3").allTextContents(), POLL).toEqual(["development", "staging", "production"]);
      await page.getByLabel("New variant's name").fill("main");
      await page.getByRole("button", { name: "Add variant" }).click();
      await page.getByRole("link", { name: "main", exact: true }).click();

      // 3. The variant: invalid JSON is refused before sending; the API's 422 is shown where it points.
      await page.getByRole("heading", { name: "Variant main" }).waitFor(POLL);
      const editor = page.getByLabel("Params (JSON)");
      const commit = page.getByRole("button", { name: "Commit" });
      await editor.fill('{"temperature": 0.7,');
      await expect.poll(() => page.locator("#params-problem").textContent(), POLL).toMatch(/^Not valid JSON: /);
      expect(await commit.getAttribute("aria-disabled")).toBe("true");
      const sent: string[] = [];
      page.on("request", (request) => {
        if (request.url().endsWith("/variants/configs/commit")) sent.push(request.postData() ?? "");
      });
      const tooDeep = `${'{"a":'.repeat(101)}1${"}".repeat(101)}`;
      await editor.fill(tooDeep);
      await commit.click();
      const refused = page.locator(".commit .error[role=alert]");
      await refused.waitFor(POLL);
      expect(await refused.textContent()).toMatch(/^Refused: 422 body\.params: /);
      // Two commits, numbers sent exactly as typed.
      for (const [params, message] of [
        [`{"temperature": 0.7, "seed": ${BIG}}`, "first"],
        [`{"temperature": 0.2, "seed": ${BIG}, "ratio": 1.0}`, "second"],
      ]) {
        await editor.fill(params);
        await page.getByLabel("Commit message").fill(message);
        const before = sent.length;
        await commit.click();
        // Sent first: the version shown before it is the previous commit's.
        await expect.poll(() => sent.length, POLL).toBe(before + 1);
        await page.locator(".revisions strong").getByText(`v${sent.length}`, { exact: true }).waitFor(POLL); // the 422 counted in `sent`, and revision 1 made by the add
      }
      expect(sent.slice(1).map((body) => body.slice(0, body.indexOf(',"variant_ref"')))).toEqual([
        `{"params":{"temperature": 0.7, "seed": ${BIG}}`,
        `{"params":{"temperature": 0.2, "seed": ${BIG}, "ratio": 1.0}`,
      ]);
      // Newest first, each with its message and author; params as stored, digit for digit.
      await expect
        .poll(() => page.locator(".revisions summary").allTextContents(), POLL)
        .toEqual([
          expect.stringMatching(/^v3 · second · ed /),
          expect.stringMatching(/^v2 · first · ed /),
          expect.stringMatching(/^v1 · no message · ed /),
        ]);
      await page.locator(".revisions summary").first().click();
      expect(await page.locator(".revisions pre.params").first().textContent()).toBe(
        `{\n  "temperature": 0.2,\n  "seed": ${BIG},\n  "ratio": 1.0\n}`,
      );
      await checkPage(page, "variant");

      // 4. Compare two versions (the two newest, by default): from the diff API, each changed path with its values.
      await page.getByRole("link", { name: "Compare them" }).click();
      await page.getByRole("heading", { name: "Compare" }).waitFor(POLL);
      const rows = () =>
        page
          .locator(".diff tbody tr")
          .evaluateAll((trs) => trs.map((tr) => Array.from((tr as any).cells, (cell: any) => cell.textContent)));
      await expect.poll(rows, POLL).toEqual([
        ["/params/ratio", "added", "", "1.0"],
        ["/params/temperature", "changed", "0.7", "0.2"],
      ]);
      expect(await page.locator(".sides").innerText()).toBe("From main · v2\n\nTo main · v3");
      // The RFC 6902 patch one click away, values as stored, copied as shown.
      await page.getByText("RFC 6902 patch").click();
      const patch = `[\n  {\n    "op": "add",\n    "path": "/params/ratio",\n    "value": 1.0\n  },\n  {\n    "op": "replace",\n    "path": "/params/temperature",\n    "value": 0.2\n  }\n]`;
      expect(await page.locator("pre.patch").textContent()).toBe(patch);
      await page.getByRole("button", { name: "Copy the patch" }).click();
      await page.getByRole("button", { name: "Copied" }).waitFor(POLL);
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(patch);
      await checkPage(page, "compare");
      await page.goBack();
      await page.getByRole("heading", { name: "Variant main" }).waitFor(POLL);

      // 2 again: deploy v2, then the latest, to staging, each after its preview.
      await page.getByRole("link", { name: "App journey" }).click();
      const staging = page.locator("section.card", { has: page.getByRole("heading", { name: "staging" }) });
      for (const [version, deploy] of [
        ["v2", "deploy #1"],
        ["v3 (latest)", "deploy #2"],
      ]) {
        await staging.getByLabel("Version").selectOption({ label: version });
        await staging.getByRole("button", { name: "Deploy to staging…" }).click();
        await staging.getByRole("button", { name: /^Confirm: deploy main · v\d to staging$/ }).click();
        await expect.poll(() => staging.locator("dd").nth(4).textContent(), POLL).toBe(deploy);
      }
      expect(await staging.locator("dd").allTextContents()).toEqual([
        "main · v3",
        "second",
        "ed",
        expect.any(String),
        "deploy #2",
        "none: deployed directly",
      ]);
      await checkPage(page, "app");

      // 5. Staging's history, newest first; revert to its first deploy after the preview of what it would run.
      await staging.getByRole("link", { name: "History and revert" }).click();
      await page.getByRole("heading", { name: "History of staging" }).waitFor(POLL);
      await expect.poll(() => page.locator("tbody th").allTextContents(), POLL).toEqual(["deploy #2", "deploy #1"]);
      await page.getByRole("button", { name: "Revert to deploy #1 (main · v2)…" }).click();
      // The preview is the API's dry-run: what would run, and what would change.
      const preview = page.getByRole("region", { name: "Preview of the revert to staging" });
      await preview.locator(".diff").waitFor(POLL);
      expect(await preview.locator("p").first().textContent()).toBe(
        "staging runs main · v3 (deploy #2); after this revert, deploy #3 runs main · v2.",
      );
      expect(
        await preview
          .locator(".diff tbody tr")
          .evaluateAll((trs) => trs.map((tr) => Array.from((tr as any).cells, (cell: any) => cell.textContent))),
      ).toEqual([
        ["/params/ratio", "removed", "1.0", ""],
        ["/params/temperature", "changed", "0.2", "0.7"],
      ]);
      await checkPage(page, "revert-preview");
      // Someone deploys to staging meanwhile: the revert, sent on the state previewed (If-Match), is refused (412).
      const deployed = await api(world.worker, "POST", `${BASE_PATH}/variants/configs/deploy`, keys.editor, {
        variant_ref: { slug: "main", version: 2 },
        environment_ref: { slug: "staging" },
        application_ref: { slug: "journey" },
      });
      expect(deployed.status).toBe(200);
      const revert = page.waitForRequest((request) => request.url().endsWith("/revert"));
      const confirm = preview.getByRole("button", { name: "Confirm: revert main · v2 to staging" });
      await confirm.click();
      const stale = (await revert).headers()["if-match"];
      const refusal = preview.getByRole("alert");
      await refusal.waitFor(POLL);
      const direct = await api(world.worker, "POST", new URL((await revert).url()).pathname, keys.editor, undefined, {
        "If-Match": stale,
      });
      expect(direct.status).toBe(412);
      expect(await refusal.textContent()).toBe(`Refused, the preview is read again: 412 ${direct.body.detail}`);
      // The preview read again, as staging is now; reverted on it.
      await expect
        .poll(() => preview.locator("p").first().textContent(), POLL)
        .toBe("staging runs main · v2 (deploy #3); after this revert, deploy #4 runs main · v2.");
      await confirm.click();
      await expect
        .poll(() => page.locator("tbody th").allTextContents(), POLL)
        .toEqual(["deploy #4", "deploy #3", "deploy #2", "deploy #1"]);
      await page.getByRole("status").getByText("staging runs main · v2, as deploy #4.").waitFor(POLL);
      await checkPage(page, "environment");

      // What the pages showed is what the API holds.
      const apps = await api(world.worker, "GET", `${BASE_PATH}/apps?app_name=journey`, keys.editor);
      const history = await api(world.worker, "GET", `${BASE_PATH}/apps/${apps.body[0].app_id}/revisions/staging`, keys.editor);
      expect(history.body.revisions.map((entry: any) => [entry.revision, entry.modified_by])).toEqual([
        [1, "ed"],
        [2, "ed"],
        [3, "ed"],
        [4, "ed"],
      ]);
      expect(history.body.revisions[3].deployed_app_variant_revision).toBe(
        history.body.revisions[0].deployed_app_variant_revision,
      );
      expect(problems.pageErrors).toEqual([]);
      expect(problems.offOrigin).toEqual([]);
    } finally {
      await opened.close();
    }
  });
  it("shows a read-only key every page with no write control", async () => {
    const opened = await signedIn(world, keys.readOnly);
    const { page, problems } = opened;
    /** Every control on the page but signing out, its links and copying an id: a read-only key gets none that writes. */
    const controls = () => page.locator("main button:not(.copy), main textarea, main input:not([type=search])").count();
    try {
      await page.getByText("read-only key").waitFor(POLL);
      await page.getByRole("link", { name: "journey" }).waitFor(POLL);
      expect(await controls()).toBe(0);
      await page.getByRole("link", { name: "journey" }).click();
      await page.getByRole("link", { name: "main", exact: true }).waitFor(POLL);
      expect(await controls()).toBe(0);
      await page.getByRole("link", { name: "History and revert" }).nth(1).click();
      await expect
        .poll(() => page.locator("tbody th").allTextContents(), POLL)
        .toEqual(["deploy #4", "deploy #3", "deploy #2", "deploy #1"]);
      expect(await controls()).toBe(0);
      // Comparing is reading: an environment's deploy with its current one.
      await page.getByRole("link", { name: "Compare deploy #2 with the current one" }).click();
      await expect
        .poll(
          () =>
            page
              .locator(".diff tbody tr")
              .evaluateAll((trs) => trs.map((tr) => Array.from((tr as any).cells, (cell: any) => cell.textContent))),
          POLL,
        )
        .toEqual([
          ["/params/ratio", "removed", "1.0", ""],
          ["/params/temperature", "changed", "0.2", "0.7"],
        ]);
      expect(await page.locator(".sides").innerText()).toBe(
        "From staging deploy #2 (main · v3)\n\nTo staging deploy #4 (main · v2)",
      );
      await checkPage(page, "compare-environments");
      await page.goBack();
      await page.goBack();
      await page.getByRole("link", { name: "main", exact: true }).click();
      await page.locator(".revisions summary").first().waitFor(POLL);
      await page.locator(".revisions summary").first().click();
      expect(await page.locator(".revisions pre.params").first().textContent()).toContain(`"seed": ${BIG}`);
      expect(await controls()).toBe(0);
      await checkPage(page, "read-only");
      // On a phone's width: the same page, nothing cut off sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await checkPage(page, "narrow");
      expect(problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await opened.close();
    }
  });

  it("disables a viewer's write controls with the reason on hover", async () => {
    const opened = await signedIn(world, keys.viewer);
    const { page } = opened;
    try {
      const create = page.getByRole("button", { name: "Create app" });
      await create.waitFor(POLL);
      expect(await create.getAttribute("aria-disabled")).toBe("true");
      expect(await create.getAttribute("title")).toBe("Your role here (viewer) may not change apps or configs");
      const posts: string[] = [];
      page.on("request", (request) => {
        if (request.method() !== "GET") posts.push(request.url());
      });
      await page.getByLabel("New app's name").fill("not-mine");
      await create.click({ force: true });
      await page.getByLabel("New app's name").press("Enter");
      await page.getByRole("link", { name: "demo-app" }).click();
      const deploy = page.getByRole("button", { name: "Deploy to production…" });
      await deploy.waitFor(POLL);
      expect(await deploy.getAttribute("title")).toBe("Your role here (viewer) may not deploy or revert");
      await checkPage(page, "viewer");
      expect(posts).toEqual([]);
      expect(opened.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await opened.close();
    }
  });

  it("shows the API's message when an action is refused: an editor made a viewer since the page loaded", async () => {
    const opened = await signedIn(world, keys.editor);
    const { page } = opened;
    try {
      await page.getByRole("button", { name: "Create app" }).waitFor(POLL);
      const demoted = await api(
        world.worker,
        "DELETE",
        `${BASE_PATH}/workspaces/${DEMO_WORKSPACE}/roles?email=ed@example.com&org_id=${DEMO_ORG}&role=editor`,
        DEMO_KEY,
      );
      expect(demoted.status).toBe(200);
      await page.getByLabel("New app's name").fill("too-late");
      await page.getByRole("button", { name: "Create app" }).click();
      const alert = page.getByRole("alert");
      await alert.waitFor(POLL);
      const direct = await api(world.worker, "POST", `${BASE_PATH}/apps`, keys.editor, { app_name: "too-late" });
      expect(direct.status).toBe(403);
      expect(await alert.textContent()).toBe(`403 ${direct.body.detail}`);
      await checkPage(page, "refused");
      expect(opened.problems.pageErrors).toEqual([]);
    } finally {
      await opened.close();
    }
  });
});
