import { createExecutionContext, createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import { apps, protection } from "../client";
import { type Account, createAccount, expectJson, send, worker } from "../fixtures";
import { expectEvents, expectRowCounts, Tracker } from "../harness";
import { databaseOf } from "../pool";
import { runCron } from "../webhooks/webhook-fixtures";
import { type Split, splitApp, splitPath, startSplit } from "./split-fixtures";

/*
 * Steps and verdicts (docs/SPLITS.md §3): a verdict signed as a Standard Webhook with the split's secret (the
 * standardwebhooks library signs here, as a customer's code would), refused with a 401 writing nothing otherwise; the
 * minute cron's steps, on either shard.
 */

interface Verdict {
  verdict: string;
  reason: string;
}

/** POSTs a verdict (or a body's text as is) signed with `secret` (its id and time as given), or with the headers given instead. */
async function postVerdict(
  appId: string,
  environment: string,
  body: Verdict | string,
  signing: { secret: string; id?: string; at?: Date; headers?: Record<string, string> },
) {
  const id = signing.id ?? `msg_${crypto.randomUUID()}`;
  const at = signing.at ?? new Date();
  const payload = typeof body === "string" ? body : JSON.stringify(body);
  const headers = signing.headers ?? {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new StandardWebhook(signing.secret).sign(id, at, payload),
    "Content-Type": "application/json",
  };
  return send("POST", splitPath(appId, environment, "/verdicts"), {
    authorization: "",
    rawBody: payload,
    headers,
  });
}

/** Moves the split's next step into the past: it is due at the cron's next run. */
const stepIsDue = (appId: string, splitId: string) =>
  databaseOf(appId)
    .prepare("UPDATE environment_splits SET next_step_at = '2000-01-01T00:00:00.000Z' WHERE id = ?")
    .bind(splitId)
    .run();

/** A verdict secret of no split's. */
const anotherSecret = () => `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;

const UNSIGNED = { detail: "The verdict's signature, timestamp or webhook-id is not accepted" };

const readSplit = async (owner: Account, appId: string) =>
  expectJson<Split>(await send("GET", splitPath(appId, "production"), { key: owner.key }));

let owner: Account;

beforeAll(async () => {
  owner = await createAccount();
});

describe("a split's verdicts", () => {
  it("pass applies the next step now; hold pauses the steps until resume; each with its events", async () => {
    const appId = await splitApp(owner);
    const started = await startSplit(owner.key, appId, "production", {
      steps: [
        { weight: 5000, after_minutes: 60 },
        { weight: 8000, after_minutes: 60 },
      ],
    });
    const secret = String(started.verdict_secret);
    const tracker = await Tracker.start();
    const passed = await expectJson<{ verdict: string; split: Split }>(
      await postVerdict(appId, "production", { verdict: "pass", reason: "evals green" }, { secret }),
    );
    expect(passed.split).toMatchObject({
      weight: 5000,
      steps: [{ weight: 8000, after_minutes: 60 }],
      last_verdict: { verdict: "pass", reason: "evals green" },
    });
    expect(passed.split.changes.at(-1)).toMatchObject({ from: 1000, to: 5000, by: "verdict", user: null });
    expectRowCounts(
      expectEvents(
        await tracker.changes(),
        { type: "environment.split_verdict", actor_user_id: null, data: { verdict: "pass", reason: "evals green" } },
        { type: "environment.split_changed", actor_user_id: null, data: { change: expect.objectContaining({ to: 5000 }) } },
      ),
      { environment_splits: [1, 1], split_verdicts: [1, 0] },
    );

    await expectJson(await postVerdict(appId, "production", { verdict: "hold", reason: "" }, { secret }));
    await stepIsDue(appId, started.id);
    await runCron("* * * * *");
    expect(await readSplit(owner, appId)).toMatchObject({ weight: 5000, held: true });
    await expectJson(await postVerdict(appId, "production", { verdict: "resume", reason: "" }, { secret }));
    await runCron("* * * * *");
    const stepped = await readSplit(owner, appId);
    expect(stepped).toMatchObject({ weight: 8000, held: false, steps: [], next_step_at: null });
    expect(stepped.changes.at(-1)).toMatchObject({ from: 5000, to: 8000, by: "schedule", user: null });
  });

  it("fail ends the split at once on its base, on a protected environment too, with its reason", async () => {
    const guarded = await createAccount();
    const appId = await splitApp(guarded);
    const started = await startSplit(guarded.key, appId, "production");
    await expectJson(await protection.put({ key: guarded.key }, guarded.projectId, "production", { protected: true }));
    const tracker = await Tracker.start();
    const failed = await expectJson(
      await postVerdict(
        appId,
        "production",
        { verdict: "fail", reason: "accuracy fell 4%" },
        { secret: String(started.verdict_secret) },
      ),
    );
    expect(failed).toEqual({ verdict: "fail", split: null });
    expectRowCounts(
      expectEvents(
        await tracker.changes(),
        { type: "environment.split_verdict", data: { verdict: "fail", reason: "accuracy fell 4%" } },
        {
          type: "environment.split_ended",
          data: { outcome: "abort", by: "verdict", reason: "accuracy fell 4%", environment_revision_id: null },
        },
      ),
      { environment_splits: [0, 1] },
    );
    const record = await expectJson<{ revision: number }>(await apps.revisions({ key: guarded.key }, appId, "production"));
    expect(record.revision).toBe(1);
  });

  it("refuses with a 401, writing nothing: no signature, another secret, a changed body, a time 6 minutes off, a webhook-id seen", async () => {
    const appId = await splitApp(owner);
    const started = await startSplit(owner.key, appId, "production");
    const secret = String(started.verdict_secret);
    const body = { verdict: "fail", reason: "nope" };
    const seen = `msg_${crypto.randomUUID()}`;
    await expectJson(await postVerdict(appId, "production", { verdict: "hold", reason: "first" }, { secret, id: seen }));
    const tracker = await Tracker.start();
    const other = anotherSecret();
    const attempts: [string, () => Promise<Response>][] = [
      ["no signature", () => postVerdict(appId, "production", body, { secret, headers: { "Content-Type": "application/json" } })],
      ["another secret", () => postVerdict(appId, "production", body, { secret: other })],
      ["six minutes ago", () => postVerdict(appId, "production", body, { secret, at: new Date(Date.now() - 360_000) })],
      ["six minutes ahead", () => postVerdict(appId, "production", body, { secret, at: new Date(Date.now() + 360_000) })],
      ["a webhook-id seen", () => postVerdict(appId, "production", body, { secret, id: seen })],
    ];
    for (const [name, attempt] of attempts) {
      const response = await attempt();
      expect({ name, status: response.status, body: await response.json() }).toEqual({ name, status: 401, body: UNSIGNED });
    }
    // Signed, then changed on the way: the signature no longer covers it.
    const at = new Date();
    const signedFor = JSON.stringify({ verdict: "pass", reason: "ok" });
    const tampered = await postVerdict(appId, "production", body, {
      secret,
      headers: {
        "webhook-id": "msg_tampered",
        "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
        "webhook-signature": new StandardWebhook(secret).sign("msg_tampered", at, signedFor),
        "Content-Type": "application/json",
      },
    });
    expect(tampered.status).toBe(401);
    expect(await tracker.changes()).toEqual({});
    expect(await readSplit(owner, appId)).toMatchObject({ last_verdict: { verdict: "hold", reason: "first" } });
    // No split running: 404.
    await expectJson(await send("DELETE", splitPath(appId, "production", "?outcome=abort"), { key: owner.key }));
    const none = await postVerdict(appId, "production", body, { secret });
    expect({ status: none.status, body: await none.json() }).toEqual({ status: 404, body: { detail: "No split" } });
  });
});

describe("a verdict's body", () => {
  it("is checked after its signature: malformed or bad, unsigned it is a 401, signed a 422; nothing written", async () => {
    const appId = await splitApp(owner);
    const secret = String((await startSplit(owner.key, appId, "production")).verdict_secret);
    const tracker = await Tracker.start();
    const unsigned = { secret, headers: { "Content-Type": "application/json" } };
    const answers = [];
    for (const [body, signing] of [
      ["{not json", unsigned],
      ["{not json", { secret }],
      [JSON.stringify({ verdict: "maybe", reason: "" }), { secret: anotherSecret() }],
      [JSON.stringify({ verdict: "maybe", reason: "" }), { secret }],
    ] as const) {
      const response = await postVerdict(appId, "production", body, signing);
      answers.push({ status: response.status, body: await response.json() });
    }
    expect(answers).toEqual([
      { status: 401, body: UNSIGNED },
      { status: 422, body: { detail: [{ loc: ["body"], msg: "JSON decode error", type: "json_invalid" }] } },
      { status: 401, body: UNSIGNED },
      {
        status: 422,
        body: {
          detail: [
            {
              loc: ["body", "verdict"],
              msg: 'Value error, Invalid option: expected one of "fail"|"pass"|"hold"|"resume"',
              type: "value_error",
            },
          ],
        },
      },
    ]);
    expect(await tracker.changes()).toEqual({});
  });
});

describe("a split's verdict secret rotated", () => {
  it("on a protected environment too: the answer's new secret signs, the old no longer; its event; a replay shows it again", async () => {
    const guarded = await createAccount();
    const appId = await splitApp(guarded);
    const old = String((await startSplit(guarded.key, appId, "production")).verdict_secret);
    await expectJson(await protection.put({ key: guarded.key }, guarded.projectId, "production", { protected: true }));
    const rotate = () =>
      send("POST", splitPath(appId, "production", "/secret"), { key: guarded.key, headers: { "Idempotency-Key": "rotate" } });
    const tracker = await Tracker.start();
    const { verdict_secret, ...split } = await expectJson<Split>(await rotate());
    expect(verdict_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(verdict_secret).not.toBe(old);
    expect(split).toEqual(await readSplit(guarded, appId));
    expectRowCounts(
      expectEvents(await tracker.changes(), {
        type: "environment.split_secret_rotated",
        actor_user_id: guarded.userId,
        data: { environment: "production", split },
      }),
      { environment_splits: [1, 1], idempotency_keys: [1, 0], idempotency_key_requests: [1, 0] },
    );
    const replay = await rotate();
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectJson(replay)).toEqual({ ...split, verdict_secret });
    const verdict = { verdict: "hold", reason: "rotated" };
    expect((await postVerdict(appId, "production", verdict, { secret: old })).status).toBe(401);
    expect(await expectJson(await postVerdict(appId, "production", verdict, { secret: String(verdict_secret) }))).toMatchObject({
      verdict: "hold",
    });
  });
});

describe.each(["SHARD_0", "SHARD_1"] as const)("the minute cron's steps, an organization on %s", (shard) => {
  it("applies each due step, by the schedule; one not due waits; the last at 10000 promotes with promote_at_end", async () => {
    const holder = await createAccount(undefined, shard);
    const appId = await splitApp(holder, ["production", "staging"]);
    const promoted = await startSplit(holder.key, appId, "production", {
      steps: [{ weight: 10000, after_minutes: 5 }],
      promote_at_end: true,
    });
    const waiting = await startSplit(holder.key, appId, "staging", { steps: [{ weight: 2000, after_minutes: 5 }] });
    await stepIsDue(appId, promoted.id);
    const tracker = await Tracker.start();
    await runCron("* * * * *");
    const changed = await tracker.changes();
    expectRowCounts(
      expectEvents(
        changed,
        {
          type: "environment.split_changed",
          data: { change: expect.objectContaining({ from: 1000, to: 10000, by: "schedule" }) },
        },
        { type: "environment.deployed", data: { environment: "production", environment_revision: 2 } },
        { type: "environment.split_ended", data: { outcome: "promote", by: "schedule", reason: null } },
      ),
      { environment_splits: [0, 1], deployments: [1, 0], environment_revisions: [1, 0], environments: [1, 1] },
    );
    const record = await expectJson<{ revisions: { deployed_app_variant_revision: string }[] }>(
      await apps.revisions({ key: holder.key }, appId, "production"),
    );
    expect(record.revisions.at(-1)?.deployed_app_variant_revision).toBe(promoted.candidate.variant_revision_id);
    expect(await expectJson(await send("GET", splitPath(appId, "staging"), { key: holder.key }))).toMatchObject({
      id: waiting.id,
      weight: 1000,
      steps: [{ weight: 2000, after_minutes: 5 }],
    });
  });
});

describe("the minute cron, as wrangler dev's /__scheduled runs it", () => {
  it("has applied the due steps when its handler's promise settles (the run answered, a read after it sees them)", async () => {
    const appId = await splitApp(owner);
    const started = await startSplit(owner.key, appId, "production", { steps: [{ weight: 2000, after_minutes: 5 }] });
    await stepIsDue(appId, started.id);
    // Not waiting on the context: /__scheduled answers once the handler's own promise settles.
    await worker.scheduled?.(createScheduledController({ cron: "* * * * *" }), env, createExecutionContext());
    expect(await readSplit(owner, appId)).toMatchObject({ weight: 2000, steps: [] });
  });
});
