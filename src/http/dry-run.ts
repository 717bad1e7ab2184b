import * as z from "zod/mini";
import { documented } from "./documentation";
import { queryFlag } from "./fields";

/** The `dry_run` field of a write's query that answers what it would do: `description` says what the dry-run answers. */
export const dryRunFlag = (description: string) =>
  queryFlag.apply(
    documented(
      globalThis.DOCUMENTATION && {
        description: `true: ${description}, with the same errors as the call; nothing written, no Idempotency-Key claimed`,
      },
    ),
  );

/**
 * The `?dry_run` of a write that answers what it would do (src/http/route.ts `takesDryRun`), as its declaration's
 * `query`, where it takes no other.
 */
export const dryRunQueryOf = (description: string) => ({
  schema: z.object({ dry_run: dryRunFlag(description) }),
  examples: globalThis.DOCUMENTATION && { dry_run: "true" as const },
});
