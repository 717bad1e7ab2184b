/** Bytes as lowercase hex, two digits each. */
export const toHex = (bytes: ArrayBuffer | Uint8Array) =>
  Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, "0")).join("");

/** SHA-256 of the data, as lowercase hex. */
export const sha256Hex = async (data: ArrayBuffer | Uint8Array) => toHex(await crypto.subtle.digest("SHA-256", data));

/** SHA-256 of the text's UTF-8, as lowercase hex: how keys and invitation tokens are stored. */
export const sha256OfText = (text: string) => sha256Hex(new TextEncoder().encode(text));
