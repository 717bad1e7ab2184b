import type { Context } from "hono";
import { PROTECTED_ENVIRONMENT_NAMES } from "../core/protection.sql.ts";
import { CALLER_KEY } from "../db/buckets";
import { environmentNotFound } from "../http/core-errors";
import { type CallerEnv, readAs, writeAs } from "../http/d1-session";
import { DEMO_APP_ID, DEMO_USER_ID, EXAMPLE_VARIANT_ID, EXAMPLE_VARIANT_REVISION_ID, errorResponse } from "../http/openapi-parts";
import { route } from "../http/route";
import { protectionOf } from "../projects/errors";
import { protectionChangeStatements, toProtection } from "../projects/protection.sql.ts";
import { environmentIdOf } from "./environment-id";
import {
  QueryEnvironmentsBody,
  type SimpleEnvironment,
  SimpleEnvironmentAnswer,
  SimpleEnvironmentParams,
  SimpleEnvironmentsAnswer,
} from "./environments.schemas";
import { listProjectEnvironments, type ProjectEnvironmentRow, projectEnvironmentsStatement } from "./environments.sql.ts";

/**
 * The project-wide environments of these rows (an app's environment each), one per name in the order first seen:
 * what each app's environment of that name runs (archived apps left out), and the version and lifecycle of the
 * latest deployment of that name in the project.
 */
function toSimpleEnvironments(rows: ProjectEnvironmentRow[]): SimpleEnvironment[] {
  const byName = new Map<string, ProjectEnvironmentRow[]>();
  for (const row of rows) byName.set(row.name, [...(byName.get(row.name) ?? []), row]);
  return [...byName.entries()].map(([name, apps]) => {
    const references: SimpleEnvironment["data"]["references"] = {};
    for (const app of apps) {
      if (app.appArchived || !app.revisionId || !app.variantId) continue;
      references[`${app.appName}.revision`] = {
        application: { id: app.appId, slug: app.appName },
        application_variant: { id: app.variantId, slug: app.configName ?? "" },
        application_revision: { id: app.revisionId, slug: app.revisionSlug ?? "", version: String(app.revision) },
      };
    }
    const deployed = apps.filter((app) => app.deployedAt !== null);
    const latest = deployed.reduce<ProjectEnvironmentRow | null>(
      (last, app) => (last && (last.deployedAt ?? "") >= (app.deployedAt ?? "") ? last : app),
      null,
    );
    const firstMade = apps.reduce((first, app) => (app.createdAt < first ? app.createdAt : first), apps[0].createdAt);
    return {
      id: environmentIdOf(apps[0].projectId, name),
      slug: name,
      name,
      flags: { is_guarded: apps[0].guarded === 1 },
      data: { references },
      ...(latest
        ? {
            version: String(latest.environmentRevision),
            created_at: latest.deployedAt as string,
            updated_at: latest.deployedAt as string,
            updated_by_id: latest.deployedById as string,
          }
        : { created_at: firstMade }),
    };
  });
}

const demoEnvironment = {
  id: "5b6d2c1e-8f3a-5c4d-9e2b-7a1f0c3d4e5f",
  slug: "production",
  name: "production",
  flags: { is_guarded: false },
  data: {
    references: {
      "demo-app.revision": {
        application: { id: DEMO_APP_ID, slug: "demo-app" },
        application_variant: { id: EXAMPLE_VARIANT_ID, slug: "main" },
        application_revision: { id: EXAMPLE_VARIANT_REVISION_ID, slug: "3f9a0c12d4e5", version: "2" },
      },
    },
  },
  version: "1",
  created_at: "2026-11-22T02:54:51.236Z",
  updated_at: "2026-11-22T02:54:51.236Z",
  updated_by_id: DEMO_USER_ID,
} satisfies SimpleEnvironment;

/** POST /simple/environments/query: the key's project's environments, as today's SDK reads them after a deploy. */
export const environmentsQueryRoutes = [
  route(
    {
      method: "post",
      path: "/simple/environments/query",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "environments query",
            path: "/simple/environments/query",
            body: { environment: { slug: "production" } },
            trips: 1,
          },
        ],
      },
      auth: "key",
      body: {
        schema: QueryEnvironmentsBody,
        id: "QueryEnvironments",
        examples: globalThis.DOCUMENTATION && {
          byName: {
            summary: "One environment (DeploymentManager.deploy)",
            value: { environment: { slug: "production" }, environment_refs: [{ slug: "production" }] },
          },
          all: { summary: "Every environment of the project", value: {} },
        },
      },
      idempotencyKey: "validates",
      doc: globalThis.DOCUMENTATION && {
        operationId: "querySimpleEnvironments",
        tag: "Simple environments",
        summary: "The key's project's environments, with what each runs per app",
        description:
          "One per environment name of the key's project's apps (development, staging, production, in that order): " +
          "`data.references` says, per app (`<app name>.revision`), which variant revision its environment of that " +
          "name runs. `id` is the same for every read of a name in the project; `version` and the lifecycle fields are " +
          "those of the latest deployment of that name in the project. One round trip to the database.",
        ok: {
          schema: SimpleEnvironmentsAnswer,
          description: "The environments",
          example: { count: 1, environments: [demoEnvironment] },
        },
      },
    },
    async (c) => {
      const { environment, environment_refs } = c.req.valid("json");
      const rows = await readAs(c, [CALLER_KEY], (db) => listProjectEnvironments(db, environment?.slug ?? null));
      const refs = environment_refs?.filter((ref) => ref !== null) ?? [];
      const environments = toSimpleEnvironments(rows).filter(
        (found) => refs.length === 0 || refs.some((ref) => ref.slug === found.slug || ref.id === found.id),
      );
      return c.json({ count: environments.length, environments }, 200);
    },
  ),
];

