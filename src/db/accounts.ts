import { bucketOfPrefix, LEGACY_BUCKET, newId } from "./buckets";
import type { Queryable } from "./d1";
import { INSERT_EVENT } from "./event-writes";
import { fenceGuard } from "./fences";
import type { Role } from "./roles";
import { batch, sql } from "./sql";

/*
 * The admin CLI's changes of members and keys write their events (docs/EVENTS.md) in the change's own batch, as the HTTP
 * routes do. The operator acts there as no user and with no key: the actor is all null (OPERATOR_ACTOR). Member
 * events name the organization's default workspace, the CLI naming none.
 */
const OPERATOR_ACTOR = "NULL, NULL, NULL";

/** The owner of the key with this prefix, live or not. */
export function findApiKeyOwner(db: Queryable, prefix: string): Promise<{ userId: string } | null> {
  return KEY_OWNER.bind(db, { prefix }).first();
}

const KEY_OWNER = /* @__PURE__ */ sql("SELECT user_id AS userId FROM api_keys WHERE prefix = :prefix");

/** A user's row: the same on every shard that holds it (docs/SHARDING.md §1: none of it ever changes). */
export interface User {
  id: string;
  username: string;
  email: string;
  created_at: string;
}

export function findUserByEmail(db: Queryable, email: string): Promise<User | null> {
  return USER_BY_EMAIL.bind(db, { email }).first<User>();
}

const USER_BY_EMAIL = /* @__PURE__ */ sql("SELECT id, username, email, created_at FROM users WHERE email = :email");

/** An organization's bucket (docs/SHARDING.md §2), which its ids carry, and the ids of its default workspace and project. */
export interface OrganizationIds {
  bucket: number;
  organizationId: string;
  workspaceId: string;
  projectId: string;
}

/** The ids of a new organization placed in `bucket`. */
export const newOrganizationIds = (bucket: number): OrganizationIds => ({
  bucket,
  organizationId: newId(bucket),
  workspaceId: newId(bucket),
  projectId: newId(bucket),
});

/** The ids of a new user and of their personal organization, both in `bucket` (a user's id carries their first organization's). */
export const newAccountIds = (bucket: number): OrganizationIds & { userId: string } => ({
  userId: newId(bucket),
  ...newOrganizationIds(bucket),
});

const INSERT_ORGANIZATION = /* @__PURE__ */ sql(
  "INSERT INTO organizations (id, name, is_personal, bucket) VALUES (:organization_id, :name, :is_personal, :bucket)",
);
const INSERT_OWNER = /* @__PURE__ */ sql(
  "INSERT INTO organization_members (organization_id, user_id, role) VALUES (:organization_id, :owner_id, 'owner')",
);
const INSERT_WORKSPACE = /* @__PURE__ */ sql(
  "INSERT INTO workspaces (id, organization_id, name, is_default) VALUES (:workspace_id, :organization_id, 'Default', 1)",
);
const INSERT_PROJECT = /* @__PURE__ */ sql(
  "INSERT INTO projects (id, workspace_id, name, is_default) VALUES (:project_id, :workspace_id, 'Default', 1)",
);
const INSERT_USER = /* @__PURE__ */ sql(
  `INSERT INTO users (id, username, email, created_at)
   VALUES (:user_id, :username, :email, COALESCE(:created_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`,
);

/** An organization with its owner, default workspace and default project: the statements, to batch with others. */
function organizationStatements(db: Queryable, name: string, ownerId: string, isPersonal: boolean, ids: OrganizationIds) {
  const values = {
    organization_id: ids.organizationId,
    workspace_id: ids.workspaceId,
    project_id: ids.projectId,
    name,
    owner_id: ownerId,
    is_personal: isPersonal ? 1 : 0,
    bucket: ids.bucket,
  };
  return {
    organization: INSERT_ORGANIZATION.bind(db, values),
    owner: INSERT_OWNER.bind(db, values),
    workspace: INSERT_WORKSPACE.bind(db, values),
    project: INSERT_PROJECT.bind(db, values),
  };
}

