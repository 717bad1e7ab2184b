import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { createAppAsCaller, findCreateRefusal } from "../db/apps";
import { isUniqueViolation } from "../db/d1";
import { d1Session } from "../http/d1-session";
import { appNameTaken } from "../http/errors";
import { jsonBody, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { CreateAppBody, type CreateAppOutput } from "./apps.schemas";
import { createRefusedError } from "./create-refusal";

/** Routes under /apps that act on apps themselves. */
export const appsRoutes = new Hono<AppEnv>().post(
  "/",
  requireApiKey,
  ...jsonBody(),
  validate("json", CreateAppBody),
  async (c) => {
    const body = c.req.valid("json");
    const target = {
      projectId: body.project_id ?? null,
      workspaceId: body.workspace_id ?? null,
      organizationId: body.organization_id ?? null,
    };
    const { session, returnBookmark } = d1Session(c, "first-primary");
    let appId: string | null;
    try {
      appId = await createAppAsCaller(session, c.var.caller, body.app_name, target);
    } catch (error) {
      throw isUniqueViolation(error, "apps") ? appNameTaken() : error;
    }
    // Refused by the database: one more round trip, on this error path only, to tell the client why.
    if (!appId) throw createRefusedError(await findCreateRefusal(session, c.var.caller, target), target);
    returnBookmark();
    // 200, not 201: existing clients of this API expect 200.
    return c.json({ app_id: appId, app_name: body.app_name } satisfies CreateAppOutput, 200);
  },
);
