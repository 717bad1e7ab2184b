/**
 * The console's daily management (docs/CONSOLE.md "Daily use", points 5 to 7) in headless Chromium, through the real
 * API: a webhook made, edited, tested, its secret rotated, disabled and enabled, deleted; an invitation accepted from
 * its mail's link by a new person and by a person with an account; a role change confirmed, and cancelled; the
 * activity as sentences with each event's JSON; a table's labels on a narrow screen. Every state checked by axe-core
 * in both colour schemes and kept as screenshots (test/browser/console-world.ts).
 */
import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../cli/helpers";
import { keepIdleConnections } from "../support/loopback-keep-alive";
import { DEMO_APP_ID, openPage, POLL } from "./browser";
import { BASE_PATH, checkPage, consoleWorld, DEMO_ORG, DEMO_WORKSPACE, mailTo, signedIn } from "./console-world";

const RITA = "rita@example.com";
const world = consoleWorld("test/browser/console-manage.test.ts", { [RITA]: "viewer" });
const { keys } = world;
const SECOND_ORG = "01a21526-e400-7000-8000-000000000200";
const SECOND_WORKSPACE = "01a21526-e400-7000-8000-000000001200";

/** GET of the API as `key`, under BASE_PATH. */
const read = (key: string, path: string) => api(world.worker, "GET", `${BASE_PATH}${path}`, key);

/** A webhook's receiver on this machine: each request's headers and body, answered 200 "ok". */
const received: { headers: IncomingHttpHeaders; body: string }[] = [];
const receiver = keepIdleConnections(
  createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8").on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      received.push({ headers: request.headers, body });
      response.end("ok");
    });
  }),
);
beforeAll(() => new Promise<void>((listening) => receiver.listen(0, "127.0.0.1", listening)));
afterAll(() => new Promise<void>((closed) => receiver.close(() => closed())));

