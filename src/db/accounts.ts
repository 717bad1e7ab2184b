import { v7 as uuidv7 } from "uuid";
import type { Queryable } from "./d1";
import { INSERT_EVENT } from "./events";
import type { Role } from "./roles";

/*
 * The admin CLI's changes of members and keys write their events (docs/EVENTS.md) in the change's own batch, as the HTTP
 * routes do. The operator acts there as no user and with no key: the actor is all null (OPERATOR_ACTOR). Member
 * events name the organization's default workspace, the CLI naming none.
 */
const OPERATOR_ACTOR = "NULL, NULL, NULL";

/** The owner of the key with this prefix, live or not. */
export function findApiKeyOwner(db: Queryable, prefix: string): Promise<{ userId: string } | null> {
  return db.prepare("SELECT user_id AS userId FROM api_keys WHERE prefix = ?").bind(prefix).first();
}

export interface User {
  id: string;
  username: string;
  email: string;
}

export function findUserByEmail(db: Queryable, email: string): Promise<User | null> {
  return db.prepare("SELECT id, username, email FROM users WHERE email = ?").bind(email).first<User>();
}

export interface OrganizationIds {
  organizationId: string;
  workspaceId: string;
  projectId: string;
}

const newOrganizationIds = (): OrganizationIds => ({ organizationId: uuidv7(), workspaceId: uuidv7(), projectId: uuidv7() });

/** An organization with its owner, default workspace and default project: the statements, to batch with others. */
function organizationStatements(db: Queryable, name: string, ownerId: string, isPersonal: boolean, ids: OrganizationIds) {
  return [
    db
      .prepare("INSERT INTO organizations (id, name, is_personal) VALUES (?, ?, ?)")
      .bind(ids.organizationId, name, isPersonal ? 1 : 0),
    db
      .prepare("INSERT INTO organization_members (organization_id, user_id, role) VALUES (?, ?, 'owner')")
      .bind(ids.organizationId, ownerId),
    db
      .prepare("INSERT INTO workspaces (id, organization_id, name, is_default) VALUES (?, ?, 'Default', 1)")
      .bind(ids.workspaceId, ids.organizationId),
    db
      .prepare("INSERT INTO projects (id, workspace_id, name, is_default) VALUES (?, ?, 'Default', 1)")
      .bind(ids.projectId, ids.workspaceId),
  ];
}

/** A user and their personal organization, workspace and default project, in one batch. */
export async function createUser(
  db: Queryable,
  user: { email: string; username: string },
  ids: OrganizationIds & { userId: string } = { userId: uuidv7(), ...newOrganizationIds() },
): Promise<OrganizationIds & { userId: string }> {
  await db.batch([
    db.prepare("INSERT INTO users (id, username, email) VALUES (?, ?, ?)").bind(ids.userId, user.username, user.email),
    ...organizationStatements(db, user.username, ids.userId, true, ids),
  ]);
  return ids;
}

export async function createOrganization(
  db: Queryable,
  name: string,
  ownerId: string,
  ids: OrganizationIds = newOrganizationIds(),
): Promise<OrganizationIds> {
  await db.batch(organizationStatements(db, name, ownerId, false, ids));
  return ids;
}

export async function organizationExists(db: Queryable, organizationId: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 FROM organizations WHERE id = ?").bind(organizationId).first()) !== null;
}

/**
 * Adds the member, or changes their role if they already are one; writes no event: for setting up data (test
 * fixtures). The admin CLI uses `addOrganizationMember`.
 */
export async function setOrganizationMember(db: Queryable, organizationId: string, userId: string, role: Role): Promise<void> {
  await db
    .prepare(
      `INSERT INTO organization_members (organization_id, user_id, role) VALUES (?, ?, ?)
       ON CONFLICT (organization_id, user_id) DO UPDATE SET role = excluded.role`,
    )
    .bind(organizationId, userId, role)
    .run();
}

/**
 * Adds the member (`member.joined`), or changes the role of one who is a member already (`member.role_changed`,
 * with `previous_role`): the change and its event in one batch. The same role again changes nothing, and records
 * nothing. Demoting the last owner fails with D1's error (`isLastOwnerViolation`), changing and recording nothing.
 */
