import { beforeAll, describe, expect, it } from "vitest";
import { applicationVariants, current, simpleApplications } from "./client";
import {
  type Account,
  countRows,
  createAccount,
  createAppVia,
  createTeam,
  deploy,
  expectError,
  expectJson,
  FORBIDDEN,
  getRevisions,
  issueKey,
  markKeyUsed,
  postApp,
  type Role,
  send,
  storedRevision,
} from "./fixtures";
import { changes, type ExpectedEvent, expectEvents, snapshot, type Table } from "./harness";
import { allShardNames, databaseOf, shardNameFor } from "./pool";

/** The six roles of docs/ACCOUNTS-API.md, and who may do what there. */
const ROLES: readonly Role[] = ["owner", "workspace_admin", "editor", "deployment_manager", "evaluator", "viewer"];
const WRITERS: readonly Who[] = ["owner", "workspace_admin", "editor"];
const DEPLOYERS: readonly Who[] = [...WRITERS, "deployment_manager"];

/**
 * Who calls in the matrices, each with a key of the team's project (today's SDK acts in its key's project): a team
 * member in each role, and the owner with a read-only key (a viewer's rights).
 */
const READ_ONLY = "owner with a read-only key";
type Who = Role | typeof READ_ONLY;
const CALLERS: readonly Who[] = [...ROLES, READ_ONLY];

let owner: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let teamAppId: string;
let teamDeployment: Awaited<ReturnType<typeof deploy>>;
const members = {} as Record<Role, Account>;
const keys = {} as Record<Who, string>;
let outsider: Account;

beforeAll(async () => {
  for (const role of ROLES) members[role] = await createAccount();
  owner = members.owner;
  outsider = await createAccount();
  team = await createTeam(
    owner,
    ROLES.filter((role) => role !== "owner").map((role) => [members[role], role]),
  );
  for (const role of ROLES) keys[role] = await issueKey(members[role].userId, team.projectId);
  keys[READ_ONLY] = await issueKey(owner.userId, team.projectId, { readOnly: true });
  // A key's first use is recorded after the answer (waitUntil): recorded now, so that a snapshot taken around a
  // request sees only what the request itself wrote.
  for (const key of Object.values(keys)) await markKeyUsed(key);
  teamAppId = await createAppVia(owner.key, { app_name: "team-app", organization_id: team.organizationId });
  teamDeployment = await deploy(teamAppId, "production", "main", owner);
});

