import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { listEvents } from "../db/events";
import { readAs } from "../http/d1-session";
import { forbidden, organizationNotFound } from "../http/errors";
import { validate } from "../http/validation";
import type { AppEnv } from "../types";
import { ListEventsQuery } from "./events.schemas";

/** GET /events: the audit log of an organization, newest first, for its owners and workspace admins. */
export const eventsRoutes = new Hono<AppEnv>().get("/", requireApiKey, validate("query", ListEventsQuery), async (c) => {
  const query = c.req.valid("query");
  const filter = {
    organizationId: query.organization_id ?? null,
    appId: query.app_id ?? null,
    types: query.type,
    actor: query.actor ?? null,
    since: query.since ?? null,
    until: query.until ?? null,
    cursor: query.cursor ?? null,
    limit: query.limit,
  };
  const page = await readAs(c, (db) => listEvents(db, filter));
  if (page.outcome !== "done") throw page.outcome === "forbidden" ? forbidden() : organizationNotFound();
  return c.json({ events: page.events, next_cursor: page.more ? (page.events.at(-1)?.id ?? null) : null }, 200);
});
