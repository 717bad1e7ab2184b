import { beforeAll, describe, expect, it } from "vitest";
import { changeRequests } from "../client";
import { expectError, expectJson, type ValidationIssue } from "../fixtures";
import {
  type ChangeRequest,
  type Member,
  propose,
  type RequestsTeam,
  readRequest,
  requestEvents,
  requestsTeam,
  setProtection,
  writesNothing,
} from "./setup";

/*
 * Requested reviewers and "awaiting my review" (docs/CHANGE-REQUESTS.md §3): reviewers named on a request, who must
 * be able to approve there; the requests a caller may approve and has not reviewed at their current version.
 */

let t: RequestsTeam;
beforeAll(async () => {
  t = await requestsTeam();
});

const userOf = (member: Member) => ({ user_id: member.userId, username: member.username });

/** The ids of the team's staging requests awaiting `member`'s review (`state`: in these states too), newest first. */
async function awaiting(member: Member, state: string[] = []) {
  const query = { app_id: t.appId, environment: "staging", awaiting_my_review: "true", state };
  const page = await expectJson<{ change_requests: ChangeRequest[] }>(await changeRequests.list({ key: member.teamKey }, query));
  return page.change_requests.map(({ id }) => id);
}

describe("requested reviewers", () => {
  it("are answered in the order given on the create, the read and the list", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision, {
      reviewers: [t.second.userId, t.owner.userId, t.approver.userId],
    });
    const reviewers = [userOf(t.second), userOf(t.owner), userOf(t.approver)];
    expect(made.reviewers).toEqual(reviewers);
    expect((await readRequest(t.viewer.teamKey, made.id)).request.reviewers).toEqual(reviewers);
    const page = await expectJson<{ change_requests: ChangeRequest[] }>(
      await changeRequests.list({ key: t.viewer.teamKey }, { app_id: t.appId }),
    );
    const listed = page.change_requests.find(({ id }) => id === made.id);
    expect(listed?.reviewers).toEqual(reviewers);
  });

  it("are [] when none are named", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    expect(made.reviewers).toEqual([]);
  });

  it("a PATCH replaces the list, changing no version and voiding no approval; [] empties it", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision, { reviewers: [t.approver.userId] });
    await expectJson(await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 }));
    const edited = await expectJson<ChangeRequest>(
      await changeRequests.edit({ key: t.editor.teamKey }, made.id, { reviewers: [t.owner.userId, t.second.userId] }),
    );
    expect(edited.reviewers).toEqual([userOf(t.owner), userOf(t.second)]);
    expect([edited.version, edited.approvals, edited.reviews.map(({ stale }) => stale)]).toEqual([1, 1, [false]]);
    const emptied = await expectJson<ChangeRequest>(
      await changeRequests.edit({ key: t.editor.teamKey }, made.id, { reviewers: [] }),
    );
    expect(emptied.reviewers).toEqual([]);
    const edits = (await requestEvents(t.owner.teamKey, t.appId)).filter(
      ({ type, data }) => type === "change_request.edited" && data.change_request_id === made.id,
    );
    expect(edits.map(({ data }) => [data.changed, data.approvals_reset])).toEqual([
      [["reviewers"], false],
      [["reviewers"], false],
    ]);
  });

  it("the author may be named where the environment allows self-approval", async () => {
    await setProtection(t.owner.teamKey, t.team.projectId, "development", { allow_self_approval: true });
    const made = await propose(t.approver.teamKey, t.appId, "development", t.mainRevision, { reviewers: [t.approver.userId] });
    expect(made.reviewers).toEqual([userOf(t.approver)]);
  });
});