/** Every read route, on the team's app; with what the owner's answer holds (the least of it). */
const READS: [route: string, read: (key: string) => Promise<Response>, holds: () => unknown][] = [
  [
    "GET /apps",
    (key) => send("GET", `/apps?workspace_id=${team.workspaceId}`, { key }),
    () => expect.arrayContaining([expect.objectContaining({ app_id: teamAppId, app_name: "team-app" })]),
  ],
  [
    "GET /apps/{id}/revisions/{env}",
    (key) => getRevisions(key, teamAppId, "production"),
    () => ({ app_id: teamAppId, organization_id: team.organizationId, revision: 1, deployed_variant_name: "app.main" }),
  ],
  ["GET /apps/{id}/environments", (key) => send("GET", `/apps/${teamAppId}/environments`, { key }), () => expect.any(Array)],
  [
    "GET /apps/{id}/variants",
    (key) => send("GET", `/apps/${teamAppId}/variants`, { key }),
    () => [{ variant_id: teamDeployment.variantId, config_name: "main" }],
  ],
  [
    "GET /apps/get_variant_by_env",
    (key) => send("GET", `/apps/get_variant_by_env?app_id=${teamAppId}&environment=production`, { key }),
    () => ({ variant_id: teamDeployment.variantId }),
  ],
  [
    "POST /variants/configs/fetch",
    (key) =>
      send("POST", "/variants/configs/fetch", {
        key,
        body: { application_ref: { id: teamAppId }, environment_ref: { slug: "production" } },
      }),
    () => ({ variant_ref: { slug: "main", version: 1 }, environment_ref: { slug: "production", version: 1 } }),
  ],
  [
    "GET /configs",
    (key) => send("GET", `/configs?base_id=${teamAppId}&config_name=main`, { key }),
    () => ({ config_name: "main" }),
  ],
  [
    "GET /configs/deployment/{id}",
    (key) => send("GET", `/configs/deployment/${teamDeployment.revisionId}`, { key }),
    () => ({ config_name: "main" }),
  ],
  [
    "GET /variants/{id}",
    (key) => send("GET", `/variants/${teamDeployment.variantId}`, { key }),
    () => ({ variant_id: teamDeployment.variantId, revision: 1 }),
  ],
  [
    "GET /variants/{id}/revisions",
    (key) => send("GET", `/variants/${teamDeployment.variantId}/revisions`, { key }),
    () => [{ revision: 1 }],
  ],
  [
    "GET /variants/{id}/revisions/{n}",
    (key) => send("GET", `/variants/${teamDeployment.variantId}/revisions/1`, { key }),
    () => ({ revision: 1 }),
  ],
  ["GET /bases", (key) => send("GET", `/bases?app_id=${teamAppId}`, { key }), () => [{ base_id: teamAppId, base_name: "app" }]],
  // Today's SDK's reads (docs/CURRENT-SDK-API.md).
  [
    "POST /simple/applications/query",
    (key) => simpleApplications.query({ key }, {}),
    () => ({ count: 1, applications: [expect.objectContaining({ id: teamAppId, slug: "team-app" })] }),
  ],
  [
    "GET /simple/applications/{id}",
    (key) => simpleApplications.get({ key }, teamAppId),
    () => ({ count: 1, application: expect.objectContaining({ id: teamAppId, variant_id: teamDeployment.variantId }) }),
  ],
  [
    "POST /applications/variants/query",
    (key) => applicationVariants.query({ key }, { application_refs: [{ id: teamAppId }] }),
    () => ({ count: 1, application_variants: [expect.objectContaining({ id: teamDeployment.variantId, slug: "main" })] }),
  ],
  [
    "GET /applications/variants/{id}",
    (key) => applicationVariants.get({ key }, teamDeployment.variantId),
    () => ({ count: 1, application_variant: expect.objectContaining({ id: teamDeployment.variantId }) }),
  ],
  [
    "POST /applications/revisions/retrieve",
    (key) => current.retrieve({ key }, { resolve: true, environment_ref: { slug: "production" }, key: "team-app.revision" }),
    () => ({ count: 1, application_revision: expect.objectContaining({ variant_id: teamDeployment.variantId, version: "1" }) }),
  ],
  [
    "POST /workflows/revisions/retrieve",
    (key) => current.retrieveWorkflow({ key }, { workflow_ref: { id: teamAppId } }),
    () => ({ count: 1, workflow_revision: expect.objectContaining({ workflow_variant_id: teamDeployment.variantId }) }),
  ],
  [
    "POST /applications/revisions/log",
    (key) => current.log({ key }, { application_revisions: { application_variant_id: teamDeployment.variantId } }),
    () => ({ count: 1, application_revisions: [expect.objectContaining({ version: "1" })] }),
  ],
  [
    "POST /simple/environments/query",
    (key) => current.queryEnvironments({ key }, { environment: { slug: "production" } }),
    () => ({ count: 1, environments: [expect.objectContaining({ slug: "production" })] }),
  ],
];

describe("every role, and a read-only key, reads what the owner reads", () => {
  it.each(READS)("%s", async (_route, read, holds) => {
    const expected = await expectJson(await read(keys.owner));
    expect(expected).toMatchObject(holds() as object);
    for (const who of CALLERS) expect(await expectJson(await read(keys[who])), who).toEqual(expected);
  });
});

