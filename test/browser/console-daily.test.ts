/**
 * The console for daily use (docs/CONSOLE.md "Daily use", points 1 to 4) in headless Chromium, each journey through the
 * real API: a one-word change in a 5 KB prompt read as text; what each environment runs, in one vocabulary (`main ·
 * v3`, `deploy #N`), with the change request that applied it; a protected production proposed, not deployed, and every
 * deploy after its dry-run; a request in conflict with Apply disabled and Rebase the main action; a 412 read again,
 * the typed comment kept. One world and one editor's page for the file; each new state checked by axe-core and kept
 * as a screenshot.
 */
import type { Locator, Page, Response } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { api } from "../cli/helpers";
import { POLL } from "./browser";
import { BASE_PATH, checkPage, consoleWorld, DEMO_PROJECT, signedIn } from "./console-world";

// A second member who may approve by the default settings (approver_roles: owner, workspace_admin, deployment_manager).
const KIM = "kim@example.com";
const world = consoleWorld("test/browser/console-daily.test.ts", { [KIM]: "deployment_manager" });
const { keys } = world;
// A number JSON.parse would round: it survives every diff and whole config as stored.
const BIG = "12345678901234567890";

/** A system prompt of about 5 KB, 60 lines; `word` in its 30th. */
const prompt = (word: string) =>
  Array.from({ length: 60 }, (_, line) =>
    line === 29
      ? `Keep every answer ${word} and kind, and say when you do not know the answer to a question.`
      : `Line ${line + 1}: you are the support assistant of a bookshop; answer questions on orders and deliveries.`,
  ).join("\n");
const BEFORE = prompt("brief");
const AFTER = prompt("concise");

/** The API as `key`, under BASE_PATH; the status checked. */
async function call(key: string, method: "GET" | "POST" | "PUT" | "PATCH", path: string, body?: unknown, headers = {}) {
  const answered = await api(world.worker, method, `${BASE_PATH}${path}`, key, body, headers);
  expect(answered.status, JSON.stringify(answered.body)).toBe(200);
  return answered;
}

/** The app the journeys share: `prompts`, its variant main at v3 (v2 → v3 changes one word of the prompt). */
const made = { appId: "", versions: [] as string[] };
async function makeApp() {
  if (made.appId) return made;
  const app = await call(keys.editor, "POST", "/apps", { app_name: "prompts" });
  made.appId = app.body.app_id;
  const application_ref = { id: made.appId };
  await call(keys.editor, "POST", "/variants/configs/add", { variant_ref: { slug: "main" }, application_ref });
  for (const [version, text, message] of [
    [1, BEFORE, "the bookshop's prompt"],
    [2, AFTER, "one word"],
  ] as const) {
    // Sent as text, so that the big number goes digit for digit.
    const body = `{"params":{"prompt":${JSON.stringify(text)},"temperature":0.5,"seed":${BIG}},"variant_ref":{"slug":"main","version":${version},"commit_message":"${message}"},"application_ref":{"id":"${made.appId}"}}`;
    const committed = await fetch(`${world.worker.url}${BASE_PATH}/variants/configs/commit`, {
      method: "POST",
      headers: { Authorization: `ApiKey ${keys.editor}`, "Content-Type": "application/json" },
      body,
    });
    expect(committed.status).toBe(200);
  }
  const variants = await call(keys.editor, "GET", `/apps/${made.appId}/variants`);
  const revisions = await call(keys.editor, "GET", `/variants/${variants.body[0].variant_id}/revisions`);
  made.versions = revisions.body.map((revision: { id: string }) => revision.id);
  // Production protected, one approval required.
  await call(keys.owner, "PUT", `/projects/${DEMO_PROJECT}/environments/production/protection`, { protected: true });
  return made;
}

/** The editor's page, opened once for the file. */
let opened: Awaited<ReturnType<typeof signedIn>> | undefined;
async function editorPage(path: string): Promise<Page> {
  opened ??= await signedIn(world, keys.editor);
  await opened.page.goto(`${world.worker.url}${BASE_PATH}/console${path}`);
  return opened.page;
}
afterAll(async () => {
  // The browser logs the refused requests (the 412) itself; nothing else may go wrong.
  if (opened) expect([opened.problems.pageErrors, opened.problems.offOrigin]).toEqual([[], []]);
  await opened?.close();
});

