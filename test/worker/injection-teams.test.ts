import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  createAccount,
  createTeam,
  expectJson,
  issueKey,
  markKeyUsed,
  REQUEST_LOG_BURST_MS,
  send,
} from "./fixtures";
import {
  addedRow,
  type Changes,
  databaseProblems,
  type ExpectedEvent,
  expectEvents,
  expectRowCounts,
  type RowCounts,
  type Table,
} from "./harness";
import {
  changesBy,
  expectBookmarkSqlIgnored,
  expectNoChange,
  expectRefused,
  expectUnauthorizedWith,
  HEADER_PAYLOAD_SAMPLE,
  type HeaderRoute,
  isAcceptableName,
  issueAt,
  PAYLOAD_SAMPLE,
  quietRequestLog,
  UUID_ISSUE,
} from "./injection-payloads";
import { databaseOf } from "./pool";

/*
 * SQL injection into the accounts routes (docs/ACCOUNTS-API.md): every path parameter (organization and workspace ids, key
 * prefixes), query parameter (workspace_id, read_only, expiration_date, user_id, project_id, email, org_id, role),
 * body field (names, owners, descriptions, types, emails, roles, tokens) and header. Refused requests (422, or a 404
 * for what names nothing) change nothing, every row of every table compared; accepted ones store the payload as sent
 * and change exactly the rows the same request with an ordinary value changes; no answer is a 500 or carries SQL or
 * internals. Emails that are valid and SQL-ish go through a whole membership: invited, resent, accepted (a user made
 * with that email), given a role, removed.
 */

let owner: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
/** The owner's key for the team's project. */
let key: string;
/** A workspace of the team made through the API (its PUTs rename it). */
let workspaceId: string;
/** An open invitation of the team, which no payload may accept. */
let invitation: { email: string; token: string; project_id: string };

quietRequestLog();

beforeAll(async () => {
  owner = await createAccount();
  const member = await createAccount();
  team = await createTeam(owner, [[member, "editor"]]);
  key = await issueKey(owner.userId, team.projectId);
  await markKeyUsed(key); // no record of the key's use is written after an answer
  workspaceId = (
    await expectJson<{ id: string }>(await call("POST", `/organizations/${team.organizationId}/workspaces`, { name: "w" }))
  ).id;
  invitation = await expectJson(await call("POST", invitePath(), [{ email: "open@example.com", roles: ["viewer"] }]));
});

const enc = encodeURIComponent;
const call = (method: string, path: string, body?: unknown, apiKey = key) => send(method, path, { key: apiKey, body });
/** A query string with every value percent-encoded (URLSearchParams would send a space as "+"). */
const query = (params: Record<string, string>) =>
  Object.entries(params)
    .map(([name, value]) => `${name}=${enc(value)}`)
    .join("&");
const invitePath = (organizationId = team.organizationId, workspace = team.workspaceId) =>
  `/organizations/${organizationId}/workspaces/${workspace}/invite`;
const accept = (token: string, projectId = invitation.project_id, path = invitePath()) =>
  send("POST", `${path}/accept?${query({ project_id: projectId })}`, { authorization: "", body: { token } });
const emailOf = (account: Account) => `${account.username}@example.com`;

/** What a write of a text field records (docs/EVENTS.md). */
type TextEvent = "organization.created" | "organization.updated" | "workspace.created" | "workspace.updated";

/**
 * The event of a write that stored `value` as `field` of the team's organization, of a workspace `changed` holds, or
 * of the organization it made.
 */
