-- DELETE /variants/{id} removes a variant without rewriting history: environment histories point at its revisions,
-- so its rows stay. A removed variant has removed_at set and leaves lists and lookups by name, and its name is free
-- again: `name` (the key of UNIQUE (app_id, name), which SQLite cannot relax in place) then holds a tombstone that no
-- request can send, U+0001 and the variant's id (names refuse control characters), and removed_name the name it
-- had, which its revisions are still shown under.
ALTER TABLE app_variants ADD COLUMN removed_at TEXT;
ALTER TABLE app_variants ADD COLUMN removed_name TEXT;

-- No environment ever runs a removed variant: the routes check it, and these triggers hold it for any writer.
CREATE TRIGGER environments_never_run_removed_variants
BEFORE UPDATE OF deployed_app_variant_id ON environments
WHEN NEW.deployed_app_variant_id IS NOT NULL
 AND (SELECT removed_at FROM app_variants WHERE id = NEW.deployed_app_variant_id) IS NOT NULL
BEGIN
  SELECT RAISE(ABORT, 'a removed variant cannot be deployed');
END;

CREATE TRIGGER deployed_variants_are_never_removed
BEFORE UPDATE OF removed_at ON app_variants
WHEN NEW.removed_at IS NOT NULL AND EXISTS (SELECT 1 FROM environments WHERE deployed_app_variant_id = NEW.id)
BEGIN
  SELECT RAISE(ABORT, 'a deployed variant cannot be removed');
END;
