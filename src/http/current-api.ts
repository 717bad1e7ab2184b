import * as z from "zod/mini";
import { documented, schemaName } from "./documentation";
import { type ApiError, idempotencyKeyInFlight, SlugConflict, slugTaken } from "./errors";
import { nameField, newNameField, uuid } from "./fields";
import { IDEMPOTENCY_KEY_ERRORS, jsonResponse, schemaRef } from "./openapi-parts";

/*
 * What the platform's current API (docs/CURRENT-SDK-API.md: /simple/..., /applications/..., /workflows/...) shares:
 * its slug rule, its refs, bodies that take only the keys they name, and envelopes without null fields.
 */

/** The platform's slug rule, checked where a slug is made (beside the legacy name rules). */
export const SLUG_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/** A new slug: a new legacy name (src/http/fields.ts) that also keeps to the platform's slug rule. */
export const newSlugField = (field: string) =>
  newNameField(field)
    .check(
      z.refine(
        (value) => SLUG_PATTERN.test(value),
        `${field} must match ${SLUG_PATTERN.source}: letters, digits, "_", "-" and "." (not first)`,
      ),
    )
    .apply(
      documented(
        globalThis.DOCUMENTATION && {
          description: `Unique in its scope; matches ${SLUG_PATTERN.source} and the rules of a legacy name`,
        },
      ),
    );

const quoted = (keys: readonly PropertyKey[]) => keys.map((key) => `"${String(key)}"`).join(", ");

/**
 * An object taking only the keys of `shape`: any other (a wrong wrapper key such as `app` for `application`, a field
 * this service does not keep) is a 422 naming it and the keys it takes, so that nothing sent is silently dropped.
 */
export const exactObject = <Shape extends z.core.$ZodShape>(shape: Shape) =>
  z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown key${issue.keys.length === 1 ? "" : "s"} ${quoted(issue.keys)}: the keys here are ${quoted(Object.keys(shape))}`
        : undefined,
  });

/**
 * A ref in a query's list (`application_refs`, `application_variant_refs`): `{id?, slug?}` naming something by id or
 * slug (a null key is absent); a version names nothing here, so only a null one is taken.
 */
export const listedRef = (what: string) =>
  z.pipe(
    exactObject({
      id: z.nullish(uuid).apply(documented(globalThis.DOCUMENTATION && { description: `The ${what}'s id` })),
      slug: z
        .nullish(nameField("slug", { nfc: true }))
        .apply(documented(globalThis.DOCUMENTATION && { description: `The ${what}'s slug` })),
      version: z.optional(z.null()),
    }).check(z.refine((ref) => ref.id != null || ref.slug != null, `a ${what} ref needs an id or a slug`)),
    z.transform((ref) => ({ id: ref.id ?? null, slug: ref.slug ?? null })),
  );
export type ListedRef = { id: string | null; slug: string | null };

/** At most this many refs in a query's list. */
export const MAX_REFS = 100;

/** The entity with its null fields left out, as the platform's answers are. */
export const withoutNulls = <T extends Record<string, unknown>>(entity: T) =>
  Object.fromEntries(Object.entries(entity).filter(([, value]) => value !== null)) as {
    [K in keyof T as null extends T[K] ? never : K]: T[K];
  } & { [K in keyof T as null extends T[K] ? K : never]?: Exclude<T[K], null> };

/** What a read by id answers when there is nothing the caller can see: 200, which the SDK relies on. */
export const NOTHING = { count: 0 } as const;

/** The OpenAPI schema of NOTHING. */
export const Nothing = /* @__PURE__ */ z
  .object({ count: z.literal(0) })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Nothing"));

/** The body of the platform's 409 for a slug taken (src/http/errors.ts's slugTaken). */
export const SlugConflictError = /* @__PURE__ */ z
  .object({ detail: SlugConflict })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SlugConflictError"));

/**
 * A write's 409: a slug taken (`description` says where), the platform's shape, as taken by a live one and by an
 * archived one; or the service's for an Idempotency-Key still being answered; or the write's `coded` refusals (a
 * protected environment's, a CodedConflictError).
 */
export const slugTakenResponse = (description: string, slug: string, coded: Record<string, ApiError> = {}) =>
  jsonResponse(
    `${description}. Or: ${IDEMPOTENCY_KEY_ERRORS[409].description}`,
    {
      oneOf: [
        schemaRef("SlugConflictError"),
        schemaRef("Error"),
        ...(Object.keys(coded).length > 0 ? [schemaRef("CodedConflictError")] : []),
      ],
    },
    {
      examples: Object.fromEntries(
        Object.entries({
          slugTaken: slugTaken(slug, false),
          slugTakenByArchived: slugTaken(slug, true),
          idempotencyKeyInFlight: idempotencyKeyInFlight(),
          ...coded,
        }).map(([name, error]) => [name, { summary: error.message, value: { detail: error.detail } }]),
      ),
    },
  );

/**
 * The current API's references (docs/CURRENT-SDK-API.md): `{id?, slug?, version?}`, every key optional, `version` a
 * revision number sent as a string ("3"). One whose values are all null counts as absent (null).
 */
export interface CurrentRef {
  id: string | null;
  slug: string | null;
  version: number | null;
}

/** The largest revision number a ref may name: past it, nothing exists (and nothing loses digits as a number). */
const MAX_VERSION = 999_999_999;

/** A revision number as the SDK sends it, a string of digits ("3"); an integer is taken too. "1.5", "-1", "abc": 422. */
export const versionField = /* @__PURE__ */ z
  .pipe(
    z
      .union([z.string(), z.number()])
      .check(
        z.refine(
          (value) =>
            typeof value === "string"
              ? /^[0-9]{1,9}$/.test(value)
              : Number.isInteger(value) && value >= 0 && value <= MAX_VERSION,
          'version must be a revision number: digits only, such as "3"',
        ),
      ),
    z.transform(Number),
  )
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { type: "string", description: 'A revision number, as a string: "3"' },
    ),
  );

/** A ref whose slug is a name of this kind (described for the document). */
export const currentRef = (described: string) =>
  z.pipe(
    z.nullish(
      z.object({
        id: z.nullish(uuid),
        slug: z
          .nullish(nameField("slug", { nfc: true }))
          .apply(documented(globalThis.DOCUMENTATION && { description: described })),
        version: z.nullish(versionField),
      }),
    ),
    z.transform((value): CurrentRef | null =>
      value && (value.id != null || value.slug != null || value.version != null)
        ? { id: value.id ?? null, slug: value.slug ?? null, version: value.version ?? null }
        : null,
    ),
  );

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A body whose payload sits under one key (`{"application_revision": {...}}`): a body without that key is a 422 that
 * names it, and names the keys sent instead (the platform's own docs show a wrong one). `shape` validates the rest.
 */
export const wrappedIn = <Shape extends z.ZodMiniType>(key: string, shape: Shape) =>
  z.pipe(
    z.unknown().check(
      z.superRefine((body, context) => {
        if (!isObject(body) || key in body) return;
        const sent = Object.keys(body);
        context.addIssue({
          code: "custom",
          path: [key],
          message: `the body's key is "${key}"${sent.length > 0 ? `, not ${sent.map((name) => `"${name}"`).join(", ")}` : ""}`,
        });
      }),
    ),
    shape,
  );