function textFieldEvent(type: TextEvent, field: string, value: string, changed: Changes): ExpectedEvent[] {
  if (type === "organization.created") {
    const organizationId = addedRow(changed, "organizations").id as string;
    return [
      {
        type,
        organization_id: organizationId,
        workspace_id: null,
        project_id: null,
        app_id: null,
        actor_user_id: owner.userId,
        data: { organization_id: organizationId, after: expect.objectContaining({ [field]: value }) },
      },
    ];
  }
  const ids =
    type === "organization.updated"
      ? { organization_id: team.organizationId }
      : { workspace_id: addedRow(changed, "workspaces", { orChanged: true }).id as string };
  return [
    {
      type,
      organization_id: team.organizationId,
      workspace_id: ids.workspace_id ?? null,
      project_id: null,
      app_id: null,
      actor_user_id: owner.userId,
      data: {
        ...ids,
        ...(type === "workspace.created" ? { [field]: value } : { after: expect.objectContaining({ [field]: value }) }),
      },
    },
  ];
}

/** A membership event of the team's workspace, about `email`. */
const memberEvent = (type: string, email: string, data: Record<string, unknown>, actor = owner.userId): ExpectedEvent => ({
  type,
  organization_id: team.organizationId,
  workspace_id: team.workspaceId,
  actor_user_id: actor,
  data: { email, workspace_id: team.workspaceId, ...data },
});

/**
 * A write of `payload` into `column`: when `acceptable`, a 200 whose rows are exactly `rows` and its `event`, the
 * payload stored as sent (and answered as sent at `answered`); else a 422 at `loc` that changes nothing.
 */
async function expectStored(
  payload: string,
  request: () => Promise<Response>,
  { loc, acceptable, rows, table, column, answered = column, event }: StoredField,
) {
  if (!acceptable(payload)) {
    await expectRefused(payload, request, 422, issueAt(loc));
    return;
  }
  const { result: response, changed } = await changesBy(request);
  const text = await response.text();
  expect(response.status, `${JSON.stringify(payload)}: ${text}`).toBe(200);
  expectRowCounts(expectEvents(changed, ...textFieldEvent(event, column, payload, changed)), rows);
  expect(addedRow(changed, table, { orChanged: true })[column], JSON.stringify(payload)).toBe(payload);
  if (answered) expect(JSON.parse(text)[answered]).toBe(payload);
}

interface StoredField {
  loc: (string | number)[];
  acceptable: (payload: string) => boolean;
  rows: RowCounts;
  table: Table;
  column: string;
  answered?: string | null;
  event: TextEvent;
}

/** Any text but one with a NUL, which SQLite's text functions would cut short. */
const withoutNul = (payload: string) => !payload.includes("\0");
/** At most `max` UTF-16 code units (zod counts so), without a NUL. */
const within = (max: number) => (payload: string) => payload.length <= max && withoutNul(payload);

const NEW_ORGANIZATION: RowCounts = { organizations: [1, 0], organization_members: [1, 0], workspaces: [1, 0], projects: [1, 0] };
const NEW_WORKSPACE: RowCounts = { workspaces: [1, 0], projects: [1, 0] };

/** An organization's or workspace's three text fields, each with the values it takes. */
const TEXT_FIELDS = [
  ["name", isAcceptableName],
  ["description", withoutNul],
  ["type", within(64)],
] as const;

/** `expectStored` for the payload in each text field in turn, through `write` (the body holding that one field). */
async function expectTextFieldsStored(
  payload: string,
  write: (fields: Record<string, string>) => () => Promise<Response>,
  rows: RowCounts,
  table: Table,
  event: TextEvent,
) {
  for (const [column, acceptable] of TEXT_FIELDS) {
    const field = { loc: ["body", column], acceptable, rows, table, column, event };
    await expectStored(payload, write({ [column]: payload }), field);
  }
}

