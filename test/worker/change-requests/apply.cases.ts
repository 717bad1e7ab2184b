import { beforeAll, describe, expect, it } from "vitest";
import { applicationVariants, apps, changeRequests, deployments, protection, variants } from "../client";
import { A_TIME, deploy, expectError, expectJson, FORBIDDEN, send } from "../fixtures";
import { countOnShards } from "../pool";
import { type ChangeRequest, changeRole, propose, type RequestsTeam, readRequest, requestEvents, requestsTeam } from "./setup";

/*
 * A change request's apply (docs/CHANGE-REQUESTS.md §3, §6): one batch whose checks are conditions of its writes.
 * Production is protected with two approvals; staging and development keep the defaults (one approval).
 */

let t: RequestsTeam;
beforeAll(async () => {
  t = await requestsTeam();
  const settings = { protected: true, required_approvals: 2 };
  expect((await protection.put({ key: t.owner.teamKey }, t.team.projectId, "production", settings)).status).toBe(200);
});

const approve = async (key: string, id: string, version = 1) =>
  expectJson<ChangeRequest>(await changeRequests.review({ key }, id, { kind: "approve", version }));

const apply = (key: string, id: string, headers: Record<string, string> = {}) =>
  changeRequests.act({ key }, id, "apply", undefined, { headers });

const dryRun = (key: string, id: string) => changeRequests.act({ key }, id, "apply?dry_run=true");

/** A refusal's status and whole body. */
async function expectRefused(response: Response, status: number, detail: unknown) {
  expect([response.status, await response.json()]).toEqual([status, { detail }]);
}

/** An approved request for `environment` (approved by both deployment managers), by the editor. */
async function approvedRequest(environment: string, revision = t.mainRevision) {
  const made = await propose(t.editor.teamKey, t.appId, environment, revision);
  await approve(t.approver.teamKey, made.id);
  if (environment === "production") await approve(t.second.teamKey, made.id);
  return (await readRequest(t.editor.teamKey, made.id)).request;
}

/** The app's environment's revisions, oldest first. */
interface Revision {
  revision: number;
  id: string;
  deployed_app_variant_revision: string;
}

const history = async (environment: string) =>
  (await expectJson<{ revisions: Revision[] }>(await apps.revisions({ key: t.owner.teamKey }, t.appId, environment))).revisions;

/** The app's environment events, oldest first. */
async function environmentEvents() {
  const page = await expectJson<{ events: { type: string; data: Record<string, unknown>; actor: Record<string, unknown> }[] }>(
    await send("GET", `/events?app_id=${t.appId}&type=environment.&limit=200`, { key: t.owner.teamKey }),
  );
  return page.events.reverse();
}

const rowsWritten = () =>
  countOnShards(
    "SELECT (SELECT COUNT(*) FROM deployments) + (SELECT COUNT(*) FROM environment_revisions) + (SELECT COUNT(*) FROM events) AS n",
  );

