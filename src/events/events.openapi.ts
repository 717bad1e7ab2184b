import type * as z from "zod";
import { forbidden, organizationNotFound } from "../http/errors";
import {
  DEMO_IDS,
  errorResponse,
  jsonResponse,
  operationResponses,
  parametersOf,
  requestHeaders,
  schemaRef,
  tagged,
} from "../http/openapi-parts";
import { type EventBody, EventPage, ListEventsQuery } from "./events.schemas";

/** An environment.deployed event, as the audit log and webhooks show it. */
export const deployedExample = {
  id: "01a20c07-a195-7289-98bf-32e9a14d3e9e",
  type: "environment.deployed",
  occurred_at: "2026-11-23T22:47:53.450Z",
  organization_id: DEMO_IDS.organization,
  workspace_id: DEMO_IDS.workspace,
  project_id: DEMO_IDS.project,
  actor: { user_id: DEMO_IDS.user, username: "demo", api_key_prefix: "localdev" },
  data: {
    app_id: DEMO_IDS.app,
    app_name: "demo-app",
    environment: "staging",
    environment_revision: 2,
    environment_revision_id: "01a20c07-a195-7289-98bf-32e9a14d3e9d",
    previous: null,
    current: {
      config_name: "main",
      variant_id: "01a20c07-a116-75ee-b8fe-509449c00884",
      revision: 2,
      revision_id: "01a20c07-a143-7747-b65b-cd00c42b4a25",
    },
  },
} satisfies z.output<typeof EventBody>;

/** The OpenAPI fragment of src/events/events.routes.ts (the audit log); built with the document, on its first request. */
export const eventsOpenApi = () => ({
  paths: {
    "/events": {
      get: {
        operationId: "listEvents",
        tags: tagged("Events"),
        summary: "Read an organization's audit log",
        description:
          "Every change made in the organization, through this API or by the service's operators, newest first, 50 a " +
          "page (`limit` up to 200), continued with `cursor` (the previous page's `next_cursor`). Each change and its " +
          "event are recorded together, or neither is. Filters: `type` (repeatable; `environment.` matches its family), `app_id`, `actor` (a user id), " +
          "`since` and `until` (RFC 3339). `organization_id` defaults to the key's project's organization. Owners and " +
          "workspace admins read it; other roles get 403; an organization the caller is not a member of is 404.",
        parameters: [
          ...requestHeaders(),
          ...parametersOf("query", ListEventsQuery, {
            organization_id: DEMO_IDS.organization,
            app_id: DEMO_IDS.app,
            type: "environment.",
            actor: DEMO_IDS.user,
            since: "2026-11-01T00:00:00Z",
            until: "2026-12-01T00:00:00Z",
            cursor: "01a20c07-a195-7289-98bf-32e9a14d3e9e",
            limit: 50,
          }),
        ],
        responses: operationResponses(
          jsonResponse("A page of events, newest first", schemaRef("EventPage"), {
            example: { events: [deployedExample], next_cursor: null } satisfies z.output<typeof EventPage>,
          }),
          {
            403: errorResponse("The caller's role there is not owner or workspace_admin, or the key is read-only", forbidden()),
            404: errorResponse("Not a member of that organization (or no such organization)", organizationNotFound()),
          },
        ),
      },
    },
  },
  inputSchemas: {},
  outputSchemas: { EventPage },
  responses: {},
});
