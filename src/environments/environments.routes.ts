import { Hono } from "hono";
import { etag, RETAINED_304_HEADERS } from "hono/etag";
import { requireApiKey } from "../auth/require-api-key";
import { retryReadOnce } from "../db/d1";
import { readEnvironmentRevisions } from "../db/environments";
import { BOOKMARK_HEADER, d1Session } from "../http/d1-session";
import { appEnvironmentNotFound } from "../http/errors";
import { validate } from "../http/validation";
import type { AppEnv } from "../types";
import { EnvironmentRevisionsParams, toEnvironmentRevisions } from "./environments.schemas";

// Clients poll the record to watch deployments: the ETag (a digest of the body) changes exactly when the record does.
const conditionalGet = etag({ retainedHeaders: [...RETAINED_304_HEADERS, BOOKMARK_HEADER] });

/** Routes under /apps/:app_id that act on an app's environments. */
export const environmentsRoutes = new Hono<AppEnv>().get(
  "/:app_id/revisions/:environment_name",
  requireApiKey,
  validate("param", EnvironmentRevisionsParams),
  conditionalGet,
  async (c) => {
    const { app_id, environment_name } = c.req.valid("param");
    const { session, returnBookmark } = d1Session(c, "first-unconstrained");
    const found = await retryReadOnce(() => readEnvironmentRevisions(session, c.var.caller, app_id, environment_name));
    if (!found) throw appEnvironmentNotFound();
    returnBookmark();
    return c.json(toEnvironmentRevisions(found.environment, found.revisions), 200);
  },
);