/** A fresh app of the team for each write, made by the owner. */
let apps = 0;
async function newApp(): Promise<{ id: string; name: string }> {
  const name = `written-${++apps}`;
  return { id: await createAppVia(owner.key, { app_name: name, organization_id: team.organizationId }), name };
}

/** A config of the app made by the owner (revision 1, params {}); its variant id. */
async function newVariant(appId: string, name: string): Promise<string> {
  const response = await send("POST", "/variants/from-base", {
    key: owner.key,
    body: { base_id: appId, new_config_name: name, parameters: {} },
  });
  return (await expectJson<{ variant_id: string }>(response)).variant_id;
}

const anyString = expect.any(String);
const lifecycle = (by: Account) => ({
  created_at: anyString,
  updated_at: anyString,
  updated_by: `${by.username}@example.com`,
  updated_by_id: by.userId,
});

/** A config answer (/variants/configs/*), whole: its ids and times any string; `by` made the revision (or deployed it). */
const configAnswer = (
  app: { id: string; name: string },
  by: Account,
  variant: { slug: unknown; version: number; params?: Record<string, unknown> },
  environment?: { slug: string; version: number; by: Account },
) => ({
  params: variant.params ?? {},
  url: "",
  application_ref: { slug: app.name, version: null, id: app.id },
  service_ref: null,
  variant_ref: { slug: variant.slug, version: variant.version, id: anyString },
  environment_ref: environment ? { slug: environment.slug, version: environment.version, id: anyString } : null,
  variant_lifecycle: lifecycle(by),
  environment_lifecycle: environment ? lifecycle(environment.by) : null,
});

interface Write {
  route: string;
  /** Who is answered 200; every other caller 403 FORBIDDEN, with nothing written. */
  allowed: readonly Who[];
  /** The tables a 200 writes to, besides its events. */
  tables: Table[];
  /**
   * Prepares what the request acts on in `app` (as the owner); the request, its 200 answer for `by`, and the event
   * (docs/EVENTS.md) its 200 records, if any.
   */
  prepare(
    app: { id: string; name: string },
    by: Account,
  ): Promise<{ request: (key: string) => Promise<Response>; answer: unknown; event?: ExpectedEvent }>;
}

/** An event of the team's `app` made by `by`, with `data` beside the app's id and name. */
const appEvent = (type: string, app: { id: string; name: string }, by: Account, data: Record<string, unknown> = {}) => ({
  type,
  organization_id: team.organizationId,
  workspace_id: team.workspaceId,
  project_id: team.projectId,
  app_id: app.id,
  actor_user_id: by.userId,
  data: { app_id: app.id, app_name: app.name, ...data },
});
/** A deployment event's data: the environment, its new revision, what it ran before and runs now ([config, variant id, revision]). */
const deployedData = (
  environment: string,
  revision: number,
  previous: [string, string, number] | null,
  current: [string, string, number],
) => {
  const ran = ([config_name, variant_id, revision]: [string, string, number]) => ({
    config_name,
    variant_id,
    revision,
    revision_id: anyString,
  });
  return {
    environment,
    environment_revision: revision,
    environment_revision_id: anyString,
    previous: previous && ran(previous),
    current: ran(current),
    live_everywhere_by: anyString,
  };
};
/** A config event's data: the config's name and revision. */
const revisionData = (config_name: unknown, revision: number) => ({ config_name, revision, revision_id: anyString });

/** The app as today's SDK reads it (GET /simple/applications/{id}), read by the owner. */
const simpleApp = async (id: string) =>
  (await expectJson<{ application: object }>(await simpleApplications.get({ key: owner.key }, id))).application;
/** The variant as today's SDK reads it (GET /applications/variants/{id}), read by the owner. */
const applicationVariant = async (id: string) =>
  (await expectJson<{ application_variant: object }>(await applicationVariants.get({ key: owner.key }, id))).application_variant;

