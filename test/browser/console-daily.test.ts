/**
 * The console for daily use (docs/CONSOLE.md "Daily use", points 1 to 4) in headless Chromium, each journey through the
 * real API: a one-word change in a 5 KB prompt read as text; what each environment runs, in one vocabulary (`main ·
 * v3`, `deploy #N`), with the change request that applied it; a protected production proposed, not deployed, and every
 * deploy after its dry-run; a request in conflict with Apply disabled and Rebase the main action; a 412 read again,
 * the typed comment kept. An environment's split (docs/SPLITS.md §4): started from its page, its weight, next step
 * and verdict secret (once) shown, a verdict signed as a customer's evaluation would (the standardwebhooks library)
 * read back as its outcome, the deploy it refuses saying why; on a protected production a start proposed, its apply
 * showing the secret once, and an abort direct. One world and one editor's page for the file; each new state checked
 * by axe-core and kept as a screenshot.
 */
import type { Locator, Page, Response } from "playwright-core";
import { Webhook } from "standardwebhooks";
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

/** The splits' app: `main` (its first commit, v2) running in staging and production (protected), `next` v2 its candidate. */
let appId = "";
const SHOWN_ONCE = "Shown this once: you will not see it again, so copy it now.";
const split = (environment: string) => `/apps/${appId}/environments/${environment}/split`;
/** Made once, by the first test that needs it. */
async function makeSplitApp() {
  if (appId) return;
  appId = (await call(keys.editor, "POST", "/apps", { app_name: "splits" })).body.app_id;
  const application_ref = { id: appId };
  for (const [slug, params] of [
    ["main", { temperature: 0.2 }],
    ["next", { temperature: 0.7 }],
  ] as const) {
    await call(keys.editor, "POST", "/variants/configs/add", { variant_ref: { slug }, application_ref });
    await call(keys.editor, "POST", "/variants/configs/commit", { config: { variant_ref: { slug }, application_ref, params } });
  }
  // Deployed directly to production while it is not protected (the other journeys protect it).
  const protection = `/projects/${DEMO_PROJECT}/environments/production/protection`;
  await call(keys.owner, "PUT", protection, { protected: false });
  for (const environment of ["staging", "production"])
    await call(keys.editor, "POST", "/variants/configs/deploy", {
      variant_ref: { slug: "main" },
      environment_ref: { slug: environment },
      application_ref,
    });
  await call(keys.owner, "PUT", protection, { protected: true });
}

/** No split runs in `environment`: the API's 404. */
async function expectNoSplit(environment: string) {
  expect((await api(world.worker, "GET", `${BASE_PATH}${split(environment)}`, keys.editor)).status).toBe(404);
}

