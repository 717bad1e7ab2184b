import { beforeAll, describe, expect, it } from "vitest";
import { changeRequests } from "../client";
import { addMember, createAccount, expectError, expectJson, FORBIDDEN, issueKey, markKeyUsed, newId, send } from "../fixtures";
import { Tracker } from "../harness";
import { bucketFor, databaseOf } from "../pool";
import { type ChangeRequest, changeRole, propose, type RequestsTeam, readRequest, requestEvents, requestsTeam } from "./setup";

/*
 * Governance of change requests (docs/CHANGE-REQUESTS.md §3): an approve names what it approves (else 428, after every
 * other refusal), a review body takes no field it does not know; approvals of approvers demoted, promoted back or
 * removed; the expiry an edit and a rebase renew; a scheduled request whose proposal changes; the apply's dry-run
 * with If-Match. Each refusal writes nothing.
 */

let t: RequestsTeam;
beforeAll(async () => {
  t = await requestsTeam();
  // Their first use is recorded after an answer: recorded now, so that only the writes under test are seen.
  for (const key of [t.owner, t.approver, t.second, t.editor, t.viewer].map((member) => member.teamKey)) await markKeyUsed(key);
  await markKeyUsed(t.outsider.key);
});

const UNBOUND = {
  detail:
    "Name what you approve: send the request's `version` you reviewed in the body, or If-Match with its ETag " +
    "(GET /change-requests/{id} answers both).",
};

/** An approve naming no version, with `headers`. */
const approveUnbound = (key: string, id: string, headers: Record<string, string> = {}) =>
  changeRequests.review({ key }, id, { kind: "approve" }, { headers });

/** A response's status and whole body. */
const answerOf = async (response: Response) => [response.status, await response.json()];

const DAY_MS = 86_400_000;

describe("an approve names what it approves", () => {
  it("naming neither version nor If-Match (If-Match: * names nothing): 428 saying what to send, nothing written", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const tracker = await Tracker.start();
    expect(await answerOf(await approveUnbound(t.approver.teamKey, made.id))).toEqual([428, UNBOUND]);
    expect(await answerOf(await approveUnbound(t.approver.teamKey, made.id, { "If-Match": "*" }))).toEqual([428, UNBOUND]);
    const keyed = { "Idempotency-Key": crypto.randomUUID() };
    expect(await answerOf(await approveUnbound(t.approver.teamKey, made.id, keyed))).toEqual([428, UNBOUND]);
    expect(await tracker.changes()).toEqual({});
    // A decline and a comment name nothing: what they say of the proposal binds no deploy.
    const commented = await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "comment", comment: "Seen." });
    expect((await expectJson<ChangeRequest>(commented)).reviews).toHaveLength(1);
  });

  it("with the version, or with If-Match the request's ETag, the approval is of that version", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const { etag } = await readRequest(t.viewer.teamKey, made.id);
    const byETag = await expectJson<ChangeRequest>(await approveUnbound(t.approver.teamKey, made.id, { "If-Match": etag }));
    expect(byETag).toMatchObject({ approvals: 1, reviews: [{ kind: "approve", version: 1, stale: false }] });
    const byVersion = await expectJson<ChangeRequest>(
      await changeRequests.review({ key: t.second.teamKey }, made.id, { kind: "approve", version: 1 }),
    );
    expect(byVersion.reviews.map(({ kind, version, reviewer }) => [kind, version, reviewer.user_id])).toEqual([
      ["approve", 1, t.approver.userId],
      ["approve", 1, t.second.userId],
    ]);
    expect(byVersion.approvals).toBe(2);
  });

  it("a version no longer current is 409 `stale_version`, an ETag no longer current 412; nothing written", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const { etag } = await readRequest(t.viewer.teamKey, made.id);
    await expectJson(await changeRequests.edit({ key: t.editor.teamKey }, made.id, { variant_revision_id: t.otherRevision }));
    const tracker = await Tracker.start();
    const stale = await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 });
    expect(await answerOf(stale)).toEqual([
      409,
      {
        detail: { code: "stale_version", message: "This change request is at version 2 now: review that version.", version: 2 },
      },
    ]);
    const moved = await approveUnbound(t.approver.teamKey, made.id, { "If-Match": etag });
    expect(await answerOf(moved)).toEqual([
      412,
      { detail: "The change request has changed since the ETag given in If-Match: read it again, then retry" },
    ]);
    expect(await tracker.changes()).toEqual({});
  });

  it("428 is judged last: 404, 403 and 409 are answered first", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const byApprover = await propose(t.approver.teamKey, t.appId, "production", t.mainRevision);
    const cancelled = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    await expectJson(await changeRequests.act({ key: t.editor.teamKey }, cancelled.id, "cancel"));
    const tracker = await Tracker.start();
    await expectError(await approveUnbound(t.outsider.key, made.id), 404, "Change request not found");
    await expectError(await approveUnbound(t.approver.teamKey, newId(bucketFor(t.appId))), 404, "Change request not found");
    await expectError(await approveUnbound(t.viewer.teamKey, made.id), 403, FORBIDDEN);
    await expectError(await approveUnbound(t.editor.teamKey, byApprover.id), 403, FORBIDDEN);
    await expectError(
      await approveUnbound(t.approver.teamKey, byApprover.id),
      403,
      "You cannot approve your own change request.",
    );
    expect(await answerOf(await approveUnbound(t.approver.teamKey, cancelled.id))).toEqual([
      409,
      {
        detail: {
          code: "invalid_state",
          message: "This change request is cancelled: this action is not allowed now.",
          state: "cancelled",
        },
      },
    ]);
    expect(await tracker.changes()).toEqual({});
  });
});

