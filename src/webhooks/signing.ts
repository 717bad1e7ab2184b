/**
 * Standard Webhooks (https://www.standardwebhooks.com): secrets are `whsec_` + base64 of 32 random bytes, and each
 * request carries `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of
 * "{id}.{timestamp}.{body}" keyed with the secret's decoded bytes; space-separated when two secrets are live).
 */

const SECRET_PREFIX = "whsec_";

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (char) => char.charCodeAt(0));

export const newWebhookSecret = () => SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(32)));

async function signature(secret: string, signed: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    fromBase64(secret.slice(SECRET_PREFIX.length)),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return `v1,${toBase64(new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(signed))))}`;
}

/** The three headers of one attempt, signed with each live secret (the current one first). */
export async function signedHeaders(secrets: string[], messageId: string, timestamp: number, body: string) {
  const signed = `${messageId}.${timestamp}.${body}`;
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": (await Promise.all(secrets.map((secret) => signature(secret, signed)))).join(" "),
  };
}