describe("SQL in path parameters", () => {
  const ids = () => ({ org: team.organizationId, ws: team.workspaceId });
  /** A route with `id` as one parameter: its method and path, a body, and the parameter's name. */
  const routes: [string, string, (id: string) => string, (() => unknown) | undefined, string][] = [
    ["GET /organizations/{org_id}", "GET", (id) => `/organizations/${id}`, undefined, "org_id"],
    ["PUT /organizations/{org_id}", "PUT", (id) => `/organizations/${id}`, () => ({ name: "never" }), "org_id"],
    [
      "POST /organizations/{org_id}/workspaces",
      "POST",
      (id) => `/organizations/${id}/workspaces`,
      () => ({ name: "never" }),
      "org_id",
    ],
    [
      "PUT /organizations/{org_id}/workspaces/{workspace_id} (org_id)",
      "PUT",
      (id) => `/organizations/${id}/workspaces/${ids().ws}`,
      () => ({ name: "never" }),
      "org_id",
    ],
    [
      "PUT /organizations/{org_id}/workspaces/{workspace_id} (workspace_id)",
      "PUT",
      (id) => `/organizations/${ids().org}/workspaces/${id}`,
      () => ({ name: "never" }),
      "workspace_id",
    ],
    ...(["", "/resend"] as const).flatMap((action): (typeof routes)[number][] => {
      const body = () => (action === "" ? [{ email: "never@example.com", roles: ["viewer"] }] : { email: "open@example.com" });
      return [
        [`POST .../invite${action} (org_id)`, "POST", (id) => `${invitePath(id, ids().ws)}${action}`, body, "org_id"],
        [
          `POST .../invite${action} (workspace_id)`,
          "POST",
          (id) => `${invitePath(ids().org, id)}${action}`,
          body,
          "workspace_id",
        ],
      ];
    }),
    [
      "POST /workspaces/{workspace_id}/roles",
      "POST",
      (id) => `/workspaces/${id}/roles`,
      () => ({ email: "never@example.com", organization_id: team.organizationId, role: "viewer" }),
      "workspace_id",
    ],
    [
      "DELETE /workspaces/{workspace_id}/roles",
      "DELETE",
      (id) => `/workspaces/${id}/roles?${query({ email: "never@example.com", org_id: ids().org, role: "viewer" })}`,
      undefined,
      "workspace_id",
    ],
    [
      "DELETE /workspaces/{workspace_id}/users",
      "DELETE",
      (id) => `/workspaces/${id}/users?${query({ email: "never@example.com", org_id: ids().org })}`,
      undefined,
      "workspace_id",
    ],
  ];

  it.each(routes)("%s: every payload as the id, alone or after a real id, is refused (422 uuid_parsing)", async (...route) => {
    const [, method, path, body, field] = route;
    const real = field === "org_id" ? team.organizationId : team.workspaceId;
    for (const payload of PAYLOAD_SAMPLE) {
      for (const id of [payload, `${real}${payload}`]) {
        await expectRefused(payload, () => call(method, path(enc(id)), body?.()), 422, issueAt(["path", field], UUID_ISSUE));
      }
    }
  });

  it("POST .../invite/accept: every payload as org_id or workspace_id is refused (422 uuid_parsing)", async () => {
    for (const payload of PAYLOAD_SAMPLE) {
      const paths = [invitePath(enc(payload)), invitePath(team.organizationId, enc(`${team.workspaceId}${payload}`))];
      for (const [i, path] of paths.entries()) {
        const field = i === 0 ? "org_id" : "workspace_id";
        await expectRefused(payload, () => accept(invitation.token, invitation.project_id, path), 422, issueAt(["path", field]));
      }
    }
  });

  /** A prefix is any text of at most 64 characters: longer is a 422, else it names no key of the caller's. */
  const asPrefix = (id: string) => id.length <= 64;

  it("DELETE /keys/{key_prefix}: every payload as the prefix (alone or after a real one) finds no key (404; 422 past 64 characters), the key still live", async () => {
    const [prefix] = key.split(".");
    for (const payload of PAYLOAD_SAMPLE) {
      for (const id of [payload, `${prefix}${payload}`]) {
        const [status, detail] = asPrefix(id) ? [404, "API key not found"] : [422, issueAt(["path", "key_prefix"])];
        await expectRefused(payload, () => call("DELETE", `/keys/${enc(id)}`), status, detail);
      }
    }
    expect(await expectJson(await call("GET", `/keys/${prefix}/validate`))).toBe(true);
  });

  it("GET /keys/{key_prefix}/validate: every payload as the prefix is no live key of the caller's: false (422 past 64 characters)", async () => {
    const [prefix] = key.split(".");
    for (const payload of PAYLOAD_SAMPLE) {
      for (const id of [payload, `${prefix}${payload}`]) {
        const response = await expectNoChange(() => call("GET", `/keys/${enc(id)}/validate`));
        const answer = { status: response.status, body: await response.json() };
        if (asPrefix(id)) expect({ id, answer }).toEqual({ id, answer: { status: 200, body: false } });
        else expect({ id, answer }).toEqual({ id, answer: { status: 422, body: { detail: [issueAt(["path", "key_prefix"])] } } });
      }
    }
  });
});

