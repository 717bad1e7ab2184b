import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  accept,
  BASE_URL,
  createAccount,
  createOrganizationVia,
  createTeam,
  expectError,
  expectJson,
  FORBIDDEN,
  type IssuedInvitation,
  invite,
  type RequestOptions,
  send,
} from "../fixtures";
import { Tracker } from "../harness";
import { type Mail, mailbox } from "../mailbox";
import { databaseOf } from "../pool";

/*
 * Who may learn an invitation's token (issue 23): the mailbox's owner only, where invitations are mailed. The tests
 * run with mail on and the token handed back (vitest.config.ts); each case here sets the mode it is about.
 */

/** The service as deployed with mail set up: tokens are mailed, never in answers. */
const mailed = (binding: SendEmail): Partial<Env> => ({ INVITATION_EMAIL: binding, INVITATION_TOKEN_IN_ANSWER: "false" });
/** The service as deployed without mail: tokens in answers, for the inviter to pass on. */
const unmailed: Partial<Env> = { INVITATION_EMAIL_FROM: "", INVITATION_TOKEN_IN_ANSWER: "false" };

const inviteWith = (
  bindings: Partial<Env>,
  key: string,
  ids: { organizationId: string; workspaceId: string },
  email: string,
  role = "editor",
) =>
  send("POST", `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite`, {
    key,
    body: [{ email, roles: [role] }],
    bindings,
  });

const resendWith = (bindings: Partial<Env>, key: string, ids: { organizationId: string; workspaceId: string }, email: string) =>
  send("POST", `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite/resend`, {
    key,
    body: { email },
    bindings,
  });

/** The token and accept address a mail gives its reader. */
function readMail(mail: Mail) {
  const token = /"token":"([0-9a-f]{64})"/.exec(mail.text)?.[1];
  const url = /^ {2}(https:\/\/\S+\/invite\/accept\?project_id=\S+)$/m.exec(mail.text)?.[1];
  if (!token || !url) throw new Error(`no token or accept URL in the mail:\n${mail.text}`);
  return { token, url };
}

const UNMAILED_TOKEN_ALONE =
  "This invitation's token was not sent by email, so it alone makes no account: accept it with the invitee's own " +
  "API key. A new person's account is made by the service's operator; with INVITATION_EMAIL_FROM and PUBLIC_BASE_URL " +
  "set, invitations are mailed and a new person accepts with the mailed token alone";

let owner: Account;
beforeAll(async () => {
  owner = await createAccount();
});

let emails = 0;
const freshEmail = () => `person${++emails}-${crypto.randomUUID().slice(0, 8)}@bigcorp.example`;

