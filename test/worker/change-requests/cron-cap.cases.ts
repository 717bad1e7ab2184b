import { beforeAll, describe, expect, it } from "vitest";
import { PER_RUN } from "../../../src/change-requests/cron.sql.ts";
import { changeRequests } from "../client";
import { expectJson, newId } from "../fixtures";
import { bucketFor, databaseOf } from "../pool";
import { runCron } from "../webhooks/webhook-fixtures";
import { type ChangeRequest, propose, requestsTeam } from "./setup";

/*
 * The minute cron's pool-wide cap (docs/CHANGE-REQUESTS.md §7: a run applies ≤ 100): with more than 100 requests due
 * over both shards, a run takes the 100 due longest, whichever shard holds them; the next run the rest.
 */

/** Due requests per shard: together more than a run takes. */
const PER_SHARD = 60;

/** When the `index`th request of shard `shard` (0 or 1) fell due: the shards' requests alternate, oldest first. */
const dueAt = (shard: number, index: number) => new Date(Date.UTC(2020, 0, 1) + (2 * index + shard) * 1_000).toISOString();

/**
 * PER_SHARD scheduled requests of a team on `shard`, due at `dueAt`: one made, approved and scheduled through the API,
 * the others copies of its rows (request and approval) with their own ids: what the cron reads is what it is given.
 */
async function dueRequests(shard: "SHARD_0" | "SHARD_1") {
  const t = await requestsTeam(shard);
  const made = await propose(t.editor.teamKey, t.appId, "staging", t.otherRevision);
  await changeRequests.review({ key: t.approver.teamKey }, made.id, { kind: "approve", version: 1 });
  const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
  await expectJson<ChangeRequest>(
    await changeRequests.act({ key: t.editor.teamKey }, made.id, "schedule", { scheduled_at: inAnHour }),
  );
  const db = databaseOf(t.appId);
  const ids = [made.id, ...Array.from({ length: PER_SHARD - 1 }, () => newId(bucketFor(t.appId)))];
  const copy = db.prepare(
    `INSERT INTO change_requests (id, app_id, environment, kind, variant_revision_id, revert_to_revision_id,
       base_environment_revision, base_environment_revision_id, base_variant_revision_id, title, description, state,
       author_id, scheduled_at, scheduled_by, expires_at)
     SELECT ?1, app_id, environment, kind, variant_revision_id, revert_to_revision_id, base_environment_revision,
            base_environment_revision_id, base_variant_revision_id, title, description, state, author_id, scheduled_at,
            scheduled_by, expires_at
       FROM change_requests WHERE id = ?2`,
  );
  const approval = db.prepare(
    `INSERT INTO change_request_reviews (id, change_request_id, reviewer_id, kind, comment, version)
     VALUES (?1, ?2, ?3, 'approve', NULL, 1)`,
  );
  const due = db.prepare("UPDATE change_requests SET scheduled_at = ?1 WHERE id = ?2");
  const shardIndex = shard === "SHARD_0" ? 0 : 1;
  await db.batch([
    ...ids.slice(1).flatMap((id) => [copy.bind(id, made.id), approval.bind(newId(bucketFor(t.appId)), id, t.approver.userId)]),
    ...ids.map((id, index) => due.bind(dueAt(shardIndex, index), id)),
  ]);
  return { t, ids };
}

describe("the cron's cap over two shards", () => {
  let shards: Awaited<ReturnType<typeof dueRequests>>[];
  beforeAll(async () => {
    shards = [await dueRequests("SHARD_0"), await dueRequests("SHARD_1")];
  });

  /** The requests of each shard still scheduled, by index. */
  const stillScheduled = () =>
    Promise.all(
      shards.map(async ({ t, ids }) => {
        const { results } = await databaseOf(t.appId)
          .prepare("SELECT id FROM change_requests WHERE app_id = ? AND state = 'scheduled'")
          .bind(t.appId)
          .all<{ id: string }>();
        const left = new Set(results.map((row) => row.id));
        return ids.flatMap((id, index) => (left.has(id) ? [index] : []));
      }),
    );

  it("a run takes the 100 due longest over both shards, the next the rest", async () => {
    expect(2 * PER_SHARD).toBeGreaterThan(PER_RUN);
    await runCron("* * * * *");
    // The 100 due longest: indexes 0 to 49 of both shards, whose requests alternate; each shard's first applied.
    const newest = Array.from({ length: PER_SHARD - PER_RUN / 2 }, (_, i) => PER_RUN / 2 + i);
    expect(await stillScheduled()).toEqual([newest, newest]);
    for (const { t, ids } of shards) {
      const { results } = await databaseOf(t.appId)
        .prepare("SELECT id, state FROM change_requests WHERE app_id = ? AND state IN ('applied', 'failed')")
        .bind(t.appId)
        .all<{ id: string; state: string }>();
      const states = new Map(results.map((row) => [row.id, row.state]));
      expect(ids.slice(0, PER_RUN / 2).map((id) => states.get(id))).toEqual([
        "applied",
        ...Array.from({ length: PER_RUN / 2 - 1 }, () => "failed"),
      ]);
    }

    await runCron("* * * * *");
    expect(await stillScheduled()).toEqual([[], []]);
  });
});
