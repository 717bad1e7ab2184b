import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, expectJson, parseKeepingNumbers, postConfigText, send } from "./fixtures";
import { snapshot } from "./harness";
import { databaseOf } from "./pool";

/*
 * Params as stored and answered: every number digit for digit on every route that answers them, and a depth
 * limit (100 levels) instead of the 500 SQLite's own limit (1,000) used to cause.
 */

let editor: Account;
let appId: string;

/** An answer's JSON with each number as `{ number: "<its text>" }`, once its status is checked. */
async function readKeepingNumbers(response: Response, status = 200): Promise<any> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return parseKeepingNumbers(text);
}

// Each number here is one JSON.parse and JSON.stringify would change: past 2^53, past a double's range, or not in
// JavaScript's own spelling.
const PARAMS_TEXT =
  '{"id":9007199254740993,"big":12345678901234567890123,"x":1e400,"one":1.0,"neg":-0,"e":1E5,"tiny":1e-7,' +
  '"list":[0.1000000000000000055511151231257827,2.50,{"seed":18446744073709551615}],"n":-12,"text":"9007199254740993"}';
const PARAMS_AS_SENT = {
  id: { number: "9007199254740993" },
  big: { number: "12345678901234567890123" },
  x: { number: "1e400" },
  one: { number: "1.0" },
  neg: { number: "-0" },
  e: { number: "1E5" },
  tiny: { number: "1e-7" },
  list: [{ number: "0.1000000000000000055511151231257827" }, { number: "2.50" }, { seed: { number: "18446744073709551615" } }],
  n: { number: "-12" },
  text: "9007199254740993",
};

beforeAll(async () => {
  editor = await createAccount();
  appId = await createAppVia(editor.key, { app_name: "numbers" });
});

describe("numbers in params", () => {
  let variantId: string;
  let revisionId: string;
  const app = () => `{"id":"${appId}"}`;

  beforeAll(async () => {
    await expectJson(await postConfigText("add", editor.key, `{"variant_ref":{"slug":"exact"},"application_ref":${app()}}`));
    const committed = await readKeepingNumbers(
      await postConfigText(
        "commit",
        editor.key,
        `{"params":${PARAMS_TEXT},"variant_ref":{"slug":"exact"},"application_ref":${app()}}`,
      ),
    );
    expect(committed.params).toEqual(PARAMS_AS_SENT);
    revisionId = committed.variant_ref.id;
    const variant = await databaseOf(revisionId)
      .prepare("SELECT variant_id AS id FROM app_variant_revisions WHERE id = ?")
      .bind(revisionId)
      .first<{ id: string }>();
    variantId = variant!.id;
  });

  it("are stored as sent", async () => {
    const row = await databaseOf(revisionId)
      .prepare("SELECT params FROM app_variant_revisions WHERE id = ?")
      .bind(revisionId)
      .first();
    expect(row).toEqual({ params: PARAMS_TEXT });
  });

  it("come back digit for digit from fetch, fork, deploy and the variant and revision reads", async () => {
    const byVariant = `{"variant_ref":{"slug":"exact"},"application_ref":${app()}}`;
    const deployBody = `{"variant_ref":{"slug":"exact"},"environment_ref":{"slug":"staging"},"application_ref":${app()}}`;
    const byEnvironment = `{"environment_ref":{"slug":"staging"},"application_ref":${app()}}`;
    const answers = {
      fetch: (await readKeepingNumbers(await postConfigText("fetch", editor.key, byVariant))).params,
      fork: (await readKeepingNumbers(await postConfigText("fork", editor.key, byVariant))).params,
      deploy: (await readKeepingNumbers(await postConfigText("deploy", editor.key, deployBody))).params,
      fetchByEnvironment: (await readKeepingNumbers(await postConfigText("fetch", editor.key, byEnvironment))).params,
      variant: (await readKeepingNumbers(await send("GET", `/variants/${variantId}`, { key: editor.key }))).parameters,
      revisions: (await readKeepingNumbers(await send("GET", `/variants/${variantId}/revisions`, { key: editor.key })))[1].config
        .parameters,
      revision: (await readKeepingNumbers(await send("GET", `/variants/${variantId}/revisions/2`, { key: editor.key }))).config
        .parameters,
      appVariants: (await readKeepingNumbers(await send("GET", `/apps/${appId}/variants`, { key: editor.key }))).find(
        (variant: { variant_id: string }) => variant.variant_id === variantId,
      ).parameters,
      deployedVariant: (
        await readKeepingNumbers(
          await send("GET", `/apps/get_variant_by_env?app_id=${appId}&environment=staging`, { key: editor.key }),
        )
      ).parameters,
    };
    expect(answers).toEqual(Object.fromEntries(Object.keys(answers).map((route) => [route, PARAMS_AS_SENT])));
  });

  it("come back digit for digit when a keyed commit is replayed, and in the wrapped form", async () => {
    const body = `{"config":{"params":${PARAMS_TEXT},"variant_ref":{"slug":"exact"},"application_ref":${app()}}}`;
    const headers = { "Idempotency-Key": "exact-numbers-1" };
    const first = await readKeepingNumbers(await postConfigText("commit", editor.key, body, headers));
    const replay = await postConfigText("commit", editor.key, body, headers);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await readKeepingNumbers(replay)).toEqual(first);
    expect(first.params).toEqual(PARAMS_AS_SENT);
  });

  it("a variant_ref.version past 2^53 - 1 is refused as a number (422), writing nothing", async () => {
    const before = await snapshot();
    for (const version of ["9007199254740992", "9007199254740993", "1e300"]) {
      const response = await postConfigText(
        "commit",
        editor.key,
        `{"params":{},"variant_ref":{"slug":"exact","version":${version}},"application_ref":${app()}}`,
      );
      expect(await expectJson(response, 422)).toEqual({
        detail: [
          {
            loc: ["body", "variant_ref", "version"],
            msg: "Input should be less than or equal to 9007199254740991",
            type: "less_than_equal",
          },
        ],
      });
    }
    const infinite = await postConfigText(
      "fetch",
      editor.key,
      `{"variant_ref":{"slug":"exact","version":1e400},"application_ref":${app()}}`,
    );
    expect(await expectJson(infinite, 422)).toEqual({
      detail: [{ loc: ["body", "variant_ref", "version"], msg: "Input should be a finite number", type: "finite_number" }],
    });
    expect(await snapshot()).toEqual(before);
  });
});