export async function addOrganizationMember(db: Queryable, organizationId: string, userId: string, role: Role): Promise<void> {
  await db.batch([
    // Before the upsert, which it is conditioned like: it reads the role the member had.
    db
      .prepare(
        `${INSERT_EVENT}
         SELECT ?4, CASE WHEN m.role IS NULL THEN 'member.joined' ELSE 'member.role_changed' END, o.id, w.id, NULL, NULL,
                ${OPERATOR_ACTOR},
                CASE WHEN m.role IS NULL THEN json_object('email', u.email, 'user_id', u.id, 'role', ?3, 'workspace_id', w.id)
                     ELSE json_object('email', u.email, 'user_id', u.id, 'role', ?3, 'previous_role', m.role, 'workspace_id', w.id)
                END
           FROM organizations o JOIN users u ON u.id = ?2
           LEFT JOIN organization_members m ON m.organization_id = o.id AND m.user_id = u.id
           LEFT JOIN workspaces w ON w.organization_id = o.id AND w.is_default = 1
          WHERE o.id = ?1 AND m.role IS NOT ?3`,
      )
      .bind(organizationId, userId, role, uuidv7()),
    db
      .prepare(
        `INSERT INTO organization_members (organization_id, user_id, role) VALUES (?1, ?2, ?3)
         ON CONFLICT (organization_id, user_id) DO UPDATE SET role = excluded.role`,
      )
      .bind(organizationId, userId, role),
  ]);
}

/** The user's personal project, or the given project if it exists and the user belongs to its organization. */
export async function findProjectForUser(db: Queryable, userId: string, projectId?: string): Promise<string | null> {
  const row = projectId
    ? await db
        .prepare(
          `SELECT p.id FROM projects p
             JOIN workspaces w ON w.id = p.workspace_id
             JOIN organization_members m ON m.organization_id = w.organization_id AND m.user_id = ?
            WHERE p.id = ?`,
        )
        .bind(userId, projectId)
        .first<{ id: string }>()
    : await db
        .prepare(
          `SELECT p.id FROM organizations o
             JOIN organization_members m ON m.organization_id = o.id AND m.user_id = ? AND m.role = 'owner'
             JOIN workspaces w ON w.organization_id = o.id AND w.is_default = 1
             JOIN projects p ON p.workspace_id = w.id AND p.is_default = 1
            WHERE o.is_personal = 1
            ORDER BY o.created_at LIMIT 1`,
        )
        .bind(userId)
        .first<{ id: string }>();
  return row?.id ?? null;
}

export interface NewApiKey {
  prefix: string;
  keyHash: string;
  userId: string;
  projectId: string;
  expiresAt: string | null;
}

const insertApiKey = (db: Queryable, key: NewApiKey, id: string) =>
  db
    .prepare("INSERT INTO api_keys (id, prefix, key_hash, user_id, project_id, expires_at) VALUES (?, ?, ?, ?, ?, ?)")
    .bind(id, key.prefix, key.keyHash, key.userId, key.projectId, key.expiresAt);

/** The key; writes no event: for setting up data (test fixtures, the demo seed). The admin CLI uses `createApiKeyAsOperator`. */
export async function createApiKey(db: Queryable, key: NewApiKey, id: string = uuidv7()): Promise<void> {
  await insertApiKey(db, key, id).run();
}

/** Where key `k` works (its project `p`, workspace `w`) and what an event says of it: as src/db/keys.ts's events. */
const KEY_EVENT_COLUMNS = `w.organization_id, w.id, p.id, NULL, ${OPERATOR_ACTOR},
  json_object('prefix', k.prefix, 'user_id', k.user_id, 'project_id', k.project_id)
  FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN workspaces w ON w.id = p.workspace_id`;

/** The key and its `api_key.created` event, in one batch. */
export async function createApiKeyAsOperator(db: Queryable, key: NewApiKey, id: string = uuidv7()): Promise<void> {
  await db.batch([
    insertApiKey(db, key, id),
    db.prepare(`${INSERT_EVENT} SELECT ?2, 'api_key.created', ${KEY_EVENT_COLUMNS} WHERE k.id = ?1`).bind(id, uuidv7()),
  ]);
}

