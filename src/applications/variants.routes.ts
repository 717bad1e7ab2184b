import * as z from "zod/mini";
import { CALLER_KEY } from "../db/buckets";
import { isUniqueViolation } from "../db/d1";
import { appNotFound, variantNotFound } from "../http/core-errors";
import { NOTHING, Nothing, slugTakenResponse } from "../http/current-api";
import { mergedOldestFirst, readAs, readOnShardsOf, writeAs } from "../http/d1-session";
import { forbidden, slugTaken } from "../http/errors";
import { settleClaim } from "../http/idempotency";
import { DEMO_APP_ID, DEMO_USER_ID, EXAMPLE_VARIANT_ID, responseRef } from "../http/openapi-parts";
import { route } from "../http/route";
import {
  AddApplicationVariantBody,
  type ApplicationVariant,
  ApplicationVariantParams,
  ApplicationVariantResponse,
  ApplicationVariantsResponse,
  QueryApplicationVariantsBody,
  toApplicationVariant,
} from "./variants.schemas";
import {
  type AddVariantOutcome,
  addVariant,
  queryVariants,
  readVariant,
  setVariantArchived,
  slugTakenByArchivedVariant,
} from "./variants.sql.ts";

const demoVariant = {
  id: EXAMPLE_VARIANT_ID,
  slug: "main",
  name: "main",
  application_id: DEMO_APP_ID,
  application_slug: "demo-app",
  artifact_id: DEMO_APP_ID,
  artifact_slug: "demo-app",
  created_at: "2026-11-22T02:54:51.201Z",
  created_by_id: DEMO_USER_ID,
  updated_at: "2026-11-22T02:54:51.236Z",
} satisfies ApplicationVariant;

const newVariant = {
  id: "01a2012d-9d01-7b3e-8c4f-2a6d9e1f0b37",
  slug: "support",
  name: "support",
  application_id: DEMO_APP_ID,
  application_slug: "demo-app",
  artifact_id: DEMO_APP_ID,
  artifact_slug: "demo-app",
  created_at: "2026-11-22T03:10:04.512Z",
  updated_at: "2026-11-22T03:10:04.512Z",
} satisfies ApplicationVariant;

const variantPath = {
  schema: ApplicationVariantParams,
  examples: globalThis.DOCUMENTATION && { variant_id: EXAMPLE_VARIANT_ID },
};

const one = (variant: ApplicationVariant) => ({ count: 1 as const, application_variant: variant });

const archiveRoute = (archive: boolean) =>
  route(
    {
      method: "post",
      path: archive ? "/applications/variants/{variant_id}/archive" : "/applications/variants/{variant_id}/unarchive",
      roundTrips:
        globalThis.ROUTE_FACTS &&
        (archive
          ? {
              cases: [
                {
                  name: "POST /applications/variants/{id}/archive",
                  path: "/applications/variants/{simpleVariantId}/archive",
                  trips: 1,
                },
              ],
            }
          : {
              cases: [
                {
                  name: "POST /applications/variants/{id}/unarchive",
                  path: "/applications/variants/{simpleVariantId}/unarchive",
                  trips: 1,
                },
              ],
            }),
      auth: "key",
      write: true,
      params: variantPath,
      idempotencyKey: "validates",
      doc: globalThis.DOCUMENTATION && {
        operationId: archive ? "archiveApplicationVariant" : "unarchiveApplicationVariant",
        tag: "Application variants",
        summary: archive ? "Archive a variant (today's SDK's VariantManager.delete)" : "Unarchive a variant",
        description: archive
          ? "The variant leaves variant lists and lookups by name in both APIs (GET /apps/{app_id}/variants, config " +
            "fetches by name); its id and its revisions' ids still resolve, and its history stays. Environments that run " +
            "it keep running it, and their record says so (`deployed_variant_archived`), but it is not deployed again " +
            "(409) until unarchived. Its name stays taken. Archiving an archived variant changes nothing and records no " +
            "event. The Idempotency-Key is checked, not stored: archiving again is harmless."
          : "The variant is back in lists and lookups by name, and may be deployed again. Unarchiving a variant that is " +
            "not archived changes nothing.",
        ok: {
          schema: ApplicationVariantResponse,
          description: archive ? "The variant, archived (`deleted_at`)" : "The variant, no longer archived",
          example: one(archive ? { ...demoVariant, deleted_at: "2026-11-22T03:20:00.000Z" } : demoVariant),
        },
        errors: { 404: responseRef("VariantNotFound") },
      },
    },
    async (c) => {
      const { variant_id } = c.req.valid("param");
      const { outcome, variant } = await writeAs(c, [variant_id], (db) => setVariantArchived(db, variant_id, archive));
      if (outcome === "forbidden") throw forbidden();
      if (outcome === "not_found" || !variant) throw variantNotFound();
      return c.json(one(toApplicationVariant(variant)), 200);
    },
  );

