import type * as z from "zod";

declare global {
  /**
   * Whether the OpenAPI document's text is kept: false in the Worker's bundle (wrangler.toml [define]), where
   * `DOCUMENTATION && { ... }` folds to false and the text is left out; true where the document is built
   * (src/cli/build-assets.ts, test/support/openapi-documents.ts).
   */
  var DOCUMENTATION: boolean;
}

/** Text only the OpenAPI document reads, written `DOCUMENTATION && { ... }`: false in the Worker. */
export type Documentation<Text> = Text | false;

/**
 * A schema's JSON Schema keywords for the document, as `.apply(documented(DOCUMENTATION && { description: ... }))`:
 * the copy with them that `.meta` makes; in the Worker, the schema itself.
 */
export const documented =
  (meta: Documentation<z.core.GlobalMeta>) =>
  <Schema extends z.ZodType>(schema: Schema): Schema =>
    meta ? schema.meta(meta) : schema;
