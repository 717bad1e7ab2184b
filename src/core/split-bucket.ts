/**
 * Which arm of a split a targeting key gets (docs/SPLITS.md §2): its bucket, MurmurHash3 x86_32 (seed 0) of the UTF-8
 * of `salt:key`, modulo 10000, is the candidate's when below the weight. The same key and salt always land in the same
 * bucket, so raising the weight keeps everyone already on the candidate.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function scrambled(k: number): number {
  const mixed = Math.imul(k, C1);
  return Math.imul((mixed << 15) | (mixed >>> 17), C2);
}

/** MurmurHash3 x86_32 of the bytes, seed 0, as an unsigned 32-bit number. */
export function murmur3(bytes: Uint8Array): number {
  const whole = bytes.length & ~3;
  let h = 0;
  for (let i = 0; i < whole; i += 4) {
    h ^= scrambled(bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
    h = Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64;
  }
  let tail = 0;
  for (let i = bytes.length - 1; i >= whole; i--) tail = (tail << 8) | bytes[i];
  if (bytes.length > whole) h ^= scrambled(tail);
  h ^= bytes.length;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A key's bucket in a split of this salt: 0–9999. */
export const splitBucket = (salt: string, key: string) => murmur3(new TextEncoder().encode(`${salt}:${key}`)) % 10000;

/** The arm a read gets, and why: `Config-Split`'s fields. */
export interface SplitChoice {
  arm: "base" | "candidate";
  bucket: number | null;
  weight: number;
}

/** The arm of a read with this targeting key (none: the base, always). */
export function chooseArm(split: { salt: string; weight: number }, key: string | null): SplitChoice {
  if (key === null) return { arm: "base", bucket: null, weight: split.weight };
  const bucket = splitBucket(split.salt, key);
  return { arm: bucket < split.weight ? "candidate" : "base", bucket, weight: split.weight };
}
