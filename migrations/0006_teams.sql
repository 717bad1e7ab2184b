-- Teams run themselves over HTTP (ACCOUNTS-API.md): six roles, read-only and expiring keys, invitations.

-- The six roles of the platform's client; 'admin' is now 'workspace_admin'. SQLite cannot change a CHECK in place;
-- organization_members is no table's parent (nothing REFERENCES it), so rebuilding it cascades nowhere.
CREATE TABLE organization_members_next (
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role            TEXT NOT NULL
                  CHECK (role IN ('owner', 'workspace_admin', 'editor', 'deployment_manager', 'evaluator', 'viewer')),
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (organization_id, user_id)
) WITHOUT ROWID;
INSERT INTO organization_members_next (organization_id, user_id, role, created_at)
  SELECT organization_id, user_id, CASE role WHEN 'admin' THEN 'workspace_admin' ELSE role END, created_at
    FROM organization_members;
DROP TABLE organization_members;
ALTER TABLE organization_members_next RENAME TO organization_members;
CREATE INDEX organization_members_by_user ON organization_members (user_id, organization_id);

-- An organization always keeps an owner: the routes check it in the statement that demotes or removes, and this
-- holds it for any writer (the admin CLI included). Deleting the organization itself still cascades.
CREATE TRIGGER organizations_keep_an_owner_on_demotion
BEFORE UPDATE OF role ON organization_members
WHEN OLD.role = 'owner' AND NEW.role <> 'owner'
 AND NOT EXISTS (SELECT 1 FROM organization_members
                  WHERE organization_id = OLD.organization_id AND role = 'owner' AND user_id <> OLD.user_id)
BEGIN
  SELECT RAISE(ABORT, 'an organization keeps at least one owner');
END;

CREATE TRIGGER organizations_keep_an_owner_on_removal
BEFORE DELETE ON organization_members
WHEN OLD.role = 'owner'
 AND EXISTS (SELECT 1 FROM organizations WHERE id = OLD.organization_id)
 AND NOT EXISTS (SELECT 1 FROM organization_members
                  WHERE organization_id = OLD.organization_id AND role = 'owner' AND user_id <> OLD.user_id)
BEGIN
  SELECT RAISE(ABORT, 'an organization keeps at least one owner');
END;

-- A read-only key acts as a viewer wherever its user has a role. last_used_at is written after the answer, at most
-- hourly per key, never in a request's own round trip.
ALTER TABLE api_keys ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0 CHECK (read_only IN (0, 1));
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;

-- What the client sends and reads of organizations and workspaces. updated_at null: never updated.
ALTER TABLE organizations ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE organizations ADD COLUMN type TEXT;
ALTER TABLE organizations ADD COLUMN updated_at TEXT;
ALTER TABLE workspaces ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE workspaces ADD COLUMN type TEXT;
ALTER TABLE workspaces ADD COLUMN updated_at TEXT;

-- An invitation to an organization, through one of its workspaces. Only the SHA-256 of its token is kept. It is
-- open until accepted, voided (by a resend or a new invitation of the same email) or past expires_at; one open
-- invitation per email and organization.
CREATE TABLE invitations (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  email           TEXT NOT NULL COLLATE NOCASE,
  role            TEXT NOT NULL
                  CHECK (role IN ('owner', 'workspace_admin', 'editor', 'deployment_manager', 'evaluator', 'viewer')),
  token_hash      TEXT NOT NULL UNIQUE,
  invited_by      TEXT NOT NULL REFERENCES users (id),
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  expires_at      TEXT NOT NULL,
  accepted_at     TEXT,
  accepted_by     TEXT REFERENCES users (id),
  -- Set by the request that accepted it, so that the rest of that request's batch acts on this acceptance only.
  acceptance_id   TEXT UNIQUE,
  voided_at       TEXT,
  -- The invitation that voided this one (a resend, or a new invitation of the same email).
  replaced_by     TEXT
);
CREATE UNIQUE INDEX invitations_one_open_per_email ON invitations (organization_id, email)
  WHERE accepted_at IS NULL AND voided_at IS NULL;
