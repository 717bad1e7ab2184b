import * as z from "zod";
import { documented } from "../http/documentation";
import { nameField, uuid } from "../http/fields";

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
export const versionField = z
  .union([z.string(), z.number()])
  .refine(
    (value) =>
      typeof value === "string" ? /^[0-9]{1,9}$/.test(value) : Number.isInteger(value) && value >= 0 && value <= MAX_VERSION,
    'version must be a revision number: digits only, such as "3"',
  )
  .transform(Number)
  .apply(documented(globalThis.DOCUMENTATION && { type: "string", description: 'A revision number, as a string: "3"' }));

/** A ref whose slug is a name of this kind (described for the document). */
export const currentRef = (described: string) =>
  z
    .object({
      id: uuid.nullish(),
      slug: nameField("slug", { nfc: true })
        .nullish()
        .apply(documented(globalThis.DOCUMENTATION && { description: described })),
      version: versionField.nullish(),
    })
    .nullish()
    .transform((value): CurrentRef | null =>
      value && (value.id != null || value.slug != null || value.version != null)
        ? { id: value.id ?? null, slug: value.slug ?? null, version: value.version ?? null }
        : null,
    );

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A body whose payload sits under one key (`{"application_revision": {...}}`): a body without that key is a 422 that
 * names it, and names the keys sent instead (the platform's own docs show a wrong one). `shape` validates the rest.
 */
export const wrappedIn = <Shape extends z.ZodType>(key: string, shape: Shape) =>
  z
    .unknown()
    .superRefine((body, context) => {
      if (!isObject(body) || key in body) return;
      const sent = Object.keys(body);
      context.addIssue({
        code: "custom",
        path: [key],
        message: `the body's key is "${key}"${sent.length > 0 ? `, not ${sent.map((name) => `"${name}"`).join(", ")}` : ""}`,
      });
    })
    .pipe(shape);
