import { beforeAll, describe, expect, it, vi } from "vitest";
import { changeRequests } from "../client";
import { deploy, expectJson, send } from "../fixtures";
import { type Mail, mailbox } from "../mailbox";
import { databaseOf } from "../pool";
import { runCron } from "../webhooks/webhook-fixtures";
import { type ChangeRequest, type Member, propose, type RequestsTeam, readRequest, requestsTeam } from "./setup";

/*
 * A change request's mails (docs/CHANGE-REQUESTS.md §3 "Mail"), read from the send_email binding: its requested
 * reviewers when it opens or is rebased, its author when it is approved, declined, applied, fails or expires; none
 * where mail is not set up; never a key in one; a mail that fails fails nothing.
 */

let t: RequestsTeam;
let inbox: ReturnType<typeof mailbox>;
/** Every mail of the file, for the check that none holds a key. */
const sent: Mail[] = [];

beforeAll(async () => {
  t = await requestsTeam();
});

/** Each test's requests with a fresh mailbox (vitest.config.ts sets INVITATION_EMAIL_FROM and PUBLIC_BASE_URL). */
const mailed = () => {
  inbox = mailbox();
  return { bindings: { INVITATION_EMAIL: inbox.binding }, settled: true };
};

/** The mails sent since the last `mailed()`, taken from the mailbox. */
const received = () => {
  const mails = inbox.mails.splice(0);
  sent.push(...mails);
  return mails;
};

const addressOf = (member: Member) => `${member.username}@example.com`;

/** The mail `to` gets about request `request`, saying `said` first. */
const mailAbout = (request: ChangeRequest, to: Member, what: string, said: string, base = "") => ({
  from: "invitations@apps.example.test",
  to: addressOf(to),
  subject: `[${what}] ${request.app_name} · ${request.environment}: ${request.title}`,
  text: [
    said,
    "",
    `${request.app_name} · ${request.environment}: ${request.title}`,
    `${request.config_name} v${request.revision}, version ${request.version}`,
    "",
    `https://apps.example.test${base}/console/change-requests/${request.id}`,
  ].join("\n"),
});

const OPENED = "A change request awaits your review.";

const approve = (member: Member, id: string, version = 1) =>
  changeRequests.review({ key: member.teamKey }, id, { kind: "approve", version }, mailed());

describe("mails to the requested reviewers", () => {
  it("when a request is made open: each member named, in order", async () => {
    const made = await propose(
      t.editor.teamKey,
      t.appId,
      "production",
      t.mainRevision,
      { title: "Ship main", reviewers: [t.second.userId, t.approver.userId] },
      mailed(),
    );
    expect(received()).toEqual([mailAbout(made, t.second, "opened", OPENED), mailAbout(made, t.approver, "opened", OPENED)]);
  });

  it("when a draft is submitted (none while a draft), and when a request is rebased", async () => {
    const options = mailed();
    const draft = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision, {
      draft: true,
      reviewers: [t.owner.userId],
    });
    expect(received()).toEqual([]);
    const submitted = await expectJson<ChangeRequest>(
      await changeRequests.act({ key: t.editor.teamKey }, draft.id, "submit", undefined, options),
    );
    expect(received()).toEqual([mailAbout(submitted, t.owner, "opened", OPENED)]);
    const rebased = await expectJson<ChangeRequest>(
      await changeRequests.act({ key: t.editor.teamKey }, draft.id, "rebase", undefined, mailed()),
    );
    expect(received()).toEqual([
      mailAbout(rebased, t.owner, "rebased", "A change request you are asked to review was rebased: it needs approving again."),
    ]);
  });

  it("at the link under BASE_PATH; none to a reviewer who is no member now", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "development", t.mainRevision, {
      draft: true,
      reviewers: [t.approver.userId, t.second.userId],
    });
    await databaseOf(t.appId)
      .prepare("DELETE FROM organization_members WHERE organization_id = ? AND user_id = ?")
      .bind(t.team.organizationId, t.second.userId)
      .run();
    const options = mailed();
    const submitted = await expectJson<ChangeRequest>(
      await send("POST", `/api/change-requests/${made.id}/submit`, {
        key: t.editor.teamKey,
        ...options,
        bindings: { ...options.bindings, BASE_PATH: "/api" },
      }),
    );
    expect(received()).toEqual([mailAbout(submitted, t.approver, "opened", OPENED, "/api")]);
  });
});

