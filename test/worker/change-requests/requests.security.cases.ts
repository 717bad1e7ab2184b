import { beforeAll, describe, expect, it } from "vitest";
import { changeRequests } from "../client";
import { addMember, createAccount, expectError, expectJson, FORBIDDEN, issueKey, markKeyUsed } from "../fixtures";
import { type ChangeRequest, propose, type RequestsTeam, readRequest, requestsTeam, setProtection } from "./setup";

/*
 * Who may do what to a change request (docs/CHANGE-REQUESTS.md §3): no self-approval for any role, owners included,
 * unless the settings allow it; the roles of each action; other organizations see nothing; an organization on the
 * second shard works the same, with an approver whose key is homed on the first.
 */

let t: RequestsTeam;
beforeAll(async () => {
  t = await requestsTeam();
});

const SELF = "You cannot approve your own change request.";

describe("self-approval", () => {
  it("is refused for every role, an owner's included, approve and decline alike; nothing is written", async () => {
    const made = await propose(t.owner.teamKey, t.appId, "production", t.mainRevision);
    await expectError(await changeRequests.review({ key: t.owner.teamKey }, made.id, { kind: "approve", version: 1 }), 403, SELF);
    await expectError(await changeRequests.review({ key: t.owner.teamKey }, made.id, { kind: "decline" }), 403, SELF);
    const byManager = await propose(t.approver.teamKey, t.appId, "production", t.mainRevision);
    await expectError(
      await changeRequests.review({ key: t.approver.teamKey }, byManager.id, { kind: "approve", version: 1 }),
      403,
      SELF,
    );
    expect((await readRequest(t.viewer.teamKey, made.id)).request).toEqual(made);
    // The author may still comment.
    const commented = await changeRequests.review({ key: t.owner.teamKey }, made.id, { kind: "comment", comment: "Note." });
    expect((await expectJson<ChangeRequest>(commented)).reviews).toHaveLength(1);
  });

  it("counts when the settings allow it, and stops counting when they no longer do", async () => {
    await setProtection(t.owner.teamKey, t.team.projectId, "staging", { allow_self_approval: true });
    const made = await propose(t.owner.teamKey, t.appId, "staging", t.otherRevision);
    const approved = await expectJson<ChangeRequest>(
      await changeRequests.review({ key: t.owner.teamKey }, made.id, { kind: "approve", version: 1 }),
    );
    expect(approved).toMatchObject({ state: "approved", approvals: 1 });
    await setProtection(t.owner.teamKey, t.team.projectId, "staging", {});
    expect((await readRequest(t.owner.teamKey, made.id)).request).toMatchObject({ state: "open", approvals: 0 });
  });
});

describe("roles", () => {
  it("approving takes a role of approver_roles: an editor's approval is refused, until the settings name editors", async () => {
    const made = await propose(t.owner.teamKey, t.appId, "production", t.mainRevision);
    await expectError(
      await changeRequests.review({ key: t.editor.teamKey }, made.id, { kind: "approve", version: 1 }),
      403,
      FORBIDDEN,
    );
    await setProtection(t.owner.teamKey, t.team.projectId, "production", { approver_roles: ["editor"] });
    const approved = await changeRequests.review({ key: t.editor.teamKey }, made.id, { kind: "approve", version: 1 });
    await setProtection(t.owner.teamKey, t.team.projectId, "production", {});
    expect(await expectJson<ChangeRequest>(approved)).toMatchObject({ state: "approved" });
  });

  it("a viewer and a read-only key read, and write nothing", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const readOnly = await issueKey(t.owner.userId, t.team.projectId, { readOnly: true });
    const editorReadOnly = await issueKey(t.editor.userId, t.team.projectId, { readOnly: true });
    for (const key of [t.viewer.teamKey, readOnly]) {
      expect((await readRequest(key, made.id)).request.id).toBe(made.id);
      await expectError(
        await changeRequests.create(
          { key },
          { app_id: t.appId, environment: "production", variant_revision_id: t.mainRevision, title: "x" },
        ),
        403,
        FORBIDDEN,
      );
      await expectError(await changeRequests.review({ key }, made.id, { kind: "comment", comment: "x" }), 403, FORBIDDEN);
      await expectError(await changeRequests.review({ key }, made.id, { kind: "approve", version: 1 }), 403, FORBIDDEN);
      await expectError(await changeRequests.act({ key }, made.id, "cancel"), 403, FORBIDDEN);
    }
    // The author's own read-only key may not edit it either.
    await expectError(await changeRequests.edit({ key: editorReadOnly }, made.id, { title: "x" }), 403, FORBIDDEN);
    expect((await readRequest(t.viewer.teamKey, made.id)).request).toEqual(made);
  });

  it("edit and submit are the author's; rebase and cancel also an owner's or workspace admin's, not another proposer's", async () => {
    const draft = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision, { draft: true });
    await expectError(await changeRequests.edit({ key: t.owner.teamKey }, draft.id, { title: "x" }), 403, FORBIDDEN);
    await expectError(await changeRequests.act({ key: t.owner.teamKey }, draft.id, "submit"), 403, FORBIDDEN);
    await expectJson(await changeRequests.act({ key: t.editor.teamKey }, draft.id, "submit"));
    await expectError(await changeRequests.act({ key: t.approver.teamKey }, draft.id, "rebase"), 403, FORBIDDEN);
    await expectError(await changeRequests.act({ key: t.approver.teamKey }, draft.id, "cancel"), 403, FORBIDDEN);
    await expectJson(await changeRequests.act({ key: t.owner.teamKey }, draft.id, "rebase"));
    expect(await expectJson<ChangeRequest>(await changeRequests.act({ key: t.owner.teamKey }, draft.id, "cancel"))).toMatchObject(
      { state: "cancelled" },
    );
  });
});

