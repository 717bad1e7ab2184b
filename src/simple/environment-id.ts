import { toHex } from "../http/digest";

/**
 * The current API's environment is project-wide: all apps' environments of one name (docs/CURRENT-SDK-API.md). Its id
 * is derived, not stored: a name-based UUID (RFC 9562 version 5) of the name within the project, the same for every
 * read, made by no write: SHA-1 of the project id's 16 bytes and the name's UTF-8, the version and variant bits set.
 */
export async function environmentIdOf(projectId: string, name: string): Promise<string> {
  const namespace = Array.from(projectId.replace(/-/g, "").match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));
  const hashed = new Uint8Array(
    await crypto.subtle.digest("SHA-1", new Uint8Array([...namespace, ...new TextEncoder().encode(name)])),
  );
  hashed[6] = (hashed[6] & 0x0f) | 0x50;
  hashed[8] = (hashed[8] & 0x3f) | 0x80;
  const hex = toHex(hashed.subarray(0, 16));
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
