import { CALLER_KEY } from "../db/buckets";
import { readAs } from "../http/d1-session";
import { DEMO_IDS, EXAMPLE_IDS } from "../http/openapi-parts";
import { route } from "../http/route";
import { environmentIdOf } from "./environment-id";
import { QueryEnvironmentsBody, type SimpleEnvironment, SimpleEnvironmentsAnswer } from "./environments.schemas";
import { listProjectEnvironments, type ProjectEnvironmentRow } from "./environments.sql.ts";

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
      flags: { is_guarded: false as const },
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
        application: { id: DEMO_IDS.app, slug: "demo-app" },
        application_variant: { id: EXAMPLE_IDS.variant, slug: "main" },
        application_revision: { id: EXAMPLE_IDS.variantRevision, slug: "3f9a0c12d4e5", version: "2" },
      },
    },
  },
  version: "1",
  created_at: "2026-11-22T02:54:51.236Z",
  updated_at: "2026-11-22T02:54:51.236Z",
  updated_by_id: DEMO_IDS.user,
} satisfies SimpleEnvironment;

/** POST /simple/environments/query: the key's project's environments, as today's SDK reads them after a deploy. */
export const environmentsQueryRoutes = [
  route(
    {
      method: "post",
      path: "/simple/environments/query",
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
