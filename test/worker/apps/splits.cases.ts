import { beforeAll, describe, expect, it } from "vitest";
import { apps, changeRequests, current, deployments, protection, registry } from "../client";
import {
  A_NEW_ID,
  A_TIME,
  type Account,
  addMember,
  createAccount,
  expectJson,
  issueKey,
  send,
  type ValidationIssue,
} from "../fixtures";
import { expectEvents, expectRowCounts, Tracker } from "../harness";
import { type Split, splitApp, splitPath, startSplit } from "./split-fixtures";

/*
 * An environment's split (docs/SPLITS.md §1): GET, PUT and DELETE …/split, their refusals (each writing nothing), the
 * deploys a split refuses, a promote as a deploy, and their events.
 */

let owner: Account;
let appId: string;

beforeAll(async () => {
  owner = await createAccount();
  appId = await splitApp(owner, ["production", "staging"]);
});

const put = (environment: string, body: unknown, headers: Record<string, string> = {}, key = owner.key, query = "") =>
  send("PUT", splitPath(appId, environment, query), { key, body, headers });
const end = (environment: string, outcome: string, headers: Record<string, string> = {}, key = owner.key) =>
  send("DELETE", splitPath(appId, environment, `?outcome=${outcome}`), { key, headers });
const by = () => ({ user_id: owner.userId, username: owner.username });
const splitEvent = (type: string, data: Record<string, unknown>) => ({
  type,
  app_id: appId,
  actor_user_id: owner.userId,
  data: { app_id: appId, environment: "production", ...data },
});
const issue = (loc: (string | number)[]) => expect.objectContaining({ loc }) as unknown as ValidationIssue;
const refusal = async (response: Response) => ({ status: response.status, body: await response.json() });

