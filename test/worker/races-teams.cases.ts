import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type Account,
  createAccount,
  createTeam,
  expectJson,
  FORBIDDEN,
  issueKey,
  type RequestOptions,
  type Role,
  send,
} from "./fixtures";
import { databaseProblems } from "./harness";
import { databaseOf, instrumentedShards, rowsOnShards } from "./pool";

/*
 * Concurrent requests to the accounts routes (docs/ACCOUNTS-API.md), all started before any is answered, against the real
 * D1. Each of these routes is one batch, whose verdict (may this caller do this, to whom, is an owner left) is decided
 * by SQL inside the batch: whichever batch D1 runs second sees what the first wrote. The request first in the list
 * reaches D1 first, so every race is run in both orders (and the tests check that both outcomes happened).
 */

const LAST_OWNER = "This is the organization's last owner: make another member an owner first";
const WORKSPACE_NOT_FOUND = "Workspace not found in this organization";
const INVITATION_NOT_FOUND = "Invitation not found";
const INVITATION_USED = "This invitation has already been accepted";
const INVITATION_REPLACED = "This invitation was replaced by a newer one: use the latest token";
const ALREADY_MEMBER = "This email is already a member of the organization";

beforeAll(() => {
  vi.spyOn(console, "log").mockImplementation(() => {}); // a request log line per request
});

afterAll(() => {
  vi.restoreAllMocks();
});

const emailOf = (account: Account) => `${account.username}@example.com`;
const enc = encodeURIComponent;

type Team = Awaited<ReturnType<typeof createTeam>>;
type Request = (bindings?: Partial<Env>) => Promise<Response>;

/** A request, to be sent with the real bindings or some replaced (`race` holds some with an instrumented D1). */
const request =
  (method: string, path: string, options: Omit<RequestOptions, "bindings"> = {}): Request =>
  (bindings = {}) =>
    send(method, path, { ...options, bindings });

const assignRole = (key: string, team: Team, email: string, role: string) =>
  request("POST", `/workspaces/${team.workspaceId}/roles`, { key, body: { email, organization_id: team.organizationId, role } });
const removeUser = (key: string, team: Team, email: string) =>
  request("DELETE", `/workspaces/${team.workspaceId}/users?org_id=${team.organizationId}&email=${enc(email)}`, { key });
const invite = (key: string, team: Team, email: string, role: Role) =>
  request("POST", `/organizations/${team.organizationId}/workspaces/${team.workspaceId}/invite`, {
    key,
    body: [{ email, roles: [role] }],
  });
const resend = (key: string, team: Team, email: string) =>
  request("POST", `/organizations/${team.organizationId}/workspaces/${team.workspaceId}/invite/resend`, {
    key,
    body: { email },
  });

interface Invitation {
  email: string;
  role: Role;
  token: string;
  organization_id: string;
  workspace_id: string;
  project_id: string;
}

/** accept_invitation as the client sends it: with the invitee's key, or an empty Authorization (no key). */
const accept = (invitation: Invitation, key = "", token = invitation.token) =>
  request(
    "POST",
    `/organizations/${invitation.organization_id}/workspaces/${invitation.workspace_id}/invite/accept?project_id=${invitation.project_id}`,
    { authorization: key ? `ApiKey ${key}` : "", body: { token } },
  );

/**
 * Starts every request before awaiting any; those of `held` see a D1 that holds their round trips until every other
 * request is answered, so that the others certainly reach D1 first (none held: the order is the scheduler's). The
 * answers in the order of `requests`, with their bodies.
 */
async function race(requests: Request[], held: number[] = []) {
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const holding = instrumentedShards({ beforeTrip: () => gate });
  const started = requests.map((request, i) => request(held.includes(i) ? holding : {}));
  void Promise.allSettled(started.filter((_, i) => !held.includes(i))).then(release);
  const responses = await Promise.all(started);
  return Promise.all(responses.map(async (response) => ({ status: response.status, body: await response.json() })));
}

/** Which of two requests is held in a round: none, the first, the second, in turn. */
const heldIn = (round: number) => [[], [0], [1]][round % 3];

