import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { createAppAsCaller, deleteApp, findCreateRefusal, listApps, renameApp } from "../db/apps";
import type { WriteOutcome } from "../db/caller";
import { isUniqueViolation } from "../db/d1";
import { readAs, writeAs } from "../http/d1-session";
import { appNameTaken, appNotFound, forbidden } from "../http/errors";
import { AppParams } from "../http/fields";
import { idempotent, settleClaim } from "../http/idempotency";
import { jsonBody, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { CreateAppBody, type CreateAppOutput, ListAppsQuery, toAppListItem, UpdateAppBody } from "./apps.schemas";
import { createRefusedError } from "./create-refusal";

/** A name taken in the project fails the write with D1's UNIQUE error on `apps`: a 409. */
async function unlessNameTaken<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    throw isUniqueViolation(error, "apps") ? appNameTaken() : error;
  }
}

function assertDone(outcome: WriteOutcome): void {
  if (outcome === "not_found") throw appNotFound();
  if (outcome === "forbidden") throw forbidden();
}

/** Routes under /apps that act on apps themselves. */
export const appsRoutes = new Hono<AppEnv>()
  .get("/", requireApiKey, validate("query", ListAppsQuery), async (c) => {
    const query = c.req.valid("query");
    const filter = { name: query.app_name ?? null, workspaceId: query.workspace_id ?? null };
    const apps = await readAs(c, (db) => listApps(db, filter));
    return c.json(apps.map(toAppListItem), 200);
  })
  .post("/", requireApiKey, ...jsonBody(), idempotent, validate("json", CreateAppBody), async (c) => {
    const body = c.req.valid("json");
    const target = {
      projectId: body.project_id ?? null,
      workspaceId: body.workspace_id ?? null,
      organizationId: body.organization_id ?? null,
    };
    const created = await writeAs(c, async (db) => {
      const outcome = await unlessNameTaken(createAppAsCaller(db, body.app_name, target, c.var.claim));
      // Refused by the database: one more round trip, on this error path only, to tell the client why.
      if (outcome.outcome === "refused") throw createRefusedError(await findCreateRefusal(db, target), target);
      return outcome;
    });
    settleClaim(c, created);
    // 200, not 201: existing clients of this API expect 200.
    return c.json({ app_id: created.appId, app_name: body.app_name } satisfies CreateAppOutput, 200);
  })
  .patch("/:app_id", requireApiKey, validate("param", AppParams), ...jsonBody(), validate("json", UpdateAppBody), async (c) => {
    const { app_id } = c.req.valid("param");
    const { app_name } = c.req.valid("json");
    assertDone(await writeAs(c, (db) => unlessNameTaken(renameApp(db, app_id, app_name))));
    return c.json({ app_id, app_name } satisfies CreateAppOutput, 200);
  })
  .delete("/:app_id", requireApiKey, validate("param", AppParams), async (c) => {
    const { app_id } = c.req.valid("param");
    assertDone(await writeAs(c, (db) => deleteApp(db, app_id)));
    return c.json(null, 200);
  });