describe("an environment's split", () => {
  it("starts with its verdict secret shown once, reads back without it, changes and ends by an abort, each with its event", async () => {
    const tracker = await Tracker.start();
    const started = await startSplit(owner.key, appId, "production", {
      steps: [{ weight: 5000, after_minutes: 60 }],
      salt: "salt-1",
    });
    expect(started.verdict_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const { verdict_secret, ...split } = started;
    expect(split).toEqual({
      id: A_NEW_ID,
      environment: "production",
      base: {
        variant_revision_id: expect.any(String),
        config_name: "main",
        revision: 1,
        environment_revision: 1,
        environment_revision_id: expect.any(String),
      },
      candidate: { variant_revision_id: expect.any(String), config_name: "next", revision: 2 },
      weight: 1000,
      salt: "salt-1",
      steps: [{ weight: 5000, after_minutes: 60 }],
      next_step_at: A_TIME,
      promote_at_end: false,
      held: false,
      last_verdict: null,
      started_at: A_TIME,
      started_by: by(),
      changes: [{ at: A_TIME, from: 0, to: 1000, by: "user", user: by() }],
    });
    const changed = await tracker.changes();
    expectRowCounts(expectEvents(changed, splitEvent("environment.split_started", { split, change: split.changes[0] })), {
      environment_splits: [1, 0],
    });
    // The secret is kept sealed, never as sent.
    expect(JSON.stringify(changed)).not.toContain(String(verdict_secret).slice(6));
    expect(await expectJson(await send("GET", splitPath(appId, "production"), { key: owner.key }))).toEqual(split);

    const raised = await expectJson<Split>(
      await put("production", { weight: 2500, steps: [{ weight: 4000, after_minutes: 5 }] }),
    );
    expect(raised).toEqual({
      ...split,
      weight: 2500,
      steps: [{ weight: 4000, after_minutes: 5 }],
      next_step_at: A_TIME,
      changes: [...split.changes, { at: A_TIME, from: 1000, to: 2500, by: "user", user: by() }],
    });
    expect(Date.parse(String(raised.next_step_at)) - Date.now()).toBeGreaterThan(4 * 60_000);
    expectRowCounts(
      expectEvents(
        await tracker.changes(),
        splitEvent("environment.split_changed", { split: raised, change: raised.changes[1] }),
      ),
      { environment_splits: [1, 1] },
    );

    // The abort is the split's last change, to 0 by the user.
    const aborted = { ...raised, changes: [...raised.changes, { at: A_TIME, from: 2500, to: 0, by: "user", user: by() }] };
    const ended = await expectJson<Split>(await end("production", "abort"));
    expect(ended).toEqual({ ...aborted, outcome: "abort", environment_revision_id: null });
    expectRowCounts(
      expectEvents(
        await tracker.changes(),
        splitEvent("environment.split_ended", { split: aborted, outcome: "abort", by: "user", reason: null, protected: false }),
      ),
      { environment_splits: [0, 1] },
    );
    expect(await refusal(await send("GET", splitPath(appId, "production"), { key: owner.key }))).toEqual({
      status: 404,
      body: { detail: "No split" },
    });
  });

  it("promotes: the candidate deployed as a new revision of the environment's history, the deploy's event beside the end's", async () => {
    await startSplit(owner.key, appId, "staging");
    const tracker = await Tracker.start();
    const ended = await expectJson<Split>(await end("staging", "promote"));
    expect(ended).toMatchObject({ outcome: "promote", environment_revision_id: A_NEW_ID });
    const record = await expectJson<{ revision: number; revisions: { id: string; deployed_app_variant_revision: string }[] }>(
      await apps.revisions({ key: owner.key }, appId, "staging"),
    );
    expect(record.revision).toBe(2);
    expect(record.revisions[1]).toMatchObject({
      id: ended.environment_revision_id,
      deployed_app_variant_revision: ended.candidate.variant_revision_id,
    });
    expectRowCounts(
      expectEvents(
        await tracker.changes(),
        { type: "environment.deployed", data: { environment: "staging", environment_revision: 2 } },
        { type: "environment.split_ended", data: { environment: "staging", outcome: "promote", by: "user" } },
      ),
      { environment_splits: [0, 1], deployments: [1, 0], environment_revisions: [1, 0], environments: [1, 1] },
    );
  });

  it("refuses bad bodies with a 422 and writes nothing", async () => {
    const tracker = await Tracker.start();
    const candidate = { variant_ref: { slug: "next" } };
    const cases: [unknown, (string | number)[]][] = [
      [{ candidate, weight: 10001 }, ["body", "weight"]],
      [{ candidate, weight: -1 }, ["body", "weight"]],
      [{ candidate, weight: 1.5 }, ["body", "weight"]],
      [{ candidate }, ["body", "weight"]],
      [{ candidate, weight: 10, steps: [{ weight: 5, after_minutes: 1 }] }, ["body", "steps"]],
      [
        {
          candidate,
          weight: 10,
          steps: [
            { weight: 50, after_minutes: 1 },
            { weight: 50, after_minutes: 1 },
          ],
        },
        ["body", "steps"],
      ],
      [{ candidate, weight: 10, steps: [{ weight: 50, after_minutes: 0 }] }, ["body", "steps", 0, "after_minutes"]],
      [{ candidate, weight: 10, steps: [{ weight: 50, after_minutes: 10081 }] }, ["body", "steps", 0, "after_minutes"]],
      [
        { candidate, weight: 0, steps: Array.from({ length: 11 }, (_, i) => ({ weight: i + 1, after_minutes: 1 })) },
        ["body", "steps"],
      ],
      [{ candidate, weight: 10, salt: "s".repeat(65) }, ["body", "salt"]],
      [{ candidate, weight: 10, surprise: true }, ["body"]],
      [{ weight: 10 }, ["body", "candidate"]],
      [{ candidate: { variant_ref: { slug: "main" } }, weight: 10 }, ["body", "candidate"]],
    ];
    for (const [body, loc] of cases) {
      const response = await put("production", body);
      expect({ body, status: response.status }).toEqual({ body, status: 422 });
      expect(((await response.json()) as { detail: ValidationIssue[] }).detail, JSON.stringify(body)).toContainEqual(issue(loc));
    }
    expect(await tracker.changes()).toEqual({});
  });

  it("refuses, writing nothing: another role, no app, nothing deployed, an unknown candidate, a second start, a stale If-Match", async () => {
    const viewer = await createAccount();
    await addMember(owner.organizationId, viewer.userId, "viewer");
    const viewerKey = await issueKey(viewer.userId, owner.projectId);
    const outsider = await createAccount();
    await startSplit(owner.key, appId, "production");
    const tracker = await Tracker.start();
    const body = { candidate: { variant_ref: { slug: "next" } }, weight: 10 };
    const running = {
      code: "split_running",
      app_id: appId,
      environment: "production",
      message: "A split runs in environment 'production': end it first (DELETE …/split?outcome=promote|abort).",
    };
    expect(await refusal(await put("staging", body, {}, viewerKey))).toMatchObject({ status: 403 });
    expect(await refusal(await put("staging", body, {}, outsider.key))).toEqual({
      status: 404,
      body: { detail: "App environment not found" },
    });
    expect(await refusal(await put("development", body))).toEqual({
      status: 409,
      body: {
        detail: {
          code: "nothing_deployed",
          message: "Environment 'development' runs nothing: deploy a base before splitting it.",
        },
      },
    });
    expect(await refusal(await put("staging", { ...body, candidate: { variant_ref: { slug: "absent" } } }))).toEqual({
      status: 404,
      body: { detail: "Config not found." },
    });
    expect(await refusal(await put("production", body))).toEqual({ status: 409, body: { detail: running } });
    expect(await refusal(await put("production", { weight: 20, salt: "another" }))).toEqual({
      status: 409,
      body: { detail: running },
    });
    const stale = { "If-Match": `"${"0".repeat(36)}.1"` };
    expect(await refusal(await put("production", { weight: 20 }, stale))).toMatchObject({ status: 412 });
    expect(await refusal(await end("production", "abort", stale))).toMatchObject({ status: 412 });
    expect(await refusal(await end("staging", "abort"))).toEqual({ status: 404, body: { detail: "No split" } });
    expect(await refusal(await end("production", "abort", {}, viewerKey))).toMatchObject({ status: 403 });
    expect(await tracker.changes()).toEqual({});
    // A dry-run answers what the call would, writing nothing.
    expect(await expectJson(await put("production", { weight: 20 }, {}, owner.key, "?dry_run=true"))).toMatchObject({
      dry_run: true,
      kind: "change",
      app_id: appId,
      environment: "production",
      split: { weight: 1000 },
    });
    expect(await refusal(await put("production", body, {}, owner.key, "?dry_run=true"))).toEqual({
      status: 409,
      body: { detail: running },
    });
    expect(await tracker.changes()).toEqual({});
    await expectJson(await end("production", "abort"));
  });

  it("refuses every deploy and revert of an environment a split runs in (409 split_running), writing nothing", async () => {
    // An approved change request of production, made before the split: its apply is a deploy too.
    await expectJson(await protection.put({ key: owner.key }, owner.projectId, "production", { allow_self_approval: true }));
    const next = await expectJson<{ variant_ref: { id: string } }>(
      await send("POST", "/variants/configs/fetch", {
        key: owner.key,
        body: { application_ref: { id: appId }, variant_ref: { slug: "next" } },
      }),
    );
    const request = await expectJson<{ id: string }>(
      await changeRequests.create(
        { key: owner.key },
        { app_id: appId, environment: "production", variant_revision_id: next.variant_ref.id, title: "Next" },
      ),
    );
    await expectJson(await changeRequests.review({ key: owner.key }, request.id, { kind: "approve", version: 1 }));
    const started = await startSplit(owner.key, appId, "production");
    const tracker = await Tracker.start();
    const running = { code: "split_running", app_id: appId, environment: "production" };
    const calls: [string, () => Promise<Response>][] = [
      [
        "POST /variants/configs/deploy",
        () =>
          deployments.deployConfig(
            { key: owner.key },
            { application_ref: { id: appId }, variant_ref: { slug: "next" }, environment_ref: { slug: "production" } },
            { headers: { "Idempotency-Key": "split-deploy" } },
          ),
      ],
      [
        "POST /configs (a save that deploys)",
        () =>
          registry.saveConfig({ key: owner.key }, { base_id: appId, config_name: "main", parameters: { t: 1 }, overwrite: true }),
      ],
      [
        "POST /configs/deployment/{id}/revert",
        () => deployments.revert({ key: owner.key }, started.base.environment_revision_id),
      ],
      [
        "POST /applications/revisions/deploy",
        () =>
          current.deploy(
            { key: owner.key },
            {
              application_ref: { id: appId },
              application_variant_ref: { slug: "next" },
              environment_ref: { slug: "production" },
            },
          ),
      ],
    ];
    calls.push(
      [
        "POST /environments/deploy",
        async () => {
          const variants = await expectJson<{ variant_id: string; variant_name: string }[]>(
            await apps.variants({ key: owner.key }, appId),
          );
          const main = variants.find(({ variant_name }) => variant_name === "app.main");
          return deployments.deployEnvironment(
            { key: owner.key },
            { environment_name: "production", variant_id: main?.variant_id },
          );
        },
      ],
      ["POST /change-requests/{id}/apply", () => changeRequests.act({ key: owner.key }, request.id, "apply")],
    );
    for (const [route, call] of calls) {
      const answer = await refusal(await call());
      expect({ route, ...answer }).toMatchObject({ route, status: 409, body: { detail: running } });
    }
    expect(await tracker.changes()).toEqual({});
    await expectJson(await end("production", "abort"));
  });

  it("replays a start's answer for its Idempotency-Key, secret included, and makes one split", async () => {
    const headers = { "Idempotency-Key": "split-start" };
    const body = { candidate: { variant_ref: { slug: "next" } }, weight: 300 };
    const first = await expectJson<Split>(await put("production", body, headers));
    const tracker = await Tracker.start();
    const again = await put("production", body, headers);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectJson(again)).toEqual(first);
    expect(await tracker.changes()).toEqual({});
    await expectJson(await end("production", "abort"));
  });

  it("on a protected environment: a PUT and a promote are 409 environment_protected; an abort goes through", async () => {
    const guarded = await createAccount();
    const guardedApp = await splitApp(guarded);
    await startSplit(guarded.key, guardedApp, "production");
    await expectJson(await protection.put({ key: guarded.key }, guarded.projectId, "production", { protected: true }));
    const tracker = await Tracker.start();
    const protectedBody = {
      detail: {
        code: "environment_protected",
        app_id: guardedApp,
        environment: "production",
        message: "Environment 'production' is protected: propose the change with POST /change-requests.",
        change_request_route: "POST /change-requests",
      },
    };
    const path = (query = "") => splitPath(guardedApp, "production", query);
    expect(await refusal(await send("PUT", path(), { key: guarded.key, body: { weight: 20 } }))).toEqual({
      status: 409,
      body: protectedBody,
    });
    expect(await refusal(await send("DELETE", path("?outcome=promote"), { key: guarded.key }))).toEqual({
      status: 409,
      body: protectedBody,
    });
    expect(await tracker.changes()).toEqual({});
    // An abort goes through directly, recorded as such: the split's last change (to 0, by the user), on a protected environment.
    const ended = await expectJson<Split>(await send("DELETE", path("?outcome=abort"), { key: guarded.key }));
    const last = { at: A_TIME, from: 1000, to: 0, by: "user", user: { user_id: guarded.userId, username: guarded.username } };
    expect(ended).toMatchObject({ outcome: "abort", weight: 1000, changes: [expect.anything(), last] });
    expectRowCounts(
      expectEvents(await tracker.changes(), {
        type: "environment.split_ended",
        app_id: guardedApp,
        actor_user_id: guarded.userId,
        data: {
          split: expect.objectContaining({ changes: [expect.anything(), last] }),
          outcome: "abort",
          by: "user",
          protected: true,
        },
      }),
      { environment_splits: [0, 1] },
    );
    // A start is refused there as a change is.
    const start = { candidate: { variant_ref: { slug: "next" } }, weight: 1000 };
    expect(await refusal(await send("PUT", path(), { key: guarded.key, body: start }))).toEqual({
      status: 409,
      body: protectedBody,
    });
    expect(await tracker.changes()).toEqual({});
  });
});