describe("reviewers who may not approve there: 422 at their index, nothing written", () => {
  const NOT_MEMBER = "Not a member of this organization: cannot approve here.";
  const AUTHOR = "The author: this environment does not allow self-approval.";
  const role = (name: string) => `Role ${name} is not in this environment's approver_roles: cannot approve here.`;
  const at = (index: number, msg: string): ValidationIssue => ({ loc: ["body", "reviewers", index], msg, type: "value_error" });

  it.each([
    ["an outsider", () => [t.owner.userId, t.outsider.userId], [at(1, NOT_MEMBER)]],
    ["an editor (not in approver_roles)", () => [t.editor.userId], [at(0, role("editor"))]],
    [
      "a viewer, and an unknown user",
      () => [t.viewer.userId, t.approver.userId, crypto.randomUUID()],
      [at(0, role("viewer")), at(2, NOT_MEMBER)],
    ],
    ["the author (no self-approval)", () => [t.second.userId], [at(0, AUTHOR)]],
  ])("on a create: %s", async (_, reviewers, detail) => {
    await writesNothing(t.appId, async () => {
      const response = await changeRequests.create(
        { key: t.second.teamKey },
        {
          app_id: t.appId,
          environment: "production",
          variant_revision_id: t.mainRevision,
          title: "Refused",
          reviewers: reviewers(),
        },
      );
      await expectError(response, 422, detail);
    });
  });

  it("on a PATCH, with other fields: nothing changes", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision, { reviewers: [t.owner.userId] });
    await writesNothing(t.appId, async () => {
      const response = await changeRequests.edit({ key: t.editor.teamKey }, made.id, {
        title: "Renamed",
        reviewers: [t.approver.userId, t.editor.userId],
      });
      await expectError(response, 422, [at(1, role("editor"))]);
    });
    expect((await readRequest(t.owner.teamKey, made.id)).request.reviewers).toEqual([userOf(t.owner)]);
  });

  it.each([
    ["given twice", () => [t.owner.userId, t.approver.userId, t.owner.userId], ["body", "reviewers", 2]],
    ["21 of them", () => Array.from({ length: 21 }, () => crypto.randomUUID()), ["body", "reviewers"]],
    ["not a user id", () => ["ada"], ["body", "reviewers", 0]],
    ["not a list", () => t.owner.userId, ["body", "reviewers"]],
  ])("bad input: %s", async (_, reviewers, loc) => {
    await writesNothing(t.appId, async () => {
      const response = await changeRequests.create(
        { key: t.editor.teamKey },
        { app_id: t.appId, environment: "production", variant_revision_id: t.mainRevision, title: "Bad", reviewers: reviewers() },
      );
      expect(response.status).toBe(422);
      const { detail } = (await response.json()) as { detail: ValidationIssue[] };
      // A string is also told it is too long (the array's check runs on it too, as on every such list of the API).
      expect(detail[0].loc, JSON.stringify(detail)).toEqual(loc);
    });
  });
});

describe("awaiting my review: what I may approve now and have not approved or declined at its version", () => {
  let byEditor: ChangeRequest;
  let byApprover: ChangeRequest;

  it("lists open requests for their approvers, not their author, not a non-approver, not a draft", async () => {
    byEditor = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
    byApprover = await propose(t.approver.teamKey, t.appId, "staging", t.otherRevision);
    await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision, { draft: true });
    const lists = await Promise.all([t.approver, t.second, t.owner, t.editor, t.viewer].map((member) => awaiting(member)));
    expect(lists).toEqual([[byEditor.id], [byApprover.id, byEditor.id], [byApprover.id, byEditor.id], [], []]);
  });

  it("an approve takes it off the approver's list only; an approved request still awaits the others", async () => {
    await expectJson(await changeRequests.review({ key: t.approver.teamKey }, byEditor.id, { kind: "approve", version: 1 }));
    expect((await readRequest(t.second.teamKey, byEditor.id)).request.state).toBe("approved");
    expect([await awaiting(t.approver), await awaiting(t.second)]).toEqual([[], [byApprover.id, byEditor.id]]);
    expect(await awaiting(t.second, ["approved"])).toEqual([byEditor.id]);
  });

  it("a comment is no review: the request still awaits its commenter", async () => {
    await expectJson(
      await changeRequests.review({ key: t.second.teamKey }, byApprover.id, { kind: "comment", comment: "Looks fine." }),
    );
    expect(await awaiting(t.second)).toEqual([byApprover.id, byEditor.id]);
  });

  it("a new version awaits its earlier approver again", async () => {
    const edited = await expectJson<ChangeRequest>(
      await changeRequests.edit({ key: t.editor.teamKey }, byEditor.id, { variant_revision_id: t.mainRevision }),
    );
    expect(edited.version).toBe(2);
    expect(await awaiting(t.approver)).toEqual([byEditor.id]);
  });

  it("a decline takes it off every list (rejected)", async () => {
    await expectJson(await changeRequests.review({ key: t.owner.teamKey }, byApprover.id, { kind: "decline" }));
    expect([await awaiting(t.owner), await awaiting(t.second)]).toEqual([[byEditor.id], [byEditor.id]]);
  });

  it("false filters nothing; another value is a 422", async () => {
    const list = (awaitingMyReview?: string) =>
      changeRequests.list(
        { key: t.editor.teamKey },
        { app_id: t.appId, environment: "staging", awaiting_my_review: awaitingMyReview },
      );
    expect(await expectJson(await list("false"))).toEqual(await expectJson(await list()));
    expect((await list("yes")).status).toBe(422);
  });
});