/** The split's facts as shown: each term with its description. */
const splitFacts = (page: Page) =>
  page
    .locator("section.split dl.facts dd")
    .evaluateAll((dds) => dds.map((dd: any) => `${dd.previousElementSibling?.textContent}: ${dd.textContent}`));

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
  it("starts a split of staging: its weight, next step and diff shown, its secret once; a signed verdict's outcome read back; a deploy there disabled, saying why", async () => {
    await makeSplitApp();
    const page = await editorPage(`/apps/${appId}/environments/staging`);
    await page.getByText("No split runs in staging.").waitFor(POLL);
    await page.getByRole("button", { name: "Start a split…" }).click();
    const form = page.getByRole("form", { name: "Start a split" });
    await form.getByLabel("Candidate variant").selectOption({ label: "next" });
    await form.getByLabel("Weight").fill("10");
    await form.getByRole("button", { name: "Add a step" }).click();
    await form.getByLabel("Step 1 (%)").fill("50");
    await form.getByLabel("Step 1 after (minutes)").fill("60");
    await form.getByRole("button", { name: "Start the split" }).click();

    const secret = page.locator(".shown-once");
    await secret.waitFor(POLL);
    expect(await secret.innerText()).toContain(SHOWN_ONCE);
    const verdictSecret = (await secret.locator("code").textContent()) as string;
    expect(verdictSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const running = (await call(keys.editor, "GET", split("staging"))).body;
    expect(running).toMatchObject({ weight: 1000, steps: [{ weight: 5000, after_minutes: 60 }], promote_at_end: false });
    await expect
      .poll(() => splitFacts(page), POLL)
      .toEqual([
        "Base: main · v2",
        "Candidate: next · v2",
        "Weight: 10% of keyed reads get the candidate",
        expect.stringMatching(/^Next step: 50% at .+$/),
        "Held: no",
        "Last verdict: none yet",
        expect.stringMatching(/^Started: .+ by ed$/),
      ]);
    expect(await page.locator("section.split dd time").first().getAttribute("datetime")).toBe(running.next_step_at);
    await page.getByText("While the split runs, a deploy or revert of staging is refused (409 split_running)").waitFor();
    // The candidate's diff from the base, as two revisions compare.
    const changes = page.locator("section.split .diff tbody tr");
    // The diff loads after the split's facts: polled.
    await expect
      .poll(() => changes.evaluateAll((rows) => rows.map((row) => row.textContent)), POLL)
      .toEqual(['/config_namechanged"main""next"', "/params/temperaturechanged0.20.7"]);
    await checkPage(page, "split-started");
    // Read again: the secret is gone for good.
    await page.reload();
    await page.getByText("10% of keyed reads get the candidate").waitFor(POLL);
    expect(await page.locator(".shown-once").count()).toBe(0);

    // Its weight changed, its step kept as it was read into the form.
    await page.getByRole("button", { name: "Change its weight and steps…" }).click();
    const change = page.getByRole("form", { name: "Change the split" });
    expect([await change.getByLabel("Weight").inputValue(), await change.getByLabel("Step 1 (%)").inputValue()]).toEqual([
      "10",
      "50",
    ]);
    await change.getByLabel("Weight").fill("20");
    await change.getByRole("button", { name: "Change the split" }).click();
    await page.getByText("20% of keyed reads get the candidate").waitFor(POLL);
    expect((await call(keys.editor, "GET", split("staging"))).body).toMatchObject({
      weight: 2000,
      steps: [{ weight: 5000, after_minutes: 60 }],
    });

    // The customer's evaluation passes it, signed with the secret: the next step applies now.
    const body = JSON.stringify({ verdict: "pass", reason: "accuracy held at 97%" });
    const id = `msg_${crypto.randomUUID()}`;
    const at = new Date();
    const verdict = await fetch(`${world.worker.url}${BASE_PATH}${split("staging")}/verdicts`, {
      method: "POST",
      body,
      headers: {
        "Content-Type": "application/json",
        "webhook-id": id,
        "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
        "webhook-signature": new Webhook(verdictSecret).sign(id, at, body),
      },
    });
    expect(verdict.status).toBe(200);
    await page.reload();
    await expect
      .poll(() => splitFacts(page), POLL)
      .toEqual([
        "Base: main · v2",
        "Candidate: next · v2",
        "Weight: 50% of keyed reads get the candidate",
        "Next step: none",
        "Held: no",
        expect.stringMatching(/^Last verdict: pass: “accuracy held at 97%”, .+$/),
        expect.stringMatching(/^Started: .+ by ed$/),
      ]);

    // The app's card says a split runs there, and its deploy says why it is refused.
    await page.getByRole("link", { name: "The app" }).click();
    const card = page.locator("section.card", { has: page.getByRole("heading", { name: "staging" }) });
    await card.getByText("50% to next · v2").waitFor(POLL);
    const deploy = card.getByRole("button", { name: "Deploy to staging…" });
    expect(await deploy.getAttribute("aria-disabled")).toBe("true");
    expect(await deploy.getAttribute("title")).toBe("A split runs in staging: promote or abort it before a deploy or revert");

    // Promoted: a deploy in its history, the split gone.
    await card.getByRole("link", { name: "History and revert" }).click();
    await page.getByRole("button", { name: "Promote the candidate" }).click();
    await page.getByText("No split runs in staging.").waitFor(POLL);
    await expect
      .poll(() => page.locator("table.list > tbody > tr > th").allTextContents(), POLL)
      .toEqual(["deploy #2", "deploy #1"]);
    expect(await page.locator("table.list > tbody > tr").first().innerText()).toMatch(/^deploy #2\tnext · v2\t/);
  });

  it("on a protected production proposes a start and a promote as change requests, shows the secret once at the start's apply, and aborts directly", async () => {
    await makeSplitApp();
    const page = await editorPage(`/apps/${appId}/environments/production`);
    await page.getByRole("button", { name: "Start a split…" }).click();
    const form = page.getByRole("form", { name: "Start a split" });
    await form.getByLabel("Candidate variant").selectOption({ label: "next" });
    await form.getByLabel("Weight").fill("20");
    await form.getByRole("button", { name: "Propose the split…" }).click();
    await page.getByRole("heading", { name: "Propose a split of production" }).waitFor(POLL);
    await page.getByRole("heading", { name: "Preview: production now → next · v2" }).waitFor(POLL);
    expect(await page.getByLabel("Title").inputValue()).toBe("Split production: next · v2 at 20%");
    await page.getByText("The candidate gets 20% of keyed reads.").waitFor(POLL);
    await page.getByRole("button", { name: "Propose", exact: true }).click();
    await page.getByRole("heading", { name: /^Split production: next · v2 at 20%/ }).waitFor(POLL);
    const requestId = new URL(page.url()).pathname.split("/").pop() as string;
    const request = (await call(keys.editor, "GET", `/change-requests/${requestId}`)).body;
    expect(request).toMatchObject({ kind: "split", state: "open", split: { weight: 2000, steps: [], promote_at_end: false } });
    // Nothing runs yet: a proposal.
    await expectNoSplit("production");

    // Approved by the owner, applied by its author: the answer's secret shown this once.
    await call(keys.owner, "POST", `/change-requests/${requestId}/reviews`, { kind: "approve", version: 1 });
    await page.reload();
    await page.getByRole("button", { name: "Apply to production" }).click();
    const secret = page.locator(".shown-once");
    await secret.waitFor(POLL);
    expect(await secret.innerText()).toContain(SHOWN_ONCE);
    expect(await secret.locator("code").textContent()).toMatch(/^whsec_/);
    await expect
      .poll(() => page.locator("dl.facts dd").nth(4).textContent(), POLL)
      .toMatch(/ by ed, to the split of production$/);

    // The split runs; a promote there is proposed, an abort direct.
    await page.getByRole("link", { name: "production", exact: true }).first().click();
    await page.getByText("20% of keyed reads get the candidate").waitFor(POLL);
    await page
      .getByText("production is protected: a change or a promote is proposed as a change request; an abort is direct.")
      .waitFor();
    await page.getByRole("button", { name: "Propose the promote…" }).click();
    await page.getByRole("heading", { name: "Propose the promote of production's split" }).waitFor(POLL);
    await page.getByRole("heading", { name: "Preview: production now → next · v2" }).waitFor(POLL);
    expect(await page.getByLabel("Title").inputValue()).toBe("Promote next · v2 in production");
    await page.goBack();
    await page.getByRole("button", { name: "Abort: back to the base" }).click();
    await page.getByText("No split runs in production.").waitFor(POLL);
    await expectNoSplit("production");
    await checkPage(page, "split-protected");

    // A viewer sees the controls disabled, saying why.
    const viewer = await signedIn(world, keys.viewer, { path: `/console/apps/${appId}/environments/production` });
    try {
      const start = viewer.page.getByRole("button", { name: "Start a split…" });
      await start.waitFor(POLL);
      expect(await start.getAttribute("title")).toBe("Your role here (viewer) may not deploy or revert");
    } finally {
      await viewer.close();
    }
  });
});