/**
 * A user and their personal organization, workspace and default project, in one batch. `ids` places them: the CLI
 * in a bucket at random; by default in the legacy bucket. `createdAt`: the directory's (its claim's), else now.
 */
export async function createUser(
  db: Queryable,
  user: { email: string; username: string; createdAt?: string },
  ids: OrganizationIds & { userId: string } = newAccountIds(LEGACY_BUCKET),
): Promise<OrganizationIds & { userId: string }> {
  await batch(db, {
    fence: fenceGuard(db, ids.bucket),
    user: INSERT_USER.bind(db, {
      user_id: ids.userId,
      username: user.username,
      email: user.email,
      created_at: user.createdAt ?? null,
    }),
    ...organizationStatements(db, user.username, ids.userId, true, ids),
  });
  return ids;
}

const COPY_USER = /* @__PURE__ */ sql(
  "INSERT OR IGNORE INTO users (id, username, email, created_at) VALUES (:id, :username, :email, :created_at)",
);

/**
 * The user's row copied to the shard `db` when absent (docs/SHARDING.md §1: a user's id, username, email and
 * created_at never change, so a copy is never stale): before making them a member or an owner there.
 */
const copyUserStatement = (db: Queryable, { id, username, email, created_at }: User) =>
  COPY_USER.bind(db, { id, username, email, created_at });

/** `copyUserStatement` on its own: for setting up data (test fixtures). */
export async function copyUser(db: Queryable, user: User): Promise<void> {
  await copyUserStatement(db, user).run();
}

/**
 * An organization owned by `owner` on a shard that may not hold the owner's user yet: their row is copied there first
 * when absent (a copy is never stale), in the same batch.
 */
export async function createOrganizationCopyingOwner(
  db: Queryable,
  name: string,
  owner: User,
  ids: OrganizationIds,
): Promise<void> {
  await batch(db, {
    fence: fenceGuard(db, ids.bucket),
    ownerCopy: copyUserStatement(db, owner),
    ...organizationStatements(db, name, owner.id, false, ids),
  });
}

/**
 * The bucket of an organization, named by its id or by one of its project's, app's or key's (one given); null when
 * there is none. For the CLI, whose writes mint ids in it.
 */
export async function findOrganizationBucket(
  db: Queryable,
  of: { organizationId?: string; projectId?: string; appId?: string; keyPrefix?: string },
): Promise<number | null> {
  const values = {
    organization_id: of.organizationId ?? null,
    project_id: of.projectId ?? null,
    app_id: of.appId ?? null,
    prefix: of.keyPrefix ?? null,
  };
  return (await ORGANIZATION_BUCKET.bind(db, values).first<{ bucket: number }>())?.bucket ?? null;
}

const ORGANIZATION_BUCKET = /* @__PURE__ */ sql<{ bucket: number }>(
  `SELECT bucket FROM organizations WHERE id = COALESCE(:organization_id, (
     SELECT w.organization_id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
      WHERE p.id = COALESCE(:project_id, (SELECT project_id FROM apps WHERE id = :app_id),
                            (SELECT project_id FROM api_keys WHERE prefix = :prefix))))`,
);

/** An organization an operator's change names: its id, and its bucket (`findOrganizationBucket`), which the change's event id carries. */
export interface OrganizationRef {
  id: string;
  bucket: number;
}

const UPSERT_MEMBER = /* @__PURE__ */ sql(
  `INSERT INTO organization_members (organization_id, user_id, role) VALUES (:organization_id, :user_id, :role)
   ON CONFLICT (organization_id, user_id) DO UPDATE SET role = excluded.role`,
);

/**
 * Adds the member, or changes their role if they already are one; writes no event: for setting up data (test
 * fixtures). The admin CLI uses `addOrganizationMember`.
 */
export async function setOrganizationMember(db: Queryable, organizationId: string, userId: string, role: Role): Promise<void> {
  await UPSERT_MEMBER.bind(db, { organization_id: organizationId, user_id: userId, role }).run();
}

