/**
 * The console's team journey (docs/CONSOLE.md "How it is tested", first bullet) in headless Chromium: an owner
 * protects production; an editor makes an app, commits two revisions, compares them, deploys to staging, is refused a
 * direct deploy to production and proposes it; the author's own approval is refused with the API's words; a second
 * member approves; the editor applies; the deploy is in production's history and in the audit log; a revert is
 * proposed after its preview. Then a viewer's refused action, the team and webhooks pages, and a conflict rebased.
 * Every page checked by axe-core and kept as a screenshot (test/browser/console-world.ts).
 */
import { describe, expect, it } from "vitest";
import { api } from "../cli/helpers";
import { DEMO_APP_ID, POLL } from "./browser";
import { BASE_PATH, checkPage, consoleWorld, DEMO_ORG, DEMO_PROJECT, signedIn } from "./console-world";

// A second member who may approve by the default settings (approver_roles: owner, workspace_admin, deployment_manager).
const KIM = "kim@example.com";
const world = consoleWorld("test/browser/console-team.test.ts", { [KIM]: "deployment_manager" });
const { keys } = world;

/** GET of the API as `key`, under BASE_PATH. */
const read = (key: string, path: string) => api(world.worker, "GET", `${BASE_PATH}${path}`, key);

describe.skipIf(!world.hasChromium)("the console, as a team", () => {
  it("protects production, compares two revisions, proposes a deploy there, refuses the author's approval, applies it once approved, and finds it in the history and the audit log", async () => {
    // The owner protects production (protection settings: owners and workspace admins).
    const owner = await signedIn(world, keys.owner, { path: `/console/organizations/${DEMO_ORG}/protection` });
    try {
      const production = owner.page.locator("form.card", { has: owner.page.getByRole("heading", { name: "production" }) });
      await production.getByLabel("Protected: changes only through an approved change request").check();
      await production.getByRole("button", { name: "Save production" }).click();
      await production.getByText("Last changed by demo").waitFor(POLL);
      await checkPage(owner.page, "protection");
      const settings = await read(keys.owner, `/projects/${DEMO_PROJECT}/environments/production/protection`);
      expect(settings.body).toMatchObject({ protected: true, required_approvals: 1, allow_self_approval: false });
      expect(owner.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await owner.close();
    }

    const editor = await signedIn(world, keys.editor);
    const { page } = editor;
    try {
      // An app, a variant, two commits (the add made revision 1).
      await page.getByLabel("New app's name").fill("team-app");
      await page.getByRole("button", { name: "Create app" }).click();
      await page.getByRole("link", { name: "team-app" }).click();
      await page.getByLabel("New variant's name").fill("main");
      await page.getByRole("button", { name: "Add variant" }).click();
      await page.getByRole("link", { name: "main", exact: true }).click();
      for (const [revision, params] of [
        [2, '{"temperature": 0.7}'],
        [3, '{"temperature": 0.2}'],
      ] as const) {
        await page.getByLabel("Params (JSON)").fill(params);
        await page.getByLabel("Commit message").fill(`revision ${revision}`);
        await page.getByRole("button", { name: "Commit" }).click();
        await page.locator(".revisions strong").getByText(`v${revision}`, { exact: true }).waitFor(POLL);
      }
      const appId = (await read(keys.editor, "/apps?app_name=team-app")).body[0].app_id as string;
      // Compare them (the two newest, by default).
      await page.getByRole("link", { name: "Compare them" }).click();
      const compared = page.getByRole("table", { name: "From main · v2 to main · v3" });
      await expect
        .poll(() => compared.locator("tbody th, tbody td").allTextContents(), POLL)
        .toEqual(["/params/temperature", "changed", "0.7", "0.2"]);
      await page.goBack();

      // Staging takes a direct deploy, after its preview; production, protected, offers a proposal instead.
      await page.getByRole("link", { name: "App team-app" }).click();
      const card = (name: string) => page.locator("section.card", { has: page.getByRole("heading", { name }) });
      const deployToStaging = async (version: string) => {
        await card("staging").getByLabel("Version").selectOption({ label: version });
        await card("staging").getByRole("button", { name: "Deploy to staging…" }).click();
        await card("staging")
          .getByRole("button", { name: /^Confirm: deploy main · v\d to staging$/ })
          .click();
      };
      await deployToStaging("v2");
      await expect.poll(() => card("staging").locator("dd").nth(4).textContent(), POLL).toBe("deploy #1");
      expect(
        await card("production")
          .getByRole("button", { name: /Deploy/ })
          .count(),
      ).toBe(0);
      expect(await card("production").getByRole("button", { name: "Propose…" }).count()).toBe(1);

      // Propose production from the variant's latest version: the preview says what it would change.
      await page.getByRole("link", { name: "main", exact: true }).click();
      await page.locator(".revisions summary").first().click();
      await page.getByRole("link", { name: "Propose a deploy of v3" }).click();
      await page.getByRole("heading", { name: "Propose a deploy" }).waitFor(POLL);
      await page.getByLabel("Environment").selectOption("production");
      await page.getByText("Nothing runs in production yet").waitFor(POLL);
      await page.getByLabel("Environment").selectOption("staging");
      const changes = page.getByRole("table", { name: "What the proposal would change in staging" });
      await expect
        .poll(() => changes.locator("tbody th, tbody td").allTextContents(), POLL)
        .toEqual(["/params/temperature", "changed", "0.7", "0.2"]);
      await checkPage(page, "propose");
      await page.getByLabel("Environment").selectOption("production");
      await page.getByLabel("Title").fill("Ship revision 3");
      await page.getByRole("button", { name: "Propose" }).click();
      await page.getByRole("heading", { name: /^Ship revision 3/ }).waitFor(POLL);
      const requestUrl = new URL(page.url()).pathname;
      const requestId = requestUrl.split("/").pop() as string;
      const facts = () => page.locator("dl.facts dd").allTextContents();
      await expect
        .poll(facts, POLL)
        .toEqual([
          "Deploy main · v3 in production of team-app",
          "0 of 1 required (production is protected)",
          expect.stringMatching(/^ed, /),
          "1",
          expect.any(String),
        ]);

      // The author's own approval: refused, in the API's words.
      await page.getByRole("button", { name: "Approve" }).click();
      const refused = page.locator("form[aria-label=Review] [role=alert]");
      await refused.waitFor(POLL);
      expect(await refused.textContent()).toBe("Refused: 403 You cannot approve your own change request.");
      await checkPage(page, "change-request");

      // A second member approves, from a shared link to the request.
      const kim = await signedIn(world, keys.extra[KIM], { path: `/console/change-requests/${requestId}` });
      try {
        await kim.page.getByLabel("Comment (optional with an approval or a decline)").fill("Looks right");
        await kim.page.getByRole("button", { name: "Approve" }).click();
        await kim.page.getByText("approved", { exact: true }).waitFor(POLL);
        expect(await kim.page.locator(".reviews li").allTextContents()).toEqual([
          expect.stringMatching(/^kim approved version 1, .*Looks right$/),
        ]);
        expect(kim.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
      } finally {
        await kim.close();
      }

      // The author applies it.
      await page.reload();
      await expect.poll(() => facts().then((all) => all[1]), POLL).toBe("1 of 1 required (production is protected)");
      await page.getByRole("button", { name: "Apply to production" }).click();
      await page.getByText("applied", { exact: true }).waitFor(POLL);
      await expect.poll(() => facts().then((all) => all[4]), POLL).toMatch(/ by ed, as deploy #1 of production$/);
      // Production moved (by this request): history now, not a conflict.
      expect(await page.locator(".error", { hasText: "Conflict:" }).count()).toBe(0);
      await checkPage(page, "change-request-applied");

      // In production's history, and in the audit log with the request it came from.
      await page.locator("dl.facts").getByRole("link", { name: "production" }).first().click();
      await page.getByRole("heading", { name: "History of production" }).waitFor(POLL);
      await expect
        .poll(() => page.locator("tbody tr").allInnerTexts(), POLL)
        .toEqual([expect.stringMatching(/^deploy #1\tmain · v3\trevision 3\ted\t.+\tShip revision 3\tcurrent$/)]);
      // The audit log is its owners' and workspace admins': to the editor, the API's refusal; to the owner, the deploy
      // with the request it came from, by a shared link with the filters in it.
      await page.getByRole("link", { name: "Activity" }).click();
      const forbidden = await read(keys.editor, `/events?organization_id=${DEMO_ORG}`);
      expect(forbidden.status).toBe(403);
      await expect.poll(() => page.locator("main [role=alert]").textContent(), POLL).toBe(`403 ${forbidden.body.detail}`);
      const auditor = await signedIn(world, keys.owner, {
        path: `/console/organizations/${DEMO_ORG}/activity?type=environment.deployed&app_id=${appId}`,
      });
      try {
        const log = auditor.page;
        await expect
          .poll(() => log.locator("tbody th").allTextContents(), POLL)
          .toEqual([
            expect.stringMatching(/^ed deployed \S+ · v\d+ to production$/),
            expect.stringMatching(/^ed deployed \S+ · v\d+ to staging$/),
          ]);
        const newest = log.locator("tbody tr").first();
        await newest.getByText("JSON of environment.deployed").click();
        const { data } = JSON.parse((await newest.locator("pre").textContent()) as string);
        expect(data).toMatchObject({ app_id: appId, environment: "production", change_request_id: requestId });
        expect(await newest.getByRole("link", { name: "Its change request" }).getAttribute("href")).toBe(
          `${BASE_PATH}/console/change-requests/${requestId}`,
        );
        await checkPage(log, "activity");
        const logged = await read(keys.owner, `/events?organization_id=${DEMO_ORG}&app_id=${appId}&type=environment.deployed`);
        expect(logged.body.events.map((event: { data: { environment: string } }) => event.data.environment)).toEqual([
          "production",
          "staging",
        ]);
        expect(auditor.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
      } finally {
        await auditor.close();
      }

      // The change requests of production: this one, applied.
      await page.getByRole("link", { name: "Change requests" }).click();
      await page.getByLabel("Environment").selectOption("production");
      await expect
        .poll(() => page.locator("tbody tr").allInnerTexts(), POLL)
        .toEqual([expect.stringMatching(/^Ship revision 3\tteam-app\tproduction\tDeploy main · v3\tapplied\t1 of 1\ted\t/)]);
      await checkPage(page, "change-requests");

      // A revert proposed after its preview: staging, now on the latest revision, back to its first deploy.
      await page.getByRole("link", { name: "team-app" }).first().click();
      await deployToStaging("v3 (latest)");
      await expect.poll(() => card("staging").locator("dd").nth(4).textContent(), POLL).toBe("deploy #2");
      await card("staging").getByRole("link", { name: "History and revert" }).click();
      await page.getByRole("link", { name: "Propose a revert to deploy #1 (main · v2)" }).click();
      await page.getByRole("heading", { name: "Propose a revert of staging" }).waitFor(POLL);
      const preview = page.getByRole("table", { name: "What the proposal would change in staging" });
      await expect
        .poll(() => preview.locator("tbody th, tbody td").allTextContents(), POLL)
        .toEqual(["/params/temperature", "changed", "0.2", "0.7"]);
      await page.getByLabel("Title").fill("Back to 0.7");
      await page.getByRole("button", { name: "Propose" }).click();
      await page.getByRole("heading", { name: /^Back to 0\.7/ }).waitFor(POLL);
      await expect
        .poll(facts, POLL)
        .toEqual([
          "Revert to main · v2 in staging of team-app",
          "0 of 1 required",
          expect.stringMatching(/^ed, /),
          "1",
          expect.any(String),
        ]);
      await page.getByRole("button", { name: "Cancel the request" }).click();
      await page.getByText("cancelled", { exact: true }).waitFor(POLL);
      expect(editor.problems.pageErrors).toEqual([]);
      expect(editor.problems.offOrigin).toEqual([]);
    } finally {
      await editor.close();
    }
  });

  it("shows a viewer the API's refusal of an approval, and the owner the team, keys and webhooks pages", async () => {
    // An open request on the demo app's staging, made through the API by the editor.
    const variants = await read(keys.editor, `/apps/${DEMO_APP_ID}/variants`);
    const revisions = await read(keys.editor, `/variants/${variants.body[0].variant_id}/revisions`);
    const proposed = await api(world.worker, "POST", `${BASE_PATH}/change-requests`, keys.editor, {
      app_id: DEMO_APP_ID,
      environment: "staging",
      variant_revision_id: revisions.body[revisions.body.length - 1].id,
      title: "Viewer's turn",
    });
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(200);
    const reviews = `${BASE_PATH}/change-requests/${proposed.body.id}/reviews`;
    const direct = await api(world.worker, "POST", reviews, keys.viewer, { kind: "approve", version: 1 });
    expect(direct.status).toBe(403);

    const viewer = await signedIn(world, keys.viewer, { path: `/console/change-requests/${proposed.body.id}` });
    try {
      const { page } = viewer;
      // By keyboard: the control focused, Enter.
      await page.getByRole("button", { name: "Approve" }).focus();
      await page.keyboard.press("Enter");
      const refused = page.locator("form[aria-label=Review] [role=alert]");
      await refused.waitFor(POLL);
      expect(await refused.textContent()).toBe(`Refused: 403 ${direct.body.detail}`);
      // Cancel is its author's, an owner's or a workspace admin's: disabled, the reason on hover.
      const cancel = page.getByRole("button", { name: "Cancel the request" });
      expect(await cancel.getAttribute("aria-disabled")).toBe("true");
      expect(await cancel.getAttribute("title")).toBe("Only its author, an owner or a workspace admin may rebase or cancel it");
      await checkPage(page, "change-request-viewer");
      // Webhooks are its owners' and workspace admins': the API's refusal, as it words it.
      const webhooks = await read(keys.viewer, `/webhooks?organization_id=${DEMO_ORG}`);
      expect(webhooks.status).toBe(403);
      await page.goto(`${world.worker.url}${BASE_PATH}/console/organizations/${DEMO_ORG}/webhooks`);
      await expect.poll(() => page.locator("main [role=alert]").textContent(), POLL).toBe(`403 ${webhooks.body.detail}`);
      expect(viewer.problems.pageErrors).toEqual([]);
      expect(viewer.problems.offOrigin).toEqual([]);
    } finally {
      await viewer.close();
    }

    const owner = await signedIn(world, keys.owner, { path: `/console/organizations/${DEMO_ORG}/team` });
    const { page } = owner;
    page.on("dialog", (dialog) => void dialog.accept());
    try {
      // Members and their roles, as the API lists them.
      const organization = await read(keys.owner, `/organizations/${DEMO_ORG}`);
      const members = organization.body.workspaces[0].members.map(
        (member: { user: { username: string } }) => member.user.username,
      );
      const table = page.getByRole("table", { name: "Members and their roles" });
      await expect.poll(() => table.locator("tbody th").allTextContents(), POLL).toEqual(members);
      expect(await page.getByLabel("Role of ed").inputValue()).toBe("editor");

      // An invitation, its token shown once; resent, under a new token.
      await page.getByLabel("Email").fill("new@example.com");
      await page.getByRole("form", { name: "Invite" }).getByLabel("Role").selectOption("editor");
      await page.getByRole("button", { name: "Invite" }).click();
      const token = page.locator(".shown-once code");
      await token.waitFor(POLL);
      const first = await token.textContent();
      const invitations = page.getByRole("table", { name: "Open invitations" });
      await expect.poll(() => invitations.locator("tbody th").allTextContents(), POLL).toEqual(["new@example.com"]);
      await invitations.getByRole("button", { name: "Resend to new@example.com" }).click();
      await expect.poll(() => token.textContent(), POLL).not.toBe(first);

      // A read-only key of the owner's: shown once, listed, then revoked; it fails from then on.
      await page.getByLabel("Read-only").check();
      await page.getByRole("button", { name: "Create a key" }).click();
      await expect.poll(() => page.locator(".shown-once code").last().textContent(), POLL).toMatch(/^[^.]+\.[0-9a-f]+$/);
      const key = (await page.locator(".shown-once code").last().textContent()) as string;
      const prefix = key.split(".")[0];
      const listed = await read(keys.owner, "/keys");
      expect(listed.body.find((item: { prefix: string }) => item.prefix === prefix)).toMatchObject({ read_only: true });
      expect((await read(key, "/profile")).status).toBe(200);
      await checkPage(page, "team");
      await page.getByRole("button", { name: `Revoke ${prefix}` }).click();
      await page.getByRole("button", { name: `Revoke ${prefix}` }).waitFor({ state: "detached", ...POLL });
      expect((await read(key, "/profile")).status).toBe(401);

      // A webhook's deliveries (to a port nothing listens on), and one sent again.
      const webhook = await api(world.worker, "POST", `${BASE_PATH}/webhooks`, keys.owner, {
        url: "http://127.0.0.1:9/hook",
        events: ["app.created"],
      });
      expect(webhook.status, JSON.stringify(webhook.body)).toBe(200);
      expect((await api(world.worker, "POST", `${BASE_PATH}/apps`, keys.owner, { app_name: "hooked" })).status).toBe(200);
      await page.getByRole("link", { name: "Activity" }).click();
      await page.getByRole("link", { name: "Webhooks and their deliveries" }).click();
      await page.getByRole("button", { name: "Show the deliveries" }).click();
      const deliveries = page.getByRole("table", { name: "Deliveries, newest first" });
      await expect.poll(() => deliveries.locator("tbody th").allTextContents(), POLL).toEqual(["app.created"]);
      await deliveries.getByRole("button", { name: "Redeliver app.created" }).click();
      const listedDeliveries = await read(keys.owner, `/webhooks/${webhook.body.id}/deliveries`);
      expect(listedDeliveries.body.deliveries.map((delivery: { event_type: string }) => delivery.event_type)).toEqual([
        "app.created",
      ]);
      await checkPage(page, "webhooks");
      expect(owner.problems.pageErrors).toEqual([]);
      expect(owner.problems.offOrigin).toEqual([]);
    } finally {
      await owner.close();
    }
  });

  it("shows a conflict as the drift and the diff, refuses the apply in the API's words, rebases, schedules and unschedules; a read-only key writes nothing", async () => {
    // The demo app's development runs main; a request to deploy experiment there, approved by the second member.
    const variants = await read(keys.editor, `/apps/${DEMO_APP_ID}/variants`);
    const variantId = (name: string) =>
      variants.body.find((variant: { config_name: string }) => variant.config_name === name).variant_id as string;
    const experiment = await read(keys.editor, `/variants/${variantId("experiment")}/revisions`);
    const proposed = await api(world.worker, "POST", `${BASE_PATH}/change-requests`, keys.editor, {
      app_id: DEMO_APP_ID,
      environment: "development",
      variant_revision_id: experiment.body[experiment.body.length - 1].id,
      title: "Try the experiment",
    });
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(200);
    const id = proposed.body.id as string;
    const approved = await api(world.worker, "POST", `${BASE_PATH}/change-requests/${id}/reviews`, keys.extra[KIM], {
      kind: "approve",
      version: 1,
    });
    expect(approved.body.state).toBe("approved");
    // Development moves on: main's first revision deployed directly.
    const moved = await api(world.worker, "POST", `${BASE_PATH}/variants/configs/deploy`, keys.editor, {
      variant_ref: { slug: "main", version: 1 },
      environment_ref: { slug: "development" },
      application_ref: { id: DEMO_APP_ID },
    });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const sides = (await read(keys.editor, `/change-requests/${id}/diff`)).body;
    const refusal = await api(world.worker, "POST", `${BASE_PATH}/change-requests/${id}/apply?dry_run=true`, keys.editor);
    expect(refusal.body.detail.code).toBe("change_request_conflict");

    const editor = await signedIn(world, keys.editor, { path: `/console/change-requests/${id}` });
    const { page } = editor;
    try {
      const banner = page.locator(".error", { hasText: "Conflict:" });
      await banner.waitFor(POLL);
      expect(await banner.textContent()).toBe(
        `Conflict: development changed since this request was made (deploy #${sides.base.environment_revision} then, ` +
          `deploy #${sides.current.environment_revision} now); applying it is refused until it is rebased on development as it is now.`,
      );
      const paths = (table: string) => page.getByRole("table", { name: table }).locator("tbody th").allTextContents();
      const pathsOf = (diff: { changes: { path: string }[] }) =>
        diff.changes.map((change) => change.path || "(the whole document)");
      expect(await paths("development: from the base to now")).toEqual(pathsOf(sides.drift));
      expect(await paths("From development now to the proposal")).toEqual(pathsOf(sides.diff));
      expect(sides.drift.identical).toBe(false);
      // Applying is refused until a rebase (the API's dry-run above): Apply disabled with the reason, Rebase first.
      const apply = page.getByRole("button", { name: "Apply to development" });
      expect(await apply.getAttribute("aria-disabled")).toBe("true");
      expect(await apply.getAttribute("title")).toBe("development changed since this request was made: rebase it first");
      await checkPage(page, "conflict");

      // Rebased: on development as it is now, open again, the approval stale.
      await page.getByRole("button", { name: "Rebase on development now" }).click();
      await page.getByText("open", { exact: true }).waitFor(POLL);
      expect(await banner.count()).toBe(0);
      expect(await page.locator("dl.facts dd").allTextContents()).toEqual([
        "Deploy experiment · v1 in development of demo-app",
        "0 of 1 required",
        expect.stringMatching(/^ed, /),
        "2",
        expect.any(String),
      ]);
      expect(await page.locator(".reviews li").allTextContents()).toEqual([
        expect.stringMatching(/^kim approved version 1 \(stale: the proposal changed since, so it counts for nothing\), /),
      ]);

      // Approved again, scheduled for tomorrow, unscheduled.
      const again = await api(world.worker, "POST", `${BASE_PATH}/change-requests/${id}/reviews`, keys.extra[KIM], {
        kind: "approve",
        version: 2,
      });
      expect(again.body.state).toBe("approved");
      await page.reload();
      const tomorrow = new Date(Date.now() + 86_400_000);
      const local = `${tomorrow.getFullYear()}-${`${tomorrow.getMonth() + 1}`.padStart(2, "0")}-${`${tomorrow.getDate()}`.padStart(2, "0")}T09:30`;
      await page.getByLabel("Apply at (your time zone)").fill(local);
      await page.getByRole("button", { name: "Schedule" }).click();
      await page.getByText("scheduled", { exact: true }).waitFor(POLL);
      const scheduled = (await read(keys.editor, `/change-requests/${id}`)).body.scheduled_at;
      expect(await page.locator("dl.facts time").nth(1).getAttribute("title")).toBe(scheduled);
      await page.getByRole("button", { name: "Unschedule" }).click();
      await page.getByText("approved", { exact: true }).waitFor(POLL);

      // On a phone's width: nothing cut off sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await checkPage(page, "change-request-narrow");
      expect(editor.problems.pageErrors).toEqual([]);
      expect(editor.problems.offOrigin).toEqual([]);
    } finally {
      await editor.close();
    }

    // A read-only key sees the request, its diff and reviews, and no write control (copying the patch writes nothing).
    const readOnly = await signedIn(world, keys.readOnly, { path: `/console/change-requests/${id}` });
    try {
      await readOnly.page.getByRole("heading", { name: "Reviews" }).waitFor(POLL);
      const writes = readOnly.page.locator("main button:not(:text('Copy the patch')), main textarea, main input");
      expect(await writes.count()).toBe(0);
      await readOnly.page.goto(
        `${world.worker.url}${BASE_PATH}/console/apps/${DEMO_APP_ID}/propose?variant_revision_id=${experiment.body[0].id}`,
      );
      await readOnly.page.getByText("This key is read-only: it proposes nothing.").waitFor(POLL);
      expect(readOnly.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await readOnly.close();
    }
  });
});