describe("SQL in query parameters", () => {
  const member = () => ({ email: "never@example.com", org_id: team.organizationId, role: "viewer" });
  const cases: [string, (payload: string) => Promise<Response>, (string | number)[]][] = [
    ["POST /keys?workspace_id=", (p) => call("POST", `/keys?${query({ workspace_id: p })}`), ["query", "workspace_id"]],
    [
      "POST /keys?workspace_id=<a real id followed by the payload>",
      (p) => call("POST", `/keys?${query({ workspace_id: `${team.workspaceId}${p}` })}`),
      ["query", "workspace_id"],
    ],
    [
      "POST /keys?read_only=",
      (p) => call("POST", `/keys?${query({ workspace_id: team.workspaceId, read_only: p })}`),
      ["query", "read_only"],
    ],
    [
      "POST /keys?expiration_date=",
      (p) => call("POST", `/keys?${query({ workspace_id: team.workspaceId, expiration_date: p })}`),
      ["query", "expiration_date"],
    ],
    ["GET /profile?user_id=", (p) => call("GET", `/profile?${query({ user_id: p })}`), ["query", "user_id"]],
    [
      "GET /profile?user_id=<the caller's id followed by the payload>",
      (p) => call("GET", `/profile?${query({ user_id: `${owner.userId}${p}` })}`),
      ["query", "user_id"],
    ],
    ["POST .../invite/accept?project_id=", (p) => accept(invitation.token, p), ["query", "project_id"]],
    ...(["email", "org_id", "role"] as const).flatMap((field): [string, (payload: string) => Promise<Response>, string[]][] => [
      [
        `DELETE /workspaces/{workspace_id}/roles?${field}=`,
        (p) => call("DELETE", `/workspaces/${team.workspaceId}/roles?${query({ ...member(), [field]: p })}`),
        ["query", field],
      ],
    ]),
    ...(["email", "org_id"] as const).flatMap((field): [string, (payload: string) => Promise<Response>, string[]][] => [
      [
        `DELETE /workspaces/{workspace_id}/users?${field}=`,
        (p) => call("DELETE", `/workspaces/${team.workspaceId}/users?${query({ ...member(), [field]: p })}`),
        ["query", field],
      ],
    ]),
  ];

  it.each(cases)("%s: every payload is refused (422 there), and nothing changes", async (_, request, loc) => {
    for (const payload of PAYLOAD_SAMPLE) await expectRefused(payload, () => request(payload), 422, issueAt(loc));
  });
});

