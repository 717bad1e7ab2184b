/*
 * The directory's users (docs/SHARDING.md §1, §3.3): the authority on which email and username are taken across the
 * shards. A user is made by claiming the email here first (a row with `pending_until`), then writing the user on its
 * shard in a batch that refuses itself once the claim has lapsed, then confirming the claim (`pending_until` NULL).
 * A failure at any point leaves nothing that blocks a retry: a claim nobody confirmed lapses after CLAIM_SECONDS.
 */

import type { User } from "./accounts";
import type { Queryable } from "./d1";
import { batch, sql } from "./sql";

/** How long a claim holds its email before another may take it over (its shard write refuses itself after that). */
export const CLAIM_SECONDS = 300;

/**
 * Who holds an email in the directory: the user's row (as on their shards), and until when it is only claimed (null: a
 * confirmed user).
 */
export interface EmailHolder extends User {
  pending_until: string | null;
}

// A lapsed claim of the email is taken over only once the caller has checked its shard (`claimEmail`'s `lapsed`).
const TAKE_OVER_LAPSED = /* @__PURE__ */ sql(
  `DELETE FROM users WHERE email = :email AND id = :lapsed_id AND pending_until IS NOT NULL
     AND pending_until <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
);

// The email's local part (characters a username may hold), suffixed with the id's last 12 digits when taken.
const CLAIM = /* @__PURE__ */ sql(
  `INSERT INTO users (id, username, email, pending_until)
   SELECT :user_id,
          CASE WHEN EXISTS (SELECT 1 FROM users WHERE username = local) THEN local || '-' || substr(:user_id, -12) ELSE local END,
          :email, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || :claim_seconds || ' seconds')
     FROM (SELECT substr(:email, 1, instr(:email, '@') - 1) AS local)
    WHERE NOT EXISTS (SELECT 1 FROM users WHERE email = :email)`,
);

// A claim of this user's own, from an earlier attempt of the same creation (its answer lost), is claimed again.
const RENEW = /* @__PURE__ */ sql(
  `UPDATE users SET pending_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || :claim_seconds || ' seconds')
    WHERE id = :user_id AND email = :email AND pending_until IS NOT NULL`,
);

const HOLDER = /* @__PURE__ */ sql<EmailHolder>(
  "SELECT id, username, email, created_at, pending_until FROM users WHERE email = :email",
);

/** The user the directory knows by `email` (not a pending claim), if any: whatever shard their rows are on. */
export async function directoryUser(directory: Queryable, email: string): Promise<User | null> {
  const holder = await emailHolder(directory, email);
  if (!holder || holder.pending_until !== null) return null;
  const { pending_until: _, ...user } = holder;
  return user;
}

/** Who holds `email` in the directory (a user, or a claim), if anyone: one round trip. */
export async function emailHolder(directory: Queryable, email: string): Promise<EmailHolder | null> {
  return (await HOLDER.bind(directory, { email }).first<EmailHolder>()) ?? null;
}

/** What a claim found: the email is now claimed for `userId` (with its username), or another user holds it. */
export type Claim =
  | { outcome: "claimed"; username: string; createdAt: string; pendingUntil: string }
  | { outcome: "held"; holder: EmailHolder };

/**
 * Claims `email` for a new user `userId` (one round trip): claimed (again, when the claim was already this user's),
 * or held by another (confirmed, or claimed and not yet lapsed, or lapsed: see `lapsed`). `lapsed`: the id of a lapsed claim of this email that the caller found no user
 * of on its shard, which is then taken over in the same batch.
 */
export async function claimEmail(
  directory: Queryable,
  email: string,
  userId: string,
  lapsed: string | null = null,
): Promise<Claim> {
  const values = { email, user_id: userId, lapsed_id: lapsed, claim_seconds: CLAIM_SECONDS };
  const { holder } = await batch(directory, {
    takeOver: TAKE_OVER_LAPSED.bind(directory, values),
    claim: CLAIM.bind(directory, values),
    renew: RENEW.bind(directory, values),
    holder: HOLDER.bind(directory, values),
  });
  const found = holder.results[0];
  if (found?.id === userId && found.pending_until) {
    return { outcome: "claimed", username: found.username, createdAt: found.created_at, pendingUntil: found.pending_until };
  }
  return { outcome: "held", holder: found as EmailHolder };
}

const CLAIM_NAMED = /* @__PURE__ */ sql(
  `INSERT INTO users (id, username, email, created_at, pending_until)
   SELECT :user_id, :username, :email, :created_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || :claim_seconds || ' seconds')
    WHERE NOT EXISTS (SELECT 1 FROM users WHERE email = :email OR username = :username)`,
);

const TAKEN = /* @__PURE__ */ sql<{ email: number; username: number }>(
  `SELECT EXISTS (SELECT 1 FROM users WHERE email = :email AND id <> :user_id) AS email,
          EXISTS (SELECT 1 FROM users WHERE username = :username AND id <> :user_id) AS username`,
);

/**
 * Claims `email` and `username` for a new user `id` (the admin CLI's `user create`), made at `createdAt` (which the
 * user's row on its shard must carry too): claimed, or which of them a user (or a pending claim) has.
 */
export async function claimUser(
  directory: Queryable,
  user: { id: string; username: string; email: string; createdAt: string },
): Promise<"claimed" | "email_taken" | "username_taken"> {
  const values = {
    user_id: user.id,
    username: user.username,
    email: user.email,
    created_at: user.createdAt,
    claim_seconds: CLAIM_SECONDS,
  };
  const { taken } = await batch(directory, { claim: CLAIM_NAMED.bind(directory, values), taken: TAKEN.bind(directory, values) });
  const { email, username } = taken.results[0];
  return email ? "email_taken" : username ? "username_taken" : "claimed";
}

const CONFIRM = /* @__PURE__ */ sql("UPDATE users SET pending_until = NULL WHERE id = :user_id");

/** Confirms the claim of `userId`: the user exists on their shard. */
export async function confirmClaim(directory: Queryable, userId: string): Promise<void> {
  await CONFIRM.bind(directory, { user_id: userId }).run();
}

const RELEASE = /* @__PURE__ */ sql("DELETE FROM users WHERE id = :user_id AND pending_until IS NOT NULL");

/** Gives the claim of `userId` up: no user was made. */
export async function releaseClaim(directory: Queryable, userId: string): Promise<void> {
  await RELEASE.bind(directory, { user_id: userId }).run();
}

/** Whether a claim's time has passed. */
export const hasLapsed = (holder: EmailHolder) => holder.pending_until !== null && Date.parse(holder.pending_until) <= Date.now();
