import { beforeAll, describe, expect, it } from "vitest";
import { changeRequests } from "../client";
import { A_TIME, deploy, expectJson } from "../fixtures";
import { bucketFor, databaseOf } from "../pool";
import { runCron } from "../webhooks/webhook-fixtures";
import { type ChangeRequest, changeRole, propose, readRequest, requestEvents, requestsTeam } from "./setup";

/*
 * Schedule, unschedule and the minute cron (docs/CHANGE-REQUESTS.md §3): a due request applied as the user who
 * scheduled it, a refusal recorded as a failure, a request past its expiry recorded expired; on either shard.
 */

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

/** Makes request `id` due (or, `expired`, past its expiry) as time would: the cron is what is tested. */
const timePasses = (id: string, column: "scheduled_at" | "expires_at") =>
  databaseOf(id).prepare(`UPDATE change_requests SET ${column} = '2020-01-01T00:00:00.000Z' WHERE id = ?`).bind(id).run();

for (const shard of ["SHARD_0", "SHARD_1"] as const) {
  describe(`scheduled change requests, an organization on ${shard}`, () => {
    let t: Awaited<ReturnType<typeof requestsTeam>>;
    beforeAll(async () => {
      t = await requestsTeam(shard);
    });

    const schedule = (key: string, id: string, scheduledAt: string) =>
      changeRequests.act({ key }, id, "schedule", { scheduled_at: scheduledAt });

    /** A request for `environment` (one approval by default), approved, then scheduled in an hour by `by`. */
    async function scheduled(environment: string, revision: string, by = t.approver) {
      const made = await propose(t.editor.teamKey, t.appId, environment, revision);
      await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 });
      return expectJson<ChangeRequest>(await schedule(by.teamKey, made.id, inAnHour()));
    }

    const eventsOf = async (id: string) =>
      (await requestEvents(t.owner.teamKey, t.appId)).filter((event) => event.data.change_request_id === id);

    it("schedules an approved request (a time in the future, within 90 days) and unschedules it", async () => {
      const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
      const open = await schedule(t.editor.teamKey, made.id, inAnHour());
      expect([open.status, await open.json()]).toEqual([
        409,
        {
          detail: {
            code: "invalid_state",
            message: "This change request is open: this action is not allowed now.",
            state: "open",
          },
        },
      ]);
      await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 });
      for (const at of ["2020-01-01T00:00:00Z", new Date(Date.now() + 91 * 86_400_000).toISOString(), "tomorrow"]) {
        const refused = await schedule(t.editor.teamKey, made.id, at);
        expect([
          refused.status,
          ...(await expectJson<{ detail: { loc: string[] }[] }>(refused, 422)).detail.map((issue) => issue.loc),
        ]).toEqual([422, ["body", "scheduled_at"]]);
      }
      const at = new Date(Date.now() + 86_400_000);
      const done = await expectJson<ChangeRequest>(await schedule(t.editor.teamKey, made.id, at.toISOString()));
      expect(done).toMatchObject({ state: "scheduled", scheduled_at: at.toISOString() });
      const back = await expectJson<ChangeRequest>(await changeRequests.act({ key: t.editor.teamKey }, made.id, "unschedule"));
      expect(back).toMatchObject({ state: "approved", scheduled_at: null });
      const events = await eventsOf(made.id);
      expect(events.slice(-2).map((event) => [event.type, event.data.previous_state, event.data.state])).toEqual([
        ["change_request.scheduled", "approved", "scheduled"],
        ["change_request.unscheduled", "scheduled", "approved"],
      ]);
      expect(events.at(-2)?.data.scheduled_at).toBe(at.toISOString());
    });

    it("the cron applies a due request as its scheduler; one not due stays scheduled", async () => {
      const due = await scheduled("staging", t.otherRevision);
      const later = await scheduled("development", t.mainRevision);
      await timePasses(due.id, "scheduled_at");
      await runCron("* * * * *");

      const applied = (await readRequest(t.viewer.teamKey, due.id)).request;
      expect(applied).toMatchObject({
        state: "applied",
        applied: {
          at: A_TIME,
          by: { user_id: t.approver.userId, username: t.approver.username },
          environment_revision: 2,
          scheduled: true,
        },
      });
      expect((await readRequest(t.viewer.teamKey, later.id)).request.state).toBe("scheduled");
      const [event] = (await eventsOf(due.id)).filter((one) => one.type === "change_request.applied");
      expect(event).toMatchObject({
        actor: { user_id: t.approver.userId, username: t.approver.username, api_key_prefix: null },
        data: { previous_state: "scheduled", state: "applied", scheduled: true, environment_revision: 2 },
      });
    });

    it("a refused scheduled apply fails the request, saying why: a conflict, then a scheduler no longer a proposer", async () => {
      const conflicting = await scheduled("staging", t.mainRevision, t.editor);
      const { revision, revisionId } = await deploy(t.appId, "staging", "main", t.owner);
      await timePasses(conflicting.id, "scheduled_at");
      const orphaned = await scheduled("development", t.otherRevision, t.second);
      await timePasses(orphaned.id, "scheduled_at");
      const email = `${t.second.username}@example.com`;
      await changeRole(t.owner.teamKey, t.team, email, "viewer");
      try {
        await runCron("* * * * *");
      } finally {
        await changeRole(t.owner.teamKey, t.team, email, "deployment_manager");
      }

      const failed = (await readRequest(t.viewer.teamKey, conflicting.id)).request;
      expect(failed).toMatchObject({ state: "failed", applied: null });
      expect(failed.failure).toEqual({
        at: A_TIME,
        reason: "conflict",
        detail: {
          base: conflicting.base,
          current: { environment_revision: revision, environment_revision_id: revisionId, variant_revision_id: t.mainRevision },
        },
      });
      const removed = (await readRequest(t.viewer.teamKey, orphaned.id)).request;
      expect(removed.failure).toEqual({ at: A_TIME, reason: "scheduler_removed", detail: { scheduled_by: t.second.userId } });
      for (const [id, reason] of [
        [conflicting.id, "conflict"],
        [orphaned.id, "scheduler_removed"],
      ]) {
        const [event] = (await eventsOf(id)).filter((one) => one.type === "change_request.failed");
        expect(event.data).toMatchObject({ previous_state: "scheduled", state: "failed", change_request_id: id, reason });
      }

      // Then rebased, approved again and applied.
      await changeRequests.act({ key: t.editor.teamKey }, conflicting.id, "rebase");
      await changeRequests.review({ key: t.approver.teamKey }, conflicting.id, { kind: "approve", version: 2 });
      const applied = await changeRequests.act({ key: t.editor.teamKey }, conflicting.id, "apply");
      expect(applied.status).toBe(200);
    });

    it("the cron leaves a fenced bucket's requests alone (docs/SHARDING.md §5), and takes them up once it is open", async () => {
      const due = await scheduled("development", t.mainRevision);
      await timePasses(due.id, "scheduled_at");
      const fences = databaseOf(t.team.organizationId);
      const bucket = bucketFor(t.team.organizationId);
      await fences.prepare("INSERT INTO bucket_fences (bucket, state) VALUES (?, 'moving')").bind(bucket).run();
      try {
        await runCron("* * * * *");
        expect((await readRequest(t.viewer.teamKey, due.id)).request.state).toBe("scheduled");
      } finally {
        await fences.prepare("DELETE FROM bucket_fences WHERE bucket = ?").bind(bucket).run();
      }
      await runCron("* * * * *");
      expect((await readRequest(t.viewer.teamKey, due.id)).request.state).toBe("applied");
    });

    it("the cron records a request past its expiry expired; a scheduled one does not expire", async () => {
      const stale = await propose(t.editor.teamKey, t.appId, "production", t.otherRevision);
      const kept = await scheduled("production", t.mainRevision);
      await timePasses(stale.id, "expires_at");
      await timePasses(kept.id, "expires_at");
      await runCron("* * * * *");
      const expired = await readRequest(t.viewer.teamKey, stale.id);
      expect(expired.request.state).toBe("expired");
      expect(expired.etag).toBe(`"${stale.id}.2"`);
      expect((await readRequest(t.viewer.teamKey, kept.id)).request.state).toBe("scheduled");
      const events = await eventsOf(stale.id);
      expect(events.at(-1)).toMatchObject({
        type: "change_request.expired",
        actor: { user_id: null, api_key_prefix: null },
        data: { previous_state: "open", state: "expired" },
      });
      // Recorded once: a second run finds nothing more to do.
      await runCron("* * * * *");
      expect((await eventsOf(stale.id)).length).toBe(events.length);
    });
  });
}
