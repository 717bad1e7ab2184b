import * as z from "zod/mini";
import { exactObject, listedRef, MAX_REFS, newSlugField, withoutNulls } from "../http/current-api";
import { documented, schemaName } from "../http/documentation";
import { nameField, newNameField, uuid } from "../http/fields";
import type { SimpleAppRow } from "./applications.sql.ts";

/** The platform's app flags, as its SDK sends them (`is_chat`, `is_custom`, ...): accepted, not kept (see the route). */
const flags = /* @__PURE__ */ z
  .optional(
    z
      .record(z.string().check(z.maxLength(64)), z.boolean())
      .check(z.refine((value) => Object.keys(value).length <= 16, "flags takes at most 16 flags")),
  )
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "Accepted for the SDK's sake and not kept: every app answers `flags: {}` (this service has no app types)",
      },
    ),
  );

/** `name` beside `slug`: both are the app's one name here, so a name given must be the slug. */
const sameAsSlug = (entity: { slug?: string | null; name?: string | null }) => entity.name == null || entity.name === entity.slug;
const SAME_AS_SLUG = {
  message: "name must be the slug: an app's slug and name are its one name here (docs/CURRENT-SDK-API.md)",
  path: ["name"],
};

export const CreateSimpleApplicationBody = /* @__PURE__ */ exactObject({
  application: exactObject({
    slug: newSlugField("slug"),
    name: z.nullish(z.string()),
    flags,
  }).check(z.refine(sameAsSlug, SAME_AS_SLUG)),
});

export const EditSimpleApplicationBody = /* @__PURE__ */ exactObject({
  application: exactObject({
    id: z
      .nullish(uuid)
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "If given, the id of the path" })),
    slug: z.nullish(z.string()),
    name: newNameField("name"),
    flags,
  }).check(z.refine(sameAsSlug, { ...SAME_AS_SLUG, path: ["slug"] })),
});

export const QuerySimpleApplicationsBody = /* @__PURE__ */ exactObject({
  application: z.nullish(
    exactObject({
      slug: z.nullish(nameField("slug", { nfc: true })),
    }),
  ),
  application_refs: z.nullish(z.array(listedRef("application")).check(z.maxLength(MAX_REFS))),
  include_archived: z.nullish(z.boolean()),
});

export const SimpleApplicationParams = /* @__PURE__ */ z.object({ application_id: uuid });

// Response bodies: the typed shapes of what the routes answer, and the source of the OpenAPI document.

export const SimpleApplication = /* @__PURE__ */ z
  .object({
    id: z.uuid(),
    slug: z.string().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The app's name" })),
    name: z.string().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The app's name, as `slug`" })),
    created_at: z.iso.datetime(),
    updated_at: z.iso
      .datetime()
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "When the app was last renamed, else created" }),
      ),
    deleted_at: z
      .optional(z.iso.datetime())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "When the app was archived (the platform's name); absent while it is not" },
        ),
      ),
    created_by_id: z.uuid(),
    flags: z.object({}),
    variant_id: z
      .optional(z.uuid())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Its oldest variant in lists; absent when it has none" },
        ),
      ),
    revision_id: z
      .optional(z.uuid())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "That variant's latest revision; absent before its first commit" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SimpleApplication"));
export type SimpleApplication = z.infer<typeof SimpleApplication>;

export const SimpleApplicationResponse = /* @__PURE__ */ z
  .object({ count: z.literal(1), application: SimpleApplication })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SimpleApplicationResponse"));
export const SimpleApplicationsResponse = /* @__PURE__ */ z
  .object({ count: z.int().check(z.gte(0)), applications: z.array(SimpleApplication) })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SimpleApplicationsResponse"));

export const toSimpleApplication = (app: SimpleAppRow): SimpleApplication =>
  withoutNulls({
    id: app.id,
    slug: app.name,
    name: app.name,
    created_at: app.createdAt,
    updated_at: app.updatedAt,
    deleted_at: app.archivedAt,
    created_by_id: app.createdById,
    flags: {},
    variant_id: app.variantId,
    revision_id: app.revisionId,
  });
