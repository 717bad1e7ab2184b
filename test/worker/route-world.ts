import { Webhook as StandardWebhook } from "standardwebhooks";
import { v5 as uuidv5 } from "uuid";
import { expect, inject } from "vitest";
import type { RoundTripCase, RoundTrips } from "../../src/http/route-facts";
import { splitApp, startSplit } from "./apps/split-fixtures";
import {
  type Account,
  createAccount,
  createAppVia,
  createOrganizationVia,
  createTeam,
  deploy,
  expectJson,
  getRevisions,
  type IssuedInvitation,
  invite,
  issueKey,
  joinAsNewUser,
  newId,
  newKeyPrefix,
  send,
} from "./fixtures";
import { bucketFor, databaseOf } from "./pool";
import { newInbox, settledDeliveries, subscribe } from "./webhooks/webhook-fixtures";

declare module "vitest" {
  interface ProvidedContext {
    /** Every route's round-trip budget, in the router's order, built in Node (test/vitest.config.ts). */
    routeFacts: { operation: string; roundTrips: RoundTrips | null; cached: boolean }[];
  }
}

/** Every route's operation (`POST /apps/{app_id}`) and its cases, in the router's order (the order they are sent in). */
export const routeFacts = () => inject("routeFacts");

/**
 * What the routes' cases (src/http/route-facts.ts) name: the keys they send, and the values their `{name}`s stand for.
 * Every organization is on SHARD_1 (whose buckets carry no legacy one): a route then needs its one round trip only if
 * it routes by what it names.
 */
export interface RouteWorld {
  account: Account;
  /** Every organization the world made, for buckets.test.ts to read their rows. */
  organizationIds: string[];
  keys: Record<NonNullable<RoundTripCase["key"]> | "account", string>;
  values: Record<string, string>;
}

const keyed = (name: string) => ({ "Idempotency-Key": `round-trips-${name}` });
const idOf = async <T>(response: Response, pick: (answer: T) => string) => pick(await expectJson<T>(response));

/**
 * Makes what the cases need, each route's apart from every other route's: a route's cases are sent in the router's
 * order, after every case of the routes before it, and may change only what no later route reads.
 */
