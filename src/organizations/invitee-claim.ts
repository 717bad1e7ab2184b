import type { Context } from "hono";
import { bucketedSince, bucketOfId } from "../db/buckets";
import { isTransientD1Error } from "../db/d1";
import { claimEmail, confirmClaim, type EmailHolder, emailHolder, hasLapsed, releaseClaim } from "../db/directory";
import { shardOf } from "../db/pool";
import { sql } from "../db/sql";
import { type CallerEnv, readAs } from "../http/d1-session";
import { emailBeingClaimed } from "./errors";
import { invitationByToken, type NewInvitee } from "./invitations.sql.ts";

type Target = { organizationId: string; workspaceId: string };

const USER_EXISTS = sql("SELECT 1 AS found FROM users WHERE id = :user_id");

/** Whether the user `holder` names exists on its shard (the shard of its id's bucket): its claim was written. */
async function existsOnItsShard<E extends CallerEnv>(c: Context<E>, holder: EmailHolder): Promise<boolean> {
  const shard = shardOf(c.env, bucketOfId(holder.id, bucketedSince(c.env)));
  return (await USER_EXISTS.bind(shard, { user_id: holder.id }).first()) !== null;
}

/**
 * What the directory says of the invited email before an accept (docs/SHARDING.md §3.3): who has the email, whatever
 * shard their rows are on, so that the accept's verdict is the same wherever they are. Without a key (`claim`), the
 * accept may make a user: the email is then claimed in the directory before the organization's shard is written, so
 * that no two shards ever make a user of one email. The user's id is the invitation's (it carries the organization's
 * bucket): a retry of an accept whose answer was lost finds its own claim, and goes on. Another's claim still pending
 * is looked up on its shard: made there, it is confirmed (the email has an account); not made and lapsed, it is taken
 * over; not made and pending, the accept is answered 503 (a retry in a moment finds it settled). Round trips: the
 * invitation on the shard, then the directory (and, for another's pending claim, its shard, and the directory again).
 * `userId`: the id of a user made otherwise (none is, with a key).
 */
export async function inviteeOf<E extends CallerEnv>(
  c: Context<E>,
  target: Target,
  tokenHash: string,
  userId: string,
  claim: boolean,
): Promise<NewInvitee> {
  const unclaimed: NewInvitee = { id: userId, username: null, createdAt: null, claimUntil: null, emailHolder: null };
  const invitation = await readAs(c, [target.organizationId], (db) => invitationByToken(db, target, tokenHash));
  // No such invitation: the accept's own verdict says so.
  if (invitation === null) return unclaimed;
  const { email, id: invitedUserId } = invitation;
  if (!claim) return { ...unclaimed, emailHolder: (await emailHolder(c.env.DIRECTORY, email))?.id ?? null };
  const ours = { ...unclaimed, id: invitedUserId };
  let claimed = await claimEmail(c.env.DIRECTORY, email, invitedUserId);
  if (claimed.outcome === "held" && claimed.holder.pending_until !== null) {
    const { holder } = claimed;
    if (await existsOnItsShard(c, holder)) {
      await confirmClaim(c.env.DIRECTORY, holder.id);
      return { ...ours, emailHolder: holder.id };
    }
    if (!hasLapsed(holder)) throw emailBeingClaimed();
    claimed = await claimEmail(c.env.DIRECTORY, email, invitedUserId, holder.id);
    if (claimed.outcome === "held" && claimed.holder.pending_until !== null) throw emailBeingClaimed();
  }
  if (claimed.outcome === "held") return { ...ours, emailHolder: claimed.holder.id };
  const { username, createdAt, pendingUntil: claimUntil } = claimed;
  return { id: invitedUserId, username, createdAt, claimUntil, emailHolder: null };
}

/**
 * Settles the claim of `invitee` (if the accept made one) by the accept's outcome: the user made, it is confirmed
 * after the answer; not made, given up before it, so that a retry finds the email free. An accept that failed with a
 * transient error may have been applied: its claim is left pending, and the next claim of the email settles it by
 * looking on the shard (`inviteeOf`).
 */
export async function settleClaim<E extends CallerEnv, T extends { newUser: boolean }>(
  c: Context<E>,
  invitee: NewInvitee,
  accept: Promise<T>,
): Promise<T> {
  if (invitee.claimUntil === null) return accept;
  let accepted: T;
  try {
    accepted = await accept;
  } catch (error) {
    if (!isTransientD1Error(error)) await releaseClaim(c.env.DIRECTORY, invitee.id);
    throw error;
  }
  if (!accepted.newUser) {
    await releaseClaim(c.env.DIRECTORY, invitee.id);
    return accepted;
  }
  const leftPending = () => console.warn(JSON.stringify({ level: "warn", message: "directory claim left pending" }));
  c.executionCtx.waitUntil(confirmClaim(c.env.DIRECTORY, invitee.id).catch(leftPending));
  return accepted;
}
