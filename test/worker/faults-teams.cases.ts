import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type Account,
  addMember,
  createAccount,
  createTeam,
  expectJson,
  issueKey,
  markKeyUsed,
  type Role,
  send,
} from "./fixtures";
import { databaseProblems, type Snapshot, snapshot } from "./harness";
import { failTrips, type Instruments, instrumentD1 } from "./instrumented-d1";
import { databaseOf, inPlaceOfShardFor } from "./pool";

/*
 * Faults in the writes of the accounts routes (docs/ACCOUNTS-API.md: "Every write here is one D1 batch (one transaction)"),
 * injected into the real D1: a statement slipped into the route's batch that fails when it runs (by the wrapper of
 * instrumented-d1.ts), a trigger that fails one of the route's own statements, or D1's transient error. Whatever
 * failed, the database is exactly as before (every row of every table), and the answer says nothing internal: 500, or
 * 503 with Retry-After for a transient error.
 */

let owner: Account;
let member: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
/** The member's key for the team's project: removing the member revokes it. */
let memberTeamKey: string;

/** Every account and organization here is on one shard: the faults are those of one batch, on the shard instrumented. */
const SHARD = "SHARD_1";

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {});
  [owner, member] = [await createAccount(undefined, SHARD), await createAccount(undefined, SHARD)];
  team = await createTeam(owner, [[member, "editor"]], SHARD);
  memberTeamKey = await issueKey(member.userId, team.projectId);
  // Keys whose use is recorded (within the hour): no request writes last_used_at after its answer.
  for (const key of [owner.key, member.key, memberTeamKey]) await markKeyUsed(key);
});

afterEach(async () => {
  await databaseOf(team.organizationId).exec("DROP TRIGGER IF EXISTS fail_teams");
  vi.restoreAllMocks();
  vi.spyOn(console, "log").mockImplementation(() => {});
});

const emailOf = (account: Account) => `${account.username}@example.com`;
const enc = encodeURIComponent;

/** A statement that fails when it runs (not when it is prepared): users.username is NOT NULL. */
const failing = (db: D1Database) => db.prepare("INSERT INTO users (id, username, email) VALUES ('fault', NULL, NULL)");

/** A route's write, sent with the bindings given (an instrumented D1). */
type Write = (bindings?: Partial<Env>) => Promise<Response>;

interface Invitation {
  token: string;
  organization_id: string;
  workspace_id: string;
  project_id: string;
}

const inviteBody = (email: string, role = "editor") => [{ email, roles: [role] }];
const invitePath = () => `/organizations/${team.organizationId}/workspaces/${team.workspaceId}/invite`;
const acceptPath = (invitation: Invitation) =>
  `/organizations/${invitation.organization_id}/workspaces/${invitation.workspace_id}/invite/accept?project_id=${invitation.project_id}`;

