import { CALLER_CTE } from "../db/caller";
import type { CallerDb } from "../db/handles";
import { sql } from "../db/sql";

export interface Profile {
  id: string;
  username: string;
  email: string;
  created_at: string;
}

const PROFILE = sql<Profile>(
  `WITH ${CALLER_CTE} SELECT id, username, email, created_at FROM users WHERE id = (SELECT user_id FROM caller)`,
);

/** The caller's own user. */
export async function fetchProfile(db: CallerDb): Promise<Profile> {
  const { user } = await db.batch({ user: db.statement(PROFILE) });
  return user.results[0];
}
