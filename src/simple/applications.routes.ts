import type { Context } from "hono";
import * as z from "zod/mini";
import { CALLER_KEY } from "../db/buckets";
import { isUniqueViolation } from "../db/d1";
import { appNotFound, protectionRefused } from "../http/core-errors";
import { NOTHING, Nothing, slugTakenResponse } from "../http/current-api";
import { type CallerEnv, readAs, writeAs } from "../http/d1-session";
import { forbidden, slugTaken, validationFailed } from "../http/errors";
import { settleClaim } from "../http/idempotency";
import {
  codedConflictResponse,
  DEMO_APP_ID,
  DEMO_USER_ID,
  environmentProtectedExample,
  PROTECTED,
  responseRef,
} from "../http/openapi-parts";
import { route } from "../http/route";
import {
  CreateSimpleApplicationBody,
  EditSimpleApplicationBody,
  QuerySimpleApplicationsBody,
  type SimpleApplication,
  SimpleApplicationParams,
  SimpleApplicationResponse,
  SimpleApplicationsResponse,
  toSimpleApplication,
} from "./applications.schemas";
import {
  createSimpleApp,
  nameTakenByArchivedApp,
  querySimpleApps,
  readSimpleApp,
  renameSimpleApp,
  type SimpleWrite,
  setSimpleAppArchived,
} from "./applications.sql.ts";

const demoApplication = {
  id: DEMO_APP_ID,
  slug: "demo-app",
  name: "demo-app",
  created_at: "2026-11-22T02:54:51.190Z",
  updated_at: "2026-11-22T02:54:51.190Z",
  created_by_id: DEMO_USER_ID,
  flags: {},
  variant_id: "01a2012d-894c-77b0-ba2e-5b0e6747124c",
  revision_id: "01a2012d-89b1-72d5-889a-f5c51767a9f4",
} satisfies SimpleApplication;

const newApplication = {
  id: "01a2012d-9c3e-7f10-8a4b-2d6e8f0a1c3e",
  slug: "my-app",
  name: "my-app",
  created_at: "2026-11-22T03:01:12.408Z",
  updated_at: "2026-11-22T03:01:12.408Z",
  created_by_id: DEMO_USER_ID,
  flags: {},
} satisfies SimpleApplication;

const applicationPath = {
  schema: SimpleApplicationParams,
  examples: globalThis.DOCUMENTATION && { application_id: DEMO_APP_ID },
};

const one = (application: SimpleApplication) => ({ count: 1 as const, application });

const SLUG_TAKEN = "The project has an app of that name (an archived one keeps it: the message says so); nothing was written";

/** A write's 409 for a slug taken: the platform's shape, saying when the app holding it is archived. */
async function slugTakenError<E extends CallerEnv>(c: Context<E>, name: string, appId: string | null) {
  return slugTaken(name, await readAs(c, [appId], (db) => nameTakenByArchivedApp(db, name, appId)));
}

/** The app a write answers, or the error of a write that found nothing it may change, or that was refused. */
function written({ outcome, app }: SimpleWrite) {
  if (typeof outcome === "object") throw protectionRefused(outcome);
  if (outcome === "forbidden") throw forbidden();
  if (outcome === "not_found" || !app) throw appNotFound();
  return one(toSimpleApplication(app));
}

/** Why an app write may be refused: it changes what the app's environments answer (src/core/app-protection.sql.ts). */
const GATED =
  "It changes what the app's environments answer: refused while a protected environment of the app runs a config, " +
  "as a deploy to it is (409), unless with a Protection-Bypass from a role allowed it.";