describe("a review body", () => {
  it("with a field it does not know is a 422 at `body`, nothing written", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const tracker = await Tracker.start();
    for (const [body, key] of [
      [{ kind: "approve", version: 1, approved: true }, "approved"],
      [{ kind: "comment", comment: "Seen.", version: 1, mention: "kim" }, "mention"],
    ] as const) {
      const response = await changeRequests.review({ key: t.approver.teamKey }, made.id, body);
      expect(await answerOf(response), JSON.stringify(body)).toEqual([
        422,
        { detail: [{ loc: ["body"], msg: `Value error, Unrecognized key: "${key}"`, type: "value_error" }] },
      ]);
    }
    expect(await tracker.changes()).toEqual({});
  });
});

describe("approvals of approvers whose role changes (counted with the roles now)", () => {
  it("an approver demoted and promoted back counts again while that version is current; a rebase voids it for good", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 });
    const email = `${t.approver.username}@example.com`;
    await changeRole(t.owner.teamKey, t.team, email, "viewer");
    expect((await readRequest(t.viewer.teamKey, made.id)).request).toMatchObject({ state: "open", approvals: 0 });
    await changeRole(t.owner.teamKey, t.team, email, "deployment_manager");
    expect((await readRequest(t.viewer.teamKey, made.id)).request).toMatchObject({ state: "approved", approvals: 1 });
    const rebased = await expectJson<ChangeRequest>(await changeRequests.act({ key: t.owner.teamKey }, made.id, "rebase"));
    expect(rebased).toMatchObject({ state: "open", version: 2, approvals: 0, reviews: [{ version: 1, stale: true }] });
  });

  it("an approver removed from the organization stops counting: the request reads open, and its apply is refused", async () => {
    const leaver = await createAccount();
    await addMember(t.team.organizationId, leaver.userId, "deployment_manager");
    const leaverKey = await issueKey(leaver.userId, t.team.projectId);
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const approved = await changeRequests.review({ key: leaverKey }, made.id, { kind: "approve", version: 1 });
    expect(await expectJson<ChangeRequest>(approved)).toMatchObject({ state: "approved", approvals: 1 });
    const query = `org_id=${t.team.organizationId}&email=${encodeURIComponent(`${leaver.username}@example.com`)}`;
    expect((await send("DELETE", `/workspaces/${t.team.workspaceId}/users?${query}`, { key: t.owner.teamKey })).status).toBe(200);

    expect((await readRequest(t.viewer.teamKey, made.id)).request).toMatchObject({ state: "open", approvals: 0 });
    const listed = await expectJson<{ change_requests: ChangeRequest[] }>(
      await changeRequests.list({ key: t.viewer.teamKey }, { app_id: t.appId, state: ["approved"] }),
    );
    expect(listed.change_requests.map((request) => request.id)).not.toContain(made.id);
    const refused = await changeRequests.act({ key: t.editor.teamKey }, made.id, "apply");
    expect(await answerOf(refused)).toEqual([
      409,
      {
        detail: {
          code: "not_approved",
          message: "This change request has 0 of the 1 approvals it needs.",
          approvals: 0,
          approvals_required: 1,
        },
      },
    ]);
  });
});