const revokeStatement = (db: Queryable, prefix: string) =>
  db
    .prepare(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        WHERE prefix = ? RETURNING prefix, revoked_at`,
    )
    .bind(prefix);

/**
 * Revokes the key (keeping the first revocation time); null when no key has that prefix. Writes no event: for
 * setting up data (test fixtures). The admin CLI uses `revokeApiKeyAsOperator`.
 */
export function revokeApiKey(db: Queryable, prefix: string): Promise<{ prefix: string; revoked_at: string } | null> {
  return revokeStatement(db, prefix).first();
}

/**
 * `revokeApiKey` with its `api_key.deleted` event, in one batch: recorded when the key was live (not yet revoked);
 * revoking a revoked key again changes nothing, and records nothing.
 */
export async function revokeApiKeyAsOperator(
  db: Queryable,
  prefix: string,
): Promise<{ prefix: string; revoked_at: string } | null> {
  const [, revoked] = await db.batch<{ prefix: string; revoked_at: string }>([
    // Before the update, which it is conditioned like.
    db
      .prepare(`${INSERT_EVENT} SELECT ?2, 'api_key.deleted', ${KEY_EVENT_COLUMNS} WHERE k.prefix = ?1 AND k.revoked_at IS NULL`)
      .bind(prefix, uuidv7()),
    revokeStatement(db, prefix),
  ]);
  return revoked.results[0] ?? null;
}

/**
 * Records that the key with this hash was used, unless that was already recorded within the hour: run after the
 * answer (waitUntil), only when the request's own key check found the record older than that.
 */
export async function recordKeyUse(db: Queryable, keyHash: string): Promise<void> {
  await db
    .prepare(
      `UPDATE api_keys SET last_used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        WHERE key_hash = ? AND (last_used_at IS NULL OR last_used_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour'))`,
    )
    .bind(keyHash)
    .run();
}

/**
 * Changes an existing member's role, with its `member.role_changed` event, in one batch (the same role again
 * changes nothing, and records nothing); false when the user is no member of the organization. Demoting the last
 * owner fails with D1's error (`isLastOwnerViolation`), changing and recording nothing.
 */
export async function changeMemberRole(db: Queryable, organizationId: string, userId: string, role: Role): Promise<boolean> {
  const [, changed] = await db.batch([
    // Before the update, which it is conditioned like: it reads the role the member had.
    db
      .prepare(
        `${INSERT_EVENT}
         SELECT ?4, 'member.role_changed', m.organization_id, w.id, NULL, NULL, ${OPERATOR_ACTOR},
                json_object('email', u.email, 'user_id', u.id, 'role', ?3, 'previous_role', m.role, 'workspace_id', w.id)
           FROM organization_members m JOIN users u ON u.id = m.user_id
           LEFT JOIN workspaces w ON w.organization_id = m.organization_id AND w.is_default = 1
          WHERE m.organization_id = ?1 AND m.user_id = ?2 AND m.role <> ?3`,
      )
      .bind(organizationId, userId, role, uuidv7()),
    db
      .prepare("UPDATE organization_members SET role = ?3 WHERE organization_id = ?1 AND user_id = ?2 RETURNING user_id")
      .bind(organizationId, userId, role),
  ]);
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
  organizationId: string,
  userId: string,
): Promise<{ revokedKeys: string[] } | null> {
  const [, revoked, removed] = await db.batch([
    db
      .prepare(
        `${INSERT_EVENT}
         SELECT ?3, 'member.removed', m.organization_id, w.id, NULL, NULL, ${OPERATOR_ACTOR},
                json_object('email', u.email, 'user_id', u.id, 'role', m.role, 'workspace_id', w.id)
           FROM organization_members m JOIN users u ON u.id = m.user_id
           LEFT JOIN workspaces w ON w.organization_id = m.organization_id AND w.is_default = 1
          WHERE m.organization_id = ?1 AND m.user_id = ?2`,
      )
      .bind(organizationId, userId, uuidv7()),
    db
      .prepare(
        `UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
          WHERE user_id = ?2 AND revoked_at IS NULL
            AND project_id IN (SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
                                WHERE w.organization_id = ?1)
            AND EXISTS (SELECT 1 FROM organization_members WHERE organization_id = ?1 AND user_id = ?2)
         RETURNING prefix`,
      )
      .bind(organizationId, userId),
    db
      .prepare("DELETE FROM organization_members WHERE organization_id = ?1 AND user_id = ?2 RETURNING user_id")
      .bind(organizationId, userId),
  ]);
  if (removed.results.length === 0) return null;
  return { revokedKeys: (revoked.results as { prefix: string }[]).map((key) => key.prefix).sort() };
}
