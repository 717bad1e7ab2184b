import { sha256OfText, toHex } from "../http/digest";

/** API keys look like `<prefix>.<secret>`: 8 letters/digits, a dot, 64 lowercase hex digits. */
const KEY_PATTERN = /^([A-Za-z0-9]{8})\.[0-9a-f]{64}$/;
const PREFIX_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

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

export function generateApiKey(): ParsedApiKey {
  // 62 does not divide 256, so reject the top bytes to keep every prefix character equally likely.
  const prefix: string[] = [];
  while (prefix.length < 8) {
    for (const byte of crypto.getRandomValues(new Uint8Array(16))) {
      if (byte < 248 && prefix.length < 8) prefix.push(PREFIX_ALPHABET[byte % 62]);
    }
  }
  const secret = toHex(crypto.getRandomValues(new Uint8Array(32)));
  const key = `${prefix.join("")}.${secret}`;
  return { key, prefix: prefix.join("") };
}

/** An invitation token: 256 random bits as hex. Only its SHA-256 is stored. */
export const generateInvitationToken = () => toHex(crypto.getRandomValues(new Uint8Array(32)));

export const hashInvitationToken = (token: string): Promise<string> => sha256OfText(token);