describe("SQL in body fields", () => {
  const organizationBody = (fields: Record<string, string>) => ({ name: "org", owner: owner.userId, ...fields });

  it("POST /organizations: every payload as the name, description and type is stored as sent (a name with a control character: 422)", async () => {
    for (const payload of PAYLOAD_SAMPLE) {
      const create = (fields: Record<string, string>) => () => call("POST", "/organizations", organizationBody(fields));
      const rows = NEW_ORGANIZATION;
      const table = "organizations";
      await expectTextFieldsStored(payload, create, rows, table, "organization.created");
    }
  });

  it("POST /organizations: every payload as the owner (alone, or after the caller's id or email) is refused (422), and nothing changes", async () => {
    for (const payload of PAYLOAD_SAMPLE) {
      for (const value of [payload, `${owner.userId}${payload}`, `${emailOf(owner)}${payload}`, `${payload}${emailOf(owner)}`]) {
        await expectRefused(
          payload,
          () => call("POST", "/organizations", { name: "never", owner: value }),
          422,
          issueAt(["body", "owner"]),
        );
      }
    }
  });

  it("PUT /organizations/{org_id}: every payload as the name, description, type is stored as sent; as updated_at, ignored", async () => {
    const path = `/organizations/${team.organizationId}`;
    const rows: RowCounts = { organizations: [1, 1] };
    const table = "organizations";
    for (const payload of PAYLOAD_SAMPLE) {
      const update = (fields: Record<string, string>) => () => call("PUT", path, fields);
      await expectTextFieldsStored(payload, update, rows, table, "organization.updated");
      // updated_at alone changes nothing: no event, and the organization's own updated_at stays.
      const { result, changed } = await changesBy(update({ updated_at: payload }));
      expect(result.status).toBe(200);
      expect(changed).toEqual({});
    }
  });

  it("POST /organizations/{org_id}/workspaces: every payload as the name, description, type is stored as sent", async () => {
    const path = `/organizations/${team.organizationId}/workspaces`;
    const table = "workspaces";
    for (const payload of PAYLOAD_SAMPLE) {
      const create = (fields: Record<string, string>) => () => call("POST", path, { name: "w", ...fields });
      const rows = NEW_WORKSPACE;
      await expectTextFieldsStored(payload, create, rows, table, "workspace.created");
    }
  });

  it("PUT /organizations/{org_id}/workspaces/{workspace_id}: every payload as the name, description, type is stored as sent", async () => {
    const path = `/organizations/${team.organizationId}/workspaces/${workspaceId}`;
    const rows: RowCounts = { workspaces: [1, 1] };
    const table = "workspaces";
    for (const payload of PAYLOAD_SAMPLE) {
      const update = (fields: Record<string, string>) => () => call("PUT", path, fields);
      await expectTextFieldsStored(payload, update, rows, table, "workspace.updated");
    }
  });

  it("POST .../invite: every payload as the email or the role is refused (422 there); as an email's local part, refused or stored as sent", async () => {
    for (const payload of PAYLOAD_SAMPLE) {
      for (const email of [payload, `new@example.com${payload}`]) {
        await expectRefused(
          payload,
          () => call("POST", invitePath(), [{ email, roles: ["viewer"] }]),
          422,
          issueAt(["body", 0, "email"]),
        );
      }
      // What z.email() takes of a local part ("_", an apostrophe) is an email like any other.
      const email = `${payload}@example.com`;
      const { result: response, changed } = await changesBy(() => call("POST", invitePath(), [{ email, roles: ["viewer"] }]));
      if (response.status === 200) {
        const event = memberEvent("member.invited", email, { user_id: null, role: "viewer" });
        expectRowCounts(expectEvents(changed, event), { invitations: [1, 0] });
        expect(addedRow(changed, "invitations", { orChanged: true })).toMatchObject({ email, role: "viewer" });
        expect(await response.json()).toMatchObject({ email, role: "viewer" });
      } else {
        expect(changed).toEqual({});
        expect(response.status, email).toBe(422);
        expect(((await response.json()) as { detail: unknown[] }).detail).toContainEqual(issueAt(["body", 0, "email"]));
      }
      await expectRefused(
        payload,
        () => call("POST", invitePath(), [{ email: "never@example.com", roles: [payload] }]),
        422,
        issueAt(["body", 0, "roles", 0]),
      );
    }
  });

  it("POST .../invite/resend: every payload as the email is refused (422), and nothing changes", async () => {
    for (const payload of PAYLOAD_SAMPLE) {
      for (const email of [payload, `open@example.com${payload}`]) {
        await expectRefused(payload, () => call("POST", `${invitePath()}/resend`, { email }), 422, issueAt(["body", "email"]));
      }
    }
  });

  it("POST .../invite/accept: every payload as the token (alone, or after the real one) finds no invitation: 404, and it stays open", async () => {
    for (const payload of PAYLOAD_SAMPLE) {
      for (const token of [payload, `${invitation.token}${payload}`, `${payload}${invitation.token}`]) {
        await expectRefused(payload, () => accept(token), 404, "Invitation not found");
      }
    }
    const open = await databaseOf(team.organizationId)
      .prepare("SELECT accepted_at, voided_at FROM invitations WHERE organization_id = ? AND email = ?")
      .bind(team.organizationId, invitation.email)
      .first();
    expect(open).toEqual({ accepted_at: null, voided_at: null });
  });

  it("POST /workspaces/{workspace_id}/roles: every payload as the email, organization_id or role is refused (422 there)", async () => {
    const body = { email: "never@example.com", organization_id: team.organizationId, role: "viewer" };
    for (const payload of PAYLOAD_SAMPLE) {
      for (const field of ["email", "organization_id", "role"]) {
        await expectRefused(
          payload,
          () => call("POST", `/workspaces/${team.workspaceId}/roles`, { ...body, [field]: payload }),
          422,
          issueAt(["body", field]),
        );
      }
    }
  });
});

