import { beforeAll, describe, expect, it } from "vitest";
import { changeRequests } from "../client";
import { A_NEW_ID, A_TIME, expectJson } from "../fixtures";
import {
  type ChangeRequest,
  changeRole,
  propose,
  type RequestsTeam,
  readRequest,
  requestEvents,
  requestsTeam,
  setProtection,
} from "./setup";

/*
 * Change requests as their users see them (docs/CHANGE-REQUESTS.md §3, §4): made, read, reviewed up to the approvals
 * required, edited, rebased, cancelled; approvals counted at every read with the roles and settings then.
 */

let t: RequestsTeam;
beforeAll(async () => {
  t = await requestsTeam();
  await setProtection(t.owner.teamKey, t.team.projectId, "production", { required_approvals: 2 });
});

const approve = async (key: string, id: string, version = 1) =>
  expectJson<ChangeRequest>(await changeRequests.review({ key }, id, { kind: "approve", version }));

describe("a change request, made and read", () => {
  it("answers the whole request, with its ETag, and reads it back the same", async () => {
    const response = await changeRequests.create(
      { key: t.editor.teamKey },
      {
        app_id: t.appId,
        environment: "production",
        variant_revision_id: t.mainRevision,
        title: "Ship main",
        description: "As on staging.",
      },
    );
    const made = await expectJson<ChangeRequest>(response);
    expect(made).toEqual({
      id: A_NEW_ID,
      app_id: t.appId,
      app_name: expect.stringMatching(/^requested-/),
      environment: "production",
      project_id: t.team.projectId,
      kind: "deploy",
      variant_revision_id: t.mainRevision,
      split: null,
      config_name: "main",
      revision: 1,
      revert_to_revision_id: null,
      base: { environment_revision: 0, environment_revision_id: null, variant_revision_id: null },
      title: "Ship main",
      description: "As on staging.",
      state: "open",
      version: 1,
      approvals: 0,
      approvals_required: 2,
      author: { user_id: t.editor.userId, username: t.editor.username },
      reviewers: [],
      reviews: [],
      scheduled_at: null,
      expires_at: A_TIME,
      applied: null,
      failure: null,
      created_at: A_TIME,
      updated_at: made.created_at,
    });
    // 14 days, the default time to live.
    expect(Date.parse(made.expires_at) - Date.parse(made.created_at)).toBe(14 * 24 * 3600 * 1000);
    expect(response.headers.get("ETag")).toBe(`"${made.id}.1"`);
    const read = await readRequest(t.viewer.teamKey, made.id);
    expect(read).toEqual({ request: made, etag: `"${made.id}.1"` });
  });

  it("a revert names the environment revision to deploy again, and its base is the environment as it is", async () => {
    const made = await expectJson<ChangeRequest>(
      await changeRequests.create(
        { key: t.owner.teamKey },
        { app_id: t.appId, environment: "staging", revert_to_revision_id: t.stagingRevisionId, title: "Again" },
      ),
    );
    expect(made).toMatchObject({
      kind: "revert",
      revert_to_revision_id: t.stagingRevisionId,
      variant_revision_id: t.mainRevision,
      base: { environment_revision: 1, environment_revision_id: t.stagingRevisionId, variant_revision_id: t.mainRevision },
      approvals_required: 1,
    });
  });

  it("a draft is submitted by its author; the audit log has `.drafted` then `.opened`", async () => {
    const draft = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision, { draft: true });
    expect(draft.state).toBe("draft");
    const opened = await expectJson<ChangeRequest>(await changeRequests.act({ key: t.editor.teamKey }, draft.id, "submit"));
    expect(opened).toEqual({ ...draft, state: "open", updated_at: A_TIME });
    const events = (await requestEvents(t.owner.teamKey, t.appId)).filter((event) => event.data.change_request_id === draft.id);
    const common = {
      change_request_id: draft.id,
      app_id: t.appId,
      app_name: draft.app_name,
      environment: "staging",
      title: "Ship main",
      version: 1,
      variant_revision_id: t.otherRevision,
      base: draft.base,
    };
    expect(events.map(({ type, data, actor }) => ({ type, data, actor: actor.user_id }))).toEqual([
      { type: "change_request.drafted", data: { ...common, state: "draft", previous_state: null }, actor: t.editor.userId },
      { type: "change_request.opened", data: { ...common, state: "open", previous_state: "draft" }, actor: t.editor.userId },
    ]);
  });
});

