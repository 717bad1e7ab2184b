-- An environment's history is gapless and its record follows it, enforced by the database: a new revision must
-- be the environment's next number, and inserting it moves the environment's current pointers.
CREATE TRIGGER environment_revisions_are_gapless
BEFORE INSERT ON environment_revisions
WHEN NEW.revision <> (SELECT revision + 1 FROM environments WHERE id = NEW.environment_id)
BEGIN
  SELECT RAISE(ABORT, 'environment revision out of sequence');
END;

CREATE TRIGGER environment_follows_its_revisions
AFTER INSERT ON environment_revisions
BEGIN
  UPDATE environments
     SET revision = NEW.revision,
         deployed_app_variant_revision_id = NEW.deployed_app_variant_revision_id,
         deployed_app_variant_id = (SELECT variant_id FROM app_variant_revisions WHERE id = NEW.deployed_app_variant_revision_id)
   WHERE id = NEW.environment_id;
END;

-- Idempotency-Key (IETF httpapi draft): what a key's holder did with each key, for 24 hours. result_id is the
-- id of what the first request made (an app, a variant revision or an environment revision), read back to
-- replay its answer. Expired rows are swept by the Worker's scheduled handler (wrangler.toml [triggers]).
CREATE TABLE idempotency_keys (
  key_hash        TEXT NOT NULL REFERENCES api_keys (key_hash) ON DELETE CASCADE,
  idempotency_key TEXT NOT NULL,
  fingerprint     TEXT NOT NULL,
  result_id       TEXT NOT NULL,
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  expires_at      TEXT NOT NULL,
  PRIMARY KEY (key_hash, idempotency_key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
