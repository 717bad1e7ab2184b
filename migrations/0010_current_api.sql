-- Today's SDK calls the platform's current API (docs/CURRENT-SDK-API.md) over the same history as the legacy one.

-- Archive is soft: an archived app or variant leaves lists and slug lookups, its ids still resolve and its history
-- stays. An app's name stays taken while archived.
ALTER TABLE apps ADD COLUMN archived_at TEXT;
ALTER TABLE app_variants ADD COLUMN archived_at TEXT;

-- An environment keeps running an archived variant until its next deploy, but never starts to: the deploy's own
-- SQL answers 409 first; this is the last guard.
CREATE TRIGGER environments_never_start_archived_variants
BEFORE UPDATE OF deployed_app_variant_id ON environments
WHEN NEW.deployed_app_variant_id IS NOT NULL
 AND (SELECT archived_at FROM app_variants WHERE id = NEW.deployed_app_variant_id) IS NOT NULL
BEGIN
  SELECT RAISE(ABORT, 'an archived variant cannot be deployed');
END;

-- Every revision, made through either API, has a slug (12 lowercase hex unless the current API's commit names one)
-- and may have a commit message. Slugs are unique per project, like the platform's: project_id is kept on the
-- revision only so that a constraint, not a prior read, decides a race between two commits naming one slug.
ALTER TABLE app_variant_revisions ADD COLUMN slug TEXT;
ALTER TABLE app_variant_revisions ADD COLUMN project_id TEXT;
ALTER TABLE app_variant_revisions ADD COLUMN message TEXT;

UPDATE app_variant_revisions
   SET slug = lower(hex(randomblob(6))),
       project_id = (SELECT apps.project_id FROM app_variants JOIN apps ON apps.id = app_variants.app_id
                      WHERE app_variants.id = app_variant_revisions.variant_id);

CREATE UNIQUE INDEX app_variant_revisions_slug_per_project ON app_variant_revisions (project_id, slug);

-- Writers that name neither (every legacy INSERT) get both here, in the same statement.
CREATE TRIGGER app_variant_revisions_get_a_slug
AFTER INSERT ON app_variant_revisions
WHEN NEW.slug IS NULL OR NEW.project_id IS NULL
BEGIN
  UPDATE app_variant_revisions
     SET slug = coalesce(NEW.slug, lower(hex(randomblob(6)))),
         project_id = (SELECT apps.project_id FROM app_variants JOIN apps ON apps.id = app_variants.app_id
                        WHERE app_variants.id = NEW.variant_id)
   WHERE id = NEW.id;
END;
