import { beforeAll, describe, expect, it } from "vitest";
import { type Account, createAccount, createAppVia, createOrganizationVia, expectJson, send } from "./fixtures";
import { snapshot } from "./harness";

/*
 * Names keep to one line (src/http/fields.ts nameField): U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR are
 * refused as \n and \r are (422, nothing written), in every kind of name, new or looked up: an organization's or
 * workspace's name reaches an invitation mail's subject.
 */

let account: Account;
let appId: string;
let organization: Awaited<ReturnType<typeof createOrganizationVia>>;

beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "one-line" });
  organization = await createOrganizationVia(account.key);
});

/** Each kind of name: the request that sends `name` as it, and where the 422 points. */
const KINDS: [kind: string, request: (name: string) => [method: string, path: string, body: unknown], loc: string[]][] = [
  ["a new app's name", (name) => ["POST", "/apps", { app_name: name }], ["body", "app_name"]],
  ["an app's new name", (name) => ["PATCH", `/apps/${appId}`, { app_name: name }], ["body", "app_name"]],
  ["an app's name, looked up", (name) => ["GET", `/apps?app_name=${encodeURIComponent(name)}`, undefined], ["query", "app_name"]],
  [
    "a new config's name",
    (name) => ["POST", "/variants/configs/add", { application_ref: { id: appId }, variant_ref: { slug: name } }],
    ["body", "variant_ref", "slug"],
  ],
  [
    "a config's name from a base",
    (name) => ["POST", "/variants/from-base", { base_id: appId, new_variant_name: "x", new_config_name: name, parameters: {} }],
    ["body", "new_config_name"],
  ],
  [
    "a saved config's name",
    (name) => ["POST", "/configs", { base_id: appId, config_name: name, parameters: {}, overwrite: false }],
    ["body", "config_name"],
  ],
  [
    "an environment's name",
    (name) => ["POST", "/environments/deploy", { environment_name: name, variant_id: appId }],
    ["body", "environment_name"],
  ],
  [
    "a current-API app's slug, looked up",
    (name) => ["POST", "/simple/applications/query", { application: { slug: name } }],
    ["body", "application", "slug"],
  ],
  ["a new organization's name", (name) => ["POST", "/organizations", { name, owner: account.userId }], ["body", "name"]],
  ["an organization's new name", (name) => ["PUT", `/organizations/${organization.organizationId}`, { name }], ["body", "name"]],
  [
    "a new workspace's name",
    (name) => ["POST", `/organizations/${organization.organizationId}/workspaces`, { name }],
    ["body", "name"],
  ],
  [
    "a workspace's new name",
    (name) => ["PUT", `/organizations/${organization.organizationId}/workspaces/${organization.workspaceId}`, { name }],
    ["body", "name"],
  ],
];

const SEPARATORS: [label: string, character: string][] = [
  ["U+2028 LINE SEPARATOR", "\u2028"],
  ["U+2029 PARAGRAPH SEPARATOR", "\u2029"],
];

describe.each(SEPARATORS)("a name with %s", (_, separator) => {
  it.each(KINDS)("is refused as %s (422, as for \\n), writing nothing", async (_kind, request, loc) => {
    const [method, path, body] = request(`two${separator}lines`);
    const before = await snapshot();
    const field = String(loc.at(-1));
    expect(await expectJson(await send(method, path, { key: account.key, body }), 422)).toEqual({
      detail: [{ loc, msg: `Value error, ${field} must not contain control characters or line breaks`, type: "value_error" }],
    });
    expect(await snapshot()).toEqual(before);
  });
});

it("answers \\n in a name as it answers U+2028", async () => {
  const [method, path, body] = KINDS[0][1]("two\nlines");
  expect(await expectJson(await send(method, path, { key: account.key, body }), 422)).toEqual({
    detail: [
      {
        loc: ["body", "app_name"],
        msg: "Value error, app_name must not contain control characters or line breaks",
        type: "value_error",
      },
    ],
  });
});
