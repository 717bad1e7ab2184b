import { beforeAll, describe, expect, it } from "vitest";
import { apps, changeRequests } from "../client";
import { createAppVia, deploy, expectError, expectJson, newId, type ValidationIssue } from "../fixtures";
import { bucketFor, databaseOf } from "../pool";
import { type ChangeRequest, propose, type RequestsTeam, readRequest, requestsTeam, writesNothing } from "./setup";

/*
 * What change requests refuse (docs/CHANGE-REQUESTS.md §3, §7), each refusal writing nothing: bad input, what is not
 * there, a state that forbids the action, a stale If-Match, the limits; and Idempotency-Key's replays.
 */

let t: RequestsTeam;
beforeAll(async () => {
  t = await requestsTeam();
});

const create = (body: Record<string, unknown>, headers?: Record<string, string>) =>
  changeRequests.create(
    { key: t.editor.teamKey },
    { app_id: t.appId, environment: "production", title: "A title", ...body },
    { headers },
  );

/** The coded 409 detail of a response. */
async function expectConflict(response: Response, detail: Record<string, unknown>) {
  expect(response.status, await response.clone().text()).toBe(409);
  expect(((await response.json()) as { detail: unknown }).detail).toEqual(expect.objectContaining(detail));
}

describe("bad input: 422, nothing written", () => {
  it.each([
    ["both ids", { variant_revision_id: "MAIN", revert_to_revision_id: "MAIN" }],
    ["neither id", {}],
    ["an empty title", { variant_revision_id: "MAIN", title: "" }],
    ["a blank title", { variant_revision_id: "MAIN", title: "   " }],
    ["a title of 201 characters", { variant_revision_id: "MAIN", title: "t".repeat(201) }],
    ["a description of 10,001 characters", { variant_revision_id: "MAIN", description: "d".repeat(10_001) }],
    ["an unknown environment", { variant_revision_id: "MAIN", environment: "qa" }],
  ])("create with %s", async (_, body) => {
    const named = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, v === "MAIN" ? t.mainRevision : v]));
    await writesNothing(t.appId, async () => {
      const response = await create(named);
      expect(response.status).toBe(422);
      expect(((await response.json()) as { detail: ValidationIssue[] }).detail.length).toBeGreaterThan(0);
    });
  });

  it("at the limits: a title of 200 characters and a description of 10,000 are taken", async () => {
    const made = await expectJson<ChangeRequest>(
      await create({ variant_revision_id: t.mainRevision, title: "t".repeat(200), description: "d".repeat(10_000) }),
    );
    expect([made.title.length, made.description.length]).toEqual([200, 10_000]);
  });

  it("an empty edit, a comment of 5,001 characters, a comment review without one, a version 0", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    await writesNothing(t.appId, async () => {
      expect((await changeRequests.edit({ key: t.editor.teamKey }, made.id, {})).status).toBe(422);
      const long = { kind: "comment", comment: "c".repeat(5001) };
      expect((await changeRequests.review({ key: t.owner.teamKey }, made.id, long)).status).toBe(422);
      expect((await changeRequests.review({ key: t.owner.teamKey }, made.id, { kind: "comment" })).status).toBe(422);
      expect((await changeRequests.review({ key: t.owner.teamKey }, made.id, { kind: "approve", version: 0 })).status).toBe(422);
      expect((await changeRequests.list({ key: t.owner.teamKey }, { state: ["merged"] })).status).toBe(422);
    });
  });
});