/** An object nested `depth` levels deep, itself level 1: `{"a": {"a": ... {}}}`, or arrays inside the object. */
const nested = (depth: number, kind: "object" | "array" = "object") =>
  kind === "object"
    ? `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`
    : `{"a":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;

describe("nesting of params", () => {
  const commitBody = (params: string) => `{"params":${params},"variant_ref":{"slug":"deep"},"application_ref":{"id":"${appId}"}}`;
  const TOO_DEEP = {
    detail: [{ loc: ["body", "params"], msg: "Value error, params must not nest deeper than 100 levels", type: "value_error" }],
  };

  beforeAll(async () => {
    await expectJson(
      await postConfigText("add", editor.key, `{"variant_ref":{"slug":"deep"},"application_ref":{"id":"${appId}"}}`),
    );
  });

  it("up to 100 levels is stored and answered as sent", async () => {
    for (const kind of ["object", "array"] as const) {
      const config = await expectJson<{ params: unknown }>(
        await postConfigText("commit", editor.key, commitBody(nested(100, kind))),
      );
      expect(JSON.stringify(config.params)).toBe(nested(100, kind));
    }
  });

  it("deeper is a 422 naming params (1,000 deep was a 500), wrapped or not, and writes nothing", async () => {
    const before = await snapshot();
    for (const params of [nested(101), nested(101, "array"), nested(1000), nested(1000, "array"), nested(50_000, "array")]) {
      expect(await expectJson(await postConfigText("commit", editor.key, commitBody(params)), 422)).toEqual(TOO_DEEP);
      expect(await expectJson(await postConfigText("commit", editor.key, `{"config":${commitBody(params)}}`), 422)).toEqual(
        TOO_DEEP,
      );
    }
    expect(await snapshot()).toEqual(before);
  });
});