const rolesIn = async (organizationId: string) =>
  Object.fromEntries(
    (
      await databaseOf(organizationId)
        .prepare("SELECT user_id, role FROM organization_members WHERE organization_id = ?")
        .bind(organizationId)
        .all<{ user_id: string; role: Role }>()
    ).results.map((row) => [row.user_id, row.role]),
  ) as Record<string, Role>;

const ownersOf = async (organizationId: string) =>
  Object.entries(await rolesIn(organizationId))
    .filter(([, role]) => role === "owner")
    .map(([userId]) => userId);

/** A team whose owners are `a` and `b` (fresh accounts), acting with their personal keys. */
async function twoOwners() {
  const [a, b] = [await createAccount(), await createAccount()];
  const team = await createTeam(a, [[b, "owner"]]);
  return { a, b, team };
}

const ROUNDS = 6;

describe("two owners at once", () => {
  it("demoting each other: one 200, the other (no longer an owner when its batch runs) 403; one owner is left", async () => {
    const winners = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const { a, b, team } = await twoOwners();
      const answers = await race(
        [assignRole(a.key, team, emailOf(b), "viewer"), assignRole(b.key, team, emailOf(a), "viewer")],
        heldIn(round),
      );
      const winner = answers.findIndex((answer) => answer.status === 200);
      expect(answers[winner]?.body).toBe(true);
      expect(answers[1 - winner]).toEqual({ status: 403, body: { detail: FORBIDDEN } });
      const [kept, demoted] = winner === 0 ? [a, b] : [b, a];
      expect(await rolesIn(team.organizationId)).toEqual({ [kept.userId]: "owner", [demoted.userId]: "viewer" });
      winners.add(winner === 0 ? "a" : "b");
    }
    expect(winners).toEqual(new Set(["a", "b"]));
    expect(await databaseProblems()).toEqual([]);
  });

  it("each demoting themselves: one 200, the other 409 (the last owner); one owner is left", async () => {
    const winners = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const { a, b, team } = await twoOwners();
      const answers = await race(
        [assignRole(a.key, team, emailOf(a), "viewer"), assignRole(b.key, team, emailOf(b), "editor")],
        heldIn(round),
      );
      const winner = answers.findIndex((answer) => answer.status === 200);
      expect(answers[winner]?.body).toBe(true);
      expect(answers[1 - winner]).toEqual({ status: 409, body: { detail: LAST_OWNER } });
      expect(await ownersOf(team.organizationId)).toEqual([winner === 0 ? b.userId : a.userId]);
      winners.add(winner === 0 ? "a" : "b");
    }
    expect(winners).toEqual(new Set(["a", "b"]));
    expect(await databaseProblems()).toEqual([]);
  });

  it("unassigning each other's owner role (DELETE /workspaces/{id}/roles): one becomes a viewer, one owner is left", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { a, b, team } = await twoOwners();
      const unassign = (key: string, account: Account) =>
        request(
          "DELETE",
          `/workspaces/${team.workspaceId}/roles?email=${enc(emailOf(account))}&org_id=${team.organizationId}&role=owner`,
          { key },
        );
      const answers = await race([unassign(a.key, b), unassign(b.key, a)], heldIn(round));
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 403]);
      expect(await ownersOf(team.organizationId)).toHaveLength(1);
    }
    expect(await databaseProblems()).toEqual([]);
  });

  it("removing each other: one 200, the other (no longer a member) 404; one owner is left, the other's keys there revoked", async () => {
    const winners = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const { a, b, team } = await twoOwners();
      // Keys of both for the team's project: the one removed loses it, in the same transaction.
      const teamKeys = [await issueKey(a.userId, team.projectId), await issueKey(b.userId, team.projectId)];
      const answers = await race([removeUser(a.key, team, emailOf(b)), removeUser(b.key, team, emailOf(a))], heldIn(round));
      const winner = answers.findIndex((answer) => answer.status === 200);
      expect(answers[1 - winner]).toEqual({ status: 404, body: { detail: WORKSPACE_NOT_FOUND } });
      const [kept, removed] = winner === 0 ? [a, b] : [b, a];
      expect(answers[winner]?.body).toMatchObject({ id: team.workspaceId, members: [{ user: { id: kept.userId } }] });
      expect(await rolesIn(team.organizationId)).toEqual({ [kept.userId]: "owner" });
      const [keptKey, removedKey] = winner === 0 ? teamKeys : [...teamKeys].reverse();
      expect((await send("GET", "/keys", { key: removedKey })).status).toBe(401);
      expect((await send("GET", "/keys", { key: keptKey })).status).toBe(200);
      expect((await send("GET", "/keys", { key: removed.key })).status).toBe(200); // their own organization's key
      winners.add(winner === 0 ? "a" : "b");
    }
    expect(winners).toEqual(new Set(["a", "b"]));
    expect(await databaseProblems()).toEqual([]);
  });

  it("each removing themselves: one 200, the other 409 (the last owner); one owner is left", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { a, b, team } = await twoOwners();
      const answers = await race([removeUser(a.key, team, emailOf(a)), removeUser(b.key, team, emailOf(b))], heldIn(round));
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
      expect(answers.find((answer) => answer.status === 409)?.body).toEqual({ detail: LAST_OWNER });
      expect(await ownersOf(team.organizationId)).toHaveLength(1);
      expect(Object.keys(await rolesIn(team.organizationId))).toHaveLength(1);
    }
    expect(await databaseProblems()).toEqual([]);
  });

  it("three owners demoting each other in a ring at once: at least one owner is left, whoever goes first", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const [a, b, c] = [await createAccount(), await createAccount(), await createAccount()];
      const team = await createTeam(a, [
        [b, "owner"],
        [c, "owner"],
      ]);
      const ring = [assignRole(a.key, team, emailOf(b), "viewer"), assignRole(b.key, team, emailOf(c), "editor")];
      ring.push(assignRole(c.key, team, emailOf(a), "workspace_admin"));
      // Held in turn: none, then each one in the ring.
      const answers = await race(ring, round === 0 ? [] : [round % 3]);
      for (const answer of answers) expect([200, 403]).toContain(answer.status);
      const owners = await ownersOf(team.organizationId);
      expect(owners.length).toBeGreaterThanOrEqual(1);
      // Each 200 demoted someone, who is no owner now; each 403 was sent by someone demoted before their batch ran.
      expect(owners).toHaveLength(3 - answers.filter((answer) => answer.status === 200).length);
    }
    expect(await databaseProblems()).toEqual([]);
  });

  it("one demoting the other while that one removes the first: never no owner, never a 500", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const { a, b, team } = await twoOwners();
      const answers = await race(
        [assignRole(a.key, team, emailOf(b), "editor"), removeUser(b.key, team, emailOf(a))],
        heldIn(round),
      );
      const statuses = answers.map((answer) => answer.status);
      // Demotion first: b is an editor, who removes nobody (403). Removal first: a is no member (404).
      expect([
        [200, 403],
        [404, 200],
      ]).toContainEqual(statuses);
      expect(await ownersOf(team.organizationId)).toEqual([statuses[0] === 200 ? a.userId : b.userId]);
      outcomes.add(statuses.join());
    }
    expect(outcomes.size).toBe(2);
    expect(await databaseProblems()).toEqual([]);
  });
});