describe("odd text in the free-text fields", () => {
  const ODD = ["\u0000", "\u202e\u200b\ufeff", "\u{1f600}", "e\u0301", "x".repeat(2000), "x".repeat(2001), "x".repeat(65)];
  // Half of a surrogate pair (sent as a JSON escape) is no text: UTF-8 cannot hold it. Names refuse it
  // (src/http/fields.ts); any other field must refuse it too, or store it as sent, which it cannot.
  const LONE_SURROGATES = ["\ud800", "a\udc00b", "\udbff\udbff", "\u{1f600}\ud83d"];
  const routes: [string, () => string, string, Table, RowCounts, TextEvent][] = [
    ["POST /organizations", () => "/organizations", "POST", "organizations", NEW_ORGANIZATION, "organization.created"],
    [
      "PUT /organizations/{org_id}",
      () => `/organizations/${team.organizationId}`,
      "PUT",
      "organizations",
      { organizations: [1, 1] },
      "organization.updated",
    ],
    [
      "POST /organizations/{org_id}/workspaces",
      () => `/organizations/${team.organizationId}/workspaces`,
      "POST",
      "workspaces",
      NEW_WORKSPACE,
      "workspace.created",
    ],
    [
      "PUT /organizations/{org_id}/workspaces/{workspace_id}",
      () => `/organizations/${team.organizationId}/workspaces/${workspaceId}`,
      "PUT",
      "workspaces",
      { workspaces: [1, 1] },
      "workspace.updated",
    ],
  ];

  /** Each value as the description and as the type of each route: what was stored otherwise than sent (a 422 stores nothing). */
  async function storedOtherwise(values: string[]) {
    const problems: string[] = [];
    for (const [label, path, method, table, rows, event] of routes) {
      for (const value of values) {
        for (const field of ["description", "type"]) {
          const body = { name: "odd", owner: owner.userId, [field]: value };
          // Sent as JSON text (JSON.stringify escapes a lone surrogate, as a client's encoder does).
          const { result: response, changed } = await changesBy(() => call(method, path(), body));
          expect(response.status, `${label} ${field} ${JSON.stringify(value)}`).toBeLessThan(500);
          if (response.status !== 200) {
            expect(response.status).toBe(422);
            expect(changed).toEqual({});
            continue;
          }
          expectRowCounts(expectEvents(changed, ...textFieldEvent(event, field, value, changed)), rows);
          const [stored, answered] = [
            addedRow(changed, table, { orChanged: true })[field],
            ((await response.json()) as Record<string, unknown>)[field],
          ];
          if (stored !== value || answered !== value) {
            problems.push(
              `${label}: ${field} ${JSON.stringify(value)} stored as ${JSON.stringify(stored)}, answered ${JSON.stringify(answered)}`,
            );
          }
        }
      }
    }
    return problems;
  }

  it("control and invisible characters, emoji, combining marks, lengths: description and type refused (422) or stored as sent", async () => {
    expect(await storedOtherwise(ODD)).toEqual([]);
  });

  // A lone surrogate cannot be stored as sent (D1 would keep U+FFFD): refused, as in a name.
  it("half of a surrogate pair as the description or type is refused (422), not stored as U+FFFD", async () => {
    expect(await storedOtherwise(LONE_SURROGATES)).toEqual([]);
  });
});

