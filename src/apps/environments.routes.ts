import * as z from "zod/mini";
import { environmentETag } from "../core/environment-etag";
import { appEnvironmentNotFound, appNotFound } from "../http/core-errors";
import { readAs } from "../http/d1-session";
import { AppParams } from "../http/fields";
import {
  bodilessResponse,
  DEMO_APP_ID,
  DEMO_ORGANIZATION_ID,
  DEMO_PROJECT_ID,
  DEMO_WORKSPACE_ID,
  EXAMPLE_ENVIRONMENT_REVISION_ID,
  EXAMPLE_VARIANT_ID,
  EXAMPLE_VARIANT_REVISION_ID,
  errorResponse,
  headerRef,
  responseRef,
} from "../http/openapi-parts";
import { pagedJson } from "../http/paged-json";
import { route, type SharedResponses } from "../http/route";
import {
  EnvironmentOutput,
  EnvironmentRevisions,
  EnvironmentRevisionsParams,
  toEnvironmentOutput,
  toEnvironmentRevisions,
  toRevisionEntry,
} from "./environments.schemas";
import { ENVIRONMENT_REVISIONS_PAGE_ROWS, listEnvironments, readEnvironmentRevisions } from "./environments.sql.ts";

const demoEnvironment = {
  name: "development",
  app_id: DEMO_APP_ID,
  project_id: DEMO_PROJECT_ID,
  deployed_app_variant_id: EXAMPLE_VARIANT_ID,
  deployed_variant_name: "app.main",
  deployed_app_variant_revision_id: EXAMPLE_VARIANT_REVISION_ID,
  deployed_variant_archived: false,
  revision: 3,
  organization_id: DEMO_ORGANIZATION_ID,
  workspace_id: DEMO_WORKSPACE_ID,
} satisfies EnvironmentOutput;

// Written whole, not spread from demoEnvironment: esbuild would keep an unused example that spreads another.
const demoRecord = {
  name: "development",
  app_id: DEMO_APP_ID,
  project_id: DEMO_PROJECT_ID,
  deployed_app_variant_id: EXAMPLE_VARIANT_ID,
  deployed_variant_name: "app.main",
  deployed_app_variant_revision_id: EXAMPLE_VARIANT_REVISION_ID,
  deployed_variant_archived: false,
  revision: 3,
  revisions: [
    {
      id: EXAMPLE_ENVIRONMENT_REVISION_ID,
      revision: 1,
      modified_by: "demo",
      deployed_app_variant_revision: "01a2012d-8940-7219-9117-af422206e8f5",
      deployment: "01a2012d-8940-7219-9117-b1155a97b58f",
      created_at: "2026-11-22T02:54:51.253Z",
    },
  ],
  // Last, in SPEC 2.3's order.
  organization_id: DEMO_ORGANIZATION_ID,
  workspace_id: DEMO_WORKSPACE_ID,
} satisfies EnvironmentRevisions;

/** Routes under /apps/:app_id that act on an app's environments. */
export const environmentsRoutes = [
  route(
    {
      method: "get",
      path: "/apps/{app_id}/revisions/{environment_name}",
      cached: true,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET (five revisions)", path: "/apps/{appId}/revisions/production", trips: 1 },
          {
            name: "GET, malformed key (no lookup)",
            path: "/apps/{appId}/revisions/production",
            key: "nonsense",
            status: 401,
            trips: 0,
          },
          { name: "GET, key not live", path: "/apps/{appId}/revisions/production", key: "wrongKey", status: 401, trips: 2 },
          { name: "GET, unknown environment", path: "/apps/{appId}/revisions/qa", status: 404, trips: 1 },
          { name: "GET, invalid path, live key", path: "/apps/not-a-uuid/revisions/x", status: 422, trips: 1 },
          {
            name: "GET, invalid path, key not live",
            path: "/apps/not-a-uuid/revisions/x",
            key: "wrongKey",
            status: 401,
            trips: 2,
          },
        ],
      },
      auth: "key",
      params: {
        schema: EnvironmentRevisionsParams,
        examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID, environment_name: "development" },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listAppEnvironmentRevisions",
        tag: "Environments",
        summary: "Read an environment's deployment record and its revisions",
        description:
          "`revisions` lists every revision oldest first. HEAD is answered like GET, without a body. The ETag names the " +
          "record's state: If-None-Match with it gets a 304 while the record is unchanged, If-Match with it makes a " +
          `deploy or revert conditional on it. A history of up to ${ENVIRONMENT_REVISIONS_PAGE_ROWS} revisions is read ` +
          `in one round trip; a longer one streams, read ${ENVIRONMENT_REVISIONS_PAGE_ROWS} revisions at a time as the ` +
          "client takes the body: one more round trip per page, never the whole history held at once. The body is the " +
          "record its ETag names: revisions deployed meanwhile are not in it.",
        ok: {
          schema: EnvironmentRevisions,
          description: "The environment's record",
          example: demoRecord,
          headers: { ETag: headerRef("ETag") },
        },
        errors: {
          304: bodilessResponse("If-None-Match names the record's current ETag: no body", { ETag: headerRef("ETag") }),
          404: responseRef("AppEnvironmentNotFound"),
        },
      },
    },
    async (c) => {
      const { app_id, environment_name } = c.req.valid("param");
      const found = await readAs(c, [app_id], (db) => readEnvironmentRevisions(db, app_id, environment_name));
      if (!found) throw appEnvironmentNotFound();
      const { id: environmentId, revision, split, deployedVariantArchived } = found.environment;
      c.header("ETag", environmentETag({ environmentId, revision, split }, deployedVariantArchived === 1));
      return pagedJson(c, found.revisions, toRevisionEntry, (entries) => toEnvironmentRevisions(found.environment, entries));
    },
  ),
  route(
    {
      method: "get",
      path: "/apps/{app_id}/environments",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET environments", path: "/apps/{appId}/environments", trips: 1 }],
      },
      auth: "key",
      params: { schema: AppParams, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID } },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listEnvironments",
        tag: "Environments",
        summary: "List an app's environments",
        description:
          "The app's development, staging and production environments, each with what is deployed there and its current revision.",
        ok: { schema: z.array(EnvironmentOutput), description: "The app's environments", example: [demoEnvironment] },
        errors: { 404: responseRef("AppNotFound") },
      },
    },
    async (c) => {
      const { app_id } = c.req.valid("param");
      const environments = await readAs(c, [app_id], (db) => listEnvironments(db, app_id));
      // Every app has its environments: none means no app the caller can see.
      if (environments.length === 0) throw appNotFound();
      return c.json(environments.map(toEnvironmentOutput), 200);
    },
  ),
];

/** The responses the routes above share in the document. */
export const environmentsResponses = (): SharedResponses => ({
  AppEnvironmentNotFound: errorResponse(
    "The app does not exist, is not visible to the caller, or has no such environment (not told apart)",
    appEnvironmentNotFound(),
  ),
});