/** The current API's variants (docs/CURRENT-SDK-API.md, calls 6 to 9): today's SDK's VariantManager. */
export const applicationVariantsRoutes = [
  route(
    {
      method: "post",
      path: "/applications/variants",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /applications/variants/",
            path: "/applications/variants/",
            body: { application_variant: { application_id: "{simpleAppId}", slug: "another-variant" } },
            trips: 1,
          },
          {
            name: "POST /applications/variants/, a slug taken",
            path: "/applications/variants/",
            body: { application_variant: { application_id: "{simpleAppId}", slug: "counted-variant" } },
            status: 409,
            trips: 2,
          },
        ],
      },
      auth: "key",
      write: true,
      idempotencyKey: "replays",
      body: {
        schema: AddApplicationVariantBody,
        id: "AddApplicationVariant",
        examples: globalThis.DOCUMENTATION && {
          asTheSdkSends: {
            summary: "As VariantManager.create sends it",
            value: { application_variant: { application_id: DEMO_APP_ID, slug: "support" } },
          },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "addApplicationVariant",
        tag: "Application variants",
        summary: "Add a variant to an app, without a revision (VariantManager.create)",
        description:
          "The variant has no revision until its first commit (POST /applications/revisions/commit), which is its " +
          "revision 1, holding exactly what was committed; until then the legacy API's lists leave it out. `slug` is " +
          "its config name: it keeps to the platform's slug rule and to the rules of a legacy config name; `name`, if " +
          "given, must be the same. The path is taken with and without a trailing slash.",
        ok: { schema: ApplicationVariantResponse, description: "The new variant", example: one(newVariant) },
        errors: {
          404: responseRef("AppNotFound"),
          409: slugTakenResponse(
            "The app has a variant of that slug (an archived one keeps it: the message says so); nothing was written",
            "support",
          ),
        },
      },
    },
    async (c) => {
      const { application_id, slug } = c.req.valid("json").application_variant;
      let added: AddVariantOutcome;
      try {
        added = await writeAs(c, [application_id], (db) => addVariant(db, application_id, slug, c.var.claim));
      } catch (error) {
        if (!isUniqueViolation(error, "app_variants")) throw error;
        throw slugTaken(slug, await readAs(c, [application_id], (db) => slugTakenByArchivedVariant(db, application_id, slug)));
      }
      settleClaim(c, added);
      if (added.outcome === "forbidden") throw forbidden();
      if (added.outcome !== "done") throw appNotFound();
      return c.json(one(toApplicationVariant(added.variant)), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/applications/variants/query",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /applications/variants/query",
            path: "/applications/variants/query",
            body: { application_refs: [{ id: "{simpleAppId}" }], application_variant: { slug: "counted-variant" } },
            trips: 1,
          },
        ],
      },
      auth: "key",
      idempotencyKey: "validates",
      body: {
        schema: QueryApplicationVariantsBody,
        id: "QueryApplicationVariants",
        examples: globalThis.DOCUMENTATION && {
          bySlug: {
            summary: "One variant of an app, by slugs (as the SDK resolves a variant)",
            value: { application_refs: [{ slug: "demo-app" }], application_variant: { slug: "main" } },
          },
          ofApp: {
            summary: "Every variant of an app, archived ones too",
            value: { application_refs: [{ id: DEMO_APP_ID }], include_archived: true },
          },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "queryApplicationVariants",
        tag: "Application variants",
        summary: "List the variants of the apps a query names",
        description:
          "Oldest first. `application_refs` name apps by id (any app the caller can see) or by slug (in the key's " +
          "project; not an archived app); without them, the apps of the key's project. `application_variant.slug` and " +
          "`application_variant_refs` narrow the list; archived variants are listed only with `include_archived: true`. " +
          'Nothing matches: `{"count": 0, "application_variants": []}`.',
        ok: {
          schema: ApplicationVariantsResponse,
          description: "The variants, oldest first",
          example: { count: 1, application_variants: [demoVariant] },
        },
      },
    },
    async (c) => {
      const body = c.req.valid("json");
      const query = {
        appRefs: body.application_refs ?? null,
        slug: body.application_variant?.slug ?? null,
        variantRefs: body.application_variant_refs ?? null,
        includeArchived: body.include_archived ?? false,
      };
      // Apps by id are on their own shards, by slug (or none named: all) in the key's project: each shard reads its refs.
      const variants = mergedOldestFirst(
        await readOnShardsOf(
          c,
          query.appRefs ?? [],
          (ref) => ref.id ?? CALLER_KEY,
          async (db, held) => (await queryVariants(db, { ...query, appRefs: query.appRefs && held })).map(toApplicationVariant),
        ),
        (variant) => variant.id,
      );
      return c.json({ count: variants.length, application_variants: variants }, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/applications/variants/{variant_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /applications/variants/{id}", path: "/applications/variants/{simpleVariantId}", trips: 1 }],
      },
      auth: "key",
      params: variantPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "getApplicationVariant",
        tag: "Application variants",
        summary: "Read a variant by its id",
        description:
          "An archived variant too (with `deleted_at`); a removed one (DELETE /variants/{variant_id}) is not found. Not " +
          'found: 200 `{"count": 0}`, which today\'s SDK expects.',
        ok: {
          schema: z.xor([ApplicationVariantResponse, Nothing]),
          description: "The variant, or none",
          examples: {
            found: { summary: "Found", value: one(demoVariant) },
            notFound: { summary: "Not found, or not visible to the caller (not told apart)", value: NOTHING },
          },
        },
      },
    },
    async (c) => {
      const { variant_id } = c.req.valid("param");
      const variant = await readAs(c, [variant_id], (db) => readVariant(db, variant_id));
      return c.json(variant ? one(toApplicationVariant(variant)) : NOTHING, 200);
    },
  ),
  archiveRoute(true),
  archiveRoute(false),
];
