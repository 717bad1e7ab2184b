/**
 * What the console's browser tests (test/browser/console*.test.ts) share: `wrangler dev` with the demo seed under
 * BASE_PATH=/api, members of the demo organization made through the API as a team would, Chromium, and each page's
 * check (axe-core: no serious or critical violation in either colour scheme; screenshots under .artifacts/console/).
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContextOptions, Page } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import { api, removeTempDir } from "../cli/helpers";
import { ROOT } from "../support/processes";
import { type DevServer, startDev } from "../support/wrangler";
import { chromiumOrSkip, DEMO_KEY, launchChromium, openPage, POLL, seededFolder } from "./browser";

export const BASE_PATH = "/api";
export const DEMO_ORG = "00000000-0000-7000-8000-000000000002";
export const DEMO_WORKSPACE = "00000000-0000-7000-8000-000000000003";
export const DEMO_PROJECT = "00000000-0000-7000-8000-000000000004";
const SCREENSHOTS = join(ROOT, ".artifacts", "console");
const AXE = readFileSync(join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");

/**
 * The world of one test file, made before its tests (skipped without Chromium, as `chromiumOrSkip` says): the worker,
 * the browser, and keys of the demo organization's owner, an editor (ed), a viewer (vic) and a read-only key of the
 * owner's. `more` invites further members, by email and role, into `keys.extra`.
 */
export function consoleWorld(file: string, more: Record<string, string> = {}) {
  const world = {
    hasChromium: chromiumOrSkip(file),
    dir: "",
    browser: undefined as unknown as Browser,
    worker: undefined as unknown as DevServer,
    keys: { owner: DEMO_KEY, editor: "", viewer: "", readOnly: "", extra: {} as Record<string, string> },
  };

  /** A new member of the demo organization in `role`, by invitation; their first key. */
  async function invite(email: string, role: string): Promise<string> {
    const workspace = `${BASE_PATH}/organizations/${DEMO_ORG}/workspaces/${DEMO_WORKSPACE}`;
    const invited = await api(world.worker, "POST", `${workspace}/invite`, DEMO_KEY, [{ email, roles: [role] }]);
    expect(invited.status, JSON.stringify(invited.body)).toBe(200);
    const accepted = await fetch(`${world.worker.url}${workspace}/invite/accept?project_id=${DEMO_PROJECT}`, {
      method: "POST",
      headers: { Authorization: "", "Content-Type": "application/json" },
      body: JSON.stringify({ token: invited.body.token }),
    });
    expect(accepted.status).toBe(200);
    return ((await accepted.json()) as { api_key: string }).api_key;
  }

  beforeAll(async () => {
    if (!world.hasChromium) return;
    world.dir = await seededFolder("console");
    world.worker = await startDev({
      name: "console",
      persistTo: world.dir,
      readyPath: `${BASE_PATH}/health`,
      // The local send_email binding logs each mail at info (`mailTo` reads it there); the CLI helpers this file uses
      // set WRANGLER_LOG=error for the process, which wrangler would inherit.
      logLevel: "info",
      // As `npm run dev`: invitations mailed (nowhere) with their token in the answer, so that a new member's key is made;
      // webhooks to this machine.
      vars: {
        BASE_PATH,
        WEBHOOKS_ALLOW_LOCAL: "true",
        INVITATION_EMAIL_FROM: "invitations@localhost",
        PUBLIC_BASE_URL: "http://localhost:8787",
        INVITATION_TOKEN_IN_ANSWER: "true",
      },
    });
    world.keys.editor = await invite("ed@example.com", "editor");
    world.keys.viewer = await invite("vic@example.com", "viewer");
    for (const [email, role] of Object.entries(more)) world.keys.extra[email] = await invite(email, role);
    const readOnly = await api(world.worker, "POST", `${BASE_PATH}/keys?workspace_id=${DEMO_WORKSPACE}&read_only=true`, DEMO_KEY);
    expect(readOnly.status).toBe(200);
    world.keys.readOnly = readOnly.body;
    world.browser = await launchChromium();
    mkdirSync(SCREENSHOTS, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await world.browser?.close();
    await world.worker?.stop();
    await removeTempDir(world.dir);
  });

  return world;
}

export type ConsoleWorld = ReturnType<typeof consoleWorld>;

const AXE_VIOLATIONS = `axe.run(document, { resultTypes: ["violations"] }).then((results) =>
  results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => ({ id: violation.id, targets: violation.nodes.map((node) => node.target.join(" ")) })))`;

/**
 * No axe-core violation of impact serious or critical on the page as it is, in the light and in the dark colour
 * scheme (the console follows the system's); then its screenshots, as `name`.png and `name`-dark.png. The page is left
 * in the light scheme, as Playwright opens it.
 */
export async function checkPage(page: Page, name: string) {
  // Evaluated through the DevTools protocol, which the page's CSP (no inline script) does not govern.
  await page.evaluate(AXE);
  for (const colorScheme of ["dark", "light"] as const) {
    await page.emulateMedia({ colorScheme });
    expect(await page.evaluate(AXE_VIOLATIONS), `${name} (${colorScheme})`).toEqual([]);
    const suffix = colorScheme === "dark" ? "-dark" : "";
    await page.screenshot({ path: join(SCREENSHOTS, `${name}${suffix}.png`), fullPage: true });
  }
}

/** The console opened at `path` (its root unless said) in a context of `options`, and signed in with `key`. */
export async function signedIn(
  world: ConsoleWorld,
  key: string,
  { path = "/console", ...options }: BrowserContextOptions & { path?: string } = {},
) {
  const opened = await openPage(world.browser, world.worker.url, `${BASE_PATH}${path}`, options);
  await opened.page.getByLabel("API key").fill(key);
  await opened.page.getByRole("button", { name: "Sign in" }).click();
  await opened.page.getByRole("button", { name: "Sign out" }).waitFor(POLL);
  return opened;
}

/**
 * The text of the latest mail wrangler dev's local `send_email` binding took for `to`: it writes each mail's text to a
 * file and logs the file's path under the mail's headers. With `unlike`, the text of an earlier mail to `to`, it waits
 * for a newer one (on a loaded machine the next mail is logged a while after the request that sent it).
 */
export async function mailTo(world: ConsoleWorld, to: string, unlike?: string): Promise<string> {
  const sent = new RegExp(`To: ${to.replace(/[.+]/g, "\\$&")}\\s[\\s\\S]*?Text: (\\S+\\.txt)`, "g");
  for (const deadline = Date.now() + POLL.timeout; Date.now() < deadline; ) {
    const file = [...world.worker.tail().matchAll(sent)].at(-1)?.[1];
    const text = file && readFileSync(file, "utf8");
    if (text && text !== unlike) return text;
    await new Promise((wait) => setTimeout(wait, 100));
  }
  throw new Error(`no mail to ${to} in wrangler dev's output:\n${world.worker.tail().slice(-3_000)}`);
}