/**
 * Adds the member (`member.joined`), or changes the role of one who is a member already (`member.role_changed`,
 * with `previous_role`): the change and its event in one batch, with the user's row copied first to the shard `db` when
 * absent (a user homed on another shard). The same role again changes nothing, and records nothing. Demoting the last
 * owner fails with D1's error (`isLastOwnerViolation`), changing and recording nothing.
 */
export async function addOrganizationMember(db: Queryable, organization: OrganizationRef, user: User, role: Role): Promise<void> {
  const values = { organization_id: organization.id, user_id: user.id, role };
  await batch(db, {
    fence: fenceGuard(db, organization.bucket),
    userCopy: copyUserStatement(db, user),
    event: MEMBER_ADDED.bind(db, { ...values, event_id: newId(organization.bucket) }),
    member: UPSERT_MEMBER.bind(db, values),
  });
}

// Before the upsert, which it is conditioned like: it reads the role the member had.
const MEMBER_ADDED = /* @__PURE__ */ sql(
  `${INSERT_EVENT}
   SELECT :event_id, CASE WHEN m.role IS NULL THEN 'member.joined' ELSE 'member.role_changed' END, o.id, w.id, NULL, NULL,
          ${OPERATOR_ACTOR},
          CASE WHEN m.role IS NULL THEN json_object('email', u.email, 'user_id', u.id, 'role', :role, 'workspace_id', w.id)
               ELSE json_object('email', u.email, 'user_id', u.id, 'role', :role, 'previous_role', m.role, 'workspace_id', w.id)
          END
     FROM organizations o JOIN users u ON u.id = :user_id
     LEFT JOIN organization_members m ON m.organization_id = o.id AND m.user_id = u.id
     LEFT JOIN workspaces w ON w.organization_id = o.id AND w.is_default = 1
    WHERE o.id = :organization_id AND m.role IS NOT :role`,
);

const PROJECT_OF_MEMBER = /* @__PURE__ */ sql<{ id: string }>(
  `SELECT p.id FROM projects p
     JOIN workspaces w ON w.id = p.workspace_id
     JOIN organization_members m ON m.organization_id = w.organization_id AND m.user_id = :user_id
    WHERE p.id = :project_id`,
);
const PERSONAL_PROJECT = /* @__PURE__ */ sql<{ id: string }>(
  `SELECT p.id FROM organizations o
     JOIN organization_members m ON m.organization_id = o.id AND m.user_id = :user_id AND m.role = 'owner'
     JOIN workspaces w ON w.organization_id = o.id AND w.is_default = 1
     JOIN projects p ON p.workspace_id = w.id AND p.is_default = 1
    WHERE o.is_personal = 1
    ORDER BY o.created_at LIMIT 1`,
);

/** The user's personal project, or the given project if it exists and the user belongs to its organization. */
export async function findProjectForUser(db: Queryable, userId: string, projectId?: string): Promise<string | null> {
  const row = projectId
    ? await PROJECT_OF_MEMBER.bind(db, { user_id: userId, project_id: projectId }).first<{ id: string }>()
    : await PERSONAL_PROJECT.bind(db, { user_id: userId }).first<{ id: string }>();
  return row?.id ?? null;
}

export interface NewApiKey {
  prefix: string;
  keyHash: string;
  userId: string;
  projectId: string;
  expiresAt: string | null;
}

const INSERT_API_KEY = /* @__PURE__ */ sql(
  `INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id, expires_at)
   VALUES (:key_id, :prefix, :key_hash, :user_id, :project_id, :expires_at)`,
);

const insertApiKey = (db: Queryable, key: NewApiKey, id: string) =>
  INSERT_API_KEY.bind(db, {
    key_id: id,
    prefix: key.prefix,
    key_hash: key.keyHash,
    user_id: key.userId,
    project_id: key.projectId,
    expires_at: key.expiresAt,
  });

/**
 * The key (its id in its prefix's bucket, which is its project's: generateApiKey); writes no event: for setting up data
 * (test fixtures, the demo seed). The admin CLI uses `createApiKeyAsOperator`.
 */