describe("invitations mailed to the invitee", () => {
  it("mail the token with where to send it; the answer carries none; the mailed token alone makes the new account", async () => {
    const ids = await createOrganizationVia(owner.key, "Rocket");
    const { mails, binding } = mailbox();
    const email = freshEmail();
    const answer = await expectJson<Record<string, unknown>>(await inviteWith(mailed(binding), owner.key, ids, email));
    expect(answer).toEqual({
      email,
      role: "editor",
      organization_id: ids.organizationId,
      workspace_id: ids.workspaceId,
      project_id: expect.any(String),
      expires_at: expect.any(String),
    });
    expect(mails).toHaveLength(1);
    const [mail] = mails;
    expect(mail).toEqual({
      from: "invitations@apps.example.test",
      to: email,
      subject: "Invitation to join Rocket",
      text: expect.stringContaining(`${owner.username} invited you to the organization "Rocket" as editor.`),
    });
    const { token, url } = readMail(mail);
    const acceptPath = `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite/accept`;
    expect(url).toBe(`${BASE_URL}${acceptPath}?project_id=${answer.project_id}`);
    expect(mail.text).toContain(`before ${answer.expires_at}`);

    const joined = await expectJson<Record<string, unknown>>(
      await send("POST", url.slice(BASE_URL.length), { authorization: "", body: { token } }),
    );
    expect(joined).toEqual({
      user_id: expect.any(String),
      email,
      role: "editor",
      organization_id: ids.organizationId,
      workspace_id: ids.workspaceId,
      project_id: answer.project_id,
      api_key: expect.any(String),
    });
  });

  it("under a path prefix the mail's address carries it; a resend mails a new token and the first stops working", async () => {
    const ids = await createOrganizationVia(owner.key);
    const { mails, binding } = mailbox();
    const bindings = { ...mailed(binding), BASE_PATH: "/api" };
    const email = freshEmail();
    const path = `/api/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}`;
    expect(
      (await send("POST", `${path}/invite`, { key: owner.key, body: [{ email, roles: ["viewer"] }], bindings })).status,
    ).toBe(200);
    expect((await send("POST", `${path}/invite/resend/`, { key: owner.key, body: { email }, bindings })).status).toBe(200);
    const [first, second] = mails.map(readMail);
    expect(first.url).toBe(second.url);
    expect(first.url.startsWith(`${BASE_URL}${path}/invite/accept?project_id=`)).toBe(true);
    expect(second.token).not.toBe(first.token);
    const acceptAt = (token: string) =>
      send("POST", first.url.slice(BASE_URL.length), { authorization: "", body: { token }, bindings });
    await expectError(await acceptAt(first.token), 410, "This invitation was replaced by a newer one: use the latest token");
    expect((await acceptAt(second.token)).status).toBe(200);
  });

  it("the mail links the console's accept page: the accept path under /console, the token in its fragment", async () => {
    const ids = await createOrganizationVia(owner.key);
    const { mails, binding } = mailbox();
    const bindings = { ...mailed(binding), BASE_PATH: "/api" };
    const path = `/api/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite`;
    const invited = await send("POST", path, { key: owner.key, body: [{ email: freshEmail(), roles: ["viewer"] }], bindings });
    const { project_id } = await expectJson<{ project_id: string }>(invited);
    const { token } = readMail(mails[0]);
    const links = mails[0].text.split("\n").filter((line) => line.includes("/console/"));
    const page = `/api/console/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite/accept`;
    expect(links).toEqual([`${BASE_URL}${page}?project_id=${project_id}#token=${token}`]);
    // The link opens the console (a browser sends no fragment), whose page accepts it.
    const opened = await send("GET", `${page}?project_id=${project_id}`, { bindings });
    expect([opened.status, opened.headers.get("Content-Type")]).toEqual([200, "text/html; charset=UTF-8"]);
    expect(await opened.text()).toContain('<base href="/api/console/">');
  });

  it("the mail's accept address is at PUBLIC_BASE_URL, whatever host the invite and the resend came through", async () => {
    const ids = await createOrganizationVia(owner.key);
    const { mails, binding } = mailbox();
    const email = freshEmail();
    // On Cloudflare a request's URL has the Host header's host: a client may name any.
    const forged = {
      origin: "https://attacker.example",
      bindings: { ...mailed(binding), PUBLIC_BASE_URL: "https://apps.example.com/" },
    };
    const path = `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}`;
    const invited = await expectJson<Record<string, string>>(
      await send("POST", `${path}/invite`, { ...forged, key: owner.key, body: [{ email, roles: ["viewer"] }] }),
    );
    expect((await send("POST", `${path}/invite/resend`, { ...forged, key: owner.key, body: { email } })).status).toBe(200);
    const acceptUrl = `https://apps.example.com${path}/invite/accept?project_id=${invited.project_id}`;
    expect(mails.map((mail) => readMail(mail).url)).toEqual([acceptUrl, acceptUrl]);
    expect(mails.filter((mail) => mail.text.includes("attacker.example"))).toEqual([]);
  });

  it("answer the same, and mail the same, whether or not the email has an account", async () => {
    const ids = await createOrganizationVia(owner.key, "Same answers");
    const { mails, binding } = mailbox();
    const [emailWithAccount, emailWithout] = [freshEmail(), freshEmail()];
    await createAccount(emailWithAccount);
    const responses = [
      await inviteWith(mailed(binding), owner.key, ids, emailWithAccount),
      await inviteWith(mailed(binding), owner.key, ids, emailWithout),
    ];
    expect(responses.map((response) => response.status)).toEqual([200, 200]);
    expect([...responses[0].headers.keys()]).toEqual([...responses[1].headers.keys()]);
    const [a, b] = await Promise.all(responses.map((response) => response.json() as Promise<Record<string, string>>));
    const unaddressed = ({ email: _email, expires_at: _at, ...rest }: Record<string, string>) => rest;
    expect(unaddressed(a)).toEqual(unaddressed(b));
    // Each mail differs from the other only in its address, token and expiry.
    const untokened = (mail: Mail) => ({
      ...mail,
      to: "",
      text: mail.text.replace(/[0-9a-f]{64}/g, "").replace(/before \S+/, ""),
    });
    expect(mails.map((mail) => mail.to)).toEqual([emailWithAccount, emailWithout]);
    expect(untokened(mails[0])).toEqual(untokened(mails[1]));
  });

  it("a mail that cannot be sent: 502, and the invitation's token works for nobody until a resend replaces it", async () => {
    const ids = await createOrganizationVia(owner.key);
    const failing = mailbox("refused");
    const email = freshEmail();
    await expectError(
      await inviteWith(mailed(failing.binding), owner.key, ids, email),
      502,
      "The invitation was made, but its email could not be sent: send it again (POST .../invite/resend), which voids this one",
    );
    expect(failing.mails).toHaveLength(1);
    const working = mailbox();
    expect((await resendWith(mailed(working.binding), owner.key, ids, email)).status).toBe(200);
    const { token, url } = readMail(working.mails[0]);
    expect((await send("POST", url.slice(BASE_URL.length), { authorization: "", body: { token } })).status).toBe(200);
  });

  it("a connection to the mail binding lost once: sent again, 200; lost at every attempt: 502, after five attempts", async () => {
    const ids = await createOrganizationVia(owner.key);
    const dropsOnce = mailbox("connection lost once");
    const email = freshEmail();
    expect((await inviteWith(mailed(dropsOnce.binding), owner.key, ids, email)).status).toBe(200);
    expect(dropsOnce.mails).toHaveLength(2);
    expect(dropsOnce.mails[1]).toEqual(dropsOnce.mails[0]);
    const { token, url } = readMail(dropsOnce.mails[1]);
    expect((await send("POST", url.slice(BASE_URL.length), { authorization: "", body: { token } })).status).toBe(200);

    const dropsAlways = mailbox("connection lost");
    await expectError(
      await inviteWith(mailed(dropsAlways.binding), owner.key, ids, freshEmail()),
      502,
      "The invitation was made, but its email could not be sent: send it again (POST .../invite/resend), which voids this one",
    );
    expect(dropsAlways.mails).toHaveLength(5);
  });
});

