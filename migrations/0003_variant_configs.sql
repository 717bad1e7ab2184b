-- Variants as the platform's client knows them (LEGACY-API.md): a variant is a named config of an app
-- (app_variants.name is its config_name, unique per app by UNIQUE (app_id, name)), and each of its revisions
-- holds the config: params, a JSON object, and url, a string ("" when none was given). Revisions made before
-- this migration (by the admin CLI's deploy) hold {} and "".
ALTER TABLE app_variant_revisions ADD COLUMN params TEXT NOT NULL DEFAULT '{}'
  CHECK (json_valid(params) AND json_type(params) = 'object');
ALTER TABLE app_variant_revisions ADD COLUMN url TEXT NOT NULL DEFAULT '';

-- When the app was last renamed (null: never; its created_at stands in). ADD COLUMN cannot default to now.
ALTER TABLE apps ADD COLUMN updated_at TEXT;

-- Lists of apps are oldest first within a project; lists of variants oldest first within an app.
CREATE INDEX apps_by_project_created ON apps (project_id, created_at, id);
CREATE INDEX app_variants_by_app_created ON app_variants (app_id, created_at, id);
