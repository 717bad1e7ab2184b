import { Hono } from "hono";
import { etag, RETAINED_304_HEADERS } from "hono/etag";
import { requireApiKey } from "../auth/require-api-key";
import { listEnvironments, readEnvironmentRevisions } from "../db/environments";
import { BOOKMARK_HEADER, readAs } from "../http/d1-session";
import { appEnvironmentNotFound, appNotFound } from "../http/errors";
import { AppParams } from "../http/fields";
import { validate } from "../http/validation";
import type { AppEnv } from "../types";
import { environmentETag } from "./environment-etag";
import { EnvironmentRevisionsParams, toEnvironmentOutput, toEnvironmentRevisions } from "./environments.schemas";

// Clients poll the record to watch deployments, and name it in If-Match when they deploy: its ETag (see
// environment-etag.ts) changes exactly when the record does; this answers If-None-Match with a 304.
const conditionalGet = etag({ retainedHeaders: [...RETAINED_304_HEADERS, BOOKMARK_HEADER] });

/** Routes under /apps/:app_id that act on an app's environments. */
export const environmentsRoutes = new Hono<AppEnv>()
  .get(
    "/:app_id/revisions/:environment_name",
    requireApiKey,
    validate("param", EnvironmentRevisionsParams),
    conditionalGet,
    async (c) => {
      const { app_id, environment_name } = c.req.valid("param");
      const found = await readAs(c, (db) => readEnvironmentRevisions(db, app_id, environment_name));
      if (!found) throw appEnvironmentNotFound();
      c.header("ETag", environmentETag({ environmentId: found.environment.id, revision: found.environment.revision }));
      return c.json(toEnvironmentRevisions(found.environment, found.revisions), 200);
    },
  )
  .get("/:app_id/environments", requireApiKey, validate("param", AppParams), async (c) => {
    const { app_id } = c.req.valid("param");
    const environments = await readAs(c, (db) => listEnvironments(db, app_id));
    // Every app has its environments: none means no app the caller can see.
    if (environments.length === 0) throw appNotFound();
    return c.json(environments.map(toEnvironmentOutput), 200);
  });