/** The key's project's environment of id `environmentId` (`toSimpleEnvironments`), or 404. */
function environmentOf(rows: ProjectEnvironmentRow[], environmentId: string): SimpleEnvironment {
  const found = toSimpleEnvironments(rows).find((environment) => environment.id === environmentId);
  if (!found) throw environmentNotFound();
  return found;
}

/**
 * Guards (`protect`) or unguards the key's project's environment of id `environmentId`: its protection settings'
 * `protected`, every other setting kept (a first guard: the defaults). The id is derived from the project and the
 * name (environment-id.ts), so the key's project is read first: two round trips.
 */
async function guard<E extends CallerEnv>(c: Context<E>, environmentId: string, protect: boolean) {
  const project = await readAs(c, [CALLER_KEY], (db) => listProjectEnvironments(db, null));
  const { name } = environmentOf(project, environmentId);
  const environment = PROTECTED_ENVIRONMENT_NAMES.find((known) => known === name);
  if (!environment) throw environmentNotFound();
  // Found: the project has rows, each of the key's project.
  const { projectId } = project[0];
  const change = {
    protected: protect,
    required_approvals: null,
    allow_self_approval: null,
    approver_roles: null,
    bypass_roles: null,
    request_ttl_days: null,
  };
  const rows = await writeAs(c, [projectId], async (db) => {
    const { environments, ...changed } = await db.batch({
      ...protectionChangeStatements(db, projectId, environment, change),
      environments: projectEnvironmentsStatement(db, null),
    });
    protectionOf(toProtection(changed, { changing: true }));
    return environments.results;
  });
  return { count: 1 as const, environment: environmentOf(rows, environmentId) };
}

const ENVIRONMENT_NOT_FOUND = /* @__PURE__ */ errorResponse(
  "No environment of that id in the key's project (the key's project has no app, or the id is another project's)",
  /* @__PURE__ */ environmentNotFound(),
);

const byId = {
  schema: SimpleEnvironmentParams,
  examples: globalThis.DOCUMENTATION && { environment_id: demoEnvironment.id },
};

const GUARD_DOC =
  "Owners and workspace admins (others 403). Sets the protection settings' `protected` of the project's environment of " +
  "that name (GET /projects/{project_id}/environments/{environment_name}/protection), keeping every other setting (a " +
  "first guard takes the defaults), recorded in the audit log as a change of them; already so, it changes and " +
  "records nothing. Answers the environment as now. Two round trips: the environment's id is the key's project's, read first.";

/** One environment of the key's project by id, and guarding it (docs/CHANGE-REQUESTS.md §8). */
export const environmentRoutes = [
  route(
    {
      method: "get",
      path: "/simple/environments/{environment_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /simple/environments/{id}", path: "/simple/environments/{environmentOf.production}", trips: 1 }],
      },
      auth: "key",
      params: byId,
      doc: globalThis.DOCUMENTATION && {
        operationId: "getSimpleEnvironment",
        tag: "Simple environments",
        summary: "One environment of the key's project, by id",
        description: "As POST /simple/environments/query answers it, with `flags.is_guarded` as now. Any role.",
        ok: {
          schema: SimpleEnvironmentAnswer,
          description: "The environment",
          example: { count: 1, environment: demoEnvironment },
        },
        errors: { 404: ENVIRONMENT_NOT_FOUND },
      },
    },
    async (c) => {
      const { environment_id } = c.req.valid("param");
      const rows = await readAs(c, [CALLER_KEY], (db) => listProjectEnvironments(db, null));
      return c.json({ count: 1 as const, environment: environmentOf(rows, environment_id) }, 200);
    },
  ),
  ...(["guard", "unguard"] as const).map((action) =>
    route(
      {
        method: "post",
        path: `/simple/environments/{environment_id}/${action}`,
        roundTrips:
          globalThis.ROUTE_FACTS &&
          (action === "guard"
            ? { cases: [{ name: "guard", path: "/simple/environments/{environmentOf.production}/guard", trips: 2 }] }
            : { cases: [{ name: "unguard", path: "/simple/environments/{environmentOf.production}/unguard", trips: 2 }] }),
        auth: "key",
        write: true,
        params: byId,
        idempotencyKey: "validates",
        doc: globalThis.DOCUMENTATION && {
          operationId: action === "guard" ? "guardSimpleEnvironment" : "unguardSimpleEnvironment",
          tag: "Simple environments",
          summary: action === "guard" ? "Guard an environment: protect it" : "Unguard an environment: stop protecting it",
          description: GUARD_DOC,
          ok: {
            schema: SimpleEnvironmentAnswer,
            description: "The environment as now",
            example: { count: 1, environment: { ...demoEnvironment, flags: { is_guarded: action === "guard" } } },
          },
          errors: { 404: ENVIRONMENT_NOT_FOUND },
        },
      },
      async (c) => c.json(await guard(c, c.req.valid("param").environment_id, action === "guard"), 200),
    ),
  ),
];
