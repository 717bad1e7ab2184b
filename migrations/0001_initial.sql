-- Accounts, access and apps. D1 enforces foreign keys. Ids are UUIDv7 text made by the service;
-- timestamps are RFC 3339 UTC with milliseconds, made by SQLite so that every row agrees on the format.

CREATE TABLE users (
  id         TEXT PRIMARY KEY,
  username   TEXT NOT NULL UNIQUE,
  email      TEXT NOT NULL UNIQUE COLLATE NOCASE,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE organizations (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  is_personal INTEGER NOT NULL DEFAULT 0 CHECK (is_personal IN (0, 1)),
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE organization_members (
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role            TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer')),
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (organization_id, user_id)
) WITHOUT ROWID;
-- Access checks go from the caller to their organizations.
CREATE INDEX organization_members_by_user ON organization_members (user_id, organization_id);

CREATE TABLE workspaces (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  is_default      INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX workspaces_by_organization ON workspaces (organization_id);
CREATE UNIQUE INDEX workspaces_one_default_per_organization ON workspaces (organization_id) WHERE is_default = 1;

CREATE TABLE projects (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  is_default   INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX projects_by_workspace ON projects (workspace_id);
CREATE UNIQUE INDEX projects_one_default_per_workspace ON projects (workspace_id) WHERE is_default = 1;

-- A key is "<prefix>.<secret>"; only the prefix and the SHA-256 of the whole key are kept.
CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  prefix     TEXT NOT NULL UNIQUE,
  key_hash   TEXT NOT NULL,
  user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  expires_at TEXT,
  revoked_at TEXT
);
CREATE INDEX api_keys_by_user ON api_keys (user_id);

CREATE TABLE apps (
  id         TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name       TEXT NOT NULL,
  created_by TEXT NOT NULL REFERENCES users (id),
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  -- Names are unique per project; the constraint, not a prior read, decides a race between two creates.
  UNIQUE (project_id, name)
);

CREATE TABLE app_variants (
  id         TEXT PRIMARY KEY,
  app_id     TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  name       TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (app_id, name)
);

CREATE TABLE app_variant_revisions (
  id          TEXT PRIMARY KEY,
  variant_id  TEXT NOT NULL REFERENCES app_variants (id) ON DELETE CASCADE,
  revision    INTEGER NOT NULL CHECK (revision >= 1),
  modified_by TEXT NOT NULL REFERENCES users (id),
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (variant_id, revision)
);

CREATE TABLE environments (
  id                               TEXT PRIMARY KEY,
  app_id                           TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  name                             TEXT NOT NULL,
  revision                         INTEGER NOT NULL DEFAULT 0 CHECK (revision >= 0),
  deployed_app_variant_id          TEXT REFERENCES app_variants (id),
  deployed_app_variant_revision_id TEXT REFERENCES app_variant_revisions (id),
  created_at                       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (app_id, name)
);

CREATE TABLE deployments (
  id                      TEXT PRIMARY KEY,
  environment_id          TEXT NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  app_variant_revision_id TEXT NOT NULL REFERENCES app_variant_revisions (id),
  deployed_by             TEXT NOT NULL REFERENCES users (id),
  created_at              TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX deployments_by_environment ON deployments (environment_id);

-- One row per change of an environment; (environment_id, revision) keeps the numbering unique.
CREATE TABLE environment_revisions (
  id                               TEXT PRIMARY KEY,
  environment_id                   TEXT NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  revision                         INTEGER NOT NULL CHECK (revision >= 1),
  modified_by                      TEXT NOT NULL REFERENCES users (id),
  deployed_app_variant_revision_id TEXT REFERENCES app_variant_revisions (id),
  deployment_id                    TEXT REFERENCES deployments (id),
  created_at                       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (environment_id, revision)
);