describe("mails to the author", () => {
  it("when approved (the count reached, not again), declined, then applied", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
    const approved = await expectJson<ChangeRequest>(await approve(t.approver, made.id));
    expect(received()).toEqual([
      mailAbout(approved, t.editor, "approved", "Your change request is approved: it can be applied."),
    ]);
    await expectJson(await approve(t.owner, made.id));
    expect(received()).toEqual([]);
    const applied = await expectJson<ChangeRequest>(
      await changeRequests.act({ key: t.editor.teamKey }, made.id, "apply", undefined, mailed()),
    );
    expect(received()).toEqual([mailAbout(applied, t.editor, "applied", "Your change request was applied.")]);

    const declined = await propose(t.editor.teamKey, t.appId, "production", t.otherRevision);
    const rejected = await expectJson<ChangeRequest>(
      await changeRequests.review({ key: t.approver.teamKey }, declined.id, { kind: "decline" }, mailed()),
    );
    expect(received()).toEqual([mailAbout(rejected, t.editor, "rejected", "Your change request was declined.")]);
  });

  it("by the minute cron: applied when due, failed when refused, expired", async () => {
    const scheduled = async (environment: string, revision: string) => {
      const made = await propose(t.editor.teamKey, t.appId, environment, revision);
      await expectJson(await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 }));
      const at = new Date(Date.now() + 3_600_000).toISOString();
      await expectJson(await changeRequests.act({ key: t.approver.teamKey }, made.id, "schedule", { scheduled_at: at }));
      await databaseOf(t.appId)
        .prepare("UPDATE change_requests SET scheduled_at = '2020-01-01T00:00:00.000Z' WHERE id = ?")
        .bind(made.id)
        .run();
      return made;
    };
    const due = await scheduled("staging", t.mainRevision);
    const conflicting = await scheduled("development", t.otherRevision);
    await deploy(t.appId, "development", "main", t.owner);
    const lapsing = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    await databaseOf(t.appId)
      .prepare("UPDATE change_requests SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = ?")
      .bind(lapsing.id)
      .run();
    await runCron("* * * * *", mailed().bindings);
    const [applied, failed, expired] = await Promise.all(
      [due, conflicting, lapsing].map(async ({ id }) => (await readRequest(t.owner.teamKey, id)).request),
    );
    expect([applied.state, failed.state, expired.state]).toEqual(["applied", "failed", "expired"]);
    const mails = received();
    expect(mails).toEqual(
      expect.arrayContaining([
        mailAbout(applied, t.editor, "applied", "Your change request was applied."),
        mailAbout(failed, t.editor, "failed", "Your change request failed to apply (conflict)."),
        mailAbout(expired, t.editor, "expired", "Your change request expired."),
      ]),
    );
    expect(mails).toHaveLength(3);
  });
});

describe("no mail", () => {
  it("where mail is not set up (no sender, or no PUBLIC_BASE_URL): the writes as ever", async () => {
    for (const unset of [{ INVITATION_EMAIL_FROM: "" }, { PUBLIC_BASE_URL: "" }]) {
      const options = mailed();
      const extras = { ...options, bindings: { ...options.bindings, ...unset } };
      const made = await propose(
        t.editor.teamKey,
        t.appId,
        "production",
        t.otherRevision,
        { title: "Unmailed", reviewers: [t.approver.userId] },
        extras,
      );
      const approved = await expectJson<ChangeRequest>(
        await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 }, extras),
      );
      expect([made.state, approved.state, received()]).toEqual(["open", "approved", []]);
    }
  });

  it("a mail the sending service refuses fails nothing: the request is made, a line logged naming no address", async () => {
    const failing = mailbox("refused");
    const logged = vi.spyOn(console, "error");
    const made = await propose(
      t.editor.teamKey,
      t.appId,
      "production",
      t.mainRevision,
      { title: "Refused mail", reviewers: [t.approver.userId] },
      { bindings: { INVITATION_EMAIL: failing.binding }, settled: true },
    );
    const lines = logged.mock.calls.map((call) => String(call[0])).filter((line) => line.includes("change request mail"));
    logged.mockRestore();
    sent.push(...failing.mails);
    expect([made.state, failing.mails.length, (await readRequest(t.owner.teamKey, made.id)).request.id]).toEqual([
      "open",
      1,
      made.id,
    ]);
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      {
        message: "change request mail failed",
        change_request_id: made.id,
        error: "Error: mail refused by the sending service",
      },
    ]);
  });
});

it("no mail of the file carries a key of the team's members, a key's or token's shape", () => {
  const keys = [t.owner, t.approver, t.second, t.editor, t.viewer].flatMap((member) => [member.key, member.teamKey]);
  const texts = sent.map(({ subject, text }) => `${subject}\n${text}`);
  expect(texts.length).toBeGreaterThan(8);
  for (const text of texts) {
    for (const key of keys) expect(text).not.toContain(key);
    expect(text).not.toMatch(/[0-9a-f]{64}|ApiKey|token/i);
  }
});
