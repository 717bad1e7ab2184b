/**
 * The state of an environment a writer saw (its ETag): its id, its revision and the split running there, if any
 * (`<split id>:<its count of weight changes>`, src/apps/splits.sql.ts SPLIT_STATE); null: any state (`If-Match: *`).
 */
export interface EnvironmentState {
  environmentId: string;
  revision: number;
  split?: string | null;
}

/**
 * An environment record's ETag names its state: the environment's id and revision, which change with each
 * deployment; while a split runs, the split and its count of weight changes, which change with each start, change,
 * step and end of a split (what the environment serves), none of which makes a revision but a promote (docs/SPLITS.md
 * §1); and `.archived` while the variant it runs is archived (the record says so; archiving or unarchiving makes no
 * revision). So a writer's If-Match can be checked by the database inside its write (src/core/deployments.sql.ts,
 * src/apps/splits.sql.ts), and computing it costs nothing.
 */
export const environmentETag = ({ environmentId, revision, split }: EnvironmentState, runsArchivedVariant = false) =>
  `"${environmentId}.${revision}${split ? `.${split}` : ""}${runsArchivedVariant ? ".archived" : ""}"`;

// Entity tags compare character for character: a number written with leading zeros names no state. A write is
// conditional on the deployments and the split only: the archived mark, which no write changes, is not compared.
const ETAG = /^"([0-9a-f-]{36})\.(0|[1-9][0-9]{0,8})(?:\.([0-9a-f-]{36}:[1-9][0-9]{0,8}))?(?:\.archived)?"$/;

/**
 * What an If-Match header asks for: null for none or `*` (any state of an existing environment), else the state
 * its entity tag names. A tag that names no state of ours (weak, foreign, several) can match nothing.
 */
export function expectedState(ifMatch: string | undefined): EnvironmentState | null {
  if (ifMatch === undefined || ifMatch.trim() === "*") return null;
  const tag = ETAG.exec(ifMatch.trim());
  return tag ? { environmentId: tag[1], revision: Number(tag[2]), split: tag[3] ?? null } : { environmentId: "", revision: -1 };
}
