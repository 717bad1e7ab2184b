import { createMiddleware } from "hono/factory";
import { validationFailed } from "./errors";

export const PROTECTION_BYPASS_HEADER = "Protection-Bypass";

/** A bypass's reason: 1 to 500 printable characters (no control character); fetch trims the value's ends. */
export const PROTECTION_BYPASS_PATTERN = /^[^\p{Cc}]{1,500}$/u;

/**
 * The `Protection-Bypass` header of the routes that write to a protected environment (docs/CHANGE-REQUESTS.md §2):
 * its reason in `c.var.bypassReason` (null without the header); a malformed one is a 422 at `header`, before any
 * write.
 */
export const protectionBypass = createMiddleware<{ Variables: { bypassReason?: string | null } }>(async (c, next) => {
  const header = c.req.header(PROTECTION_BYPASS_HEADER);
  if (header !== undefined && !PROTECTION_BYPASS_PATTERN.test(header)) {
    throw validationFailed([
      {
        loc: ["header", PROTECTION_BYPASS_HEADER],
        msg: "Value error, Protection-Bypass must be 1 to 500 printable characters: the reason for the bypass",
        type: "value_error",
      },
    ]);
  }
  c.set("bypassReason", header ?? null);
  return next();
});
