import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { applicationVariants, current, variants } from "../client";
import {
  type Account,
  createAccount,
  createAppVia,
  expectError,
  expectJson,
  legacyConfig,
  type Revision,
  send,
  storedRevision,
} from "../fixtures";
import { expectEvents, expectRowCounts, Tracker } from "../harness";

/*
 * POST /applications/revisions/commit and /applications/revisions/log as today's SDK calls them
 * (docs/CURRENT-SDK-API.md, calls 12 and 13): VariantManager.commit and VariantManager.history, over one history with
 * the legacy API's commits (the same numbers, the same messages). Variants are made through the legacy API, or through
 * POST /applications/variants/ where a variant without any revision is needed.
 */

let account: Account;
let appId: string;
let variantId: string;
let tracker: Tracker;

const commitBody = (data: Record<string, unknown>, more: Record<string, unknown> = {}) => ({
  application_revision: { application_id: appId, application_variant_id: variantId, data, ...more },
});

beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "committed" });
  variantId = await legacyConfig(account.key, appId, "main", { temperature: 0.2 });
});
beforeEach(async () => {
  tracker = await Tracker.start();
});

describe("VariantManager.commit", () => {
  it("is the variant's next revision in both APIs, slug and message as sent, with its event", async () => {
    const answer = await expectJson<{ application_revision: Revision }>(
      await current.commit(
        { key: account.key },
        commitBody({ parameters: { temperature: 0.7, model: "m" } }, { slug: "a1b2c3d4e5f6", message: "Warmer" }),
      ),
    );
    expect(answer).toEqual({ count: 1, application_revision: await storedRevision(variantId, 3) });
    expect(answer.application_revision).toMatchObject({ version: "3", slug: "a1b2c3d4e5f6", message: "Warmer" });
    expect(await expectJson(await variants.revision({ key: account.key }, variantId, 3))).toEqual({
      id: answer.application_revision.id,
      revision: 3,
      modified_by: account.username,
      config: { config_name: "main", parameters: { temperature: 0.7, model: "m" } },
      created_at: answer.application_revision.created_at,
      commit_message: "Warmer",
    });
    const changed = expectEvents(await tracker.changes(), {
      type: "config.committed",
      app_id: appId,
      data: { config_name: "main", revision: 3, revision_id: answer.application_revision.id, message: "Warmer" },
    });
    expectRowCounts(changed, { app_variant_revisions: [1, 0] });
  });

  it("after a legacy commit, with its commit_message, numbers on: each API shows the other's message", async () => {
    const legacy = await send("POST", "/variants/configs/commit", {
      key: account.key,
      body: {
        application_ref: { id: appId },
        variant_ref: { slug: "main", commit_message: "From the 2024 client" },
        params: { a: 1 },
      },
    });
    const version = (await expectJson<{ variant_ref: { version: number } }>(legacy)).variant_ref.version;
    expectEvents(await tracker.changes(), {
      type: "config.committed",
      data: { revision: version, message: "From the 2024 client" },
    });
    const next = await expectJson<{ application_revision: Revision }>(
      await current.commit({ key: account.key }, commitBody({ parameters: { a: 2 } })),
    );
    expect(next.application_revision.version).toBe(String(version + 1));
    const log = await expectJson<{ application_revisions: Revision[] }>(
      await current.log(
        { key: account.key },
        { application_revisions: { application_id: appId, application_variant_id: variantId } },
      ),
    );
    expect(log.application_revisions.slice(0, 2)).toEqual([
      await storedRevision(variantId, version + 1),
      { ...(await storedRevision(variantId, version)), message: "From the 2024 client" },
    ]);
    expect(log.application_revisions[0]).not.toHaveProperty("message");
  });

  it("a variant's first commit is revision 1, holding exactly what was sent", async () => {
    const added = await applicationVariants.add(account, { application_variant: { application_id: appId, slug: "bare" } });
    const bare = (await expectJson<{ application_variant: { id: string } }>(added)).application_variant.id;
    // Sent as written: a number past 2^53 is kept digit for digit, as a legacy commit keeps it.
    const answer = await send("POST", "/applications/revisions/commit", {
      key: account.key,
      rawBody: `{"application_revision": {"application_variant_id": "${bare}", "data": {"parameters": {"n": 9007199254740993}}}}`,
      headers: { "Content-Type": "application/json" },
    });
    const text = await answer.text();
    expect(JSON.parse(text)).toEqual({ count: 1, application_revision: await storedRevision(bare, 1) });
    expect(text).toContain('"data":{"parameters":{"n":9007199254740993},"url":""}');
    expect(text).toContain('"version":"1"');
  });

  it("params replace the latest's, never merged with them: the revision holds exactly what was sent", async () => {
    const replaced = await legacyConfig(account.key, appId, "replaced", { model: "m", nested: { a: 1, b: 2 }, kept: true });
    const answer = await expectJson<{ application_revision: Revision }>(
      await current.commit(
        { key: account.key },
        {
          application_revision: {
            application_id: appId,
            application_variant_id: replaced,
            data: { parameters: { nested: { a: 3 } } },
          },
        },
      ),
    );
    expect(answer).toEqual({ count: 1, application_revision: await storedRevision(replaced, 3) });
    expect(answer.application_revision.data).toEqual({ parameters: { nested: { a: 3 } }, url: "" });
  });

  it("naming one app and another app's variant by id writes nothing: the 404 of no such variant", async () => {
    const otherApp = await createAppVia(account.key, { app_name: "committed-other" });
    const theirs = await legacyConfig(account.key, otherApp, "main", { theirs: true });
    tracker = await Tracker.start();
    const body = { application_revision: { application_id: appId, application_variant_id: theirs, data: { parameters: {} } } };
    await expectError(await current.commit({ key: account.key }, body), 404, "Application variant not found.");
    expect(await tracker.changes()).toEqual({});
    expect((await storedRevision(theirs, 2)).data.parameters).toEqual({ theirs: true });
  });

  it("a slug taken in the project is the platform's 409, nothing written", async () => {
    const taken = (await storedRevision(variantId, 1)).slug;
    const response = await current.commit({ key: account.key }, commitBody({ parameters: {} }, { slug: taken }));
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({
      detail: { message: `A resource with slug '${taken}' already exists in this project.`, conflict: { slug: taken } },
    });
    expect(await tracker.changes()).toEqual({});
  });

  it("refuses keys of data other than parameters and url, naming them, nothing written", async () => {
    const response = await current.commit({ key: account.key }, commitBody({ parameters: {}, prompt: "x", schema: {} }));
    await expectError(
      response,
      422,
      ["prompt", "schema"].map((key) => ({
        loc: ["body", "application_revision", "data", key],
        msg: `Value error, data takes only parameters, url; "${key}" is refused`,
        type: "value_error",
      })),
    );
    expect(await tracker.changes()).toEqual({});
  });

  it("refuses data.uri (the platform's service URI, which nothing here keeps) with a 422 naming it, nothing written", async () => {
    const response = await current.commit(
      { key: account.key },
      commitBody({ parameters: { kept: false }, uri: "agenta:builtin:completion:v0" }),
    );
    await expectError(response, 422, [
      {
        loc: ["body", "application_revision", "data", "uri"],
        msg: 'Value error, data takes only parameters, url; "uri" is refused',
        type: "value_error",
      },
    ]);
    expect(await tracker.changes()).toEqual({});
  });

  it("a wrong wrapper key is a 422 naming the expected one", async () => {
    const response = await current.commit({ key: account.key }, { application_revision_commit: commitBody({ parameters: {} }) });
    await expectError(response, 422, [
      {
        loc: ["body", "application_revision"],
        msg: 'Value error, the body\'s key is "application_revision", not "application_revision_commit"',
        type: "value_error",
      },
    ]);
    expect(await tracker.changes()).toEqual({});
  });

  it("replays a retry with the same Idempotency-Key: one revision, the same answer", async () => {
    const retry = () =>
      current.commit({ key: account.key }, commitBody({ parameters: { r: 1 } }), { headers: { "Idempotency-Key": "c-1" } });
    const first = await retry();
    const again = await retry();
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await again.json()).toEqual(await first.json());
    expectRowCounts(expectEvents(await tracker.changes(), { type: "config.committed" }), {
      app_variant_revisions: [1, 0],
      idempotency_keys: [1, 0],
      idempotency_key_requests: [1, 0],
    });
  });
});

