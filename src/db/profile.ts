import { batchAsCaller, CALLER_CTE, type Caller } from "./caller";
import type { Queryable } from "./d1";

export interface Profile {
  id: string;
  username: string;
  email: string;
  created_at: string;
}

/** The caller's own user. */
export async function fetchProfile(db: Queryable, caller: Caller): Promise<Profile> {
  const [user] = await batchAsCaller<Profile>(db, caller, [
    db
      .prepare(`WITH ${CALLER_CTE} SELECT id, username, email, created_at FROM users WHERE id = (SELECT user_id FROM caller)`)
      .bind(...caller.credentials),
  ]);
  return user.results[0];
}