describe("other organizations", () => {
  it("get 404 everywhere, and their lists find nothing", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const as = { key: t.outsider.key };
    for (const response of [
      await changeRequests.get(as, made.id),
      await changeRequests.diff(as, made.id),
      await changeRequests.edit(as, made.id, { title: "x" }),
      await changeRequests.review(as, made.id, { kind: "approve", version: 1 }),
      await changeRequests.review(as, made.id, { kind: "comment", comment: "x" }),
      await changeRequests.act(as, made.id, "submit"),
      await changeRequests.act(as, made.id, "rebase"),
      await changeRequests.act(as, made.id, "cancel"),
    ]) {
      await expectError(response, 404, "Change request not found");
    }
    await expectError(
      await changeRequests.create(as, {
        app_id: t.appId,
        environment: "production",
        variant_revision_id: t.mainRevision,
        title: "x",
      }),
      404,
      "App not found",
    );
    for (const query of [{ app_id: t.appId }, { project_id: t.team.projectId }, {}]) {
      expect(await expectJson(await changeRequests.list(as, query))).toEqual({ change_requests: [], next_cursor: null });
    }
    expect((await readRequest(t.viewer.teamKey, made.id)).request).toEqual(made);
  });
});

describe("an organization on the second shard", () => {
  it("the same flow, with an approver whose key is homed on the first shard", async () => {
    const far = await requestsTeam("SHARD_1");
    const guest = await createAccount(undefined, "SHARD_0");
    await addMember(far.team.organizationId, guest.userId, "deployment_manager");
    await markKeyUsed(guest.key);
    const guestKey = await issueKey(guest.userId, guest.projectId);
    const made = await propose(far.editor.teamKey, far.appId, "production", far.mainRevision);
    expect(made.id.slice(-3)).toBe(far.appId.slice(-3));
    const approved = await expectJson<ChangeRequest>(
      await changeRequests.review({ key: guestKey }, made.id, { kind: "approve", version: 1 }),
    );
    expect(approved).toMatchObject({ state: "approved", approvals: 1, reviews: [{ reviewer: { user_id: guest.userId } }] });
    const listed = await expectJson<{ change_requests: ChangeRequest[] }>(
      await changeRequests.list({ key: guestKey }, { app_id: far.appId }),
    );
    expect(listed.change_requests.map(({ id, state }) => [id, state])).toEqual([[made.id, "approved"]]);
    expect(await expectJson(await changeRequests.diff({ key: guestKey }, made.id))).toMatchObject({ base_is_current: true });
    const rebased = await expectJson<ChangeRequest>(await changeRequests.act({ key: far.owner.teamKey }, made.id, "rebase"));
    expect(rebased).toMatchObject({ version: 2, state: "open", approvals: 0 });
  });
});