const CONFIG_TABLES: Table[] = ["app_variant_revisions", "app_variants"];
const REVISION_TABLES: Table[] = ["app_variant_revisions"];
const DEPLOY_TABLES: Table[] = ["deployments", "environment_revisions", "environments"];
const main = (app: { id: string }) => ({ application_ref: { id: app.id }, variant_ref: { slug: "main" } });

const WRITES: Write[] = [
  {
    route: "POST /apps",
    allowed: WRITERS,
    tables: ["apps", "environments"],
    prepare: async (app, by) => ({
      request: (key) => postApp(key, { app_name: `${app.name}-new`, organization_id: team.organizationId }),
      answer: { app_id: anyString, app_name: `${app.name}-new` },
      event: { ...appEvent("app.created", { id: anyString, name: `${app.name}-new` }, by), app_id: anyString },
    }),
  },
  {
    route: "PATCH /apps/{id}",
    allowed: WRITERS,
    tables: ["apps"],
    prepare: async (app, by) => ({
      request: (key) => send("PATCH", `/apps/${app.id}`, { key, body: { app_name: `${app.name}-renamed` } }),
      answer: { app_id: app.id, app_name: `${app.name}-renamed` },
      event: appEvent("app.renamed", { ...app, name: `${app.name}-renamed` }, by, { previous_app_name: app.name }),
    }),
  },
  {
    route: "DELETE /apps/{id}",
    allowed: WRITERS,
    tables: ["apps", "environments"],
    prepare: async (app, by) => ({
      request: (key) => send("DELETE", `/apps/${app.id}`, { key }),
      answer: null,
      event: appEvent("app.deleted", app, by),
    }),
  },
  {
    route: "POST /variants/configs/add",
    allowed: WRITERS,
    tables: CONFIG_TABLES,
    prepare: async (app, by) => ({
      request: (key) => send("POST", "/variants/configs/add", { key, body: main(app) }),
      answer: configAnswer(app, by, { slug: "main", version: 1 }),
      event: appEvent("config.added", app, by, revisionData("main", 1)),
    }),
  },
  {
    route: "POST /variants/configs/commit",
    allowed: WRITERS,
    tables: REVISION_TABLES,
    prepare: async (app, by) => {
      await newVariant(app.id, "main");
      return {
        request: (key) => send("POST", "/variants/configs/commit", { key, body: { ...main(app), params: { k: 1 } } }),
        answer: configAnswer(app, by, { slug: "main", version: 2, params: { k: 1 } }),
        event: appEvent("config.committed", app, by, revisionData("main", 2)),
      };
    },
  },
  {
    route: "POST /variants/configs/fork",
    allowed: WRITERS,
    tables: CONFIG_TABLES,
    prepare: async (app, by) => {
      await newVariant(app.id, "main");
      return {
        request: (key) => send("POST", "/variants/configs/fork", { key, body: main(app) }),
        answer: configAnswer(app, by, { slug: expect.stringMatching(/^main_[0-9a-f]{8}$/), version: 1 }),
        event: appEvent("config.forked", app, by, {
          ...revisionData(expect.stringMatching(/^main_[0-9a-f]{8}$/), 1),
          source_config_name: "main",
          source_revision: 1,
        }),
      };
    },
  },
  {
    route: "POST /configs",
    allowed: WRITERS,
    tables: CONFIG_TABLES,
    prepare: async (app, by) => ({
      request: (key) =>
        send("POST", "/configs", { key, body: { base_id: app.id, config_name: "main", parameters: { k: 1 }, overwrite: false } }),
      answer: null,
      event: appEvent("config.added", app, by, revisionData("main", 1)),
    }),
  },
  {
    route: "PUT /variants/{id}/parameters",
    allowed: WRITERS,
    tables: REVISION_TABLES,
    prepare: async (app, by) => {
      const variantId = await newVariant(app.id, "main");
      return {
        request: (key) => send("PUT", `/variants/${variantId}/parameters`, { key, body: { parameters: { k: 1 } } }),
        answer: null,
        event: appEvent("config.committed", app, by, { ...revisionData("main", 2), variant_id: variantId }),
      };
    },
  },
  {
    route: "DELETE /variants/{id}",
    allowed: WRITERS,
    tables: ["app_variants"],
    prepare: async (app, by) => {
      const variantId = await newVariant(app.id, "main");
      return {
        request: (key) => send("DELETE", `/variants/${variantId}`, { key }),
        answer: null,
        event: appEvent("config.removed", app, by, { config_name: "main", variant_id: variantId }),
      };
    },
  },
  {
    route: "POST /variants/from-base",
    allowed: WRITERS,
    tables: CONFIG_TABLES,
    prepare: async (app, by) => ({
      request: (key) =>
        send("POST", "/variants/from-base", { key, body: { base_id: app.id, new_config_name: "main", parameters: { k: 1 } } }),
      answer: {
        app_id: app.id,
        app_name: app.name,
        variant_id: anyString,
        variant_name: "app.main",
        project_id: team.projectId,
        base_name: "app",
        base_id: app.id,
        config_name: "main",
        revision: 1,
        parameters: { k: 1 },
        uri: null,
        created_at: anyString,
        updated_at: anyString,
        modified_by_id: by.userId,
      },
      event: appEvent("config.added", app, by, revisionData("main", 1)),
    }),
  },
  {
    route: "POST /variants/configs/deploy",
    allowed: DEPLOYERS,
    tables: DEPLOY_TABLES,
    prepare: async (app, by) => {
      const variantId = await newVariant(app.id, "main");
      return {
        request: (key) =>
          send("POST", "/variants/configs/deploy", { key, body: { ...main(app), environment_ref: { slug: "staging" } } }),
        answer: configAnswer(app, owner, { slug: "main", version: 1 }, { slug: "staging", version: 1, by }),
        event: appEvent("environment.deployed", app, by, deployedData("staging", 1, null, ["main", variantId, 1])),
      };
    },
  },
  {
    route: "POST /environments/deploy",
    allowed: DEPLOYERS,
    tables: DEPLOY_TABLES,
    prepare: async (app, by) => {
      const variantId = await newVariant(app.id, "main");
      return {
        request: (key) =>
          send("POST", "/environments/deploy", { key, body: { environment_name: "staging", variant_id: variantId } }),
        answer: null,
        event: appEvent("environment.deployed", app, by, deployedData("staging", 1, null, ["main", variantId, 1])),
      };
    },
  },
  {
    route: "POST /configs/deployment/{id}/revert",
    allowed: DEPLOYERS,
    tables: DEPLOY_TABLES,
    prepare: async (app, by) => {
      const first = await deploy(app.id, "production", "main", owner);
      const second = await deploy(app.id, "production", "other", owner);
      return {
        request: (key) => send("POST", `/configs/deployment/${first.revisionId}/revert`, { key }),
        answer: "Environment was reverted to deployment revision successful",
        event: appEvent("environment.reverted", app, by, {
          ...deployedData("production", 3, ["other", second.variantId, 1], ["main", first.variantId, 1]),
          reverted_to_revision_id: first.revisionId,
        }),
      };
    },
  },
  // Today's SDK's writes (docs/CURRENT-SDK-API.md), with the same roles as their legacy equivalents.
  {
    route: "POST /simple/applications/",
    allowed: WRITERS,
    tables: ["apps", "environments"],
    prepare: async (app, by) => {
      const name = `${app.name}-new`;
      return {
        request: (key) => simpleApplications.create({ key }, { application: { slug: name, name } }),
        answer: {
          count: 1,
          application: {
            id: anyString,
            slug: name,
            name,
            created_at: anyString,
            updated_at: anyString,
            created_by_id: by.userId,
            flags: {},
          },
        },
        event: { ...appEvent("app.created", { id: anyString, name }, by), app_id: anyString },
      };
    },
  },
  {
    route: "PUT /simple/applications/{id}",
    allowed: WRITERS,
    tables: ["apps"],
    prepare: async (app, by) => {
      const name = `${app.name}-renamed`;
      const before = await simpleApp(app.id);
      return {
        request: (key) => simpleApplications.edit({ key }, app.id, { application: { id: app.id, slug: name, name } }),
        answer: { count: 1, application: { ...before, slug: name, name, updated_at: anyString } },
        event: appEvent("app.renamed", { ...app, name }, by, { previous_app_name: app.name }),
      };
    },
  },
  {
    route: "POST /simple/applications/{id}/archive",
    allowed: WRITERS,
    tables: ["apps"],
    prepare: async (app, by) => {
      const before = await simpleApp(app.id);
      return {
        request: (key) => simpleApplications.archive({ key }, app.id),
        answer: { count: 1, application: { ...before, deleted_at: anyString } },
        event: appEvent("app.archived", app, by),
      };
    },
  },
  {
    route: "POST /simple/applications/{id}/unarchive",
    allowed: WRITERS,
    tables: ["apps"],
    prepare: async (app, by) => {
      const before = await simpleApp(app.id);
      await expectJson(await simpleApplications.archive({ key: owner.key }, app.id));
      return {
        request: (key) => simpleApplications.unarchive({ key }, app.id),
        answer: { count: 1, application: before },
        event: appEvent("app.unarchived", app, by),
      };
    },
  },
  {
    route: "POST /applications/variants/",
    allowed: WRITERS,
    tables: ["app_variants"],
    prepare: async (app, by) => ({
      request: (key) => applicationVariants.add({ key }, { application_variant: { application_id: app.id, slug: "main" } }),
      answer: {
        count: 1,
        application_variant: {
          id: anyString,
          slug: "main",
          name: "main",
          application_id: app.id,
          application_slug: app.name,
          artifact_id: app.id,
          artifact_slug: app.name,
          created_at: anyString,
          updated_at: anyString,
        },
      },
      event: appEvent("config.added", app, by, {
        config_name: "main",
        variant_id: anyString,
        revision: null,
        revision_id: null,
        message: null,
      }),
    }),
  },
  {
    route: "POST /applications/variants/{id}/archive",
    allowed: WRITERS,
    tables: ["app_variants"],
    prepare: async (app, by) => {
      const variantId = await newVariant(app.id, "main");
      const before = await applicationVariant(variantId);
      return {
        request: (key) => applicationVariants.archive({ key }, variantId),
        answer: { count: 1, application_variant: { ...before, deleted_at: anyString } },
        event: appEvent("config.archived", app, by, { config_name: "main", variant_id: variantId }),
      };
    },
  },
  {
    route: "POST /applications/variants/{id}/unarchive",
    allowed: WRITERS,
    tables: ["app_variants"],
    prepare: async (app, by) => {
      const variantId = await newVariant(app.id, "main");
      const before = await applicationVariant(variantId);
      await expectJson(await applicationVariants.archive({ key: owner.key }, variantId));
      return {
        request: (key) => applicationVariants.unarchive({ key }, variantId),
        answer: { count: 1, application_variant: before },
        event: appEvent("config.unarchived", app, by, { config_name: "main", variant_id: variantId }),
      };
    },
  },
  {
    route: "POST /applications/revisions/commit",
    allowed: WRITERS,
    tables: REVISION_TABLES,
    prepare: async (app, by) => {
      const variantId = await newVariant(app.id, "main");
      const names = { id: app.id, slug: app.name };
      return {
        request: (key) =>
          current.commit(
            { key },
            {
              application_revision: { application_id: app.id, application_variant_id: variantId, data: { parameters: { k: 1 } } },
            },
          ),
        answer: {
          count: 1,
          application_revision: {
            id: anyString,
            slug: anyString,
            version: "2",
            data: { parameters: { k: 1 }, url: "" },
            application_id: names.id,
            application_slug: names.slug,
            application_variant_id: variantId,
            application_variant_slug: "main",
            variant_id: variantId,
            variant_slug: "main",
            artifact_id: names.id,
            artifact_slug: names.slug,
            created_at: anyString,
            created_by_id: by.userId,
            updated_by: `${by.username}@example.com`,
            updated_by_id: by.userId,
          },
        },
        event: appEvent("config.committed", app, by, { ...revisionData("main", 2), variant_id: variantId, message: null }),
      };
    },
  },
  {
    route: "POST /applications/revisions/deploy",
    allowed: DEPLOYERS,
    tables: DEPLOY_TABLES,
    prepare: async (app, by) => {
      const variantId = await newVariant(app.id, "main");
      return {
        request: (key) =>
          current.deploy(
            { key },
            { application_ref: { id: app.id }, application_variant_ref: { slug: "main" }, environment_ref: { slug: "staging" } },
          ),
        answer: { count: 1, application_revision: await storedRevision(variantId, 1) },
        event: appEvent("environment.deployed", app, by, deployedData("staging", 1, null, ["main", variantId, 1])),
      };
    },
  },
];