const archiveRoute = (archive: boolean) =>
  route(
    {
      method: "post",
      path: archive ? "/simple/applications/{application_id}/archive" : "/simple/applications/{application_id}/unarchive",
      roundTrips:
        globalThis.ROUTE_FACTS &&
        (archive
          ? {
              cases: [
                { name: "POST /simple/applications/{id}/archive", path: "/simple/applications/{simpleAppId}/archive", trips: 1 },
                {
                  name: "POST /simple/applications/{id}/archive, a viewer",
                  path: "/simple/applications/{teamAppId}/archive",
                  key: "viewer",
                  status: 403,
                  trips: 1,
                },
                {
                  name: "POST /simple/applications/{id}/archive, absent",
                  path: "/simple/applications/{unknownId}/archive",
                  status: 404,
                  trips: 1,
                },
                // An app write that changes what a protected environment answers: its gate in the write's own batch.
                { name: "archive, protected", path: "/simple/applications/{teamAppId}/archive", status: 409, trips: 1 },
                {
                  name: "archive, bypassed",
                  path: "/simple/applications/{teamAppId}/archive",
                  headers: { "Protection-Bypass": "counted" },
                  trips: 1,
                },
              ],
            }
          : {
              cases: [
                {
                  name: "POST /simple/applications/{id}/unarchive",
                  path: "/simple/applications/{simpleAppId}/unarchive",
                  trips: 1,
                },
              ],
            }),
      auth: "key",
      write: true,
      params: applicationPath,
      idempotencyKey: "validates",
      protectionBypass: true,
      doc: globalThis.DOCUMENTATION && {
        operationId: archive ? "archiveSimpleApplication" : "unarchiveSimpleApplication",
        tag: "Simple applications",
        summary: archive ? "Archive an app (today's SDK's AppManager.delete)" : "Unarchive an app",
        description: archive
          ? "The app leaves app lists and lookups by name, in both APIs; its id still resolves, its name stays taken, and " +
            "its variants, environments and history stay as they are. Archiving an archived app changes nothing and " +
            `records no event. The Idempotency-Key is checked, not stored: archiving again is harmless. ${GATED}`
          : `The app is back in lists and lookups by name. Unarchiving an app that is not archived changes nothing. ${GATED}`,
        ok: {
          schema: SimpleApplicationResponse,
          description: archive ? "The app, archived (`deleted_at`)" : "The app, no longer archived",
          example: one(archive ? { ...demoApplication, deleted_at: "2026-11-22T03:20:00.000Z" } : demoApplication),
        },
        errors: {
          404: responseRef("AppNotFound"),
          409: codedConflictResponse(`A protected environment of the app runs a config. ${PROTECTED}`, {
            environmentProtected: environmentProtectedExample(),
          }),
        },
      },
    },
    async (c) => {
      const { application_id } = c.req.valid("param");
      const bypassReason = c.var.bypassReason ?? null;
      const archived = await writeAs(c, [application_id], (db) =>
        setSimpleAppArchived(db, application_id, archive, bypassReason),
      );
      return c.json(written(archived), 200);
    },
  );