describe("what is not there: 404, nothing written", () => {
  it("an unknown app, a revision of another app, an environment revision of another environment", async () => {
    const otherApp = await createAppVia(t.owner.teamKey, { app_name: `other-${crypto.randomUUID().slice(0, 8)}` });
    await writesNothing(t.appId, async () => {
      await expectError(
        await create({ app_id: newId(bucketFor(t.appId)), variant_revision_id: t.mainRevision }),
        404,
        "App not found",
      );
      await expectError(await create({ app_id: otherApp, variant_revision_id: t.mainRevision }), 404, "Revision not found");
      await expectError(await create({ revert_to_revision_id: t.stagingRevisionId }), 404, "Revision not found");
      await expectError(await create({ variant_revision_id: t.stagingRevisionId }), 404, "Revision not found");
    });
  });

  it("an unknown request, on every route", async () => {
    const id = newId(bucketFor(t.appId));
    const as = { key: t.owner.teamKey };
    for (const response of [
      await changeRequests.get(as, id),
      await changeRequests.diff(as, id),
      await changeRequests.edit(as, id, { title: "x" }),
      await changeRequests.review(as, id, { kind: "comment", comment: "x" }),
      await changeRequests.act(as, id, "submit"),
      await changeRequests.act(as, id, "rebase"),
      await changeRequests.act(as, id, "cancel"),
    ]) {
      await expectError(response, 404, "Change request not found");
    }
  });

  it("an edit to a revision of another app", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    await writesNothing(t.appId, async () => {
      const edit = await changeRequests.edit({ key: t.editor.teamKey }, made.id, { revert_to_revision_id: t.stagingRevisionId });
      await expectError(edit, 404, "Revision not found");
    });
  });
});

describe("states and versions: 409, nothing written", () => {
  it("each action its state forbids is `invalid_state`, naming the state", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    await writesNothing(t.appId, async () => {
      await expectConflict(await changeRequests.act({ key: t.editor.teamKey }, made.id, "submit"), {
        code: "invalid_state",
        state: "open",
        message: "This change request is open: this action is not allowed now.",
      });
    });
    await expectJson(await changeRequests.act({ key: t.editor.teamKey }, made.id, "cancel"));
    await writesNothing(t.appId, async () => {
      for (const response of [
        await changeRequests.edit({ key: t.editor.teamKey }, made.id, { title: "x" }),
        await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 }),
        await changeRequests.act({ key: t.editor.teamKey }, made.id, "rebase"),
        await changeRequests.act({ key: t.editor.teamKey }, made.id, "cancel"),
      ]) {
        await expectConflict(response, { code: "invalid_state", state: "cancelled" });
      }
    });
  });

  it("a request past expires_at reads `expired`, and takes no action; the list finds it so", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
    await databaseOf(t.appId)
      .prepare("UPDATE change_requests SET expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 second') WHERE id = ?")
      .bind(made.id)
      .run();
    expect((await readRequest(t.viewer.teamKey, made.id)).request.state).toBe("expired");
    await writesNothing(t.appId, async () => {
      await expectConflict(await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 }), {
        code: "invalid_state",
        state: "expired",
      });
      await expectConflict(await changeRequests.act({ key: t.editor.teamKey }, made.id, "rebase"), { state: "expired" });
    });
    const listed = await expectJson<{ change_requests: ChangeRequest[] }>(
      await changeRequests.list({ key: t.viewer.teamKey }, { app_id: t.appId, state: ["expired"] }),
    );
    expect(listed.change_requests.map(({ id }) => id)).toContain(made.id);
  });

  it("50 unfinished requests per app environment at most: the 51st is `too_many_open`; a cancel makes room", async () => {
    const appId = await createAppVia(t.owner.teamKey, { app_name: `full-${crypto.randomUUID().slice(0, 8)}` });
    await deploy(appId, "development", "main", t.owner);
    const { revisions } = await expectJson<{ revisions: { deployed_app_variant_revision: string }[] }>(
      await apps.revisions({ key: t.owner.teamKey }, appId, "development"),
    );
    const revisionId = revisions[0].deployed_app_variant_revision;
    const made: string[] = [];
    for (let i = 0; i < 50; i++) made.push((await propose(t.editor.teamKey, appId, "staging", revisionId)).id);
    await writesNothing(t.appId, async () => {
      await expectConflict(
        await changeRequests.create(
          { key: t.editor.teamKey },
          { app_id: appId, environment: "staging", variant_revision_id: revisionId, title: "One more" },
        ),
        { code: "too_many_open", limit: 50 },
      );
    });
    // Another environment of the app has room.
    await propose(t.editor.teamKey, appId, "production", revisionId);
    await expectJson(await changeRequests.act({ key: t.editor.teamKey }, made[0], "cancel"));
    await propose(t.editor.teamKey, appId, "staging", revisionId);
  });
});

