import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, legacyConfig, send } from "../fixtures";

/*
 * Today's SDK calls `{api_url}{path}`, with and without a trailing slash, and follows no redirect
 * (docs/CURRENT-SDK-API.md, Transport): calls 10 to 15 answer the same at the root and under BASE_PATH=/api, either way.
 */

let account: Account;
let appId: string;
let variantId: string;

beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "transported" });
  variantId = await legacyConfig(account.key, appId, "main", { a: 1 });
  const deployed = await send("POST", "/variants/configs/deploy", {
    key: account.key,
    body: { application_ref: { id: appId }, variant_ref: { slug: "main" }, environment_ref: { slug: "production" } },
  });
  expect(deployed.status).toBe(200);
});

const CALLS: [path: string, body: () => unknown, reads: boolean][] = [
  ["/applications/revisions/retrieve", () => ({ environment_ref: { slug: "production" }, key: "transported.revision" }), true],
  ["/workflows/revisions/retrieve", () => ({ workflow_ref: { id: appId } }), true],
  ["/applications/revisions/log", () => ({ application_revisions: { application_variant_id: variantId } }), true],
  ["/simple/environments/query", () => ({ environment: { slug: "production" } }), true],
  [
    "/applications/revisions/commit",
    () => ({ application_revision: { application_variant_id: variantId, data: { parameters: { b: 2 } } } }),
    false,
  ],
  ["/applications/revisions/deploy", () => ({ application_ref: { id: appId }, environment_ref: { slug: "staging" } }), false],
];

describe("calls 10 to 15 under every prefix, with and without a trailing slash", () => {
  it.each(CALLS)("%s", async (path, body, reads) => {
    const answers = [];
    for (const basePath of ["", "/api"]) {
      for (const slash of ["", "/"]) {
        const response = await send("POST", `${basePath}${path}${slash}`, {
          key: account.key,
          body: body(),
          bindings: { BASE_PATH: basePath },
        });
        expect(response.status, `${basePath}${path}${slash}`).toBe(200);
        answers.push(await response.json());
      }
    }
    // A read answers the same four times; a write made four revisions, each answered.
    if (reads) expect(answers.slice(1)).toEqual([answers[0], answers[0], answers[0]]);
    else expect(answers.map((answer) => (answer as { count: number }).count)).toEqual([1, 1, 1, 1]);
  });
});
