import { type Context, Hono } from "hono";
import { etag, RETAINED_304_HEADERS } from "hono/etag";
import { requireApiKey } from "../auth/require-api-key";
import { createAppAsCaller, readEnvironmentRevisions } from "../db/apps";
import { isUniqueViolation, retryReadOnce } from "../db/d1-errors";
import { appEnvironmentNotFound, appNameTaken, unauthorized } from "../http/errors";
import { jsonBody, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { CreateAppBody, EnvironmentRevisionsParams } from "./apps.schemas";
import { explainRefusedCreate } from "./explain-refused-create";

/** D1 read-replication bookmark: sent back by clients so that they read their own writes. */
export const BOOKMARK_HEADER = "x-d1-bookmark";

/** D1's bookmark format; anything else a client sends is ignored rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/** A D1 session that starts where the client's bookmark says (or at `start`), and a way to hand its bookmark back. */
function d1Session(c: Context<AppEnv>, start: "first-primary" | "first-unconstrained") {
  const bookmark = c.req.header(BOOKMARK_HEADER)?.trim().toLowerCase();
  const session = c.env.DB.withSession(bookmark && BOOKMARK.test(bookmark) ? bookmark : start);
  return {
    session,
    returnBookmark: () => {
      const bookmark = session.getBookmark();
      if (bookmark) c.header(BOOKMARK_HEADER, bookmark);
    },
  };
}

// Clients poll the list to watch deployments: the ETag (a digest of the body) changes exactly when the record does.
const conditionalGet = etag({ retainedHeaders: [...RETAINED_304_HEADERS, BOOKMARK_HEADER] });

// The key is checked per route, before the body or path is validated, so unknown paths stay a plain 404.
// Each success path is one D1 round trip: the key check rides in the same statement or batch as the data.
export const appsRoutes = new Hono<AppEnv>()
  .use(async (c, next) => {
    await next();
    // Account data: never stored by browsers or shared caches, never sniffed as anything but JSON.
    c.header("Cache-Control", "no-store");
    c.header("X-Content-Type-Options", "nosniff");
  })
  .post("/", requireApiKey, ...jsonBody(), validate("json", CreateAppBody), async (c) => {
    const body = c.req.valid("json");
    const credentials = c.get("credentials");
    const { session, returnBookmark } = d1Session(c, "first-primary");
    const target = { projectId: body.project_id, workspaceId: body.workspace_id, organizationId: body.organization_id };
    let created: Awaited<ReturnType<typeof createAppAsCaller>>;
    try {
      created = await createAppAsCaller(session, credentials, body.app_name, target);
    } catch (error) {
      if (isUniqueViolation(error, "apps")) throw appNameTaken();
      throw error;
    }
    if (!created) return explainRefusedCreate(session, credentials, body);
    c.set("caller", { userId: created.createdBy });
    returnBookmark();
    // 200, not 201: existing clients of this API expect 200.
    return c.json({ app_id: created.appId, app_name: body.app_name }, 200);
  })
  .get(
    "/:app_id/revisions/:environment_name",
    requireApiKey,
    validate("param", EnvironmentRevisionsParams),
    conditionalGet,
    async (c) => {
      const { app_id, environment_name } = c.req.valid("param");
      const { session, returnBookmark } = d1Session(c, "first-unconstrained");
      const { userId, record } = await retryReadOnce(() =>
        readEnvironmentRevisions(session, c.get("credentials"), app_id, environment_name),
      );
      if (!userId) throw unauthorized();
      c.set("caller", { userId });
      if (!record) throw appEnvironmentNotFound();
      returnBookmark();
      return c.json(record, 200);
    },
  );
