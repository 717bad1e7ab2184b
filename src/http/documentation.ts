import * as z from "zod/mini";

declare global {
  /**
   * Whether the OpenAPI document's text is loaded with the route declarations and schemas: true where the document is
   * built (src/cli/build-assets.ts, test/support/openapi-documents.ts, which set it before loading them); false in the
   * Worker's bundle (wrangler.toml [define]), where `globalThis.DOCUMENTATION && { ... }` folds to false and the text is
   * left out; unset elsewhere (the admin CLI), which needs no text either.
   */
  var DOCUMENTATION: boolean | undefined;
}

/*
 * A schema declared at a module's top level is written `const X = /* @__PURE__ *\/ z...`, and so is each call of the
 * two functions below inside it (`.apply(/* @__PURE__ *\/ documented(...))`): esbuild must otherwise assume that the
 * calls have effects and keep every schema in the Worker's bundle, though many (answers) are read only by the OpenAPI
 * document, through `doc: globalThis.DOCUMENTATION && { ... }`, which is false there. Marked, an unused schema is left
 * out (2 KiB gzip). `@__NO_SIDE_EFFECTS__` on these functions would spare the inner marks, but esbuild heeds it only
 * within the module that declares the function. test/static/pure-schemas.test.ts fails on a schema without the marks.
 * Of a schema left out, esbuild still keeps every unmarked call in its arguments (`z.uuid()` of a field): so the
 * schemas only the document reads (answers, and the objects of fields they share) mark each call inside them too, and
 * so do the document's error parts a route file shares between its declarations (`errorResponse(...)`): 1.3 KiB gzip.
 */

/** Text only the OpenAPI document reads, written `globalThis.DOCUMENTATION && { ... }`: none in the Worker. */
export type Documentation<Text> = Text | false | undefined;

/**
 * A schema's JSON Schema keywords for the document, as `.apply(documented(globalThis.DOCUMENTATION && { ... }))`:
 * a copy with them in zod's global registry (what classic zod's `.meta` makes); in the Worker, the schema itself.
 */
export const documented =
  (meta: Documentation<z.core.GlobalMeta>) =>
  <Schema extends z.ZodMiniType>(schema: Schema): Schema => {
    if (!meta) return schema;
    const copy = schema.clone();
    z.globalRegistry.add(copy, meta);
    return copy;
  };

/** The names under which the document shows response schemas once (components/schemas) and refers to them. */
export const SCHEMA_NAMES = new Map<z.ZodMiniType, string>();

/**
 * Names a response schema in the document, as `.apply(schemaName(globalThis.DOCUMENTATION && "Name"))`: every answer and
 * schema containing it refers to it by that name; in the Worker, nothing.
 */
export const schemaName =
  (name: Documentation<string>) =>
  <Schema extends z.ZodMiniType>(schema: Schema): Schema => {
    if (name) SCHEMA_NAMES.set(schema, name);
    return schema;
  };
