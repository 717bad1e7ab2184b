import { describe, expect, it } from "vitest";
import { appNamed, describeConfigFuzzing, fuzzing, ownerCalls } from "./fuzz-configs-oracle";
import type { Replay } from "./fuzz-support";

/*
 * Generated requests to POST /variants/configs/add and /commit, against the real local D1: the oracle, the plans and
 * the properties are fuzz-configs-oracle.ts's (fetch and fork: fuzz-configs-lookups.test.ts). Seeds, REPLAY and the
 * runner: fuzz-support.ts.
 */
const REPLAY: Replay = {};

describeConfigFuzzing(["add", "commit"], REPLAY);

describe("cases found by fuzzing", () => {
  it("keeps a params key named __proto__, as it keeps any other key", async () => {
    const app = appNamed("fuzz-own");
    const params = '{"__proto__":{"x":1},"a":2}';
    const response = await ownerCalls(
      "commit",
      `{"application_ref":{"id":"${app.id}"},"variant_ref":{"slug":"main"},"params":${params}}`,
    );
    expect(response.status).toBe(200);
    expect(((await response.json()) as { params: unknown }).params).toEqual(JSON.parse(params));
    await fuzzing.db.changes();
  });

  // Found by fuzz-registry.test.ts: params kept as sent are read by parsing the body text again with a reviver, which
  // recursed past the stack on an ignored field nested a few thousand levels deep (a 500). Such a body is now a 422.
  it("refuses a body nesting deeper than 1,000 levels beside valid params (3,000 was a 500), nothing written", async () => {
    const app = appNamed("fuzz-own");
    for (const depth of [1_001, 3_000, 50_000]) {
      const deep = `${"[".repeat(depth)}${"]".repeat(depth)}`;
      const response = await ownerCalls(
        "commit",
        `{"unknown":${deep},"application_ref":{"id":"${app.id}"},"variant_ref":{"slug":"main"},"params":{"a":1}}`,
      );
      expect({ status: response.status, body: await response.json() }).toEqual({
        status: 422,
        body: {
          detail: [{ loc: ["body"], msg: "Value error, the body must not nest deeper than 1000 levels", type: "value_error" }],
        },
      });
      expect(await fuzzing.db.changes()).toEqual({});
    }
    // 1,000 levels in all (the unknown field at 999, inside the body) are taken.
    const deep = `${"[".repeat(999)}${"]".repeat(999)}`;
    const taken = await ownerCalls(
      "commit",
      `{"unknown":${deep},"application_ref":{"id":"${app.id}"},"variant_ref":{"slug":"main"},"params":{"a":1}}`,
    );
    expect(taken.status).toBe(200);
    await fuzzing.db.changes();
  });

  // Found after sharding: a revision id of another shard names nothing on the app's, and the slug alone was committed on.
  it("commits nothing when variant_ref's id names no revision, whatever its slug names", async () => {
    const app = appNamed("fuzz-own");
    const model = fuzzing.db.model;
    const environmentRevision = model.environmentRevisionsOf(model.environmentsOf(app.id)[0].id)[0];
    for (const id of [environmentRevision.id, app.id]) {
      const response = await ownerCalls(
        "commit",
        JSON.stringify({ application_ref: { id: app.id }, variant_ref: { slug: "main", id }, params: { a: 1 } }),
      );
      expect({ status: response.status, body: await response.json() }).toEqual({
        status: 404,
        body: { detail: "Config not found." },
      });
      expect(await fuzzing.db.changes()).toEqual({});
    }
  });

  it("refuses a url holding half a surrogate pair (it cannot be stored as sent), rather than storing it altered", async () => {
    const app = appNamed("fuzz-own");
    const response = await ownerCalls(
      "commit",
      JSON.stringify({ application_ref: { id: app.id }, variant_ref: { slug: "main" }, params: {}, url: "a\ud800b" }),
    );
    const body = await response.json();
    await fuzzing.db.changes();
    expect({ status: response.status, body }).toEqual({
      status: 422,
      body: { detail: [expect.objectContaining({ loc: ["body", "url"] })] },
    });
  });
});