describe("accepting an invitation", () => {
  let owner: Account;
  let team: Team;
  beforeAll(async () => {
    owner = await createAccount();
    team = await createTeam(owner);
  });

  const usersWithEmailOnShards = async (email: string) => [
    ...new Set((await rowsOnShards<{ id: string }>("SELECT id FROM users WHERE email = ?", email)).map((row) => row.id)),
  ];
  const usersWithEmail = async (email: string) =>
    (
      await databaseOf(team.organizationId).prepare("SELECT id FROM users WHERE email = ?").bind(email).all<{ id: string }>()
    ).results.map((row) => row.id);

  it("the same token twice at once (a new email, no key): one 200 with a key, one 409; one user, one membership, one key", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const email = `twice-${round}-${crypto.randomUUID().slice(0, 8)}@example.com`;
      const invitation = await expectJson<Invitation>(await invite(owner.key, team, email, "editor")());
      const answers = await race([accept(invitation), accept(invitation)], heldIn(round));
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
      const accepted = answers.find((answer) => answer.status === 200)?.body as { user_id: string; api_key: string };
      expect(answers.find((answer) => answer.status === 409)?.body).toEqual({ detail: INVITATION_USED });
      expect(await usersWithEmail(email)).toEqual([accepted.user_id]);
      expect((await rolesIn(team.organizationId))[accepted.user_id]).toBe("editor");
      const keys = await databaseOf(accepted.user_id)
        .prepare("SELECT project_id, revoked_at FROM api_keys WHERE user_id = ?")
        .bind(accepted.user_id)
        .all();
      expect(keys.results).toEqual([{ project_id: team.projectId, revoked_at: null }]);
      expect((await send("GET", "/keys", { key: accepted.api_key })).status).toBe(200);
    }
    expect(await databaseProblems()).toEqual([]);
  });

  it("five accepts of one token at once: one 200, four 409", async () => {
    const email = `five-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const invitation = await expectJson<Invitation>(await invite(owner.key, team, email, "viewer")());
    const answers = await race(Array.from({ length: 5 }, () => accept(invitation)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(await usersWithEmail(email)).toHaveLength(1);
    expect(await databaseProblems()).toEqual([]);
  });

  it("the same token twice at once by an existing user with their key: one 200, one 409, one membership", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const invitee = await createAccount();
      const invitation = await expectJson<Invitation>(await invite(owner.key, team, emailOf(invitee), "deployment_manager")());
      const answers = await race([accept(invitation, invitee.key), accept(invitation, invitee.key)], heldIn(round));
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
      expect(answers.find((answer) => answer.status === 200)?.body).not.toHaveProperty("api_key");
      expect((await rolesIn(team.organizationId))[invitee.userId]).toBe("deployment_manager");
    }
    expect(await databaseProblems()).toEqual([]);
  });

  it("one new email invited to two organizations (on each shard in turn), both accepted at once without a key: one user; the second needs that user's key (401), or is told to retry while the first is under way (503)", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const other = await createTeam(owner);
      const email = `doubly-${round}-${crypto.randomUUID().slice(0, 8)}@example.com`;
      const first = await expectJson<Invitation>(await invite(owner.key, team, email, "viewer")());
      const second = await expectJson<Invitation>(await invite(owner.key, other, email, "editor")());
      const answers = await race([accept(first), accept(second)], heldIn(round));
      const winner = answers.findIndex((answer) => answer.status === 200);
      const loser = answers[1 - winner];
      expect([401, 503]).toContain(loser.status);
      const joined = answers[winner].body as { user_id: string; api_key: string };
      // Across the pool, one user has the email: the directory's, and their rows (copies) on the shards.
      expect(await usersWithEmailOnShards(email)).toEqual([joined.user_id]);
      const left = winner === 1 ? first : second;
      // Retried once the first is done, it is the 401 of an email with a user; then accepted with the user's key.
      expect((await accept(left)()).status).toBe(401);
      expect((await accept(left, joined.api_key)()).status).toBe(200);
    }
    expect(await databaseProblems()).toEqual([]);
  });

  /** Open invitations of the email in the team (not accepted, not voided). */
  const openInvitations = async (email: string) =>
    (
      await databaseOf(team.organizationId)
        .prepare(
          "SELECT id FROM invitations WHERE organization_id = ? AND email = ? AND accepted_at IS NULL AND voided_at IS NULL",
        )
        .bind(team.organizationId, email)
        .all()
    ).results;

  it("a resend racing an accept of the old token: the accept wins (the resend finds nothing open: 404) or the old token is replaced (410); never both", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const email = `resent-${round}-${crypto.randomUUID().slice(0, 8)}@example.com`;
      const invitation = await expectJson<Invitation>(await invite(owner.key, team, email, "evaluator")());
      const [accepted, resent] = await race([accept(invitation), resend(owner.key, team, email)], heldIn(round));
      const member = (await usersWithEmail(email)).length > 0;
      if (accepted.status === 200) {
        expect(resent).toEqual({ status: 404, body: { detail: INVITATION_NOT_FOUND } });
        expect(member).toBe(true);
        // The member has no live token: nothing left to accept.
        expect(await openInvitations(email)).toEqual([]);
        outcomes.add("accepted");
      } else {
        expect(accepted).toEqual({ status: 410, body: { detail: INVITATION_REPLACED } });
        expect(resent.status).toBe(200);
        expect(member).toBe(false);
        expect(await openInvitations(email)).toHaveLength(1);
        // The new token works, once; the old one still does not.
        const renewed = resent.body as Invitation;
        expect((await accept(renewed)()).status).toBe(200);
        expect((await accept(invitation)()).status).toBe(410);
        outcomes.add("replaced");
      }
    }
    expect(outcomes).toEqual(new Set(["accepted", "replaced"]));
    expect(await databaseProblems()).toEqual([]);
  });

  it("a new invitation of the same email racing an accept of the old token: 409 (already a member) or 410 (replaced)", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const email = `reinvited-${round}-${crypto.randomUUID().slice(0, 8)}@example.com`;
      const invitation = await expectJson<Invitation>(await invite(owner.key, team, email, "viewer")());
      const [accepted, invited] = await race([accept(invitation), invite(owner.key, team, email, "editor")], heldIn(round));
      if (accepted.status === 200) {
        expect(invited).toEqual({ status: 409, body: { detail: ALREADY_MEMBER } });
        expect(await openInvitations(email)).toEqual([]);
        expect((await rolesIn(team.organizationId))[(accepted.body as { user_id: string }).user_id]).toBe("viewer");
      } else {
        expect(accepted).toEqual({ status: 410, body: { detail: INVITATION_REPLACED } });
        expect(invited.status).toBe(200);
        expect(await usersWithEmail(email)).toEqual([]);
        expect(await openInvitations(email)).toHaveLength(1);
      }
      outcomes.add(String(accepted.status));
    }
    expect(outcomes).toEqual(new Set(["200", "410"]));
    expect(await databaseProblems()).toEqual([]);
  });
});

describe("removing a member while they make a key", () => {
  it("leaves no live key of theirs in the organization's projects, whichever comes first", async () => {
    const owner = await createAccount();
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const member = await createAccount();
      const team = await createTeam(owner, [[member, "editor"]]);
      const teamKey = await issueKey(member.userId, team.projectId);
      const makeKey = (key: string) => request("POST", `/keys?workspace_id=${team.workspaceId}`, { key });
      // Key creations with the member's key in the team and with their personal key, around the removal.
      const requests = [makeKey(teamKey), makeKey(member.key), removeUser(owner.key, team, emailOf(member))];
      requests.push(makeKey(teamKey), makeKey(member.key));
      // Held in turn: none, the removal (the keys are made first), the key creations (the removal comes first).
      const answers = await race(requests, [[], [2], [0, 1, 3, 4]][round % 3]);
      const removal = answers[2];
      expect(removal.status).toBe(200);
      const made: string[] = [];
      for (const [i, { status, body }] of answers.entries()) {
        if (i === 2) continue;
        // Before the removal: a key (revoked with the rest); after: the team key is dead (401), the member no member (404).
        expect([200, [0, 3].includes(i) ? 401 : 404]).toContain(status);
        if (status === 200) made.push(body as string);
        outcomes.add(status === 200 ? "made first" : "refused after");
      }
      const live = await databaseOf(team.organizationId)
        .prepare(
          `SELECT k.prefix FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN workspaces w ON w.id = p.workspace_id
          WHERE k.user_id = ? AND w.organization_id = ? AND k.revoked_at IS NULL`,
        )
        .bind(member.userId, team.organizationId)
        .all();
      expect(live.results).toEqual([]);
      for (const key of [teamKey, ...made]) expect((await send("GET", "/keys", { key })).status).toBe(401);
      expect((await send("GET", "/keys", { key: member.key })).status).toBe(200);
      expect(await databaseProblems()).toEqual([]);
    }
    expect(outcomes).toEqual(new Set(["made first", "refused after"]));
  });
});

describe("found on the way", () => {
  // Found here: removeMember revoked the member's keys before deleting the membership, each statement behind the
  // caller's key, so a member removing themselves with one of those keys was answered 200 and stayed a member.
  it("a member removing themselves with a key of the organization's own project is no longer a member", async () => {
    const { a, team } = await twoOwners();
    const teamKey = await issueKey(a.userId, team.projectId);
    const removed = await expectJson<{ members: { user: { id: string } }[] }>(await removeUser(teamKey, team, emailOf(a))());
    expect(removed.members.map((member) => member.user.id)).not.toContain(a.userId);
    expect(Object.keys(await rolesIn(team.organizationId))).not.toContain(a.userId);
  });
});
