import { newKeyPrefix } from "../db/buckets";
import { sha256OfText, toHex } from "../http/digest";

/** API keys look like `<prefix>.<secret>`: 8 letters/digits, a dot, 64 lowercase hex digits. */
const KEY_PATTERN = /^([A-Za-z0-9]{8})\.[0-9a-f]{64}$/;

export interface ParsedApiKey {
  key: string;
  prefix: string;
}

export function parseApiKey(key: string): ParsedApiKey | null {
  const match = KEY_PATTERN.exec(key);
  return match ? { key, prefix: match[1] } : null;
}

/** Accepts `ApiKey <key>`, `Bearer <key>` or the bare key, as existing clients send all three. */
export function parseAuthorization(header: string | undefined): ParsedApiKey | null {
  if (!header) return null;
  const [first, second, ...rest] = header.trim().split(/\s+/);
  if (rest.length > 0) return null;
  if (second === undefined) return parseApiKey(first);
  return /^(apikey|bearer)$/i.test(first) ? parseApiKey(second) : null;
}

/** SHA-256 of the whole key, hex: the only form in which a key is stored. */
export const hashApiKey = (key: string): Promise<string> => sha256OfText(key);

/** A new key of a project whose organization is in `bucket`: its prefix carries the bucket (src/db/buckets.ts). */
export function generateApiKey(bucket: number): ParsedApiKey {
  const prefix = newKeyPrefix(bucket);
  return { key: `${prefix}.${toHex(crypto.getRandomValues(new Uint8Array(32)))}`, prefix };
}

/** An invitation token's SHA-256, the only form in which it is stored (tokens: src/db/buckets.ts's newInvitationToken). */
export const hashInvitationToken = (token: string): Promise<string> => sha256OfText(token);