describe.each(WRITES)("$route", ({ allowed, tables, prepare }) => {
  it.each(CALLERS.map((who) => [who, allowed.includes(who) ? 200 : 403] as const))("%s: %i", async (who, status) => {
    const app = await newApp();
    const { request, answer, event } = await prepare(app, who === READ_ONLY ? owner : members[who]);
    const before = await snapshot();
    const response = await request(keys[who]);
    if (status === 200) {
      expect(await expectJson(response)).toEqual(answer);
      const changed = expectEvents(changes(before, await snapshot()), ...(event ? [event] : []));
      expect(Object.keys(changed).sort()).toEqual([...tables].sort());
    } else {
      await expectError(response, 403, FORBIDDEN);
      expect(await snapshot()).toEqual(before);
    }
  });
});

describe("outsiders and leavers", () => {
  it("an outsider creating in the team gets 403 and nothing is written", async () => {
    const before = await countRows("apps");
    for (const body of [
      { app_name: "intruder", organization_id: team.organizationId },
      { app_name: "intruder", workspace_id: team.workspaceId },
      { app_name: "intruder", project_id: team.projectId },
    ]) {
      await expectError(await postApp(outsider.key, body), 403, FORBIDDEN);
    }
    expect(await countRows("apps")).toBe(before);
  });

  it("an outsider reading the team's app gets the same 404 as for an app that does not exist", async () => {
    await expectError(await getRevisions(outsider.key, teamAppId, "production"), 404, "App environment not found");
  });

  it("a read-only key of an owner writes nothing, while the owner's other keys still write", async () => {
    await expectError(await postApp(keys[READ_ONLY], { app_name: "read-only", project_id: team.projectId }), 403, FORBIDDEN);
    expect((await postApp(owner.key, { app_name: "read-write", project_id: team.projectId })).status).toBe(200);
  });

  it("a member removed from the organization loses access", async () => {
    const leaver = await createAccount();
    const ids = await createTeam(owner, [[leaver, "editor"]]);
    const appId = await createAppVia(leaver.key, { app_name: "before-leaving", organization_id: ids.organizationId });
    await databaseOf(ids.organizationId)
      .prepare("DELETE FROM organization_members WHERE organization_id = ? AND user_id = ?")
      .bind(ids.organizationId, leaver.userId)
      .run();
    expect((await getRevisions(leaver.key, appId, "production")).status).toBe(404);
    expect((await postApp(leaver.key, { app_name: "after-leaving", organization_id: ids.organizationId })).status).toBe(403);
  });
});

