/**
 * Webhook secrets at rest: AES-GCM under a key derived from the Worker secret WEBHOOK_SECRETS_KEY, so that a dump
 * of the database alone cannot sign. Without that secret, a development key applies, and only while
 * WEBHOOKS_ALLOW_LOCAL is "true" (wrangler dev, the tests); a deployed service without it refuses to make webhooks.
 */

/** Settings the Worker reads for webhooks: the vars of wrangler.toml and the secret (`wrangler secret put`). */
export interface WebhookSettings {
  WEBHOOKS_ALLOW_LOCAL?: string;
  WEBHOOK_SECRETS_KEY?: string;
}

const DEVELOPMENT_KEY = "app-management-service development key: only while WEBHOOKS_ALLOW_LOCAL is true";

export const allowsLocalTargets = (settings: WebhookSettings) => settings.WEBHOOKS_ALLOW_LOCAL === "true";

/** The key's text: the Worker secret, else the development key where local targets are allowed; null: neither. */
function keyText(settings: WebhookSettings): string | null {
  if (settings.WEBHOOK_SECRETS_KEY) return settings.WEBHOOK_SECRETS_KEY;
  return allowsLocalTargets(settings) ? DEVELOPMENT_KEY : null;
}

const keys = new Map<string, Promise<CryptoKey>>();

function cryptoKey(text: string): Promise<CryptoKey> {
  let key = keys.get(text);
  if (!key) {
    key = crypto.subtle
      .digest("SHA-256", new TextEncoder().encode(text))
      .then((bytes) => crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]));
    keys.set(text, key);
  }
  return key;
}

export class SecretsKeyMissingError extends Error {
  constructor() {
    super("WEBHOOK_SECRETS_KEY is not set");
  }
}

/** Whether secrets can be sealed and opened here. */
export const canSealSecrets = (settings: WebhookSettings) => keyText(settings) !== null;

function keyOf(settings: WebhookSettings): Promise<CryptoKey> {
  const text = keyText(settings);
  if (text === null) throw new SecretsKeyMissingError();
  return cryptoKey(text);
}

/** `v1.` + base64 of a 12-byte IV and the ciphertext. */
export async function sealSecret(settings: WebhookSettings, secret: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await keyOf(settings), new TextEncoder().encode(secret)),
  );
  return `v1.${btoa(String.fromCharCode(...iv, ...sealed))}`;
}

export async function openSecret(settings: WebhookSettings, sealed: string): Promise<string> {
  const bytes = Uint8Array.from(atob(sealed.slice("v1.".length)), (char) => char.charCodeAt(0));
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.slice(0, 12) }, await keyOf(settings), bytes.slice(12));
  return new TextDecoder().decode(plain);
}