describe("valid emails that look like SQL are plain data", () => {
  // What z.email() takes holds apostrophes, dashes and underscores: enough for SQL's quotes and comments.
  const EMAILS = [
    "o'reilly@example.com",
    "x'--@example.com",
    "admin'--@example.com",
    "'_or_'1'-'1@example.com",
    "robert'-drop-table-users--@example.com",
    "a'+union+select+key_hash+from+api_keys--@example.com",
  ];

  it.each(EMAILS.map((email) => [email]))(
    "%s: invited, resent, accepted (a user with that email), given a role, removed",
    async (email) => {
      const invited = await changesBy(() => call("POST", invitePath(), [{ email, roles: ["editor"] }]));
      const first = await expectJson<{ email: string; token: string; project_id: string }>(invited.result);
      expect(first.email).toBe(email);
      const invitedEvent = memberEvent("member.invited", email, { user_id: null, role: "editor" });
      expectRowCounts(expectEvents(invited.changed, invitedEvent), { invitations: [1, 0] });
      expect(addedRow(invited.changed, "invitations", { orChanged: true })).toMatchObject({ email, role: "editor" });

      const resent = await changesBy(() => call("POST", `${invitePath()}/resend`, { email }));
      const second = await expectJson<{ token: string }>(resent.result);
      // The first voided, the second made: an invitation again.
      expectRowCounts(expectEvents(resent.changed, invitedEvent), { invitations: [2, 1] });
      expect((await accept(first.token)).status).toBe(410);

      const accepted = await changesBy(() => accept(second.token));
      const joined = await expectJson<{ user_id: string; email: string; api_key: string }>(accepted.result);
      expect(joined.email).toBe(email);
      const joinedAs = { user_id: joined.user_id, role: "editor" };
      const firstKey: ExpectedEvent = {
        type: "api_key.created",
        organization_id: team.organizationId,
        workspace_id: team.workspaceId,
        project_id: invitation.project_id,
        actor_user_id: joined.user_id,
        actor_api_key_prefix: null,
        data: { prefix: joined.api_key.split(".")[0], user_id: joined.user_id, project_id: invitation.project_id },
      };
      expectRowCounts(expectEvents(accepted.changed, memberEvent("member.joined", email, joinedAs, joined.user_id), firstKey), {
        users: [1, 0],
        organization_members: [1, 0],
        api_keys: [1, 0],
        invitations: [1, 1],
        // The email claimed in the directory, then confirmed, under the same user id and username.
        "directory.users": [1, 0],
      });
      expect(addedRow(accepted.changed, "users", { orChanged: true })).toMatchObject({
        email,
        username: email.slice(0, email.lastIndexOf("@")),
      });
      expect(addedRow(accepted.changed, "directory.users", { orChanged: true })).toMatchObject({
        id: joined.user_id,
        email,
        username: email.slice(0, email.lastIndexOf("@")),
      });
      await markKeyUsed(joined.api_key);

      await expectRefused(
        email,
        () => call("POST", invitePath(), [{ email: email.toUpperCase(), roles: ["viewer"] }]),
        409,
        "This email is already a member of the organization",
      );

      const promoted = await changesBy(() =>
        call("POST", `/workspaces/${team.workspaceId}/roles`, {
          email,
          organization_id: team.organizationId,
          role: "deployment_manager",
        }),
      );
      expect(await expectJson(promoted.result)).toBe(true);
      const promotion = { user_id: joined.user_id, role: "deployment_manager", previous_role: "editor" };
      expectRowCounts(expectEvents(promoted.changed, memberEvent("member.role_changed", email, promotion)), {
        organization_members: [1, 1],
      });
      const unassigned = await changesBy(() =>
        call(
          "DELETE",
          `/workspaces/${team.workspaceId}/roles?${query({ email, org_id: team.organizationId, role: "deployment_manager" })}`,
        ),
      );
      expect(await expectJson(unassigned.result)).toMatchObject({ id: joined.user_id, email, role: "viewer" });

      const removed = await changesBy(() =>
        call("DELETE", `/workspaces/${team.workspaceId}/users?${query({ email, org_id: team.organizationId })}`),
      );
      const workspace = await expectJson<{ members: { user: { id: string } }[] }>(removed.result);
      expect(workspace.members.map((one) => one.user.id)).not.toContain(joined.user_id);
      // One event, the removal: the keys it revokes with it are part of it.
      const removal = memberEvent("member.removed", email, { user_id: joined.user_id, role: "viewer" });
      expectRowCounts(expectEvents(removed.changed, removal), { organization_members: [0, 1], api_keys: [1, 1] });
      expect((await send("GET", "/keys", { key: joined.api_key })).status).toBe(401);
      // Nothing else of anyone's was touched: the owner and the team are as they were.
      expect(await expectJson(await call("GET", "/profile"))).toMatchObject({ id: owner.userId });
    },
  );
});