/** The current API's apps (docs/CURRENT-SDK-API.md, calls 1 to 5): today's SDK's AppManager. */
export const simpleApplicationsRoutes = [
  route(
    {
      method: "post",
      path: "/simple/applications",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /simple/applications/",
            path: "/simple/applications/",
            body: { application: { slug: "current-new", name: "current-new" } },
            trips: 1,
          },
          {
            name: "POST /simple/applications/, a name taken",
            path: "/simple/applications/",
            body: { application: { slug: "counted", name: "counted" } },
            status: 409,
            trips: 2,
          },
        ],
      },
      auth: "key",
      write: true,
      idempotencyKey: "replays",
      body: {
        schema: CreateSimpleApplicationBody,
        id: "CreateSimpleApplication",
        examples: globalThis.DOCUMENTATION && {
          asTheSdkSends: { summary: "As AppManager.create sends it", value: { application: { slug: "my-app", name: "my-app" } } },
          chat: {
            summary: "With the SDK's flags for a chat app",
            value: { application: { slug: "my-chat", name: "my-chat", flags: { is_chat: true } } },
          },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "createSimpleApplication",
        tag: "Simple applications",
        summary: "Create an app in the key's project (today's SDK's AppManager.create)",
        description:
          "Makes the app only, with its environments development, staging and production, as POST /apps does: no " +
          "default variant (the platform makes one). `slug` is the app's name: it keeps to the platform's slug rule and " +
          "to the rules of a legacy app name; `name`, if given, must be the same. The path is taken with and without " +
          "a trailing slash.",
        ok: { schema: SimpleApplicationResponse, description: "The new app", example: one(newApplication) },
        errors: {
          409: slugTakenResponse(SLUG_TAKEN, "my-app", { environmentProtected: environmentProtectedExample() }),
        },
      },
    },
    async (c) => {
      const { slug } = c.req.valid("json").application;
      let created: Awaited<ReturnType<typeof createSimpleApp>>;
      try {
        created = await writeAs(c, [CALLER_KEY], (db) => createSimpleApp(db, slug, c.var.claim));
      } catch (error) {
        if (isUniqueViolation(error, "apps")) throw await slugTakenError(c, slug, null);
        throw error;
      }
      settleClaim(c, created);
      if (created.outcome !== "created") throw forbidden();
      return c.json(one(toSimpleApplication(created.app)), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/simple/applications/query",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "POST /simple/applications/query", path: "/simple/applications/query", body: {}, trips: 1 }],
      },
      auth: "key",
      idempotencyKey: "validates",
      body: {
        schema: QuerySimpleApplicationsBody,
        id: "QuerySimpleApplications",
        examples: globalThis.DOCUMENTATION && {
          all: { summary: "Every app of the key's project (AppManager.list)", value: {} },
          bySlug: { summary: "One app by its slug", value: { application: { slug: "demo-app" } } },
          byRefs: {
            summary: "Apps by id or slug, archived ones too",
            value: { application_refs: [{ id: DEMO_APP_ID }, { slug: "my-app" }], include_archived: true },
          },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "querySimpleApplications",
        tag: "Simple applications",
        summary: "List the apps of the key's project, or those a query names",
        description:
          "Oldest first. `application.slug` and `application_refs` (each by id or slug; an app is listed when any ref " +
          "names it) narrow the list; archived apps are listed only with `include_archived: true`. Nothing matches: " +
          '`{"count": 0, "applications": []}`.',
        ok: {
          schema: SimpleApplicationsResponse,
          description: "The apps, oldest first",
          example: { count: 1, applications: [demoApplication] },
        },
      },
    },
    async (c) => {
      const body = c.req.valid("json");
      const query = {
        slug: body.application?.slug ?? null,
        refs: body.application_refs ?? null,
        includeArchived: body.include_archived ?? false,
      };
      // The key's project's apps only, whatever the refs name: on the key's shard.
      const apps = await readAs(c, [CALLER_KEY], (db) => querySimpleApps(db, query));
      return c.json({ count: apps.length, applications: apps.map(toSimpleApplication) }, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/simple/applications/{application_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET /simple/applications/{id}", path: "/simple/applications/{simpleAppId}", trips: 1 },
          { name: "GET /simple/applications/{id}, absent", path: "/simple/applications/{unknownId}", trips: 1 },
        ],
      },
      auth: "key",
      params: applicationPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "getSimpleApplication",
        tag: "Simple applications",
        summary: "Read an app by its id",
        description:
          'An archived app too (with `deleted_at`). No app the caller can see: 200 `{"count": 0}`, which today\'s SDK ' +
          "expects.",
        ok: {
          schema: z.xor([SimpleApplicationResponse, Nothing]),
          description: "The app, or none",
          examples: {
            found: { summary: "Found", value: one(demoApplication) },
            notFound: { summary: "Not found, or not visible to the caller (not told apart)", value: NOTHING },
          },
        },
      },
    },
    async (c) => {
      const { application_id } = c.req.valid("param");
      const app = await readAs(c, [application_id], (db) => readSimpleApp(db, application_id));
      return c.json(app ? one(toSimpleApplication(app)) : NOTHING, 200);
    },
  ),
  route(
    {
      method: "put",
      path: "/simple/applications/{application_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "PUT /simple/applications/{id}",
            path: "/simple/applications/{simpleAppId}",
            body: { application: { id: "{simpleAppId}", slug: "current-renamed", name: "current-renamed" } },
            trips: 1,
          },
          {
            name: "PUT /simple/applications/{id}, a name taken",
            path: "/simple/applications/{simpleAppId}",
            body: { application: { slug: "counted", name: "counted" } },
            status: 409,
            trips: 2,
          },
        ],
      },
      auth: "key",
      write: true,
      params: applicationPath,
      idempotencyKey: "validates",
      protectionBypass: true,
      body: {
        schema: EditSimpleApplicationBody,
        id: "EditSimpleApplication",
        examples: globalThis.DOCUMENTATION && {
          asTheSdkSends: {
            summary: "As AppManager.update sends it",
            value: { application: { id: DEMO_APP_ID, slug: "renamed-app", name: "renamed-app" } },
          },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "editSimpleApplication",
        tag: "Simple applications",
        summary: "Rename an app (today's SDK's AppManager.update)",
        description:
          "Renames the app to `name` (`slug`, if given, must be the same), by the rules and with the checks of PATCH " +
          "/apps/{app_id}. The same name again changes nothing and records no event. The Idempotency-Key is checked, " +
          `not stored: a rename repeated is the same rename. ${GATED}`,
        ok: {
          schema: SimpleApplicationResponse,
          description: "The app, renamed",
          example: one({ ...demoApplication, slug: "renamed-app", name: "renamed-app" }),
        },
        errors: {
          404: responseRef("AppNotFound"),
          409: slugTakenResponse(SLUG_TAKEN, "my-app", { environmentProtected: environmentProtectedExample() }),
        },
      },
    },
    async (c) => {
      const { application_id } = c.req.valid("param");
      const { id, name } = c.req.valid("json").application;
      if (id != null && id !== application_id) {
        throw validationFailed([
          { loc: ["body", "application", "id"], msg: "Value error, id must be the path's application_id", type: "value_error" },
        ]);
      }
      try {
        const bypassReason = c.var.bypassReason ?? null;
        const renamed = await writeAs(c, [application_id], (db) => renameSimpleApp(db, application_id, name, bypassReason));
        return c.json(written(renamed), 200);
      } catch (error) {
        if (isUniqueViolation(error, "apps")) throw await slugTakenError(c, name, application_id);
        throw error;
      }
    },
  ),
  archiveRoute(true),
  archiveRoute(false),
];
