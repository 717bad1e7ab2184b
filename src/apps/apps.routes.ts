import * as z from "zod/mini";
import type { GatedOutcome } from "../core/app-protection.sql.ts";
import { isUniqueViolation } from "../db/d1";
import { appNotFound, protectionRefused } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import { dryRunQueryOf } from "../http/dry-run";
import { forbidden } from "../http/errors";
import { AppParams } from "../http/fields";
import { settleClaim } from "../http/idempotency";
import {
  DEMO_APP_ID,
  DEMO_ORGANIZATION_ID,
  DEMO_WORKSPACE_ID,
  environmentProtectedExample,
  errorResponse,
  PROTECTED,
  responseRef,
  withKeyErrors,
} from "../http/openapi-parts";
import { route, type SharedResponses } from "../http/route";
import {
  AppListItem,
  CreateAppBody,
  CreateAppOutput,
  DeleteAppDryRun,
  ListAppsQuery,
  toAppListItem,
  UpdateAppBody,
} from "./apps.schemas";
import {
  createAppAsCaller,
  deleteApp,
  findCreateRefusal,
  listApps,
  previewAppDeletion,
  renameApp,
  targetOrder,
} from "./apps.sql.ts";
import { createRefusedError, refusalAcrossShards } from "./create-refusal";
import { appNameTaken } from "./errors";

/** A name taken in the project fails the write with D1's UNIQUE error on `apps`: a 409. */
async function unlessNameTaken<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    throw isUniqueViolation(error, "apps") ? appNameTaken() : error;
  }
}

/** A write's answer when it did nothing: 404, 403, or a protected environment's refusal. */
function assertDone(outcome: GatedOutcome): void {
  if (typeof outcome === "object") throw protectionRefused(outcome);
  if (outcome === "not_found") throw appNotFound();
  if (outcome === "forbidden") throw forbidden();
}

const NAME_TAKEN = "An app of that name already exists in the target project";

const newApp = { app_id: "01a2012d-9c3e-7f10-8a4b-2d6e8f0a1c3e", app_name: "my-app" } satisfies CreateAppOutput;

const appPath = { schema: AppParams, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID } };

