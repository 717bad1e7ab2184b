import * as z from "zod";
import { documented, schemaName } from "../http/documentation";
import { uuid } from "../http/fields";

const typeName = z.string().regex(/^[a-z_]+(\.[a-z_]*)?$/, "type must be an event type (app.created) or a family (app.)");

/** `GET /events`: the audit log's filters and page. */
export const ListEventsQuery = z.object({
  organization_id: uuid
    .optional()
    .apply(documented(globalThis.DOCUMENTATION && { description: "Default: the organization of the key's project" })),
  app_id: uuid.optional(),
  type: z
    .union([typeName, z.array(typeName)])
    .optional()
    .transform((types) => (types === undefined ? [] : [types].flat()))
    .apply(
      documented(globalThis.DOCUMENTATION && { description: "Repeatable; a family such as `environment.` matches its types" }),
    ),
  actor: uuid.optional().apply(documented(globalThis.DOCUMENTATION && { description: "The acting user's id" })),
  since: z.iso
    .datetime({ offset: true })
    .transform((at) => new Date(at).toISOString())
    .optional(),
  until: z.iso
    .datetime({ offset: true })
    .transform((at) => new Date(at).toISOString())
    .optional(),
  cursor: uuid.optional().apply(documented(globalThis.DOCUMENTATION && { description: "next_cursor of the previous page" })),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

// Response bodies.

export const EventBody = z.object({
  id: z.uuid(),
  type: z.string(),
  occurred_at: z.iso.datetime(),
  organization_id: z.uuid(),
  workspace_id: z.uuid().nullable(),
  project_id: z.uuid().nullable(),
  actor: z.object({
    user_id: z.uuid().nullable(),
    username: z.string().nullable(),
    api_key_prefix: z
      .string()
      .nullable()
      .apply(
        documented(
          globalThis.DOCUMENTATION && { description: "Null for a change an operator made without a key; never a key's secret" },
        ),
      ),
  }),
  data: z.record(z.string(), z.unknown()),
});

export const EventPage = z
  .object({
    events: z.array(EventBody),
    next_cursor: z
      .uuid()
      .nullable()
      .apply(documented(globalThis.DOCUMENTATION && { description: "Pass as `cursor` for the next page; null: no more" })),
  })
  .apply(schemaName(globalThis.DOCUMENTATION && "EventPage"));