export async function createApiKey(db: Queryable, key: NewApiKey, id = newId(bucketOfPrefix(key.prefix))): Promise<void> {
  await insertApiKey(db, key, id).run();
}

/** Where key `k` works (its project `p`, workspace `w`) and what an event says of it: as src/keys/keys.sql.ts's events. */
const KEY_EVENT_COLUMNS = `w.organization_id, w.id, p.id, NULL, ${OPERATOR_ACTOR},
  json_object('prefix', k.prefix, 'user_id', k.user_id, 'project_id', k.project_id)
  FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN workspaces w ON w.id = p.workspace_id`;

/** The key and its `api_key.created` event, in one batch: their ids in the bucket its prefix carries (generateApiKey). */
export async function createApiKeyAsOperator(db: Queryable, key: NewApiKey): Promise<void> {
  const bucket = bucketOfPrefix(key.prefix);
  const id = newId(bucket);
  await batch(db, {
    fence: fenceGuard(db, bucket),
    key: insertApiKey(db, key, id),
    event: KEY_CREATED.bind(db, { key_id: id, event_id: newId(bucket) }),
  });
}

const KEY_CREATED = /* @__PURE__ */ sql(
  `${INSERT_EVENT} SELECT :event_id, 'api_key.created', ${KEY_EVENT_COLUMNS} WHERE k.id = :key_id`,
);

const REVOKE_KEY = /* @__PURE__ */ sql<{ prefix: string; revoked_at: string }>(
  `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    WHERE prefix = :prefix RETURNING prefix, revoked_at`,
);

// Before the update, which it is conditioned like.
const KEY_DELETED = /* @__PURE__ */ sql(
  `${INSERT_EVENT} SELECT :event_id, 'api_key.deleted', ${KEY_EVENT_COLUMNS} WHERE k.prefix = :prefix AND k.revoked_at IS NULL`,
);

/**
 * Revokes the key (keeping the first revocation time); null when no key has that prefix. Writes no event: for
 * setting up data (test fixtures). The admin CLI uses `revokeApiKeyAsOperator`.
 */
export function revokeApiKey(db: Queryable, prefix: string): Promise<{ prefix: string; revoked_at: string } | null> {
  return REVOKE_KEY.bind(db, { prefix }).first();
}

/**
 * `revokeApiKey` with its `api_key.deleted` event, in one batch: recorded when the key was live (not yet revoked);
 * revoking a revoked key again changes nothing, and records nothing.
 */
export async function revokeApiKeyAsOperator(
  db: Queryable,
  prefix: string,
  bucket: number,
): Promise<{ prefix: string; revoked_at: string } | null> {
  const { revoked } = await batch(db, {
    fence: fenceGuard(db, bucket),
    event: KEY_DELETED.bind(db, { prefix, event_id: newId(bucket) }),
    revoked: REVOKE_KEY.bind(db, { prefix }),
  });
  return revoked.results[0] ?? null;
}

/**
 * Records that the key with this hash was used, unless that was already recorded within the hour: run after the
 * answer (waitUntil), only when the request's own key check found the record older than that.
 */
export async function recordKeyUse(db: Queryable, keyHash: string): Promise<void> {
  await RECORD_KEY_USE.bind(db, { key_hash: keyHash }).run();
}

// Not while the key's organization's bucket is fenced: a move's copy sees no write (the use is recorded at a later one).
const RECORD_KEY_USE = /* @__PURE__ */ sql(
  `UPDATE api_keys SET last_used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE key_hash = :key_hash AND (last_used_at IS NULL OR last_used_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour'))
      AND (SELECT o.bucket FROM projects p JOIN workspaces w ON w.id = p.workspace_id JOIN organizations o ON o.id = w.organization_id
            WHERE p.id = api_keys.project_id) NOT IN (SELECT bucket FROM bucket_fences)`,
);