describe("VariantManager.history", () => {
  it("lists the variant's revisions newest first, whole, and pages them with a cursor", async () => {
    const other = await legacyConfig(account.key, appId, "paged", { p: 1 }, { p: 2 });
    const expected = [await storedRevision(other, 3), await storedRevision(other, 2), await storedRevision(other, 1)];
    const body = { application_revisions: { application_id: appId, application_variant_id: other } };
    expect(await expectJson(await current.log({ key: account.key }, body))).toEqual({
      count: 3,
      application_revisions: expected,
    });
    const first = await expectJson(await current.log({ key: account.key }, { ...body, windowing: { limit: 2 } }));
    expect(first).toEqual({
      count: 2,
      application_revisions: expected.slice(0, 2),
      windowing: { limit: 2, next: expected[1].id },
    });
    const second = await current.log({ key: account.key }, { ...body, windowing: { limit: 2, next: expected[1].id } });
    expect(await expectJson(second)).toEqual({ count: 1, application_revisions: expected.slice(2) });
  });

  it("answers no revisions for a variant of another app, or nobody's", async () => {
    for (const application_revisions of [
      { application_id: crypto.randomUUID(), application_variant_id: variantId },
      { application_variant_id: crypto.randomUUID() },
    ]) {
      expect(await expectJson(await current.log({ key: account.key }, { application_revisions }))).toEqual({
        count: 0,
        application_revisions: [],
      });
    }
  });
});