describe("SQL in headers", () => {
  const routes: HeaderRoute[] = [
    ["GET", () => "/keys"],
    ["POST", () => `/keys?workspace_id=${team.workspaceId}`],
    ["DELETE", () => `/keys/${key.split(".")[0]}`],
    ["GET", () => `/keys/${key.split(".")[0]}/validate`],
    ["GET", () => "/profile"],
    ["GET", () => "/organizations"],
    ["POST", () => "/organizations", () => ({ name: "never", owner: owner.userId })],
    ["GET", () => "/organizations/own"],
    ["GET", () => `/organizations/${team.organizationId}`],
    ["PUT", () => `/organizations/${team.organizationId}`, () => ({ name: "never" })],
    ["POST", () => `/organizations/${team.organizationId}/workspaces`, () => ({ name: "never" })],
    ["PUT", () => `/organizations/${team.organizationId}/workspaces/${workspaceId}`, () => ({ name: "never" })],
    ["POST", () => invitePath(), () => [{ email: "never@example.com", roles: ["viewer"] }]],
    ["POST", () => `${invitePath()}/resend`, () => ({ email: invitation.email })],
    ["POST", () => `${invitePath()}/accept?project_id=${invitation.project_id}`, () => ({ token: invitation.token })],
    ["GET", () => "/workspaces/roles"],
    ["GET", () => "/workspaces/permissions"],
    [
      "POST",
      () => `/workspaces/${team.workspaceId}/roles`,
      () => ({ email: emailOf(owner), organization_id: team.organizationId, role: "viewer" }),
    ],
    [
      "DELETE",
      () =>
        `/workspaces/${team.workspaceId}/roles?${query({ email: emailOf(owner), org_id: team.organizationId, role: "owner" })}`,
    ],
    ["DELETE", () => `/workspaces/${team.workspaceId}/users?${query({ email: emailOf(owner), org_id: team.organizationId })}`],
  ];

  it.each(HEADER_PAYLOAD_SAMPLE.map((payload) => [payload]))(
    "Authorization with %s is a 401 on every route (accepting an invitation included), and nothing changes",
    (payload) => expectUnauthorizedWith(payload, key, routes),
  );

  it("ignores a D1 bookmark header holding SQL on every read", () => expectBookmarkSqlIgnored(key, routes));
});

it("leaves the database consistent after all of the above", async () => {
  await scheduler.wait(REQUEST_LOG_BURST_MS); // the last requests' log line is written while the log is still quiet
  expect(await databaseProblems()).toEqual([]);
});
