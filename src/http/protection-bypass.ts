import { createMiddleware } from "hono/factory";
import { validationFailed } from "./errors";

export const PROTECTION_BYPASS_HEADER = "Protection-Bypass";

/**
 * What a header's bytes that are not UTF-8 arrive as: the runtime decodes a header value as UTF-8, each invalid
 * sequence U+FFFD (workerd does so, cloudflare/workerd#6927), the bytes sent lost. A reason holding it is refused:
 * an audit log records what was meant, never a replacement.
 */
const NOT_UTF8 = "\uFFFD";

/**
 * A bypass's reason: 1 to 500 printable characters (no control character) of UTF-8 text (no U+FFFD: NOT_UTF8); fetch
 * trims the value's ends.
 */
export const PROTECTION_BYPASS_PATTERN = /^[^\p{Cc}\uFFFD]{1,500}$/u;

const malformed = (msg: string) => validationFailed([{ loc: ["header", PROTECTION_BYPASS_HEADER], msg, type: "value_error" }]);

/**
 * The `Protection-Bypass` header of the routes that write to a protected environment (docs/CHANGE-REQUESTS.md §2):
 * its reason in `c.var.bypassReason` (null without the header); a malformed one is a 422 at `header`, before any
 * write.
 */
export const protectionBypass = createMiddleware<{ Variables: { bypassReason?: string | null } }>(async (c, next) => {
  const header = c.req.header(PROTECTION_BYPASS_HEADER);
  if (header?.includes(NOT_UTF8)) {
    throw malformed("Value error, Protection-Bypass must be UTF-8 text: bytes that are not UTF-8 are refused (U+FFFD too)");
  }
  if (header !== undefined && !PROTECTION_BYPASS_PATTERN.test(header)) {
    throw malformed("Value error, Protection-Bypass must be 1 to 500 printable characters: the reason for the bypass");
  }
  c.set("bypassReason", header ?? null);
  return next();
});