describe("approvals", () => {
  it("N approvals make it approved, `.approved` recorded once on reaching the count; an approval counts once", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const first = await approve(t.approver.teamKey, made.id, 1);
    expect(first).toMatchObject({ state: "open", approvals: 1, approvals_required: 2 });
    // The same approver again: still one approval.
    expect(await approve(t.approver.teamKey, made.id)).toMatchObject({ state: "open", approvals: 1 });
    const second = await approve(t.second.teamKey, made.id);
    expect(second).toMatchObject({ state: "approved", approvals: 2 });
    expect(second.reviews.map(({ kind, version, stale, reviewer }) => [kind, version, stale, reviewer.user_id])).toEqual([
      ["approve", 1, false, t.approver.userId],
      ["approve", 1, false, t.approver.userId],
      ["approve", 1, false, t.second.userId],
    ]);
    // An owner's approval on top changes nothing but the count.
    expect(await approve(t.owner.teamKey, made.id)).toMatchObject({ state: "approved", approvals: 3 });
    const events = (await requestEvents(t.owner.teamKey, t.appId)).filter((event) => event.data.change_request_id === made.id);
    expect(events.map(({ type, data }) => [type, data.previous_state, data.state, data.kind])).toEqual([
      ["change_request.opened", null, "open", undefined],
      ["change_request.reviewed", "open", "open", "approve"],
      ["change_request.reviewed", "open", "open", "approve"],
      ["change_request.reviewed", "open", "approved", "approve"],
      ["change_request.approved", "open", "approved", undefined],
      ["change_request.reviewed", "approved", "approved", "approve"],
    ]);
  });

  it("an edit of the proposal resets them (earlier reviews stale); a title alone keeps them", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    await approve(t.approver.teamKey, made.id);
    const approved = await approve(t.second.teamKey, made.id);
    expect(approved.state).toBe("approved");
    const retitled = await expectJson<ChangeRequest>(
      await changeRequests.edit({ key: t.editor.teamKey }, made.id, { title: "Ship main now" }),
    );
    expect(retitled).toMatchObject({ title: "Ship main now", version: 1, state: "approved", approvals: 2 });
    const edited = await expectJson<ChangeRequest>(
      await changeRequests.edit({ key: t.editor.teamKey }, made.id, { variant_revision_id: t.otherRevision }),
    );
    expect(edited).toMatchObject({
      variant_revision_id: t.otherRevision,
      config_name: "other",
      version: 2,
      state: "open",
      approvals: 0,
    });
    expect(edited.reviews.map(({ stale, version }) => [stale, version])).toEqual([
      [true, 1],
      [true, 1],
    ]);
    // A review of version 1 now is refused; version 2's counts.
    const stale = await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toEqual({
      detail: {
        code: "stale_version",
        message: "This change request is at version 2 now: review that version.",
        version: 2,
      },
    });
    expect(await approve(t.approver.teamKey, made.id, 2)).toMatchObject({ approvals: 1, state: "open" });
    const edits = (await requestEvents(t.owner.teamKey, t.appId)).filter(
      (event) => event.data.change_request_id === made.id && event.type === "change_request.edited",
    );
    expect(edits.map(({ data }) => [data.changed, data.approvals_reset, data.previous_state, data.state, data.version])).toEqual([
      [["title"], false, "approved", "approved", 1],
      [["proposal"], true, "approved", "open", 2],
    ]);
  });

  it("a demoted approver stops counting, and a raised requirement is read at once; both undone, it is approved again", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    await approve(t.approver.teamKey, made.id);
    expect((await approve(t.second.teamKey, made.id)).state).toBe("approved");
    const email = `${t.second.username}@example.com`;
    await changeRole(t.owner.teamKey, t.team, email, "editor");
    expect((await readRequest(t.viewer.teamKey, made.id)).request).toMatchObject({ approvals: 1, state: "open" });
    await changeRole(t.owner.teamKey, t.team, email, "deployment_manager");
    expect((await readRequest(t.viewer.teamKey, made.id)).request).toMatchObject({ approvals: 2, state: "approved" });
    await setProtection(t.owner.teamKey, t.team.projectId, "production", { required_approvals: 3 });
    const raised = (await readRequest(t.viewer.teamKey, made.id)).request;
    await setProtection(t.owner.teamKey, t.team.projectId, "production", { required_approvals: 2 });
    expect(raised).toMatchObject({ approvals: 2, approvals_required: 3, state: "open" });
    // The list counts them the same way.
    const listed = await expectJson<{ change_requests: ChangeRequest[] }>(
      await changeRequests.list({ key: t.viewer.teamKey }, { app_id: t.appId, environment: "production", state: ["approved"] }),
    );
    expect(listed.change_requests.map(({ id }) => id)).toContain(made.id);
  });

  it("a decline rejects the request, which takes nothing more", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
    const declined = await expectJson<ChangeRequest>(
      await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "decline", comment: "Not now." }),
    );
    expect(declined).toMatchObject({ state: "rejected", reviews: [{ kind: "decline", comment: "Not now." }] });
    const events = (await requestEvents(t.owner.teamKey, t.appId)).filter((event) => event.data.change_request_id === made.id);
    expect(events.map(({ type, data }) => [type, data.state, data.comment])).toEqual([
      ["change_request.opened", "open", undefined],
      ["change_request.reviewed", "rejected", "Not now."],
      ["change_request.rejected", "rejected", undefined],
    ]);
    const again = await changeRequests.review({ key: t.second.teamKey }, made.id, { kind: "comment", comment: "Why?" });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { detail: { code: string; state: string } }).detail).toMatchObject({
      code: "invalid_state",
      state: "rejected",
    });
  });
});

