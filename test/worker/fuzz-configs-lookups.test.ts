import { describe, expect, it } from "vitest";
import { appNamed, describeConfigFuzzing, fuzzing, ownerCalls } from "./fuzz-configs-oracle";
import type { Replay } from "./fuzz-support";

/*
 * Generated requests to POST /variants/configs/fetch and /fork, against the real local D1: the oracle, the plans and
 * the properties are fuzz-configs-oracle.ts's (add and commit: fuzz-configs.test.ts). Seeds, REPLAY and the runner:
 * fuzz-support.ts.
 */
const REPLAY: Replay = {};

describeConfigFuzzing(["fetch", "fork"], REPLAY);

describe("cases found by fuzzing", () => {
  it("looks an app's slug up in the key's project only, even where a revision id names an app of that name elsewhere", async () => {
    // fuzz-team is in the team's project; the owner's key names the owner's own project.
    const app = appNamed("fuzz-team");
    const revision = fuzzing.db.model.latest(fuzzing.db.model.variantsOf(app.id)[0].id)!;
    const response = await ownerCalls(
      "fetch",
      JSON.stringify({ application_ref: { slug: app.name }, variant_ref: { id: revision.id } }),
    );
    expect({ status: response.status, body: await response.json() }).toEqual({
      status: 404,
      body: { detail: "Config not found." },
    });
  });
});
