import type { Context } from "hono";
import type { Config } from "../core/configs.sql.ts";
import { validationFailed } from "./errors";

/** OpenFeature's name for an evaluation's key: the key a split's arm is chosen by (docs/SPLITS.md §2). */
export const TARGETING_KEY_HEADER = "Targeting-Key";
export const CONFIG_SPLIT_HEADER = "Config-Split";

const TARGETING_KEY = /^[^\p{Cc}]{1,256}$/u;

/** A config read's targeting key (null without the header); one longer than 256 characters or with a control character: 422. */
export function targetingKey(c: Context): string | null {
  const key = c.req.header(TARGETING_KEY_HEADER);
  if (key === undefined || TARGETING_KEY.test(key)) return key ?? null;
  throw validationFailed([
    {
      loc: ["header", TARGETING_KEY_HEADER],
      msg: "Value error, Targeting-Key must be 1 to 256 characters, none a control character",
      type: "value_error",
    },
  ]);
}

/** `Config-Split` on a read of an environment a split runs in: the arm chosen, the key's bucket (with a key) and why. */
export function answerSplit(c: Context, { split }: Config): void {
  if (!split) return;
  const bucket = split.bucket === null ? "" : `; bucket=${split.bucket}`;
  c.header(
    CONFIG_SPLIT_HEADER,
    `${split.arm}${bucket}; weight=${split.weight}; reason=${split.bucket === null ? "no_key" : "split"}`,
  );
}