describe("apply", () => {
  it("reaches a protected production only through an approved request: the revision, its history and both events", async () => {
    const direct = await deployments.deployConfig(
      { key: t.owner.teamKey },
      { application_ref: { id: t.appId }, variant_ref: { slug: "main" }, environment_ref: { slug: "production" } },
    );
    expect(direct.status).toBe(409);
    const request = await approvedRequest("production");
    expect(request.state).toBe("approved");

    const response = await apply(t.editor.teamKey, request.id);
    const applied = await expectJson<ChangeRequest>(response);
    const [revision] = await history("production");
    expect(revision).toMatchObject({ revision: 1, deployed_app_variant_revision: t.mainRevision });
    expect(applied).toEqual({
      ...request,
      state: "applied",
      applied: {
        at: A_TIME,
        by: { user_id: t.editor.userId, username: t.editor.username },
        environment_revision: 1,
        environment_revision_id: revision.id,
        scheduled: false,
      },
      updated_at: A_TIME,
    });
    expect(response.headers.get("ETag")).toBe(`"${request.id}.${4}"`);
    expect((await readRequest(t.viewer.teamKey, request.id)).request).toEqual(applied);

    const deployed = (await environmentEvents()).filter((event) => event.data.environment === "production");
    expect(deployed).toEqual([
      expect.objectContaining({
        type: "environment.deployed",
        data: expect.objectContaining({ environment_revision_id: revision.id, change_request_id: request.id }),
        actor: expect.objectContaining({ user_id: t.editor.userId }),
      }),
    ]);
    const appliedEvent = (await requestEvents(t.owner.teamKey, t.appId)).filter(
      (event) => event.type === "change_request.applied" && event.data.change_request_id === request.id,
    );
    expect(appliedEvent.map((event) => event.data)).toEqual([
      {
        change_request_id: request.id,
        app_id: t.appId,
        app_name: request.app_name,
        environment: "production",
        title: request.title,
        state: "applied",
        previous_state: "approved",
        version: 1,
        variant_revision_id: t.mainRevision,
        base: request.base,
        environment_revision: 1,
        environment_revision_id: revision.id,
        scheduled: false,
        live_everywhere_by: A_TIME,
      },
    ]);

    // Applied is final: a second apply is refused, nothing written.
    const before = await rowsWritten();
    await expectRefused(await apply(t.owner.teamKey, request.id), 409, {
      code: "invalid_state",
      message: "This change request is applied: this action is not allowed now.",
      state: "applied",
    });
    expect(await rowsWritten()).toBe(before);
  });

  it("refuses a request short of its approvals, counted now: a demoted approver stops counting", async () => {
    const request = await approvedRequest("production", t.otherRevision);
    await changeRole(t.owner.teamKey, t.team, `${t.second.username}@example.com`, "viewer");
    try {
      const before = await rowsWritten();
      await expectRefused(await apply(t.editor.teamKey, request.id), 409, {
        code: "not_approved",
        message: "This change request has 1 of the 2 approvals it needs.",
        approvals: 1,
        approvals_required: 2,
      });
      expect(await rowsWritten()).toBe(before);
      expect((await readRequest(t.editor.teamKey, request.id)).request).toEqual({ ...request, state: "open", approvals: 1 });
    } finally {
      await changeRole(t.owner.teamKey, t.team, `${t.second.username}@example.com`, "deployment_manager");
    }
  });

  it("refuses a revision no longer deployable (its config archived)", async () => {
    const spare = await deploy(t.appId, "development", `spare-${crypto.randomUUID().slice(0, 6)}`, t.owner);
    const [spareRevision] = await expectJson<{ id: string }[]>(
      await variants.revisions({ key: t.owner.teamKey }, spare.variantId),
    );
    const request = await approvedRequest("staging", spareRevision.id);
    expect((await applicationVariants.archive({ key: t.owner.teamKey }, spare.variantId)).status).toBe(200);
    const before = await rowsWritten();
    await expectRefused(await apply(t.editor.teamKey, request.id), 409, {
      code: "revision_unavailable",
      message:
        "The config revision this change request deploys belongs to an archived config: unarchive it, or propose another one (PATCH).",
    });
    expect(await rowsWritten()).toBe(before);
  });

  it("a conflict writes nothing and answers what changed; after a rebase and a new approval it applies", async () => {
    const request = await approvedRequest("staging", t.otherRevision);
    const base = (await history("staging")).at(-1) as Revision;
    const moved = await deploy(t.appId, "staging", "main", t.owner);
    const before = await rowsWritten();
    const stored = await readRequest(t.editor.teamKey, request.id);

    const main = { config_name: "main", params: {}, url: "" };
    const side = (revision: number, id: string) => ({
      environment_revision: revision,
      environment_revision_id: id,
      variant_revision_id: t.mainRevision,
      config_name: "main",
      revision: 1,
      document: main,
    });
    await expectRefused(await apply(t.editor.teamKey, request.id), 409, {
      code: "change_request_conflict",
      message:
        "The environment has changed since this change request's base: nothing was written. Rebase it " +
        "(POST /change-requests/{id}/rebase), have it approved again, then apply it.",
      base: side(base.revision, base.id),
      current: side(moved.revision, moved.revisionId),
      diff: {
        identical: false,
        coarse: false,
        patch: [{ op: "replace", path: "/config_name", value: "other" }],
        changes: [{ path: "/config_name", op: "replace", from: "main", to: "other" }],
      },
      drift: { identical: true, coarse: false, patch: [], changes: [] },
    });
    expect(await rowsWritten()).toBe(before);
    expect(await readRequest(t.editor.teamKey, request.id)).toEqual(stored);

    const rebased = await expectJson<ChangeRequest>(await changeRequests.act({ key: t.editor.teamKey }, request.id, "rebase"));
    expect(rebased).toMatchObject({ state: "open", version: 2, approvals: 0 });
    await approve(t.approver.teamKey, request.id, 2);
    const applied = await expectJson<ChangeRequest>(await apply(t.editor.teamKey, request.id));
    expect(applied.applied).toMatchObject({ environment_revision: moved.revision + 1 });
    expect((await history("staging")).at(-1)).toMatchObject({ deployed_app_variant_revision: t.otherRevision });
  });

  it("a revert request deploys that revision again, as a revert would: environment.reverted names both", async () => {
    const made = await expectJson<ChangeRequest>(
      await changeRequests.create(
        { key: t.editor.teamKey },
        { app_id: t.appId, environment: "staging", revert_to_revision_id: t.stagingRevisionId, title: "Back" },
      ),
    );
    await approve(t.approver.teamKey, made.id);
    const applied = await expectJson<ChangeRequest>(await apply(t.editor.teamKey, made.id));
    expect(applied).toMatchObject({ kind: "revert", state: "applied" });
    const [reverted] = (await environmentEvents()).filter((event) => event.type === "environment.reverted");
    expect(reverted.data).toMatchObject({
      environment: "staging",
      environment_revision_id: applied.applied?.environment_revision_id,
      reverted_to_revision_id: t.stagingRevisionId,
      change_request_id: made.id,
    });
  });

  it("two applies racing: exactly one wins, one revision made", async () => {
    const request = await approvedRequest("development", t.mainRevision);
    const revisions = (await history("development")).length;
    const answers = await Promise.all([apply(t.editor.teamKey, request.id), apply(t.owner.teamKey, request.id)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    expect((await history("development")).length).toBe(revisions + 1);
  });

  it("takes If-Match (the request's ETag) and Idempotency-Key", async () => {
    const request = await approvedRequest("development", t.otherRevision);
    const { etag } = await readRequest(t.editor.teamKey, request.id);
    await expectError(
      await apply(t.editor.teamKey, request.id, { "If-Match": `"${request.id}.1"` }),
      412,
      "The change request has changed since the ETag given in If-Match: read it again, then retry",
    );
    const first = await apply(t.editor.teamKey, request.id, { "If-Match": etag, "Idempotency-Key": "apply-once" });
    const body = await expectJson<ChangeRequest>(first);
    const again = await apply(t.editor.teamKey, request.id, { "If-Match": etag, "Idempotency-Key": "apply-once" });
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectJson<ChangeRequest>(again)).toEqual(body);
  });

  it("is refused to a viewer (403) and, like the other actions, to another organization (404)", async () => {
    const request = await approvedRequest("staging", t.mainRevision);
    await expectError(await apply(t.viewer.teamKey, request.id), 403, FORBIDDEN);
    for (const action of ["apply", "apply?dry_run=true", "schedule", "unschedule"]) {
      const body = action === "schedule" ? { scheduled_at: new Date(Date.now() + 3_600_000).toISOString() } : undefined;
      await expectError(
        await changeRequests.act({ key: t.outsider.key }, request.id, action, body),
        404,
        "Change request not found",
      );
    }
  });
});

describe("apply's dry-run", () => {
  it("answers what the apply would change, writing nothing; and the apply's own refusals", async () => {
    const request = await approvedRequest("production", t.otherRevision);
    const before = await rowsWritten();
    const current = (await history("production")).at(-1) as Revision;
    const response = await dryRun(t.editor.teamKey, request.id);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      dry_run: true,
      app_id: t.appId,
      environment: "production",
      kind: "deploy",
      next_environment_revision: current.revision + 1,
      current: { environment_revision: current.revision, variant_revision_id: t.mainRevision, config_name: "main", revision: 1 },
      proposed: { variant_revision_id: t.otherRevision, config_name: "other", revision: 1 },
      diff: {
        identical: false,
        coarse: false,
        patch: [{ op: "replace", path: "/config_name", value: "other" }],
        changes: [{ path: "/config_name", op: "replace", from: "main", to: "other" }],
      },
    });
    expect(await rowsWritten()).toBe(before);
    expect((await readRequest(t.editor.teamKey, request.id)).request.state).toBe("approved");

    const open = await propose(t.editor.teamKey, t.appId, "production", t.mainRevision);
    const real = await apply(t.editor.teamKey, open.id);
    const dry = await dryRun(t.editor.teamKey, open.id);
    expect([dry.status, await dry.json()]).toEqual([real.status, await real.json()]);
    expect(real.status).toBe(409);
  });
});
