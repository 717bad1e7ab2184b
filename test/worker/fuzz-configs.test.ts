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

  // BUG, not fixed here (found by fuzz-registry.test.ts, which tells it for the older SDK's writes): the params kept as
  // sent are read by parsing the whole body text again with a reviver (paramsAsSent, parseJsonExactly), which overflows
  // the stack on a field nested a few thousand levels deep that validation let through (an unknown one, ignored): a 500,
  // nothing written, where LEGACY-API.md says never a 500 for bad input. Once fixed, `it.fails` must become `it`.
  it.fails("takes params beside an unknown field nested 3,000 levels deep (or refuses the body), not a 500", async () => {
    const app = appNamed("fuzz-own");
    const deep = `${"[".repeat(3000)}${"]".repeat(3000)}`;
    const response = await ownerCalls(
      "commit",
      `{"unknown":${deep},"application_ref":{"id":"${app.id}"},"variant_ref":{"slug":"main"},"params":{"a":1}}`,
    );
    const body = await response.json();
    await fuzzing.db.changes();
    expect([200, 422], JSON.stringify(body)).toContain(response.status);
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
