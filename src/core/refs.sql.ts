/**
 * Whether the refs of today's SDK bound as :refs (JSON, `[{id?, slug?}]`; null: no filter) name the row `named`: a
 * ref names it when its id, if given, is the row's `id` and its slug, if given, the row's `name`. The statement joins
 * the row it filters as `named`.
 */
export const NAMED_BY_REFS = `(:refs IS NULL OR EXISTS (
  SELECT 1 FROM json_each(:refs) ref
   WHERE (json_extract(ref.value, '$.id') IS NULL OR json_extract(ref.value, '$.id') = named.id)
     AND (json_extract(ref.value, '$.slug') IS NULL OR json_extract(ref.value, '$.slug') = named.name)))`;