describe("invitations without mail: the inviter sees the token, so a token alone makes no account", () => {
  it("the answer carries the token; accepting it alone is refused the same way whether or not the email has an account", async () => {
    const ids = await createOrganizationVia(owner.key);
    const existingEmail = freshEmail();
    const existing = await createAccount(existingEmail);
    const outsider = await createAccount();
    const forExisting = await expectJson<IssuedInvitation>(await inviteWith(unmailed, owner.key, ids, existingEmail));
    const forNew = await expectJson<IssuedInvitation>(await inviteWith(unmailed, owner.key, ids, freshEmail()));
    expect(forNew).toEqual({
      email: forNew.email,
      role: "editor",
      token: expect.stringMatching(/^[0-9a-f]{64}$/),
      organization_id: ids.organizationId,
      workspace_id: ids.workspaceId,
      project_id: forExisting.project_id,
      expires_at: expect.any(String),
    });

    const tracker = await Tracker.start();
    for (const invitation of [forExisting, forNew]) {
      const alone = await accept(invitation);
      expect(alone.headers.get("WWW-Authenticate")).toBe('ApiKey realm="app-management", Bearer realm="app-management"');
      await expectError(alone, 401, UNMAILED_TOKEN_ALONE);
      // The inviter's own key (or anyone else's): the same 403 for both, so nothing tells which email has an account.
      await expectError(await accept(invitation, owner.key), 403, "This invitation is for another email address");
      await expectError(await accept(invitation, outsider.key), 403, "This invitation is for another email address");
    }
    expect(await tracker.changes()).toEqual({});

    // The invitee with an account joins with their own key.
    expect((await accept(forExisting, existing.key)).status).toBe(200);
    // A new person: the operator makes the user (admin CLI `user create`), who then accepts with their own key.
    const newcomer = await createAccount(forNew.email);
    const joined = await expectJson<Record<string, unknown>>(await accept(forNew, newcomer.key));
    expect(joined).toEqual({
      user_id: newcomer.userId,
      email: forNew.email,
      role: "editor",
      organization_id: ids.organizationId,
      workspace_id: ids.workspaceId,
      project_id: forNew.project_id,
    });
  });

  it("with a sender but no PUBLIC_BASE_URL nothing is mailed: the answer carries the token, which alone makes no account", async () => {
    const ids = await createOrganizationVia(owner.key);
    const { mails, binding } = mailbox();
    const shown = await expectJson<IssuedInvitation>(
      await inviteWith({ ...mailed(binding), PUBLIC_BASE_URL: "" }, owner.key, ids, freshEmail()),
    );
    expect(shown.token).toMatch(/^[0-9a-f]{64}$/);
    expect(mails).toEqual([]);
    const tracker = await Tracker.start();
    await expectError(await accept(shown), 401, UNMAILED_TOKEN_ALONE);
    expect(await tracker.changes()).toEqual({});
  });

  it("a PUBLIC_BASE_URL that is not an http(s) origin: invites and resends answer 500, writing and mailing nothing", async () => {
    const ids = await createOrganizationVia(owner.key);
    const invited = freshEmail();
    expect((await invite(owner.key, ids.organizationId, ids.workspaceId, invited, "viewer")).status).toBe(200);
    const { mails, binding } = mailbox();
    const tracker = await Tracker.start();
    const badValues = [
      "apps.example.com",
      "ftp://apps.example.com",
      "javascript:alert(1)",
      "https://apps.example.com/api",
      "https://apps.example.com/?next=x",
      "https://user:secret@apps.example.com",
    ];
    for (const value of badValues) {
      const bindings = { ...mailed(binding), PUBLIC_BASE_URL: value };
      await expectError(await inviteWith(bindings, owner.key, ids, freshEmail()), 500, "Internal Server Error");
      await expectError(await resendWith(bindings, owner.key, ids, invited), 500, "Internal Server Error");
    }
    expect(mails).toEqual([]);
    expect(await tracker.changes()).toEqual({});
  });

  it("a token shown to the inviter stays unable to make an account after mail is turned on", async () => {
    const ids = await createOrganizationVia(owner.key);
    const shown = await expectJson<IssuedInvitation>(await inviteWith(unmailed, owner.key, ids, freshEmail()));
    const { binding } = mailbox();
    const tracker = await Tracker.start();
    const response = await send(
      "POST",
      `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite/accept?project_id=${shown.project_id}`,
      { authorization: "", body: { token: shown.token }, bindings: mailed(binding) },
    );
    await expectError(response, 401, UNMAILED_TOKEN_ALONE);
    expect(await tracker.changes()).toEqual({});
  });
});

