import * as z from "zod/mini";
import { documented, schemaName } from "../http/documentation";
import { uuid } from "../http/fields";

const typeName = /* @__PURE__ */ z
  .string()
  .check(z.regex(/^[a-z_]+(\.[a-z_]*)?$/, "type must be an event type (app.created) or a family (app.)"));

/** `GET /events`: the audit log's filters and page. */
export const ListEventsQuery = /* @__PURE__ */ z.object({
  organization_id: z
    .optional(uuid)
    .apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Default: the organization of the key's project" }),
    ),
  app_id: z.optional(uuid),
  type: z
    .pipe(
      z.optional(z.union([typeName, z.array(typeName)])),
      z.transform((types) => (types === undefined ? [] : [types].flat())),
    )
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "Repeatable; a family such as `environment.` matches its types" },
      ),
    ),
  actor: z.optional(uuid).apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The acting user's id" })),
  since: z.optional(
    z.pipe(
      z.iso.datetime({ offset: true }),
      z.transform((at) => new Date(at).toISOString()),
    ),
  ),
  until: z.optional(
    z.pipe(
      z.iso.datetime({ offset: true }),
      z.transform((at) => new Date(at).toISOString()),
    ),
  ),
  cursor: z
    .optional(uuid)
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "next_cursor of the previous page" })),
  limit: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(200)), 50),
});

// Response bodies.

export const EventBody = /* @__PURE__ */ z.object({
  id: /* @__PURE__ */ z.uuid(),
  type: /* @__PURE__ */ z.string(),
  occurred_at: /* @__PURE__ */ z.iso.datetime(),
  organization_id: /* @__PURE__ */ z.uuid(),
  workspace_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
  project_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
  actor: /* @__PURE__ */ z.object({
    user_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
    username: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.string()),
    api_key_prefix: /* @__PURE__ */ z
      .nullable(/* @__PURE__ */ z.string())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Null for a change an operator made without a key; never a key's secret" },
        ),
      ),
  }),
  data: /* @__PURE__ */ z.record(/* @__PURE__ */ z.string(), /* @__PURE__ */ z.unknown()),
});

export const EventPage = /* @__PURE__ */ z
  .object({
    events: z.array(EventBody),
    next_cursor: z
      .nullable(z.uuid())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Pass as `cursor` for the next page; null: no more" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "EventPage"));
