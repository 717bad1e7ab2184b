import { beforeAll, describe, expect, it } from "vitest";
import { type ChangeRequest, requestEvents, writesNothing } from "../change-requests/setup";
import { apps, changeRequests, protection } from "../client";
import { A_NEW_ID, A_TIME, type Account, createAccount, expectError, expectJson, send } from "../fixtures";
import { databaseOf } from "../pool";
import { runCron } from "../webhooks/webhook-fixtures";
import { type Split, splitApp, splitPath } from "./split-fixtures";

/*
 * Splits through change requests (docs/SPLITS.md §1): on a protected production, kinds `split` and `promote`
 * proposed, approved and applied; their conflicts, dry-runs and diffs.
 */

let owner: Account;
let appId: string;
let candidate: string;
let mainRevision: string;

beforeAll(async () => {
  owner = await createAccount();
  appId = await splitApp(owner);
  const settings = { protected: true, allow_self_approval: true };
  await expectJson(await protection.put({ key: owner.key }, owner.projectId, "production", settings));
  const revisionOf = async (slug: string) =>
    (
      await expectJson<{ variant_ref: { id: string } }>(
        await send("POST", "/variants/configs/fetch", {
          key: owner.key,
          body: { application_ref: { id: appId }, variant_ref: { slug } },
        }),
      )
    ).variant_ref.id;
  candidate = await revisionOf("next");
  mainRevision = await revisionOf("main");
});

const STEPS = [{ weight: 5000, after_minutes: 60 }];

/** A request of production proposing `proposal` (`split` or `end_split`), approved by its author. */
async function approved(proposal: Record<string, unknown>) {
  const made = await expectJson<ChangeRequest>(
    await changeRequests.create({ key: owner.key }, { app_id: appId, environment: "production", title: "Split", ...proposal }),
  );
  return expectJson<ChangeRequest>(
    await changeRequests.review({ key: owner.key }, made.id, {
      kind: "approve",
      version: 1,
    }),
  );
}

const apply = (id: string, query = "", headers?: Record<string, string>) =>
  changeRequests.act({ key: owner.key }, id, `apply${query}`, undefined, { headers });
const running = async () => send("GET", splitPath(appId, "production"), { key: owner.key });