describe("rebase, cancel, diff and the list", () => {
  it("a rebase takes the environment now as the base and resets approvals; the diff shows what an apply would change", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "development", t.mainRevision);
    expect(made.base).toEqual({
      environment_revision: 1,
      environment_revision_id: t.developmentRevisionId,
      variant_revision_id: t.otherRevision,
    });
    const diff = await expectJson<Record<string, unknown>>(await changeRequests.diff({ key: t.viewer.teamKey }, made.id));
    const otherSide = {
      environment_revision: 1,
      environment_revision_id: t.developmentRevisionId,
      variant_revision_id: t.otherRevision,
      config_name: "other",
      revision: 1,
      document: { config_name: "other", params: {}, url: "" },
    };
    expect(diff).toEqual({
      base: otherSide,
      current: otherSide,
      proposed: {
        variant_revision_id: t.mainRevision,
        config_name: "main",
        revision: 1,
        document: { config_name: "main", params: {}, url: "" },
      },
      base_is_current: true,
      diff: {
        identical: false,
        coarse: false,
        patch: [{ op: "replace", path: "/config_name", value: "main" }],
        changes: [{ path: "/config_name", op: "replace", from: "other", to: "main" }],
      },
      drift: { identical: true, coarse: false, patch: [], changes: [] },
    });
    await approve(t.approver.teamKey, made.id);
    const rebased = await expectJson<ChangeRequest>(await changeRequests.act({ key: t.owner.teamKey }, made.id, "rebase"));
    expect(rebased).toMatchObject({ version: 2, state: "open", approvals: 0, base: made.base });
    const cancelled = await expectJson<ChangeRequest>(await changeRequests.act({ key: t.editor.teamKey }, made.id, "cancel"));
    expect(cancelled.state).toBe("cancelled");
    const types = (await requestEvents(t.owner.teamKey, t.appId))
      .filter((event) => event.data.change_request_id === made.id)
      .map(({ type, data }) => [type, data.previous_base ?? null]);
    expect(types).toEqual([
      ["change_request.opened", null],
      ["change_request.reviewed", null],
      ["change_request.approved", null],
      ["change_request.rebased", made.base],
      ["change_request.cancelled", null],
    ]);
  });

  it("lists newest first by page, filtered by state, author and environment; the key's project by default", async () => {
    const all = await expectJson<{ change_requests: ChangeRequest[]; next_cursor: string | null }>(
      await changeRequests.list({ key: t.viewer.teamKey }),
    );
    const ids = all.change_requests.map(({ id }) => id);
    expect(ids).toEqual([...ids].sort().reverse());
    expect(all.change_requests.every((request) => !("reviews" in request))).toBe(true);
    const first = await expectJson<{ change_requests: ChangeRequest[]; next_cursor: string }>(
      await changeRequests.list({ key: t.viewer.teamKey }, { limit: "2" }),
    );
    expect(first.change_requests.map(({ id }) => id)).toEqual(ids.slice(0, 2));
    const next = await expectJson<{ change_requests: ChangeRequest[] }>(
      await changeRequests.list({ key: t.viewer.teamKey }, { limit: "2", cursor: first.next_cursor }),
    );
    expect(next.change_requests.map(({ id }) => id)).toEqual(ids.slice(2, 4));
    const byOwner = await expectJson<{ change_requests: ChangeRequest[] }>(
      await changeRequests.list({ key: t.viewer.teamKey }, { author: t.owner.userId, state: ["open", "approved"] }),
    );
    expect(byOwner.change_requests.map(({ id, author }) => [id, author.user_id])).toEqual(
      all.change_requests
        .filter((request) => request.author.user_id === t.owner.userId && ["open", "approved"].includes(request.state))
        .map(({ id }) => [id, t.owner.userId]),
    );
    const cancelled = await expectJson<{ change_requests: ChangeRequest[] }>(
      await changeRequests.list({ key: t.viewer.teamKey }, { project_id: t.team.projectId, state: ["cancelled"] }),
    );
    expect(cancelled.change_requests.map(({ state, environment }) => [state, environment])).toEqual([
      ["cancelled", "development"],
    ]);
  });
});
