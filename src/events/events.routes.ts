import type * as z from "zod/mini";
import { readAs } from "../http/d1-session";
import { forbidden } from "../http/errors";
import { DEMO_APP_ID, DEMO_ORGANIZATION_ID, DEMO_USER_ID, errorResponse } from "../http/openapi-parts";
import { route } from "../http/route";
import { organizationNotFound } from "../organizations/errors";
import { EventPage, ListEventsQuery } from "./events.schemas";
import { listEvents } from "./events.sql.ts";
import { deployedExample } from "./examples";

/** GET /events: the audit log of an organization, newest first, for its owners and workspace admins. */
export const eventsRoutes = [
  route(
    {
      method: "get",
      path: "/events",
      roundTrips: globalThis.ROUTE_FACTS && { cases: [{ name: "GET /events", path: "/events?type=app.&limit=5", trips: 1 }] },
      auth: "key",
      query: {
        schema: ListEventsQuery,
        examples: globalThis.DOCUMENTATION && {
          organization_id: DEMO_ORGANIZATION_ID,
          app_id: DEMO_APP_ID,
          type: "environment.",
          actor: DEMO_USER_ID,
          since: "2026-11-01T00:00:00Z",
          until: "2026-12-01T00:00:00Z",
          cursor: "01a20c07-a195-7289-98bf-32e9a14d3e9e",
          limit: 50,
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listEvents",
        tag: "Events",
        summary: "Read an organization's audit log",
        description:
          "Every change made in the organization, through this API or by the service's operators, newest first, 50 a " +
          "page (`limit` up to 200), continued with `cursor` (the previous page's `next_cursor`). Each change and its " +
          "event are recorded together, or neither is. Filters: `type` (repeatable; `environment.` matches its family), `app_id`, `actor` (a user id), " +
          "`since` and `until` (RFC 3339). `organization_id` defaults to the key's project's organization. Owners and " +
          "workspace admins read it; other roles get 403; an organization the caller is not a member of is 404.",
        ok: {
          schema: EventPage,
          description: "A page of events, newest first",
          example: { events: [deployedExample], next_cursor: null } satisfies z.output<typeof EventPage>,
        },
        errors: {
          403: errorResponse("The caller's role there is not owner or workspace_admin, or the key is read-only", forbidden()),
          404: errorResponse("Not a member of that organization (or no such organization)", organizationNotFound()),
        },
      },
    },
    async (c) => {
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
      const page = await readAs(c, [filter.organizationId], (db) => listEvents(db, filter));
      if (page.outcome !== "done") throw page.outcome === "forbidden" ? forbidden() : organizationNotFound();
      return c.json({ events: page.events, next_cursor: page.more ? (page.events.at(-1)?.id ?? null) : null }, 200);
    },
  ),
];