describe("choosing the target project", () => {
  const projectOf = async (key: string, appId: string) =>
    ((await (await getRevisions(key, appId, "development")).json()) as { project_id: string }).project_id;

  it("uses project_id, else the workspace's default project, else the organization's", async () => {
    const byProject = await createAppVia(members.editor.key, { app_name: "t-project", project_id: team.projectId });
    const byWorkspace = await createAppVia(members.editor.key, { app_name: "t-workspace", workspace_id: team.workspaceId });
    const byOrganization = await createAppVia(members.editor.key, { app_name: "t-org", organization_id: team.organizationId });
    for (const appId of [byProject, byWorkspace, byOrganization]) {
      expect(await projectOf(members.editor.key, appId)).toBe(team.projectId);
    }
  });

  it("uses the key's project when no id is given", async () => {
    const appId = await createAppVia(members.editor.key, { app_name: "t-key" });
    expect(await projectOf(members.editor.key, appId)).toBe(members.editor.projectId);
  });

  it("accepts ids that agree with each other", async () => {
    const response = await postApp(owner.key, {
      app_name: "t-all-agree",
      project_id: team.projectId,
      workspace_id: team.workspaceId,
      organization_id: team.organizationId,
    });
    expect(response.status).toBe(200);
  });

  it("answers 422 naming the field when visible ids disagree, and writes nothing", async () => {
    // Ids of one shard: the request reaches the shard of the first (TARGET_PROJECT_CTE's order), which sees them all.
    const sameShard = await createTeam(owner, [], shardNameFor(owner.organizationId));
    const before = await countRows("apps");
    const response = await postApp(owner.key, {
      app_name: "t-disagree",
      project_id: sameShard.projectId,
      workspace_id: owner.workspaceId,
      organization_id: owner.organizationId,
    });
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: unknown[]; type: string }[] };
    expect(detail.map((issue) => issue.loc)).toEqual([
      ["body", "workspace_id"],
      ["body", "organization_id"],
    ]);
    expect(detail.every((issue) => issue.type === "value_error")).toBe(true);
    expect(await countRows("apps")).toBe(before);
  });

  it("answers the documented 422 when the ids are of the caller's organizations on two shards, as on one", async () => {
    const otherShard = allShardNames().find((shard) => shard !== shardNameFor(owner.organizationId));
    const elsewhere = await createTeam(owner, [], otherShard);
    const before = await countRows("apps");
    const response = await postApp(owner.key, {
      app_name: "t-two-shards",
      project_id: elsewhere.projectId,
      organization_id: owner.organizationId,
    });
    expect({ status: response.status, body: await response.json() }).toEqual({
      status: 422,
      body: {
        detail: [
          {
            loc: ["body", "organization_id"],
            msg: "Value error, organization_id does not contain the target project",
            type: "value_error",
          },
        ],
      },
    });
    expect(await countRows("apps")).toBe(before);
  });

  it("answers 403 for ids that do not exist, whichever field names them", async () => {
    const missing = "01900000-0000-7000-8000-0000000000ff";
    for (const field of ["project_id", "workspace_id", "organization_id"]) {
      await expectError(await postApp(owner.key, { app_name: "t-missing", [field]: missing }), 403, FORBIDDEN);
    }
  });

  it("answers 403, not 422, when one of the ids is not visible to the caller", async () => {
    const response = await postApp(members.editor.key, {
      app_name: "t-hidden",
      project_id: team.projectId,
      organization_id: outsider.organizationId,
    });
    expect(response.status).toBe(403);
  });

  it("answers 403 when the key's own project is in an organization where the caller is a viewer", async () => {
    const key = await issueKey(members.viewer.userId, team.projectId);
    expect((await postApp(key, { app_name: "t-viewer-key" })).status).toBe(403);
    expect((await getRevisions(key, teamAppId, "staging")).status).toBe(200);
  });
});