describe("split change requests", () => {
  it("a split request applied starts the split with its weight and steps; the applier sees its verdict secret once (and its key's replay)", async () => {
    const request = await approved({
      split: { variant_revision_id: candidate, weight: 1000, steps: STEPS },
    });
    expect(request).toMatchObject({
      kind: "split",
      variant_revision_id: candidate,
      split: { weight: 1000, steps: STEPS, promote_at_end: false },
      state: "approved",
    });
    const diff = await expectJson<{
      proposed: { variant_revision_id: string };
      diff: { identical: boolean };
    }>(await changeRequests.diff({ key: owner.key }, request.id));
    expect(diff.proposed.variant_revision_id).toBe(candidate);
    expect(diff.diff.identical).toBe(false);
    // Its dry-run: the split it would start, on the base production runs (no deploy).
    expect(await expectJson(await apply(request.id, "?dry_run=true"))).toEqual({
      dry_run: true,
      app_id: appId,
      environment: "production",
      kind: "split",
      split: { starts: true, weight: 1000, steps: STEPS, promote_at_end: false },
      current: { environment_revision: 1, variant_revision_id: mainRevision, config_name: "main", revision: 1 },
      proposed: { variant_revision_id: candidate, config_name: "next", revision: 2 },
      diff: diff.diff,
    });
    expect((await running()).status).toBe(404);

    const keyed = { "Idempotency-Key": `apply-${request.id}` };
    const applied = await expectJson<ChangeRequest & { verdict_secret: string }>(await apply(request.id, "", keyed));
    expect(applied.state).toBe("applied");
    expect(applied.applied).toMatchObject({
      environment_revision_id: null,
      scheduled: false,
    });
    expect(applied.verdict_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // A retry of that apply with its Idempotency-Key (its answer lost): the same answer, secret included.
    const replay = await apply(request.id, "", keyed);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectJson(replay)).toEqual(applied);
    const split = await expectJson<Split>(await running());
    expect(split).toMatchObject({
      weight: 1000,
      steps: STEPS,
      promote_at_end: false,
      candidate: { variant_revision_id: candidate },
      started_by: { user_id: owner.userId },
    });
    expect(split).not.toHaveProperty("verdict_secret");
    const read = await expectJson<ChangeRequest>(await changeRequests.get({ key: owner.key }, request.id));
    expect(read).not.toHaveProperty("verdict_secret");
    const events = await expectJson<{
      events: { type: string; data: { split: Split } }[];
    }>(
      await send("GET", `/events?app_id=${appId}&type=environment.&limit=10`, {
        key: owner.key,
      }),
    );
    const splitEvents = events.events.filter(({ type }) => type.startsWith("environment.split_"));
    expect(splitEvents.map(({ type, data }) => [type, data.split.weight])).toEqual([["environment.split_started", 1000]]);
    expect((await requestEvents(owner.key, appId)).map(({ type }) => type)).toContain("change_request.applied");
  });

  it("a split request made on a running split changes its weight and steps; one whose split moved since is a conflict", async () => {
    const change = await approved({
      split: { variant_revision_id: candidate, weight: 2000 },
    });
    const stale = await approved({
      split: { variant_revision_id: candidate, weight: 3000 },
    });
    const applied = await expectJson<ChangeRequest>(await apply(change.id));
    expect(applied).not.toHaveProperty("verdict_secret");
    expect(await expectJson<Split>(await running())).toMatchObject({
      weight: 2000,
      steps: [],
    });
    await writesNothing(appId, async () => {
      const refused = await apply(stale.id);
      expect(refused.status).toBe(409);
      expect(await refused.json()).toMatchObject({
        detail: { code: "change_request_conflict" },
      });
    });
    expect(await expectJson<Split>(await running())).toMatchObject({
      weight: 2000,
    });
    // Rebased on the split now and approved again, it applies.
    await expectJson(await changeRequests.act({ key: owner.key }, stale.id, "rebase"));
    await expectJson(await changeRequests.review({ key: owner.key }, stale.id, { kind: "approve", version: 2 }));
    await expectJson(await apply(stale.id));
    expect(await expectJson<Split>(await running())).toMatchObject({ weight: 3000 });
  });

  it("a promote request applied deploys the candidate, a revision in the history, and ends the split", async () => {
    const request = await approved({ end_split: "promote" });
    const movedOn = await approved({ split: { variant_revision_id: candidate, weight: 4000 } });
    const leftOver = await approved({ end_split: "promote" });
    expect(request).toMatchObject({
      kind: "promote",
      variant_revision_id: candidate,
      split: null,
    });
    const dryRun = await expectJson(await apply(request.id, "?dry_run=true"));
    expect(dryRun).toMatchObject({
      dry_run: true,
      kind: "promote",
      next_environment_revision: 2,
      proposed: { variant_revision_id: candidate },
    });
    const applied = await expectJson<ChangeRequest>(await apply(request.id));
    expect(applied.applied).toMatchObject({
      environment_revision: 2,
      environment_revision_id: A_NEW_ID,
    });
    const history = await expectJson<{
      revisions: { revision: number; deployed_app_variant_revision: string }[];
    }>(await apps.revisions({ key: owner.key }, appId, "production"));
    expect(
      history.revisions.map(({ revision, deployed_app_variant_revision }) => [revision, deployed_app_variant_revision]),
    ).toContainEqual([2, candidate]);
    expect((await running()).status).toBe(404);
    // A request made before the promote: its base moved (and its split ended), the apply refuses it, writing nothing;
    // a promote proposed with no split running is refused.
    await writesNothing(appId, async () => {
      const none = await changeRequests.create(
        { key: owner.key },
        { app_id: appId, environment: "production", title: "Again", end_split: "promote" },
      );
      expect([none.status, await none.json()]).toEqual([404, { detail: "No split" }]);
      const refused = await apply(movedOn.id);
      expect(refused.status).toBe(409);
      expect(await refused.json()).toMatchObject({
        detail: { code: "change_request_conflict", base: { environment_revision: 1 }, current: { environment_revision: 2 } },
      });
    });
    // A promote request rebased once no split runs has nothing to promote: a conflict still, nothing written.
    await expectJson(await changeRequests.act({ key: owner.key }, leftOver.id, "rebase"));
    await expectJson(await changeRequests.review({ key: owner.key }, leftOver.id, { kind: "approve", version: 2 }));
    await writesNothing(appId, async () => {
      const refused = await apply(leftOver.id);
      expect(refused.status).toBe(409);
      expect(await refused.json()).toMatchObject({ detail: { code: "change_request_conflict" } });
    });
  });

  it("a scheduled split request is applied by the minute cron as its scheduler", async () => {
    // Production runs the candidate now (promoted above): a split back to main.
    const request = await approved({ split: { variant_revision_id: mainRevision, weight: 500, promote_at_end: true } });
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    await expectJson(await changeRequests.act({ key: owner.key }, request.id, "schedule", { scheduled_at: inAnHour }));
    await databaseOf(request.id)
      .prepare("UPDATE change_requests SET scheduled_at = '2020-01-01T00:00:00.000Z' WHERE id = ?")
      .bind(request.id)
      .run();
    await runCron("* * * * *");
    const read = await expectJson<ChangeRequest>(await changeRequests.get({ key: owner.key }, request.id));
    expect(read).toMatchObject({
      state: "applied",
      applied: { at: A_TIME, by: { user_id: owner.userId }, environment_revision: null, scheduled: true },
    });
    expect(await expectJson<Split>(await running())).toMatchObject({
      weight: 500,
      promote_at_end: true,
      candidate: { variant_revision_id: mainRevision },
    });
  });

  it("refuses a body proposing two things, a split whose steps do not rise, another candidate than the running split's (422)", async () => {
    await writesNothing(appId, async () => {
      // The split started by the cron runs with candidate main: a change keeps it.
      const other = await changeRequests.create(
        { key: owner.key },
        { app_id: appId, environment: "production", title: "Split", split: { variant_revision_id: candidate, weight: 900 } },
      );
      expect([other.status, await other.json()]).toEqual([
        422,
        {
          detail: [
            {
              loc: ["body", "split", "variant_revision_id"],
              msg: `Value error, a split runs with candidate ${mainRevision}: a change keeps it`,
              type: "value_error",
            },
          ],
        },
      ]);
      for (const proposal of [
        { end_split: "promote", variant_revision_id: candidate },
        { split: { variant_revision_id: candidate, weight: 10 }, end_split: "promote" },
        { split: { variant_revision_id: candidate, weight: 10, steps: [{ weight: 5, after_minutes: 1 }] } },
        { end_split: "abort" },
      ]) {
        const refused = await changeRequests.create(
          { key: owner.key },
          { app_id: appId, environment: "production", title: "Split", ...proposal },
        );
        expect(refused.status).toBe(422);
      }
    });
  });

  it("an edit takes what its kind may change: a split request's split (a new version), never a revision; a promote's neither; a deploy's no split", async () => {
    // The split started by the cron runs with candidate main.
    const split = await approved({ split: { variant_revision_id: mainRevision, weight: 600 } });
    const promote = await approved({ end_split: "promote" });
    const deploy = await approved({ variant_revision_id: candidate });
    const edited = await expectJson<ChangeRequest>(
      await changeRequests.edit({ key: owner.key }, split.id, { split: { weight: 700, steps: STEPS, promote_at_end: true } }),
    );
    expect(edited).toMatchObject({
      kind: "split",
      variant_revision_id: mainRevision,
      split: { weight: 700, steps: STEPS, promote_at_end: true },
      version: 2,
      state: "open",
    });
    const refusal = (field: string, kind: string) => [
      422,
      {
        detail: [
          { loc: ["body", field], msg: `Value error, a ${kind} request's edit does not take ${field}`, type: "value_error" },
        ],
      },
    ];
    await writesNothing(appId, async () => {
      for (const [id, body, expected] of [
        [split.id, { variant_revision_id: candidate }, refusal("variant_revision_id", "split")],
        [promote.id, { split: { weight: 700 } }, refusal("split", "promote")],
        [
          promote.id,
          { title: "Ship", revert_to_revision_id: split.base.environment_revision_id },
          refusal("revert_to_revision_id", "promote"),
        ],
        [deploy.id, { split: { weight: 700 } }, refusal("split", "deploy or revert")],
      ] as const) {
        const refused = await changeRequests.edit({ key: owner.key }, id, body);
        expect([refused.status, await refused.json()], JSON.stringify(body)).toEqual(expected);
      }
    });
    for (const { id } of [split, promote, deploy]) await expectJson(await changeRequests.act({ key: owner.key }, id, "cancel"));
  });

  it("deployed without WEBHOOK_SECRETS_KEY: a split's start, by PUT or by a request's apply, and a secret's rotation are 501, writing nothing", async () => {
    const withoutKey = { bindings: { WEBHOOKS_ALLOW_LOCAL: "false" } };
    const refusal =
      "Splits are not set up on this service: their verdict secrets need the WEBHOOK_SECRETS_KEY secret, which its operator must set";
    // Production as no split runs there (the tests above may leave one): a split request starts one.
    const aborted = await send("DELETE", splitPath(appId, "production", "?outcome=abort"), { key: owner.key });
    expect([200, 404]).toContain(aborted.status);
    const request = await approved({ split: { variant_revision_id: candidate, weight: 1000 } });
    const body = { candidate: { variant_ref: { slug: "next" } }, weight: 1000 };
    await writesNothing(appId, async () => {
      await expectError(await send("PUT", splitPath(appId, "production"), { key: owner.key, body, ...withoutKey }), 501, refusal);
      await expectError(await changeRequests.act({ key: owner.key }, request.id, "apply", undefined, withoutKey), 501, refusal);
      const rotation = await send("POST", splitPath(appId, "production", "/secret"), { key: owner.key, ...withoutKey });
      await expectError(rotation, 501, refusal);
    });
    await expectJson(await changeRequests.act({ key: owner.key }, request.id, "cancel"));
  });
});