describe("expiry: `expires_at` is the last create, edit or rebase plus request_ttl_days (14 here)", () => {
  /** Request `id` made ten days ago, to expire in four: as time would have it. */
  const aged = (id: string) =>
    databaseOf(id)
      .prepare(
        `UPDATE change_requests SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-10 days'),
                expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+4 days') WHERE id = ?`,
      )
      .bind(id)
      .run();

  /** `expires_at` of what `write` answered is 14 days after the write (a few seconds' leeway either side). */
  async function expectRenewed(write: () => Promise<Response>) {
    const start = Date.now();
    const written = await expectJson<ChangeRequest>(await write());
    const end = Date.now();
    const expiresAt = Date.parse(written.expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(start + 14 * DAY_MS - 5_000);
    expect(expiresAt).toBeLessThanOrEqual(end + 14 * DAY_MS + 5_000);
    expect((await readRequest(t.viewer.teamKey, written.id)).request.expires_at).toBe(written.expires_at);
  }

  it("an edit of an aged request renews it, a title alone too", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
    await aged(made.id);
    await expectRenewed(() => changeRequests.edit({ key: t.editor.teamKey }, made.id, { title: "Renewed" }));
  });

  it("a rebase of an aged request renews it", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
    await aged(made.id);
    await expectRenewed(() => changeRequests.act({ key: t.editor.teamKey }, made.id, "rebase"));
  });
});

describe("a scheduled request whose proposal changes", () => {
  it("is open again and unscheduled (§3: edit, scheduled → open), its approvals reset", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
    await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 });
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await changeRequests.act({ key: t.editor.teamKey }, made.id, "schedule", { scheduled_at: inAnHour });
    expect(await expectJson<ChangeRequest>(scheduled)).toMatchObject({ state: "scheduled", scheduled_at: inAnHour });

    const edited = await changeRequests.edit({ key: t.editor.teamKey }, made.id, { revert_to_revision_id: t.stagingRevisionId });
    expect(await expectJson<ChangeRequest>(edited)).toMatchObject({
      state: "open",
      scheduled_at: null,
      version: 2,
      approvals: 0,
      kind: "revert",
    });
    expect((await readRequest(t.viewer.teamKey, made.id)).request).toMatchObject({ state: "open", scheduled_at: null });
    const [event] = (await requestEvents(t.owner.teamKey, t.appId)).filter(
      (one) => one.data.change_request_id === made.id && one.type === "change_request.edited",
    );
    expect(event.data).toMatchObject({
      previous_state: "scheduled",
      state: "open",
      changed: ["proposal"],
      approvals_reset: true,
    });
  });
});

describe("the apply's dry-run with If-Match", () => {
  it("answers an ETag no longer current as the apply does (412), and the current one with what it would do", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
    const { etag: stale } = await readRequest(t.viewer.teamKey, made.id);
    await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 });
    const { etag: current } = await readRequest(t.viewer.teamKey, made.id);
    const apply = (query: string, etag: string) =>
      changeRequests.act({ key: t.editor.teamKey }, made.id, `apply${query}`, undefined, { headers: { "If-Match": etag } });

    const tracker = await Tracker.start();
    const dryRun = await answerOf(await apply("?dry_run=true", stale));
    const real = await answerOf(await apply("", stale));
    expect(dryRun).toEqual(real);
    expect(real).toEqual([
      412,
      { detail: "The change request has changed since the ETag given in If-Match: read it again, then retry" },
    ]);
    expect(await tracker.changes()).toEqual({});
    const preview = await apply("?dry_run=true", current);
    expect([preview.status, preview.headers.get("ETag")]).toEqual([200, current]);
    expect(await preview.json()).toMatchObject({ dry_run: true, kind: "deploy", environment: "staging" });
  });
});
