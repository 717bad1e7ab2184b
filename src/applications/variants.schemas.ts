import * as z from "zod/mini";
import { exactObject, listedRef, MAX_REFS, newSlugField, withoutNulls } from "../http/current-api";
import { documented, schemaName } from "../http/documentation";
import { nameField, uuid } from "../http/fields";
import type { VariantRow } from "./variants.sql.ts";

export const AddApplicationVariantBody = /* @__PURE__ */ exactObject({
  application_variant: exactObject({
    application_id: uuid,
    slug: newSlugField("slug"),
    name: z.nullish(z.string()),
  }).check(
    z.refine((variant) => variant.name == null || variant.name === variant.slug, {
      message: "name must be the slug: a variant's slug and name are its one config name here (docs/CURRENT-SDK-API.md)",
      path: ["name"],
    }),
  ),
});

export const QueryApplicationVariantsBody = /* @__PURE__ */ exactObject({
  application_refs: z.nullish(z.array(listedRef("application")).check(z.maxLength(MAX_REFS))),
  application_variant: z.nullish(exactObject({ slug: z.nullish(nameField("slug", { nfc: true })) })),
  application_variant_refs: z.nullish(z.array(listedRef("variant")).check(z.maxLength(MAX_REFS))),
  include_archived: z.nullish(z.boolean()),
});

export const ApplicationVariantParams = /* @__PURE__ */ z.object({ variant_id: uuid });

// Response bodies: the typed shapes of what the routes answer, and the source of the OpenAPI document.

export const ApplicationVariant = /* @__PURE__ */ z
  .object({
    id: z.uuid(),
    slug: z.string().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The variant's config name" })),
    name: z.string().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The config name, as `slug`" })),
    application_id: z.uuid(),
    application_slug: z.string().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The app's name" })),
    artifact_id: z.uuid().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "As `application_id`" })),
    artifact_slug: z
      .string()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "As `application_slug`" })),
    created_at: z.iso.datetime(),
    created_by_id: z
      .optional(z.uuid())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Who committed its revision 1; absent before its first commit" },
        ),
      ),
    updated_at: z.iso
      .datetime()
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "When its latest revision was committed, else when it was made" },
        ),
      ),
    deleted_at: z
      .optional(z.iso.datetime())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "When it was archived (the platform's name); absent while it is not" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ApplicationVariant"));
export type ApplicationVariant = z.infer<typeof ApplicationVariant>;

export const ApplicationVariantResponse = /* @__PURE__ */ z
  .object({ count: z.literal(1), application_variant: ApplicationVariant })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ApplicationVariantResponse"));
export const ApplicationVariantsResponse = /* @__PURE__ */ z
  .object({
    count: z.int().check(z.gte(0)),
    application_variants: z.array(ApplicationVariant),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ApplicationVariantsResponse"));

export const toApplicationVariant = (variant: VariantRow): ApplicationVariant =>
  withoutNulls({
    id: variant.id,
    slug: variant.slug,
    name: variant.slug,
    application_id: variant.appId,
    application_slug: variant.appName,
    artifact_id: variant.appId,
    artifact_slug: variant.appName,
    created_at: variant.createdAt,
    created_by_id: variant.createdById,
    updated_at: variant.updatedAt,
    deleted_at: variant.archivedAt,
  });