// Before the update, which it is conditioned like: it reads the role the member had.
const ROLE_CHANGED = /* @__PURE__ */ sql(
  `${INSERT_EVENT}
   SELECT :event_id, 'member.role_changed', m.organization_id, w.id, NULL, NULL, ${OPERATOR_ACTOR},
          json_object('email', u.email, 'user_id', u.id, 'role', :role, 'previous_role', m.role, 'workspace_id', w.id)
     FROM organization_members m JOIN users u ON u.id = m.user_id
     LEFT JOIN workspaces w ON w.organization_id = m.organization_id AND w.is_default = 1
    WHERE m.organization_id = :organization_id AND m.user_id = :user_id AND m.role <> :role`,
);
const CHANGE_ROLE = /* @__PURE__ */ sql(
  "UPDATE organization_members SET role = :role WHERE organization_id = :organization_id AND user_id = :user_id RETURNING user_id",
);

const MEMBER_REMOVED = /* @__PURE__ */ sql(
  `${INSERT_EVENT}
   SELECT :event_id, 'member.removed', m.organization_id, w.id, NULL, NULL, ${OPERATOR_ACTOR},
          json_object('email', u.email, 'user_id', u.id, 'role', m.role, 'workspace_id', w.id)
     FROM organization_members m JOIN users u ON u.id = m.user_id
     LEFT JOIN workspaces w ON w.organization_id = m.organization_id AND w.is_default = 1
    WHERE m.organization_id = :organization_id AND m.user_id = :user_id`,
);
const REVOKE_MEMBER_KEYS = /* @__PURE__ */ sql<{ prefix: string }>(
  `UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE user_id = :user_id AND revoked_at IS NULL
      AND project_id IN (SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
                          WHERE w.organization_id = :organization_id)
      AND EXISTS (SELECT 1 FROM organization_members WHERE organization_id = :organization_id AND user_id = :user_id)
   RETURNING prefix`,
);
const REMOVE_MEMBER = /* @__PURE__ */ sql(
  "DELETE FROM organization_members WHERE organization_id = :organization_id AND user_id = :user_id RETURNING user_id",
);

/**
 * Changes an existing member's role, with its `member.role_changed` event, in one batch (the same role again
 * changes nothing, and records nothing); false when the user is no member of the organization. Demoting the last
 * owner fails with D1's error (`isLastOwnerViolation`), changing and recording nothing.
 */
export async function changeMemberRole(
  db: Queryable,
  organization: OrganizationRef,
  userId: string,
  role: Role,
): Promise<boolean> {
  const values = { organization_id: organization.id, user_id: userId, role };
  const { changed } = await batch(db, {
    fence: fenceGuard(db, organization.bucket),
    event: ROLE_CHANGED.bind(db, { ...values, event_id: newId(organization.bucket) }),
    changed: CHANGE_ROLE.bind(db, values),
  });
  return changed.results.length > 0;
}

/**
 * Removes the member and, in the same batch (one transaction), revokes their live keys for every project of the
 * organization (their keys elsewhere stay live) and records `member.removed`, with the role they had (the keys'
 * revocation is part of it: no `api_key.deleted`, as over HTTP). Null when the user is no member (nothing is
 * written); else the prefixes of the keys it revoked. Removing the last owner fails with D1's error
 * (`isLastOwnerViolation`): the keys stay live, and nothing is recorded.
 */
export async function removeOrganizationMember(
  db: Queryable,
  organization: OrganizationRef,
  userId: string,
): Promise<{ revokedKeys: string[] } | null> {
  const values = { organization_id: organization.id, user_id: userId };
  const { revoked, removed } = await batch(db, {
    fence: fenceGuard(db, organization.bucket),
    event: MEMBER_REMOVED.bind(db, { ...values, event_id: newId(organization.bucket) }),
    revoked: REVOKE_MEMBER_KEYS.bind(db, values),
    removed: REMOVE_MEMBER.bind(db, values),
  });
  if (removed.results.length === 0) return null;
  return { revokedKeys: revoked.results.map((key) => key.prefix).sort() };
}
