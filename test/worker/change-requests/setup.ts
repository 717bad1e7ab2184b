import { expect } from "vitest";
import type { ChangeRequest } from "../../../src/change-requests/change-requests.schemas";
import type { ShardName } from "../../../src/db/pool";
import { apps, changeRequests, protection } from "../client";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  deploy,
  expectJson,
  issueKey,
  type Role,
  send,
} from "../fixtures";
import { changes, snapshot } from "../harness";
import { databaseOf } from "../pool";

export type { ChangeRequest };

/** A member of the team with a key of its project. */
export interface Member extends Account {
  teamKey: string;
}

/**
 * A team for change requests, on `shard` (else any): an owner, two deployment managers (approvers by default), an
 * editor (a proposer, no approver by default), a viewer, and an outsider of another organization; an app whose staging
 * runs config `main` (revision 1), with a second config `other` (revision 1) deployed to development.
 */
export async function requestsTeam(shard?: ShardName) {
  const [owner, approver, second, editor, viewer, outsider] = await Promise.all(
    Array.from({ length: 6 }, () => createAccount(undefined, shard)),
  );
  const roles: [Account, Role][] = [
    [approver, "deployment_manager"],
    [second, "deployment_manager"],
    [editor, "editor"],
    [viewer, "viewer"],
  ];
  const team = await createTeam(owner, roles, shard);
  const member = async (account: Account): Promise<Member> => ({
    ...account,
    teamKey: await issueKey(account.userId, team.projectId),
  });
  const appId = await createAppVia(await issueKey(owner.userId, team.projectId), {
    app_name: `requested-${crypto.randomUUID().slice(0, 8)}`,
  });
  const main = await deploy(appId, "staging", "main", owner);
  const other = await deploy(appId, "development", "other", owner);
  const members = {
    owner: await member(owner),
    approver: await member(approver),
    second: await member(second),
    editor: await member(editor),
    viewer: await member(viewer),
  };
  const deployed = async (environment: string) =>
    (
      await expectJson<{ revisions: { deployed_app_variant_revision: string }[] }>(
        await apps.revisions({ key: members.owner.teamKey }, appId, environment),
      )
    ).revisions[0].deployed_app_variant_revision;
  return {
    team,
    appId,
    ...members,
    outsider,
    /** Config revisions of the app: main's revision 1 (staging runs it), other's (development runs it). */
    mainRevision: await deployed("staging"),
    otherRevision: await deployed("development"),
    /** Staging's environment revision 1, which deployed main. */
    stagingRevisionId: main.revisionId,
    developmentRevisionId: other.revisionId,
  };
}
export type RequestsTeam = Awaited<ReturnType<typeof requestsTeam>>;

/**
 * Replaces the protection settings of the project's environment (docs/CHANGE-REQUESTS.md §1) as `ownerKey`'s owner, the
 * others at their defaults: what change requests then follow.
 */
export async function setProtection(
  ownerKey: string,
  projectId: string,
  environment: string,
  settings: { required_approvals?: number; allow_self_approval?: boolean; approver_roles?: string[] },
) {
  await expectJson(await protection.put({ key: ownerKey }, projectId, environment, settings));
}

/** Proposes config revision `variantRevisionId` for `environment` as `key`: the request made. */
export async function propose(
  key: string,
  appId: string,
  environment: string,
  variantRevisionId: string,
  extra = {},
  options?: Parameters<typeof changeRequests.create>[2],
) {
  return expectJson<ChangeRequest>(
    await changeRequests.create(
      { key },
      { app_id: appId, environment, variant_revision_id: variantRevisionId, title: "Ship main", ...extra },
      options,
    ),
  );
}

/** The request as `key` reads it, with its ETag. */
export async function readRequest(key: string, id: string) {
  const response = await changeRequests.get({ key }, id);
  const request = await expectJson<ChangeRequest>(response);
  return { request, etag: response.headers.get("ETag") ?? "" };
}

/** The events of the app of this type family, oldest first (the audit log lists newest first). */
export async function requestEvents(key: string, appId: string) {
  const page = await expectJson<{ events: { type: string; data: Record<string, unknown>; actor: { user_id: string } }[] }>(
    await send("GET", `/events?app_id=${appId}&type=change_request.&limit=200`, { key }),
  );
  return page.events.reverse();
}

/** Gives `member` `role` in the organization through the members API, as its owner. */
export async function changeRole(
  ownerKey: string,
  team: { organizationId: string; workspaceId: string },
  email: string,
  role: Role,
) {
  const response = await send("POST", `/workspaces/${team.workspaceId}/roles`, {
    key: ownerKey,
    body: { email, organization_id: team.organizationId, role },
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

/** Runs `refused`, and checks that nothing in the database (app `appId`'s shard's requests included) changed meanwhile. */
export async function writesNothing(appId: string, refused: () => Promise<void>) {
  const before = await snapshot();
  // Rows of the tables the snapshot does not hold.
  const requestRows = async () => {
    const db = databaseOf(appId);
    const [requests, reviews] = await db.batch([
      db.prepare("SELECT * FROM change_requests ORDER BY id"),
      db.prepare("SELECT * FROM change_request_reviews ORDER BY id"),
    ]);
    return [requests.results, reviews.results];
  };
  const rows = await requestRows();
  await refused();
  expect(changes(before, await snapshot())).toEqual({});
  expect(await requestRows()).toEqual(rows);
}