/** Whether one of a request's Standard Webhooks signatures is `secret`'s. */
function signedWith(secret: string, { headers, body }: (typeof received)[number]): boolean {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key)
    .update(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`)
    .digest("base64");
  return String(headers["webhook-signature"]).split(" ").includes(`v1,${expected}`);
}

/** The console's accept link in an invitation mail, at the test's Worker (the mail names PUBLIC_BASE_URL). */
/** The last mail read for each address: the next read waits for a newer one. */
const mailsRead = new Map<string, string>();

async function acceptLinkMailedTo(email: string): Promise<string> {
  const mail = await mailTo(world, email, mailsRead.get(email));
  mailsRead.set(email, mail);
  const links = mail.split("\n").filter((line) => line.includes("/console/"));
  expect(links).toHaveLength(1);
  const link = new URL(links[0]);
  expect(link.origin).toBe("http://localhost:8787");
  return `${link.pathname}${link.search}${link.hash}`;
}

describe.skipIf(!world.hasChromium)("the console, for daily management", () => {
  it("makes, edits, tests, rotates, disables, enables and deletes a webhook; a refused URL shows beside its field", async () => {
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const owner = await signedIn(world, keys.owner, { path: `/console/organizations/${DEMO_ORG}/webhooks` });
    const { page } = owner;
    await owner.context.grantPermissions(["clipboard-read", "clipboard-write"]);
    page.on("dialog", (dialog) => void dialog.accept());
    try {
      const form = page.getByRole("form", { name: "New webhook" });
      await form.waitFor(POLL);
      // A URL the API refuses: its words under the URL, and nothing made.
      const refused = await api(world.worker, "POST", `${BASE_PATH}/webhooks`, keys.owner, {
        url: "http://10.0.0.1/hook",
        events: ["app.created"],
      });
      expect(refused.status).toBe(422);
      await form.getByLabel("URL").fill("http://10.0.0.1/hook");
      await form.getByLabel("app.created").check();
      await form.getByRole("button", { name: "Create the webhook" }).click();
      const urlError = form.locator("#new-webhook-url-error");
      await urlError.waitFor(POLL);
      expect(await urlError.textContent()).toBe(refused.body.detail[0].msg);
      expect(await form.getByLabel("URL").getAttribute("aria-describedby")).toBe("new-webhook-url-error");
      await checkPage(page, "webhook-url-refused");
      expect((await read(keys.owner, `/webhooks?organization_id=${DEMO_ORG}`)).body).toEqual([]);

      // Made: its secret shown once, copied.
      await form.getByLabel("URL").fill(hookUrl);
      await form.getByLabel("environment.deployed").check();
      await form.getByLabel("Description (optional)").fill("the test's receiver");
      await form.getByRole("button", { name: "Create the webhook" }).click();
      const shown = page.locator(".shown-once");
      await shown.waitFor(POLL);
      expect(await shown.locator("p").textContent()).toBe(
        `The signing secret of the webhook to ${hookUrl}. Shown this once: you will not see it again, so copy it now.`,
      );
      const secret = (await shown.locator("code").textContent()) as string;
      expect(secret).toMatch(/^whsec_/);
      await shown.getByRole("button", { name: /^Copy/ }).click();
      await expect.poll(() => shown.getByRole("status").last().textContent(), POLL).toBe("Copied");
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(secret);
      const [made] = (await read(keys.owner, `/webhooks?organization_id=${DEMO_ORG}`)).body;
      expect(made).toMatchObject({
        url: hookUrl,
        events: ["app.created", "environment.deployed"],
        description: "the test's receiver",
        enabled: true,
      });
      const card = page.locator("section.card", { has: page.getByRole("heading", { name: hookUrl }) });
      // Its id, copyable.
      await card.getByRole("button", { name: "Copy the webhook's id" }).click();
      await expect.poll(() => card.locator(".copyable [role=status]").textContent(), POLL).toBe("Copied");
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(made.id);
      await checkPage(page, "webhook-created");

      // Edited: other types, another description.
      await card.getByRole("button", { name: "Edit" }).click();
      const edit = page.getByRole("form", { name: `Edit the webhook to ${hookUrl}` });
      await edit.getByLabel("environment.deployed").uncheck();
      await edit.getByLabel("app.renamed").check();
      await edit.getByLabel("Description (optional)").fill("renames too");
      await checkPage(page, "webhook-editing");
      await edit.getByRole("button", { name: "Save the webhook" }).click();
      await edit.waitFor({ state: "detached", ...POLL });
      expect((await read(keys.owner, `/webhooks/${made.id}`)).body).toMatchObject({
        events: ["app.created", "app.renamed"],
        description: "renames too",
      });

      // Tested: the attempt as the API answered it, the receiver's request signed with the secret.
      await card.getByRole("button", { name: "Send a test" }).click();
      const outcome = card.locator(".test-outcome");
      await outcome.waitFor(POLL);
      expect(await outcome.textContent()).toMatch(/^Test event sent: answered 200 in \d+ ms: ok$/);
      const test = received.at(-1) as (typeof received)[number];
      expect(JSON.parse(test.body)).toMatchObject({
        type: "webhook.test",
        data: { type: "webhook.test", data: { webhook_id: made.id, url: hookUrl } },
      });
      expect(signedWith(secret, test)).toBe(true);

      // Rotated: the new secret shown once; a test is signed with it (and with the previous one, for a day).
      await card.getByRole("button", { name: "Rotate the secret" }).click();
      const rotated = card.locator(".shown-once");
      await rotated.waitFor(POLL);
      const newSecret = (await rotated.locator("code").textContent()) as string;
      expect(newSecret).toMatch(/^whsec_/);
      expect(newSecret).not.toBe(secret);
      expect(await rotated.textContent()).toContain("you will not see it again");
      await checkPage(page, "webhook-rotated");
      await card.getByRole("button", { name: "Send a test" }).click();
      await expect.poll(() => received.length, POLL).toBe(2);
      expect([signedWith(newSecret, received[1]), signedWith(secret, received[1])]).toEqual([true, true]);
      expect(await rotated.count()).toBe(0);

      // Disabled, then enabled again.
      await card.getByRole("button", { name: "Disable" }).click();
      await card.getByRole("button", { name: "Enable" }).waitFor(POLL);
      expect(await card.locator("dd").nth(2).textContent()).toBe("disabled");
      expect((await read(keys.owner, `/webhooks/${made.id}`)).body.enabled).toBe(false);
      await checkPage(page, "webhook-disabled");
      await card.getByRole("button", { name: "Enable" }).click();
      await card.getByRole("button", { name: "Disable" }).waitFor(POLL);
      expect((await read(keys.owner, `/webhooks/${made.id}`)).body.enabled).toBe(true);

      // An event it takes: its delivery listed.
      expect((await api(world.worker, "POST", `${BASE_PATH}/apps`, keys.owner, { app_name: "hooked" })).status).toBe(200);
      await card.getByRole("button", { name: "Show the deliveries" }).click();
      const deliveries = card.getByRole("table", { name: "Deliveries, newest first" });
      await expect.poll(() => deliveries.locator("tbody th").allTextContents(), POLL).toEqual(["app.created"]);

      // Deleted, once confirmed.
      await card.getByRole("button", { name: "Delete" }).click();
      await page.getByText("No webhook yet.").waitFor(POLL);
      expect((await read(keys.owner, `/webhooks?organization_id=${DEMO_ORG}`)).body).toEqual([]);
      // The one refusal the browser logs is the URL's 422, shown beside the field.
      expect(owner.problems).toEqual({
        pageErrors: [],
        consoleErrors: ["Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"],
        offOrigin: [],
      });
    } finally {
      await owner.close();
    }
  });

  it("accepts an invitation from its mail's link: a new person's key shown once and signed in; a member signs in first", async () => {
    const newcomer = "newcomer@example.com";
    const invite = (org: string, workspace: string, email: string) =>
      api(world.worker, "POST", `${BASE_PATH}/organizations/${org}/workspaces/${workspace}/invite`, keys.owner, [
        { email, roles: ["editor"] },
      ]);
    expect((await invite(DEMO_ORG, DEMO_WORKSPACE, newcomer)).status).toBe(200);
    const link = await acceptLinkMailedTo(newcomer);
    expect(link).toMatch(
      new RegExp(
        `^${BASE_PATH}/console/organizations/${DEMO_ORG}/workspaces/${DEMO_WORKSPACE}/invite/accept\\?project_id=[^#]+#token=[0-9a-f]{64}$`,
      ),
    );

    // A new person: no key asked; the account made, its key shown once; then signed in with it.
    const first = await openPage(world.browser, world.worker.url, link);
    let key: string;
    try {
      const { page } = first;
      await page.getByRole("heading", { name: "Accept an invitation" }).waitFor(POLL);
      await checkPage(page, "invitation");
      await page.getByRole("button", { name: "Accept and make my account" }).click();
      await page.getByRole("heading", { name: "Invitation accepted" }).waitFor(POLL);
      expect(await page.getByRole("status").first().textContent()).toBe(`${newcomer} joined the organization as editor.`);
      key = (await page.locator(".shown-once code").textContent()) as string;
      expect(await page.locator(".shown-once").textContent()).toContain("you will not see it again");
      const profile = await read(key, "/profile");
      expect([profile.status, profile.body.email]).toEqual([200, newcomer]);
      await checkPage(page, "invitation-accepted");
      await page.getByRole("button", { name: "Continue to the console" }).click();
      await page.getByRole("button", { name: "Sign out" }).waitFor(POLL);
      expect(await page.locator(".who").textContent()).toBe(profile.body.username);
      await page.getByRole("heading", { name: /^Team of / }).waitFor(POLL);
      expect(first.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await first.close();
    }

    // The link again: the key is not shown twice; the API's refusal instead.
    const accepted = new URL(link, world.worker.url);
    const token = new URLSearchParams(accepted.hash.slice(1)).get("token");
    const used = await api(
      world.worker,
      "POST",
      `${accepted.pathname.replace("/console", "")}${accepted.search}`,
      "",
      { token },
      {
        Authorization: "",
      },
    );
    expect(used.status).toBe(409);
    const again = await openPage(world.browser, world.worker.url, link);
    try {
      await again.page.getByRole("button", { name: "Accept and make my account" }).click();
      const refusal = again.page.getByRole("alert");
      await refusal.waitFor(POLL);
      expect(await refusal.textContent()).toBe(`Not accepted: 409 ${used.body.detail}`);
      expect(await again.page.locator(".shown-once").count()).toBe(0);
    } finally {
      await again.close();
    }

    // A person with an account, invited into another organization: signs in with their key, then accepts.
    expect((await invite(SECOND_ORG, SECOND_WORKSPACE, newcomer)).status).toBe(200);
    const member = await openPage(world.browser, world.worker.url, await acceptLinkMailedTo(newcomer));
    try {
      const { page } = member;
      await page.getByLabel("Your API key").fill(key);
      await page.getByRole("button", { name: "Sign in" }).click();
      const accept = page.getByRole("button", { name: /^Accept as / });
      await accept.waitFor(POLL);
      await checkPage(page, "invitation-signed-in");
      await accept.click();
      await page.getByRole("heading", { name: "Invitation accepted" }).waitFor(POLL);
      expect(await page.locator(".shown-once").count()).toBe(0);
      const organizations = await read(key, "/organizations");
      expect(organizations.body.map((organization: { id: string }) => organization.id).sort()).toEqual(
        [DEMO_ORG, SECOND_ORG].sort(),
      );
      expect(member.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await member.close();
    }
  });

  it("confirms a role change before sending it: cancelled, nothing is sent; confirmed, the role changes", async () => {
    const owner = await signedIn(world, keys.owner, { path: `/console/organizations/${DEMO_ORG}/team` });
    const { page } = owner;
    const roleOfRita = async () => {
      const organization = await read(keys.owner, `/organizations/${DEMO_ORG}`);
      const members = organization.body.workspaces[0].members as { user: { email: string }; roles: { role_name: string }[] }[];
      return members.find((listed) => listed.user.email === RITA)?.roles.map((role) => role.role_name);
    };
    try {
      const select = page.getByLabel("Role of rita");
      await select.waitFor(POLL);
      const sent: string[] = [];
      page.on("request", (request) => {
        if (request.method() !== "GET") sent.push(`${request.method()} ${new URL(request.url()).pathname}`);
      });
      const asked: string[] = [];
      page.once("dialog", (dialog) => {
        asked.push(dialog.message());
        void dialog.dismiss();
      });
      await select.selectOption("editor");
      await expect.poll(() => asked.length, POLL).toBe(1);
      expect(asked[0]).toBe(
        "Change the role of rita (rita@example.com) from viewer to editor? It applies in every workspace of demo at once.",
      );
      expect(await select.inputValue()).toBe("viewer");
      expect(sent).toEqual([]);
      expect(await roleOfRita()).toEqual(["viewer"]);

      page.once("dialog", (dialog) => void dialog.accept());
      await select.selectOption("editor");
      await expect.poll(roleOfRita, POLL).toEqual(["editor"]);
      expect(sent).toEqual([`POST ${BASE_PATH}/workspaces/${DEMO_WORKSPACE}/roles`]);
      await expect.poll(() => select.inputValue(), POLL).toBe("editor");
      expect(owner.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await owner.close();
    }
  });

  it("copies an app's id and a key's prefix, saying so", async () => {
    const owner = await signedIn(world, keys.owner, { path: `/console/apps/${DEMO_APP_ID}` });
    const { page } = owner;
    await owner.context.grantPermissions(["clipboard-read", "clipboard-write"]);
    try {
      await page.getByRole("button", { name: "Copy the app's id" }).click();
      await expect.poll(() => page.locator(".copyable [role=status]").textContent(), POLL).toBe("Copied");
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(DEMO_APP_ID);
      await checkPage(page, "app-id-copied");
      await page.getByRole("link", { name: "Team" }).click();
      const prefix = keys.owner.split(".")[0];
      const keysTable = page.getByRole("table", { name: "Your API keys, oldest first" });
      await keysTable.getByRole("button", { name: `Copy the prefix ${prefix}` }).click();
      await expect.poll(() => page.evaluate("navigator.clipboard.readText()"), POLL).toBe(prefix);
      expect(owner.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await owner.close();
    }
  });

  it("lays the protection form out in one column, each checkbox beside its text", async () => {
    const owner = await signedIn(world, keys.owner, { path: `/console/organizations/${DEMO_ORG}/protection` });
    const { page } = owner;
    try {
      const form = page.locator("form.card", { has: page.getByRole("heading", { name: "staging" }) });
      await form.waitFor(POLL);
      const box = async (selector: string) =>
        (await form.locator(selector).first().boundingBox()) ?? { x: -1, y: -1, width: 0, height: 0 };
      const [number, check, label] = [await box("input[type=number]"), await box("label.check input"), await box("label.check")];
      // The fields' left edges line up, and a checkbox starts its label's line, level with its text (not centred
      // above it, as the labels' column layout put it).
      expect([number.x, check.x]).toEqual([label.x, label.x]);
      expect(Math.abs(check.y + check.height / 2 - (label.y + label.height / 2))).toBeLessThan(1);
      await checkPage(page, "protection-aligned");
    } finally {
      await owner.close();
    }
  });

  it("reads the activity as sentences, each event's JSON behind its toggle, and keeps a table's labels on a narrow screen", async () => {
    const deployed = await api(world.worker, "POST", `${BASE_PATH}/variants/configs/deploy`, keys.editor, {
      variant_ref: { slug: "main", version: 2 },
      environment_ref: { slug: "staging" },
      application_ref: { slug: "demo-app" },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const events = await read(keys.owner, `/events?organization_id=${DEMO_ORG}&type=environment.deployed&app_id=${DEMO_APP_ID}`);
    const [event] = events.body.events;
    const activity = await signedIn(world, keys.owner, {
      path: `/console/organizations/${DEMO_ORG}/activity?type=environment.deployed&app_id=${DEMO_APP_ID}`,
    });
    const { page } = activity;
    try {
      const rows = page.locator("tbody tr");
      const row = rows.first();
      await expect.poll(() => row.locator("th").textContent(), POLL).toBe("ed deployed main · v2 to staging");
      expect(await row.locator("pre").isVisible()).toBe(false);
      await row.getByText("JSON of environment.deployed").click();
      expect(JSON.parse((await row.locator("pre").textContent()) as string)).toEqual(event);
      await checkPage(page, "activity-sentences");

      // On a phone's width each cell shows its column's label.
      await page.setViewportSize({ width: 375, height: 800 });
      expect(await page.locator("thead").isVisible()).toBe(false);
      const labels = await page.evaluate(
        `[...document.querySelectorAll("tbody tr:first-child > *")].map((cell) => getComputedStyle(cell, "::before").content)`,
      );
      expect(labels).toEqual(['"When"', '"What"', '"App"', '"Details"']);
      await checkPage(page, "activity-narrow");
      expect(activity.problems).toEqual({ pageErrors: [], consoleErrors: [], offOrigin: [] });
    } finally {
      await activity.close();
    }
  });
});
