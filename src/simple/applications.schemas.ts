import * as z from "zod";
import { exactObject, listedRef, MAX_REFS, newSlugField, withoutNulls } from "../http/current-api";
import { documented, schemaName } from "../http/documentation";
import { nameField, newNameField, uuid } from "../http/fields";
import type { SimpleAppRow } from "./applications.sql.ts";

/** The platform's app flags, as its SDK sends them (`is_chat`, `is_custom`, ...): accepted, not kept (see the route). */
const flags = z
  .record(z.string().max(64), z.boolean())
  .refine((value) => Object.keys(value).length <= 16, "flags takes at most 16 flags")
  .optional()
  .apply(
    documented(
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

export const CreateSimpleApplicationBody = exactObject({
  application: exactObject({
    slug: newSlugField("slug"),
    name: z.string().nullish(),
    flags,
  }).refine(sameAsSlug, SAME_AS_SLUG),
});

export const EditSimpleApplicationBody = exactObject({
  application: exactObject({
    id: uuid.nullish().apply(documented(globalThis.DOCUMENTATION && { description: "If given, the id of the path" })),
    slug: z.string().nullish(),
    name: newNameField("name"),
    flags,
  }).refine(sameAsSlug, { ...SAME_AS_SLUG, path: ["slug"] }),
});

export const QuerySimpleApplicationsBody = exactObject({
  application: exactObject({
    slug: nameField("slug", { nfc: true }).nullish(),
  }).nullish(),
  application_refs: z.array(listedRef("application")).max(MAX_REFS).nullish(),
  include_archived: z.boolean().nullish(),
});

export const SimpleApplicationParams = z.object({ application_id: uuid });

// Response bodies: the typed shapes of what the routes answer, and the source of the OpenAPI document.

export const SimpleApplication = z
  .object({
    id: z.uuid(),
    slug: z.string().apply(documented(globalThis.DOCUMENTATION && { description: "The app's name" })),
    name: z.string().apply(documented(globalThis.DOCUMENTATION && { description: "The app's name, as `slug`" })),
    created_at: z.iso.datetime(),
    updated_at: z.iso
      .datetime()
      .apply(documented(globalThis.DOCUMENTATION && { description: "When the app was last renamed, else created" })),
    deleted_at: z.iso
      .datetime()
      .optional()
      .apply(
        documented(
          globalThis.DOCUMENTATION && { description: "When the app was archived (the platform's name); absent while it is not" },
        ),
      ),
    created_by_id: z.uuid(),
    flags: z.object({}),
    variant_id: z
      .uuid()
      .optional()
      .apply(documented(globalThis.DOCUMENTATION && { description: "Its oldest variant in lists; absent when it has none" })),
    revision_id: z
      .uuid()
      .optional()
      .apply(
        documented(globalThis.DOCUMENTATION && { description: "That variant's latest revision; absent before its first commit" }),
      ),
  })
  .apply(schemaName(globalThis.DOCUMENTATION && "SimpleApplication"));
export type SimpleApplication = z.infer<typeof SimpleApplication>;

export const SimpleApplicationResponse = z
  .object({ count: z.literal(1), application: SimpleApplication })
  .apply(schemaName(globalThis.DOCUMENTATION && "SimpleApplicationResponse"));
export const SimpleApplicationsResponse = z
  .object({ count: z.int().min(0), applications: z.array(SimpleApplication) })
  .apply(schemaName(globalThis.DOCUMENTATION && "SimpleApplicationsResponse"));

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
