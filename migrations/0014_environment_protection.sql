-- Protection settings per project and environment name (docs/CHANGE-REQUESTS.md §1). An expand: the code before it
-- runs unchanged on it. No row: every setting at its default (src/core/protection.sql.ts reads them so).
CREATE TABLE environment_protections (
  project_id          TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  environment         TEXT NOT NULL CHECK (environment IN ('development', 'staging', 'production')),
  protected           INTEGER NOT NULL DEFAULT 0 CHECK (protected IN (0, 1)),
  required_approvals  INTEGER NOT NULL DEFAULT 1 CHECK (required_approvals BETWEEN 1 AND 10),
  allow_self_approval INTEGER NOT NULL DEFAULT 0 CHECK (allow_self_approval IN (0, 1)),
  -- JSON arrays of role names, each a subset the API checks (§1).
  approver_roles      TEXT NOT NULL DEFAULT '["owner","workspace_admin","deployment_manager"]'
                      CHECK (json_valid(approver_roles) AND json_type(approver_roles) = 'array' AND json_array_length(approver_roles) > 0),
  bypass_roles        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(bypass_roles) AND json_type(bypass_roles) = 'array'),
  request_ttl_days    INTEGER NOT NULL DEFAULT 14 CHECK (request_ttl_days BETWEEN 1 AND 90),
  updated_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_by          TEXT REFERENCES users (id),
  PRIMARY KEY (project_id, environment)
) WITHOUT ROWID;