export async function makeRouteWorld(): Promise<RouteWorld> {
  const account = await createAccount(undefined, "SHARD_1");
  const viewer = await createAccount(undefined, "SHARD_1");
  const team = await createTeam(account, [[viewer, "viewer"]], "SHARD_1");
  const appId = await createAppVia(account.key, { app_name: "counted" });
  const deployed = [];
  for (let i = 0; i < 5; i++) deployed.push(await deploy(appId, "production", "main", account));
  const [{ variantId, revisionId: firstRevisionId }] = deployed;
  // The ETag production had after its first deploy: four deploys ago.
  const staleETag = String((await getRevisions(account.key, appId, "production")).headers.get("ETag")).replace(/\.5"$/, '.1"');
  const teamAppId = await createAppVia(account.key, { app_name: "team-counted", organization_id: team.organizationId });
  await deploy(teamAppId, "staging", "main", account);
  await deploy(teamAppId, "development", "main", account);
  // The team's development is protected: a deploy there, or a rename or archive of the app deployed there, is refused,
  // or let through with Protection-Bypass.
  const protection = `/projects/${team.projectId}/environments/development/protection`;
  const body = { protected: true, bypass_roles: ["owner"] };
  expect((await send("PUT", protection, { key: account.key, body })).status).toBe(200);
  const renamedId = await createAppVia(account.key, { app_name: "to-rename" });
  const deletedId = await createAppVia(account.key, { app_name: "to-delete" });
  const taken = await send("POST", "/apps", { key: account.key, body: { app_name: "keyed" }, headers: keyed("taken") });
  expect(taken.status).toBe(200);
  const removableId = await idOf<{ variant_id: string }>(
    await send("POST", "/variants/from-base", {
      key: account.key,
      body: { base_id: appId, new_variant_name: "x", new_config_name: "removable", parameters: {} },
    }),
    (answer) => answer.variant_id,
  );
  const org = await createOrganizationVia(account.key, "counted org");
  const spareKey = await issueKey(account.userId, account.projectId);
  const newcomer = await expectJson<IssuedInvitation>(
    await invite(account.key, org.organizationId, org.workspaceId, "counted@example.com", "editor"),
  );
  const memberEmail = (await joinAsNewUser(account.key, org.organizationId, org.workspaceId, "editor")).email;
  const leaverEmail = (await joinAsNewUser(account.key, org.organizationId, org.workspaceId, "viewer")).email;
  // A member holding a role for DELETE /workspaces/{id}/roles to take (POST's case gives one to memberEmail).
  const roleHolderEmail = (await joinAsNewUser(account.key, org.organizationId, org.workspaceId, "editor")).email;
  const role = { email: roleHolderEmail, organization_id: org.organizationId, role: "deployment_manager" };
  expect((await send("POST", `/workspaces/${org.workspaceId}/roles`, { key: account.key, body: role })).status).toBe(200);
  const simpleAppId = await idOf<{ application: { id: string } }>(
    await send("POST", "/simple/applications/", {
      key: account.key,
      body: { application: { slug: "current-counted", name: "current-counted" } },
    }),
    (answer) => answer.application.id,
  );
  const simpleVariantId = await idOf<{ application_variant: { id: string } }>(
    await send("POST", "/applications/variants/", {
      key: account.key,
      body: { application_variant: { application_id: simpleAppId, slug: "counted-variant" } },
    }),
    (answer) => answer.application_variant.id,
  );
  const configRevisionId = String(
    (
      await databaseOf(appId)
        .prepare("SELECT id FROM app_variant_revisions WHERE variant_id = ? ORDER BY revision LIMIT 1")
        .bind(variantId)
        .first<{ id: string }>()
    )?.id,
  );

  // Webhooks: three subscribed, one to delete, and a delivery settled.
  const owner = await createAccount(undefined, "SHARD_1");
  const inboxes = [newInbox(), newInbox(), newInbox()];
  const hooks = await Promise.all(inboxes.map((url) => subscribe(owner.key, { url, events: ["*"] })));
  await createAppVia(owner.key, { app_name: "heard" });
  const deliveryId = (await settledDeliveries(owner.key, hooks[0].id))[0].id;

  // Change requests: one open, one draft.
  const requester = await createAccount(undefined, "SHARD_1");
  const requestedAppId = await createAppVia(requester.key, { app_name: "requested" });
  await deploy(requestedAppId, "staging", "main", requester);
  const proposed = (
    await expectJson<{ deployed_app_variant_revision_id: string }>(await getRevisions(requester.key, requestedAppId, "staging"))
  ).deployed_app_variant_revision_id;
  const propose = (draft: boolean) =>
    send("POST", "/change-requests", {
      key: requester.key,
      body: { app_id: requestedAppId, environment: "production", variant_revision_id: proposed, title: "Counted", draft },
    });
  const requestId = await idOf<{ id: string }>(await propose(false), (answer) => answer.id);
  // The requester's staging allows self-approval: the requester may be asked to review there.
  const selfApproved = await send("PUT", `/projects/${requester.projectId}/environments/staging/protection`, {
    key: requester.key,
    body: { allow_self_approval: true },
  });
  expect(selfApproved.status).toBe(200);
  const draftId = await idOf<{ id: string }>(await propose(true), (answer) => answer.id);

  // Approved change requests of the account (its staging allows self-approval): one to apply, one to schedule.
  const settings = { allow_self_approval: true };
  const put = await send("PUT", `/projects/${account.projectId}/environments/staging/protection`, {
    key: account.key,
    body: settings,
  });
  expect(put.status).toBe(200);
  const approvedRequest = async (name: string) => {
    const requested = await createAppVia(account.key, { app_name: name });
    const { variantId: requestedVariant } = await deploy(requested, "development", "main", account);
    const row = await databaseOf(requested)
      .prepare("SELECT id FROM app_variant_revisions WHERE variant_id = ?")
      .bind(requestedVariant)
      .first<{ id: string }>();
    const made = await send("POST", "/change-requests", {
      key: account.key,
      body: { app_id: requested, environment: "staging", variant_revision_id: String(row?.id), title: "Counted" },
    });
    const id = await idOf<{ id: string }>(made, (answer) => answer.id);
    const approved = await send("POST", `/change-requests/${id}/reviews`, {
      key: account.key,
      body: { kind: "approve", version: 1 },
    });
    expect(approved.status).toBe(200);
    return id;
  };

  // A split request approved, of an app whose staging runs main alone: its apply starts the split.
  const splitRequestApp = await splitApp(account, ["staging"]);
  const candidate = await databaseOf(splitRequestApp)
    .prepare(
      "SELECT r.id FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id WHERE v.app_id = ? AND v.name = 'next'",
    )
    .bind(splitRequestApp)
    .first<{ id: string }>();
  const splitRequestId = await idOf<{ id: string }>(
    await send("POST", "/change-requests", {
      key: account.key,
      body: {
        app_id: splitRequestApp,
        environment: "staging",
        split: { variant_revision_id: String(candidate?.id), weight: 100 },
        title: "Counted split",
      },
    }),
    (answer) => answer.id,
  );
  expect(
    (
      await send("POST", `/change-requests/${splitRequestId}/reviews`, {
        key: account.key,
        body: { kind: "approve", version: 1 },
      })
    ).status,
  ).toBe(200);

  // Splits run in its production (read, changed, given verdicts) and development (promoted); its staging runs main alone.
  const splitAppId = await splitApp(account, ["production", "staging", "development"]);
  const { verdict_secret } = await startSplit(account.key, splitAppId, "production");
  await startSplit(account.key, splitAppId, "development");
  // A verdict its production's split accepts: signed with its secret, as the customer's evaluation would.
  const verdictAt = new Date();
  const verdictSignature = new StandardWebhook(String(verdict_secret)).sign(
    "msg_counted",
    verdictAt,
    JSON.stringify({ verdict: "hold", reason: "counted" }),
  );

  return {
    account,
    organizationIds: [account, viewer, owner, requester]
      .map(({ organizationId }) => organizationId)
      .concat(team.organizationId, org.organizationId),
    keys: {
      account: account.key,
      viewer: viewer.key,
      owner: owner.key,
      requester: requester.key,
      // A key that is not live, of the account's prefix: a key found on no shard costs two round trips when its prefix
      // is not on the legacy bucket's shard, which is asked too (a key made before buckets may have such a prefix).
      wrongKey: `${account.key.slice(0, 9)}${"0".repeat(64)}`,
      nonsense: "nonsense",
      none: "",
    },
    values: {
      "account.userId": account.userId,
      "requester.userId": requester.userId,
      "owner.organizationId": owner.organizationId,
      "team.organizationId": team.organizationId,
      "team.projectId": team.projectId,
      "org.organizationId": org.organizationId,
      "org.workspaceId": org.workspaceId,
      "environmentOf.production": uuidv5("production", account.projectId),
      appId,
      variantId,
      firstRevisionId,
      staleETag,
      teamAppId,
      splitAppId,
      verdictSignature,
      verdictTimestamp: String(Math.floor(verdictAt.getTime() / 1000)),
      renamedId,
      deletedId,
      removableId,
      configRevisionId,
      spareKeyPrefix: spareKey.split(".")[0],
      "newcomer.project_id": newcomer.project_id,
      "newcomer.token": newcomer.token,
      memberEmail,
      leaverEmail,
      roleHolderEmail,
      simpleAppId,
      simpleVariantId,
      hookId: hooks[0].id,
      hookInbox: inboxes[0],
      spareHookId: hooks[2].id,
      deliveryId,
      requestedAppId,
      proposed,
      requestId,
      draftId,
      applyRequestId: await approvedRequest("requested-counted"),
      splitRequestId,
      scheduledRequestId: await approvedRequest("scheduled-counted"),
      // An id, and a key prefix, of nothing, in the bucket of the account's organization: routed to its shard.
      unknownId: newId(bucketFor(account.organizationId)),
      unknownPrefix: newKeyPrefix(bucketFor(account.organizationId)),
      newInbox: newInbox(),
      inADay: new Date(Date.now() + 86_400_000).toISOString(),
    },
  };
}

/** A case's request in `world`: its `{name}`s replaced by their values (a name the world lacks fails the test). */
export function requestOf(world: RouteWorld, { path, key, body, headers }: RoundTripCase) {
  const fill = (text: string) =>
    text.replace(/\{([\w.]+)\}/g, (_, name: string) => {
      expect(world.values, `the world's {${name}}`).toHaveProperty([name]);
      return world.values[name];
    });
  const filled = (value: unknown): unknown =>
    typeof value === "string"
      ? fill(value)
      : Array.isArray(value)
        ? value.map(filled)
        : value && typeof value === "object"
          ? Object.fromEntries(Object.entries(value).map(([name, item]) => [name, filled(item)]))
          : value;
  return {
    path: fill(path),
    key: world.keys[key ?? "account"],
    body: filled(body) as object | undefined,
    headers: filled(headers) as Record<string, string> | undefined,
  };
}

/** Whether `path` (with its query) is a URL of `operation`'s template (a client may add a trailing slash). */
export function isOfOperation(operation: string, path: string) {
  const template = operation.split(" ")[1];
  return new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}/?$`).test(path.split("?")[0]);
}
