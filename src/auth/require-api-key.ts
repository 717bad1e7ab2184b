import { createMiddleware } from "hono/factory";
import { findApiKey } from "../db/accounts";
import { unauthorized } from "../http/errors";
import type { AppEnv } from "../types";
import { hashApiKey, parseAuthorization } from "./api-keys";

/** Who is calling, as established by their API key. */
export interface Caller {
  userId: string;
  /** The project the key names: where apps go when a create names no target. */
  projectId: string;
}

// Compared against when the prefix is unknown, so that an unknown prefix costs the same work as a wrong secret.
const UNKNOWN_KEY_HASH = "0".repeat(64);

const hexToBytes = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));

function sameHash(expectedHex: string, actualHex: string): boolean {
  const expected = hexToBytes(expectedHex);
  const actual = hexToBytes(actualHex);
  return expected.byteLength === actual.byteLength && crypto.subtle.timingSafeEqual(expected, actual);
}

/** Rejects with 401 unless the Authorization header carries a live key; sets `caller` otherwise. */
export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const parsed = parseAuthorization(c.req.header("Authorization"));
  if (!parsed) throw unauthorized();
  const [hash, record] = await Promise.all([hashApiKey(parsed.key), findApiKey(c.env.DB, parsed.prefix)]);
  const matches = sameHash(record?.keyHash ?? UNKNOWN_KEY_HASH, hash);
  const now = new Date().toISOString();
  const live = record !== null && record.revokedAt === null && (record.expiresAt === null || record.expiresAt > now);
  if (!matches || !live) throw unauthorized();
  c.set("caller", { userId: record.userId, projectId: record.projectId });
  await next();
});