/** Routes under /apps that act on apps themselves. */
export const appsRoutes = [
  route(
    {
      method: "get",
      path: "/apps",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET /apps", path: "/apps", trips: 1 },
          { name: "GET /apps?app_name", path: "/apps?app_name=counted", trips: 1 },
        ],
      },
      auth: "key",
      query: {
        schema: ListAppsQuery,
        examples: globalThis.DOCUMENTATION && { app_name: "demo-app", workspace_id: DEMO_WORKSPACE_ID },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listApps",
        tag: "Apps",
        summary: "List the apps of the key's project, or of a workspace's default project",
        description: "Oldest first; `[]` when nothing matches or the caller is not a member of the project's organization.",
        ok: {
          schema: z.array(AppListItem),
          description: "The apps, oldest first",
          example: [
            { app_id: DEMO_APP_ID, app_name: "demo-app", updated_at: "2026-11-22T02:54:51.253Z" },
          ] satisfies AppListItem[],
        },
      },
    },
    async (c) => {
      const query = c.req.valid("query");
      const filter = { name: query.app_name ?? null, workspaceId: query.workspace_id ?? null };
      const apps = await readAs(c, [filter.workspaceId], (db) => listApps(db, filter));
      return c.json(apps.map(toAppListItem), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/apps",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "POST into the key's project", path: "/apps", body: { app_name: "one-trip" }, trips: 1 },
          {
            name: "POST into an organization",
            path: "/apps",
            body: { app_name: "org-trip", organization_id: "{team.organizationId}" },
            trips: 1,
          },
          {
            name: "POST with an Idempotency-Key (its claim in the same batch)",
            path: "/apps",
            body: { app_name: "keyed-trip" },
            headers: { "Idempotency-Key": "round-trips-fresh" },
            trips: 1,
          },
          { name: "POST, invalid body, live key", path: "/apps", body: { app_name: "" }, status: 422, trips: 1 },
          {
            name: "POST, invalid body, key not live",
            path: "/apps",
            key: "wrongKey",
            body: { app_name: "" },
            status: 401,
            trips: 2,
          },
          { name: "POST, key not live", path: "/apps", key: "wrongKey", body: { app_name: "nope" }, status: 401, trips: 2 },
          { name: "POST, name taken", path: "/apps", body: { app_name: "counted" }, status: 409, trips: 1 },
          {
            name: "POST, viewer of the target",
            path: "/apps",
            key: "viewer",
            body: { app_name: "v", organization_id: "{team.organizationId}" },
            status: 403,
            trips: 2,
          },
          {
            name: "POST, unknown project",
            path: "/apps",
            body: { app_name: "x", project_id: "{unknownId}" },
            status: 403,
            trips: 2,
          },
          {
            name: "POST, a replay of an Idempotency-Key (its first answer read back)",
            path: "/apps",
            body: { app_name: "keyed" },
            headers: { "Idempotency-Key": "round-trips-taken" },
            trips: 2,
          },
          {
            name: "POST, an Idempotency-Key used for another request",
            path: "/apps",
            body: { app_name: "not-keyed" },
            headers: { "Idempotency-Key": "round-trips-taken" },
            status: 422,
            trips: 2,
          },
          {
            name: "POST /apps, three webhooks subscribed",
            path: "/apps",
            key: "owner",
            body: { app_name: "announced" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      idempotencyKey: "replays",
      body: {
        schema: CreateAppBody,
        id: "CreateApp",
        examples: globalThis.DOCUMENTATION && {
          inKeyProject: { summary: "In the key's project", value: { app_name: "my-app" } },
          inOrganization: {
            summary: "In an organization's default project",
            value: { app_name: "other-app", organization_id: DEMO_ORGANIZATION_ID },
          },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "createApp",
        tag: "Apps",
        summary: "Create an app",
        description:
          "Creates the app, with the environments development, staging and production, in `project_id` if given, " +
          "else the default project of `workspace_id`, else that of `organization_id`, else the key's project. " +
          "Answers 200, not 201: existing clients expect 200.",
        ok: { schema: CreateAppOutput, description: "The app was created", example: newApp },
        errors: { 409: withKeyErrors(409, NAME_TAKEN, { appNameTaken: appNameTaken() }) },
      },
    },
    async (c) => {
      const body = c.req.valid("json");
      const target = {
        projectId: body.project_id ?? null,
        workspaceId: body.workspace_id ?? null,
        organizationId: body.organization_id ?? null,
      };
      const created = await writeAs(c, targetOrder(target), async (db) => {
        const outcome = await unlessNameTaken(createAppAsCaller(db, body.app_name, target, c.var.claim));
        // Refused by the database: one more round trip (and one per id of another shard), on this error path only, to tell
        // the client why.
        if (outcome.outcome !== "refused") return outcome;
        throw createRefusedError(await refusalAcrossShards(c, await findCreateRefusal(db, target), target), target);
      });
      settleClaim(c, created);
      // 200, not 201: existing clients of this API expect 200.
      return c.json({ app_id: created.appId, app_name: body.app_name } satisfies CreateAppOutput, 200);
    },
  ),
  route(
    {
      method: "patch",
      path: "/apps/{app_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "PATCH /apps/{id}", path: "/apps/{renamedId}", body: { app_name: "renamed" }, trips: 1 },
          { name: "PATCH to a taken name", path: "/apps/{appId}", body: { app_name: "renamed" }, status: 409, trips: 1 },
          // An app write that changes what a protected environment answers: its gate in the write's own batch.
          { name: "rename, protected", path: "/apps/{teamAppId}", body: { app_name: "team-renamed" }, status: 409, trips: 1 },
          {
            name: "rename, bypassed",
            path: "/apps/{teamAppId}",
            body: { app_name: "team-renamed" },
            headers: { "Protection-Bypass": "counted" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: appPath,
      protectionBypass: true,
      body: {
        schema: UpdateAppBody,
        id: "UpdateApp",
        examples: globalThis.DOCUMENTATION && { rename: { summary: "A new name", value: { app_name: "renamed-app" } } },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "updateApp",
        tag: "Apps",
        summary: "Rename an app",
        description: "The name follows the rules of create and must be free in the app's project.",
        ok: {
          schema: CreateAppOutput,
          description: "The app was renamed",
          example: { app_id: DEMO_APP_ID, app_name: "renamed-app" } satisfies CreateAppOutput,
        },
        errors: {
          404: responseRef("AppNotFound"),
          409: errorResponse(
            `${NAME_TAKEN}. Or: a protected environment of the app runs a config, whose answers a new name changes ` +
              `(\`application_ref.slug\`, lookups by name). ${PROTECTED}`,
            {
              appNameTaken: appNameTaken(),
              environmentProtected: environmentProtectedExample(),
            },
          ),
        },
      },
    },
    async (c) => {
      const { app_id } = c.req.valid("param");
      const { app_name } = c.req.valid("json");
      const bypassReason = c.var.bypassReason ?? null;
      assertDone(await writeAs(c, [app_id], (db) => unlessNameTaken(renameApp(db, app_id, app_name, bypassReason))));
      return c.json({ app_id, app_name } satisfies CreateAppOutput, 200);
    },
  ),
  route(
    {
      method: "delete",
      path: "/apps/{app_id}",
      roundTrips: globalThis.ROUTE_FACTS && { cases: [{ name: "DELETE /apps/{id}", path: "/apps/{deletedId}", trips: 1 }] },
      auth: "key",
      write: true,
      params: appPath,
      query: dryRunQueryOf("answer what the delete would remove (the app's configs, what its environments run)"),
      protectionBypass: true,
      doc: globalThis.DOCUMENTATION && {
        operationId: "removeApp",
        tag: "Apps",
        summary: "Delete an app and everything under it",
        description: "Its environments and their history, its variants and their revisions are deleted with it, all at once.",
        ok: {
          schema: z.union([z.null(), DeleteAppDryRun]),
          description: "The app is gone; with `?dry_run=true`, what deleting it would remove",
          examples: {
            deleted: { summary: "Deleted", value: null },
            dryRun: {
              summary: "?dry_run=true",
              value: {
                dry_run: true,
                app_id: DEMO_APP_ID,
                app_name: "demo-app",
                kind: "delete",
                configs: 1,
                environments: [
                  { environment: "production", environment_revision: 2, config_name: "main", revision: 2, protected: false },
                  { environment: "staging", environment_revision: 1, config_name: "main", revision: 1, protected: false },
                ],
              },
            },
          },
        },
        errors: {
          404: responseRef("AppNotFound"),
          409: errorResponse(`A protected environment of the app runs a config. ${PROTECTED}`, {
            environmentProtected: environmentProtectedExample(),
          }),
        },
      },
    },
    async (c) => {
      const { app_id } = c.req.valid("param");
      if (c.req.valid("query").dry_run) {
        const preview = await writeAs(c, [app_id], (db) => previewAppDeletion(db, app_id, c.var.bypassReason ?? null));
        if (preview === "not_found") throw appNotFound();
        if (preview === "forbidden") throw forbidden();
        if ("refusal" in preview) throw protectionRefused(preview);
        const { name, configs, running } = preview;
        return c.json({ dry_run: true, app_id, app_name: name, kind: "delete", configs, environments: running } as const, 200);
      }
      assertDone(await writeAs(c, [app_id], (db) => deleteApp(db, app_id, c.var.bypassReason ?? null)));
      return c.json(null, 200);
    },
  ),
];

/** The responses the routes above share in the document. */
export const appsResponses = (): SharedResponses => ({
  AppNameTaken: errorResponse(NAME_TAKEN, appNameTaken()),
  AppNotFound: errorResponse("The app does not exist or is not visible to the caller (not told apart)", appNotFound()),
});
