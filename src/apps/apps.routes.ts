import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { createApp, listEnvironmentRevisions } from "../db/apps";
import { isUniqueViolation } from "../db/unique-violation";
import { appEnvironmentNotFound, appNameTaken } from "../http/errors";
import { jsonBody, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { CreateAppBody, EnvironmentRevisionsParams } from "./apps.schemas";
import { resolveTargetProject } from "./target-project";

// The key is checked per route, before the body or path is validated, so unknown paths stay a plain 404.
export const appsRoutes = new Hono<AppEnv>()
  .post("/", requireApiKey, ...jsonBody(), validate("json", CreateAppBody), async (c) => {
    const body = c.req.valid("json");
    const caller = c.get("caller");
    const projectId = await resolveTargetProject(c.env.DB, caller, body);
    try {
      // 200, not 201: existing clients of this API expect 200.
      return c.json(await createApp(c.env.DB, { projectId, name: body.app_name, createdBy: caller.userId }), 200);
    } catch (error) {
      if (isUniqueViolation(error, "apps")) throw appNameTaken();
      throw error;
    }
  })
  .get("/:app_id/revisions/:environment_name", requireApiKey, validate("param", EnvironmentRevisionsParams), async (c) => {
    const { app_id, environment_name } = c.req.valid("param");
    const record = await listEnvironmentRevisions(c.env.DB, c.get("caller").userId, app_id, environment_name);
    if (!record) throw appEnvironmentNotFound();
    return c.json(record, 200);
  });