/** An open invitation of a new email to the team, made without faults. */
async function openInvitation(role = "viewer") {
  const email = `invitee-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const invitation = await expectJson<Invitation>(
    await send("POST", invitePath(), { key: owner.key, body: inviteBody(email, role) }),
  );
  return { email, invitation };
}

/** A new member of the team in `role`, with a key for the team's project (which removing them revokes). */
async function newMember(role: string) {
  const account = await createAccount(undefined, SHARD);
  await addMember(team.organizationId, account.userId, role as Role);
  await issueKey(account.userId, team.projectId);
  return account;
}

/**
 * The writes, each made afresh (`setup`, without faults) so that it would write: a name, the statements its batch
 * has (the key check first, then the fence guard), a trigger that fails one of its own statements, and how to check that it still works
 * once the faults are gone.
 */
interface Case {
  name: string;
  setup: () => Promise<Write>;
  statements: number;
  trigger: string;
  /**
   * The round trips to the team's shard before the write's batch: an accept reads the invitation's email first, to
   * ask the directory about it (docs/SHARDING.md §3.3).
   */
  readsBefore?: number;
}

const CASES: Case[] = [
  {
    name: "POST /organizations",
    setup: async () => (bindings) =>
      send("POST", "/organizations", { key: owner.key, body: { name: "torn", owner: owner.userId }, bindings }),
    statements: 10,
    trigger: "BEFORE INSERT ON projects",
  },
  {
    name: "POST /organizations/{org_id}/workspaces",
    setup: async () => (bindings) =>
      send("POST", `/organizations/${team.organizationId}/workspaces`, {
        key: owner.key,
        body: { name: "torn", description: "never made" },
        bindings,
      }),
    statements: 8,
    trigger: "BEFORE INSERT ON projects",
  },
  {
    name: "POST .../invite/accept by a new email (no key): user, membership, first key",
    setup: async () => {
      const { invitation } = await openInvitation();
      return (bindings) =>
        send("POST", acceptPath(invitation), { authorization: "", body: { token: invitation.token }, bindings });
    },
    statements: 10,
    trigger: "BEFORE INSERT ON api_keys",
    readsBefore: 1,
  },
  {
    name: "POST .../invite/accept by an existing user (their key): membership",
    setup: async () => {
      const invitee = await createAccount(undefined, SHARD);
      await markKeyUsed(invitee.key);
      const invitation = await expectJson<Invitation>(
        await send("POST", invitePath(), { key: owner.key, body: inviteBody(emailOf(invitee)) }),
      );
      return (bindings) =>
        send("POST", acceptPath(invitation), { key: invitee.key, body: { token: invitation.token }, bindings });
    },
    statements: 11,
    trigger: "BEFORE INSERT ON organization_members",
    readsBefore: 1,
  },
  {
    name: "DELETE /workspaces/{workspace_id}/users: keys revoked, membership deleted",
    setup: async () => {
      const leaver = await newMember("editor");
      return (bindings) =>
        send("DELETE", `/workspaces/${team.workspaceId}/users?org_id=${team.organizationId}&email=${enc(emailOf(leaver))}`, {
          key: owner.key,
          bindings,
        });
    },
    statements: 8,
    trigger: "BEFORE DELETE ON organization_members",
  },
  {
    name: "POST .../invite over an open invitation of the email (voided, replaced)",
    setup: async () => {
      const { email } = await openInvitation();
      return (bindings) =>
        send("POST", invitePath(), { key: owner.key, body: inviteBody(email, "deployment_manager"), bindings });
    },
    statements: 6,
    trigger: "BEFORE INSERT ON invitations",
  },
  {
    name: "POST .../invite/resend (voided, replaced)",
    setup: async () => {
      const { email } = await openInvitation();
      return (bindings) => send("POST", `${invitePath()}/resend`, { key: owner.key, body: { email }, bindings });
    },
    statements: 6,
    trigger: "BEFORE INSERT ON invitations",
  },
  {
    name: "POST /workspaces/{workspace_id}/roles",
    setup: async () => {
      const promoted = await newMember("viewer");
      return (bindings) =>
        send("POST", `/workspaces/${team.workspaceId}/roles`, {
          key: owner.key,
          body: { email: emailOf(promoted), organization_id: team.organizationId, role: "workspace_admin" },
          bindings,
        });
    },
    statements: 6,
    trigger: "BEFORE UPDATE ON organization_members",
  },
  {
    name: "POST /keys",
    setup: async () => (bindings) => send("POST", `/keys?workspace_id=${team.workspaceId}`, { key: member.key, bindings }),
    statements: 5,
    trigger: "BEFORE INSERT ON api_keys",
  },
];

/** What a write answers when a statement of its batch failed: a bare 500, with nothing of the failure in it. */
async function expectInternalError(response: Response) {
  const text = await response.text();
  expect(response.status, text).toBe(500);
  expect(JSON.parse(text)).toEqual({ detail: "Internal Server Error" });
  expect(text).not.toMatch(/sqlite|d1_|constraint|users|username|fault|insert|trigger/i);
}

async function expectUnavailable(response: Response) {
  const text = await response.text();
  expect(response.status, text).toBe(503);
  expect(response.headers.get("Retry-After")).toBe("1");
  expect(JSON.parse(text)).toEqual({ detail: "Service temporarily unavailable" });
}

/** The request with the instruments, on the real D1: its answer, its round trips, and the statements of its batch. */
/** The snapshot without the directory's pending claims of emails (docs/SHARDING.md §3.3). */
const withoutPendingClaims = (taken: Snapshot): Snapshot => ({
  ...taken,
  "directory.users": taken["directory.users"].filter((user) => user.pending_until === null),
});

async function withFaults(write: Write, instruments: Instruments, readsBefore = 0) {
  let batched = 0;
  let batches = 0;
  const { rewriteBatch } = instruments;
  const { db, counter } = instrumentD1(databaseOf(team.organizationId), {
    ...instruments,
    rewriteBatch: (statements, real) => {
      if (++batches <= readsBefore) return statements;
      batched = statements.length;
      return rewriteBatch ? rewriteBatch(statements, real) : statements;
    },
  });
  const response = await write(inPlaceOfShardFor(team.organizationId, db));
  return { response, trips: counter.trips, batched };
}

describe.each(CASES)("$name", ({ setup, statements, trigger, readsBefore = 0 }) => {
  it("with a failing statement slipped in after each of its statements: 500, and the database exactly as before", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const write = await setup();
    const before = await snapshot();
    for (let at = 1; at <= statements; at++) {
      const { response, trips, batched } = await withFaults(
        write,
        { rewriteBatch: (batch, real) => [...batch.slice(0, at), failing(real), ...batch.slice(at)] },
        readsBefore,
      );
      expect(batched, "the statements of the route's batch").toBe(statements);
      expect(trips).toBe(readsBefore + 1);
      await expectInternalError(response);
      expect(await snapshot(), `failing statement at ${at}`).toEqual(before);
    }
    expect(errors).toHaveBeenCalledTimes(statements);
    // Once the faults are gone, the same write goes through.
    expect((await write()).status).toBe(200);
    expect(await databaseProblems()).toEqual([]);
  });

  it("with one of its own statements failing (a trigger): 500, and the database exactly as before", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const write = await setup();
    await databaseOf(team.organizationId).exec(
      `CREATE TRIGGER fail_teams ${trigger} BEGIN SELECT RAISE(ABORT, 'injected fault'); END`,
    );
    const before = await snapshot();
    await expectInternalError(await write());
    expect(await snapshot()).toEqual(before);
    await databaseOf(team.organizationId).exec("DROP TRIGGER fail_teams");
    expect((await write()).status).toBe(200);
  });

  it("with D1's transient error before the batch: 503 with Retry-After, not retried, nothing written", async () => {
    const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    const write = await setup();
    const before = await snapshot();
    const { response, trips } = await withFaults(write, { beforeTrip: failTrips([readsBefore + 1]) }, readsBefore);
    await expectUnavailable(response);
    expect(trips).toBe(readsBefore + 1);
    // A keyless accept's claim of the email stays pending: the batch may have been applied, for all the service knows
    // (the next claim of the email looks on the shard). Nothing else is written.
    expect(withoutPendingClaims(await snapshot())).toEqual(withoutPendingClaims(before));
    expect(warnings).toHaveBeenCalled();
    expect((await write()).status).toBe(200);
  });
});

describe("an answer lost after the batch committed (transient error on the way back)", () => {
  it("POST .../invite/accept by a new email: 503; the retry is 409 (the invitation is used), and the user was made", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { email, invitation } = await openInvitation("editor");
    const write: Write = (bindings) =>
      send("POST", acceptPath(invitation), { authorization: "", body: { token: invitation.token }, bindings });
    const { response, trips } = await withFaults(write, { afterTrip: failTrips([2]) }, 1);
    await expectUnavailable(response);
    expect(trips).toBe(2);
    const retry = await write();
    expect(retry.status).toBe(409);
    expect(await retry.json()).toEqual({ detail: "This invitation has already been accepted" });
    // The user exists, a member with a key whose secret was in the answer lost: only an operator can issue another.
    const made = await databaseOf(team.organizationId)
      .prepare(
        `SELECT om.role, (SELECT COUNT(*) FROM api_keys k WHERE k.user_id = u.id AND k.revoked_at IS NULL) AS keys
         FROM users u JOIN organization_members om ON om.user_id = u.id AND om.organization_id = ? WHERE u.email = ?`,
      )
      .bind(team.organizationId, email)
      .first();
    expect(made).toEqual({ role: "editor", keys: 1 });
    expect(await databaseProblems()).toEqual([]);
  });

  it("DELETE /workspaces/{workspace_id}/users: 503; the member is removed and their keys there revoked, the retry is 404", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const leaver = await newMember("viewer");
    const leaverKey = await issueKey(leaver.userId, team.projectId);
    const write: Write = (bindings) =>
      send("DELETE", `/workspaces/${team.workspaceId}/users?org_id=${team.organizationId}&email=${enc(emailOf(leaver))}`, {
        key: owner.key,
        bindings,
      });
    const { response } = await withFaults(write, { afterTrip: failTrips([1]) });
    await expectUnavailable(response);
    expect((await send("GET", "/keys", { key: leaverKey })).status).toBe(401);
    const retry = await write();
    expect(retry.status).toBe(404);
    expect(await retry.json()).toEqual({ detail: "No member of this organization has that email" });
    expect(await databaseProblems()).toEqual([]);
  });
});

describe("transient D1 errors on the accounts reads", () => {
  // The reads, and their round trips to the shard of the key and the team when the first fails: a list spanning
  // organizations checks the key there first, then reads every shard (this one too).
  const READS: [string, () => string, () => string, number][] = [
    ["GET /organizations", () => "/organizations", () => owner.key, 3],
    ["GET /organizations/{org_id}", () => `/organizations/${team.organizationId}`, () => owner.key, 2],
    ["GET /organizations/own", () => "/organizations/own", () => owner.key, 3],
    ["GET /keys", () => "/keys", () => member.key, 3],
    ["GET /keys/{prefix}/validate", () => `/keys/${member.key.split(".")[0]}/validate`, () => member.key, 2],
    ["GET /profile", () => "/profile", () => member.key, 2],
    ["GET /workspaces/roles", () => "/workspaces/roles", () => member.key, 2],
    ["GET /workspaces/permissions", () => "/workspaces/permissions", () => member.key, 2],
  ];

  it.each(READS)("%s: retried once after one, 503 after two", async (_, path, key, tripsAfterOneFailure) => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const read: Write = (bindings) => send("GET", path(), { key: key(), bindings });
    const expected = await expectJson(await read());
    const once = await withFaults(read, { beforeTrip: failTrips([1]) });
    expect(await expectJson(once.response)).toEqual(expected);
    expect(once.trips).toBe(tripsAfterOneFailure);
    const twice = await withFaults(read, { beforeTrip: failTrips([1, 2]) });
    await expectUnavailable(twice.response);
    expect(twice.trips).toBe(2);
  });
});