describe("If-Match: 412 unless still in that state, nothing written", () => {
  it("a create takes the environment's ETag", async () => {
    const current = (await apps.revisions({ key: t.owner.teamKey }, t.appId, "staging")).headers.get("ETag") ?? "";
    const stale = current.replace(/\.1"$/, '.0"');
    await writesNothing(t.appId, async () => {
      await expectError(
        await create({ environment: "staging", variant_revision_id: t.otherRevision }, { "If-Match": stale }),
        412,
        "The environment has changed since the ETag given in If-Match: read it again, then retry",
      );
    });
    const made = await expectJson<ChangeRequest>(
      await create({ environment: "staging", variant_revision_id: t.otherRevision }, { "If-Match": current }),
    );
    expect(made.base.environment_revision).toBe(1);
  });

  it("an action takes the request's ETag, which each write changes", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const { etag } = await readRequest(t.editor.teamKey, made.id);
    const edited = await changeRequests.edit(
      { key: t.editor.teamKey },
      made.id,
      { title: "New" },
      { headers: { "If-Match": etag } },
    );
    expect(edited.status).toBe(200);
    expect(edited.headers.get("ETag")).toBe(`"${made.id}.2"`);
    for (const tag of [etag, `"${newId(bucketFor(t.appId))}.2"`, 'W/"x"']) {
      await writesNothing(t.appId, async () => {
        await expectError(
          await changeRequests.act({ key: t.editor.teamKey }, made.id, "cancel", undefined, { headers: { "If-Match": tag } }),
          412,
          "The change request has changed since the ETag given in If-Match: read it again, then retry",
        );
      });
    }
    const cancelled = await changeRequests.act({ key: t.editor.teamKey }, made.id, "cancel", undefined, {
      headers: { "If-Match": `"${made.id}.2"` },
    });
    expect(cancelled.status).toBe(200);
  });
});

describe("Idempotency-Key", () => {
  it("a create and a review retried with their keys are answered again, made once", async () => {
    const headers = { "Idempotency-Key": `create-${crypto.randomUUID()}` };
    const body = { variant_revision_id: t.otherRevision, environment: "staging" };
    const first = await expectJson<ChangeRequest>(await create(body, headers));
    const retried = await create(body, headers);
    expect(retried.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectJson<ChangeRequest>(retried)).toEqual(first);
    const review = { "Idempotency-Key": `review-${crypto.randomUUID()}` };
    const comment = { kind: "comment", comment: "Looks right." };
    await expectJson(await changeRequests.review({ key: t.owner.teamKey }, first.id, comment, { headers: review }));
    const again = await changeRequests.review({ key: t.owner.teamKey }, first.id, comment, { headers: review });
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect((await expectJson<ChangeRequest>(again)).reviews).toHaveLength(1);
  });

  it("a refused action keeps nothing of its key: retried once allowed, it runs", async () => {
    const draft = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision, { draft: true });
    const headers = { "Idempotency-Key": `review-${crypto.randomUUID()}` };
    const comment = { kind: "comment", comment: "Early." };
    await expectConflict(await changeRequests.review({ key: t.owner.teamKey }, draft.id, comment, { headers }), {
      code: "invalid_state",
    });
    await expectJson(await changeRequests.act({ key: t.editor.teamKey }, draft.id, "submit"));
    const ran = await changeRequests.review({ key: t.owner.teamKey }, draft.id, comment, { headers });
    expect(ran.headers.get("Idempotent-Replayed")).toBeNull();
    expect((await expectJson<ChangeRequest>(ran)).reviews).toHaveLength(1);
  });
});

describe("200 reviews a request at most", () => {
  it("the 201st is `too_many_reviews`", async () => {
    const made = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    // 200 comments, as the route would store them, written in one go to keep the test short.
    const db = databaseOf(t.appId);
    await db.batch(
      Array.from({ length: 200 }, () =>
        db
          .prepare(
            "INSERT INTO change_request_reviews (id, change_request_id, reviewer_id, kind, comment, version) VALUES (?, ?, ?, 'comment', 'x', 1)",
          )
          .bind(newId(bucketFor(t.appId)), made.id, t.owner.userId),
      ),
    );
    await writesNothing(t.appId, async () => {
      await expectConflict(await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 }), {
        code: "too_many_reviews",
        limit: 200,
      });
    });
  });
});