/** The line saying what a deploy or an apply did, and when it is live everywhere: the instant `answer` says. */
async function liveLine(where: Locator, text: string, answer: Response) {
  expect(answer.status()).toBe(200);
  const liveBy = answer.headers()["live-everywhere-by"];
  expect(liveBy).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  const line = where.getByRole("status").filter({ hasText: text });
  await line.waitFor(POLL);
  expect(await line.locator("time").getAttribute("datetime")).toBe(liveBy);
  expect(await line.innerText()).toBe(`${text} Live everywhere by ${await line.locator("time").innerText()}.`);
}

/** Every `\n` written out as two characters on the page as shown. */
const literalNewlines = (page: Page) => page.evaluate("document.body.innerText.split('\\\\n').length - 1");

describe.skipIf(!world.hasChromium)("the console for daily use", () => {
  it("reads a one-word change in a 5 KB prompt as text: the word marked, lines as lines, side by side or unified as last chosen, labelled at every width", async () => {
    const { versions } = await makeApp();
    expect(AFTER.length).toBeGreaterThan(5000);
    const page = await editorPage(`/compare?configs=${versions[1]},${versions[2]}`);
    const text = page.getByRole("region", { name: /\/params\/prompt$/ });
    await text.locator("table.text-lines.split").waitFor(POLL);
    // Exactly the changed word marked, on each side; no line break written out as `\n` anywhere.
    expect(await text.locator("ins").allTextContents()).toEqual(["concise"]);
    expect(await text.locator("del").allTextContents()).toEqual(["brief"]);
    expect(await literalNewlines(page)).toBe(0);
    // Long unchanged runs folded: three lines of context each side of the change.
    expect(await text.locator("tbody tr").count()).toBe(1 + 3 + 1 + 3 + 1);
    expect(await text.getByRole("button").allTextContents()).toEqual(["Show 26 unchanged lines", "Show 27 unchanged lines"]);
    // The rest of the config as before: a number, exact, in the table.
    expect(await page.locator("table.list tbody tr").count()).toBe(0);
    await checkPage(page, "prompt-diff-split");

    // Unified, remembered across a reload; a fold opened.
    await text.getByLabel("Unified").check();
    await page.reload();
    await text.locator("table.text-lines.unified").waitFor(POLL);
    expect(await text.getByLabel("Unified").isChecked()).toBe(true);
    expect(await text.locator("ins").allTextContents()).toEqual(["concise"]);
    expect(await text.locator("tr.line-removed").allInnerTexts()).toEqual([expect.stringContaining("Keep every answer brief")]);
    await text.getByRole("button", { name: "Show 26 unchanged lines" }).click();
    // The 29 lines before the change, its two (removed, added), three after it, and the last 27 folded.
    expect(await text.locator("tbody tr").count()).toBe(29 + 2 + 3 + 1);
    await checkPage(page, "prompt-diff-unified");

    // Both whole configs one click away, numbers as stored, lines as lines.
    await page.getByText("Both whole configs").click();
    const whole = page.locator(".whole pre");
    await expect.poll(() => whole.count(), POLL).toBe(2);
    expect(await whole.first().textContent()).toContain(`"seed": ${BIG}`);
    expect(await whole.last().textContent()).toContain("Keep every answer concise and kind");
    expect(await literalNewlines(page)).toBe(0);
    await checkPage(page, "prompt-whole-configs");

    // On a phone's width, in either layout: Before and After named, nothing cut off sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    for (const layout of ["Side by side", "Unified"]) {
      await text.getByLabel(layout).check();
      for (const [side, name] of [
        [".legend-before", "− Before: main · v2"],
        [".legend-after", "+ After: main · v3"],
      ]) {
        expect(await text.locator(side).isVisible()).toBe(true);
        expect(await text.locator(side).innerText()).toBe(name);
      }
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    }
    expect(await text.getByRole("columnheader", { name: "Before and after" }).isVisible()).toBe(true);
    await text.getByLabel("Side by side").check();
    expect(await text.getByRole("columnheader").allInnerTexts()).toEqual(["Before", "After"]);
    await checkPage(page, "prompt-diff-narrow");
    await page.setViewportSize({ width: 1280, height: 1000 });
  });

  it("names what each environment runs (main · v3, deploy #N, its message, its change request), deploys after the dry-run, and proposes to a protected production", async () => {
    const { appId, versions } = await makeApp();
    const page = await editorPage(`/apps/${appId}`);
    const card = (name: string) => page.locator("section.card", { has: page.getByRole("heading", { name }) });
    const facts = (name: string) => card(name).locator("dd").allTextContents();

    // Staging: v2 after its preview (nothing runs there yet), then v3, whose preview is the prompt's one word.
    await card("staging").getByLabel("Version").selectOption({ label: "v2" });
    await card("staging").getByRole("button", { name: "Deploy to staging…" }).click();
    const preview = card("staging").getByRole("region", { name: "Preview of the deploy to staging" });
    await expect
      .poll(() => preview.locator("p").first().textContent(), POLL)
      .toBe("Nothing runs in staging yet; after this deploy, deploy #1 runs main · v2.");
    await checkPage(page, "deploy-preview-first");
    const deploy = page.waitForResponse((response) => response.url().endsWith("/variants/configs/deploy"));
    await preview.getByRole("button", { name: "Confirm: deploy main · v2 to staging" }).click();
    // When it is live everywhere: the API's Live-Everywhere-By, shown in the browser's time zone.
    await liveLine(card("staging"), "staging runs main · v2, as deploy #1.", await deploy);
    await card("staging").getByLabel("Version").selectOption({ label: "v3 (latest)" });
    await card("staging").getByRole("button", { name: "Deploy to staging…" }).click();
    await expect
      .poll(() => preview.locator("p").first().textContent(), POLL)
      .toBe("staging runs main · v2 (deploy #1); after this deploy, deploy #2 runs main · v3.");
    await expect.poll(() => preview.locator("ins").allTextContents(), POLL).toEqual(["concise"]);
    await checkPage(page, "deploy-preview");
    await preview.getByRole("button", { name: "Confirm: deploy main · v3 to staging" }).click();
    await expect
      .poll(() => facts("staging"), POLL)
      .toEqual(["main · v3", "one word", "ed", expect.any(String), "deploy #2", "none: deployed directly"]);

    // Production is protected: a lock with the approvals it needs, and a proposal where a deploy would be refused.
    expect(await card("production").locator(".badge.lock").innerText()).toBe("Protected · 1 approval required");
    expect(
      await card("production")
        .getByRole("button", { name: /Deploy/ })
        .count(),
    ).toBe(0);
    await checkPage(page, "protected-card");
    await card("production").getByRole("button", { name: "Propose…" }).click();
    await page.getByRole("heading", { name: "Propose a deploy" }).waitFor(POLL);
    const query = new URL(page.url()).searchParams;
    expect([query.get("environment"), query.get("variant_revision_id")]).toEqual(["production", versions[2]]);
    expect(await page.getByLabel("Environment").inputValue()).toBe("production");
    await expect.poll(() => page.getByLabel("Title").inputValue(), POLL).toBe("Deploy main · v3 to production");
    await checkPage(page, "propose-prefilled");
    await page.getByRole("button", { name: "Propose" }).click();
    await page.getByRole("heading", { name: /^Deploy main · v3 to production/ }).waitFor(POLL);
    const requestId = new URL(page.url()).pathname.split("/").pop() as string;
    await call(keys.extra[KIM], "POST", `/change-requests/${requestId}/reviews`, { kind: "approve", version: 1 });
    await page.reload();
    const apply = page.waitForResponse((response) => response.url().endsWith(`/change-requests/${requestId}/apply`));
    await page.getByRole("button", { name: "Apply to production" }).click();
    await liveLine(page.locator(".actions"), "Applied to production.", await apply);
    await expect
      .poll(() => page.locator("dl.facts dd").nth(4).textContent(), POLL)
      .toMatch(/ by ed, as deploy #1 of production$/);

    // The card and the history name it: the version, its message, the deploy and the request that applied it.
    await page.getByRole("link", { name: "prompts" }).click();
    await expect
      .poll(() => facts("production"), POLL)
      .toEqual(["main · v3", "one word", "ed", expect.any(String), "deploy #1", "Deploy main · v3 to production"]);
    expect(await card("production").getByRole("link", { name: "Deploy main · v3 to production" }).getAttribute("href")).toBe(
      `${BASE_PATH}/console/change-requests/${requestId}`,
    );
    await checkPage(page, "app-runs");
    await card("production").getByRole("link", { name: "History and revert" }).click();
    await page.getByRole("heading", { name: "History of production" }).waitFor(POLL);
    await expect
      .poll(() => page.locator("tbody tr").allInnerTexts(), POLL)
      .toEqual([expect.stringMatching(/^deploy #1\tmain · v3\tone word\ted\t.+\tDeploy main · v3 to production\tcurrent$/)]);
    // Protected: no revert there but by a proposal; staging's history offers both, each after its preview.
    await page.goBack();
    await card("staging").getByRole("link", { name: "History and revert" }).click();
    await expect.poll(() => page.locator("tbody th").allTextContents(), POLL).toEqual(["deploy #2", "deploy #1"]);
    await page.getByRole("button", { name: "Revert to deploy #1 (main · v2)…" }).click();
    const revert = page.getByRole("region", { name: "Preview of the revert to staging" });
    await expect
      .poll(() => revert.locator("p").first().textContent(), POLL)
      .toBe("staging runs main · v3 (deploy #2); after this revert, deploy #3 runs main · v2.");
    await expect.poll(() => revert.locator("del").allTextContents(), POLL).toEqual(["concise"]);
    expect(await literalNewlines(page)).toBe(0);
    await checkPage(page, "revert-preview-text");
    await revert.getByRole("button", { name: "Cancel" }).click();
  });

  it("shows a request in conflict with Apply disabled and Rebase the main action; a 412 reads the request again, the typed comment kept", async () => {
    const { appId, versions } = await makeApp();
    // A request to deploy v2 to development, approved; then development moves on directly.
    const proposed = await call(keys.editor, "POST", "/change-requests", {
      app_id: appId,
      environment: "development",
      variant_revision_id: versions[1],
      title: "Try v2 in development",
    });
    const id = proposed.body.id as string;
    await call(keys.extra[KIM], "POST", `/change-requests/${id}/reviews`, { kind: "approve", version: 1 });
    await call(keys.editor, "POST", "/variants/configs/deploy", {
      variant_ref: { slug: "main", version: 3 },
      environment_ref: { slug: "development" },
      application_ref: { id: appId },
    });
    const page = await editorPage(`/change-requests/${id}`);
    await page.locator(".error", { hasText: "Conflict:" }).waitFor(POLL);
    const apply = page.getByRole("button", { name: "Apply to development" });
    expect(await apply.getAttribute("aria-disabled")).toBe("true");
    expect(await apply.getAttribute("title")).toBe("development changed since this request was made: rebase it first");
    expect(
      await page.locator(".actions").getByText("development changed since this request was made: rebase it first").count(),
    ).toBe(1);
    const rebase = page.getByRole("button", { name: "Rebase on development now" });
    expect(await rebase.getAttribute("class")).toBe("primary");
    // The first of the actions, and the only primary one.
    expect(await page.locator(".actions button").first().textContent()).toBe("Rebase on development now");
    expect(await page.locator(".actions button.primary").count()).toBe(1);
    await checkPage(page, "conflict-rebase-first");

    // A comment typed while its author retitles the request (a new ETag, the same version): refused (412), the request
    // read again, the comment kept.
    const comment = page.getByLabel("Comment (optional with an approval or a decline)");
    await comment.fill("Looks right to me, once rebased");
    await call(keys.editor, "PATCH", `/change-requests/${id}`, { title: "Try v2 in development, edited" });
    await page.getByRole("button", { name: "Comment" }).click();
    const refused = page.locator("form[aria-label=Review] [role=alert]");
    await refused.waitFor(POLL);
    expect(await refused.textContent()).toMatch(/^Refused, the request is read again and your comment kept: 412 /);
    await page.getByRole("heading", { name: /^Try v2 in development, edited/ }).waitFor(POLL);
    expect(await comment.inputValue()).toBe("Looks right to me, once rebased");
    await checkPage(page, "stale-reloaded");
    // Sent again, on the request as it is now.
    await page.getByRole("button", { name: "Comment" }).click();
    await expect
      .poll(() => page.locator(".reviews li").allTextContents(), POLL)
      .toEqual([
        expect.stringMatching(/^kim approved version 1/),
        expect.stringMatching(/^ed commented on version 1, .*Looks right to me, once rebased$/),
      ]);
  });
  it("asks kim to review a proposal: kim's header counts what awaits, the awaiting view lists it, an approval takes it off", async () => {
    const { appId, versions } = await makeApp();
    const page = await editorPage(`/apps/${appId}/propose?environment=production&variant_revision_id=${versions[1]}`);
    // Offered: the members who may approve in production (its approver roles), not the author.
    const picker = page.getByRole("group", { name: "Ask for a review" });
    await expect
      .poll(() => picker.locator("label").allTextContents(), POLL)
      .toEqual(["demo (owner)", "kim (deployment manager)"]);
    await picker.getByLabel("kim (deployment manager)").check();
    await page.getByLabel("Title").fill("Back to v2 in production");
    await checkPage(page, "propose-reviewers");
    await page.getByRole("button", { name: "Propose" }).click();
    await page.getByRole("heading", { name: /^Back to v2 in production/ }).waitFor(POLL);
    await page.getByText("Review asked of kim.").waitFor(POLL);
    const id = new URL(page.url()).pathname.split("/").pop() as string;
    const asked = await call(keys.editor, "GET", `/change-requests/${id}`);
    const kimId = asked.body.reviewers[0]?.user_id;
    expect(asked.body.reviewers).toEqual([{ user_id: kimId, username: "kim" }]);
    const awaitingKim = await call(
      keys.extra[KIM],
      "GET",
      `/change-requests?project_id=${DEMO_PROJECT}&awaiting_my_review=true&limit=200`,
    );
    expect(awaitingKim.body.change_requests.map((request: { id: string }) => request.id)).toEqual([id]);

    const kim = await signedIn(world, keys.extra[KIM]);
    try {
      const header = kim.page.getByRole("link", { name: /^Awaiting my review/ });
      await expect.poll(() => header.textContent(), POLL).toBe("Awaiting my review: 1");
      expect(await header.getAttribute("href")).toMatch(/\/change-requests\?awaiting_my_review=true$/);
      await checkPage(kim.page, "awaiting-count");
      await header.click();
      await kim.page.getByRole("heading", { name: "Change requests awaiting my review" }).waitFor(POLL);
      await expect.poll(() => kim.page.locator("tbody th").allTextContents(), POLL).toEqual(["Back to v2 in production"]);
      expect(await kim.page.getByLabel("Awaiting my review").isChecked()).toBe(true);
      await checkPage(kim.page, "awaiting-view");
      // Approved: nothing awaits kim any more, the header says so at the next page.
      await kim.page.getByRole("link", { name: "Back to v2 in production" }).click();
      await kim.page.getByRole("button", { name: "Approve" }).click();
      await kim.page.getByText("approved", { exact: true }).waitFor(POLL);
      await kim.page.getByRole("navigation", { name: "Breadcrumb" }).getByRole("link", { name: "Change requests" }).click();
      await expect.poll(() => header.textContent(), POLL).toBe("Awaiting my review: 0");
      expect([kim.problems.pageErrors, kim.problems.offOrigin]).toEqual([[], []]);
    } finally {
      await kim.close();
    }
  });
  it("reads a variant's versions again after a commit is refused (409: a version committed since), the typed params and message kept", async () => {
    const { appId } = await makeApp();
    const variants = await call(keys.editor, "GET", `/apps/${appId}/variants`);
    const page = await editorPage(`/variants/${variants.body[0].variant_id}`);
    const newest = page.locator(".revisions strong").first();
    await expect.poll(() => newest.textContent(), POLL).toBe("v3");
    const typed = `{"temperature": 0.9, "seed": ${BIG}}`;
    await page.getByLabel("Params (JSON)").fill(typed);
    await page.getByLabel("Commit message").fill("warmer");
    await call(keys.editor, "POST", "/variants/configs/commit", {
      params: { temperature: 0.1 },
      variant_ref: { slug: "main", version: 3, commit_message: "colder" },
      application_ref: { id: appId },
    });
    await page.getByRole("button", { name: "Commit" }).click();
    const refused = page.locator(".commit .error[role=alert]");
    await refused.waitFor(POLL);
    expect(await refused.textContent()).toMatch(/^409 /);
    await expect.poll(() => newest.textContent(), POLL).toBe("v4");
    expect(await page.getByLabel("Params (JSON)").inputValue()).toBe(typed);
    expect(await page.getByLabel("Commit message").inputValue()).toBe("warmer");
    await checkPage(page, "commit-refused-reloaded");
    // Sent again, on v4 as now shown.
    await page.getByRole("button", { name: "Commit" }).click();
    await expect.poll(() => newest.textContent(), POLL).toBe("v5");
  });
});