describe("an owner invitation is an owner's to replace", () => {
  it("a workspace admin cannot void an owner's pending owner invitation by inviting the same email again", async () => {
    const admin = await createAccount();
    const ids = await createTeam(owner, [[admin, "workspace_admin"]]);
    const email = freshEmail();
    const options = (body: unknown): RequestOptions => ({ key: owner.key, body });
    const ownerInvitation = await expectJson<IssuedInvitation>(
      await send(
        "POST",
        `/organizations/${ids.organizationId}/workspaces/${ids.workspaceId}/invite`,
        options([{ email, roles: ["owner"] }]),
      ),
    );
    const tracker = await Tracker.start();
    for (const role of ["viewer", "editor", "workspace_admin"]) {
      await expectError(await invite(admin.key, ids.organizationId, ids.workspaceId, email, role), 403, FORBIDDEN);
    }
    expect(await tracker.changes()).toEqual({});
    // Once the owner invitation has expired, it guards nothing: the admin may invite that email in another role.
    await databaseOf(ids.organizationId)
      .prepare("UPDATE invitations SET expires_at = '2020-01-01T00:00:00.000Z' WHERE email = ?")
      .bind(email)
      .run();
    expect((await invite(admin.key, ids.organizationId, ids.workspaceId, email, "viewer")).status).toBe(200);
    await expectError(await accept(ownerInvitation), 410, "This invitation was replaced by a newer one: use the latest token");
    // An owner still replaces an owner invitation of their own.
    const again = freshEmail();
    expect((await invite(owner.key, ids.organizationId, ids.workspaceId, again, "owner")).status).toBe(200);
    expect((await invite(owner.key, ids.organizationId, ids.workspaceId, again, "viewer")).status).toBe(200);
  });
});
