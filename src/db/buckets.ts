import { v7 as uuidv7 } from "uuid";
import * as z from "zod/mini";

/**
 * Buckets (docs/SHARDING.md §2): every organization is in one of 1,024, chosen when it is made and never changed, and
 * every id minted for its rows, every key prefix of its projects and every invitation token of it carries that
 * bucket, so that the bucket (and, once there are shards, the database) is found from the request alone. 1,024 is
 * fixed forever: it is written into ids.
 */
export const BUCKETS = 1024;

/**
 * The bucket of everything made before BUCKETED_SINCE (ids, key prefixes, tokens), and so of every organization made
 * then (`organizations.bucket` defaults to it): "no bucket" and bucket 0 are the same bucket.
 */
export const LEGACY_BUCKET = 0;

function assertBucket(bucket: number): void {
  if (!Number.isInteger(bucket) || bucket < 0 || bucket >= BUCKETS) throw new RangeError(`not a bucket: ${bucket}`);
}

/** One of `items` (not empty), uniformly at random: for the few items it picks among, the modulo's bias is below one in 4 million. */
export const atRandom = <T>(items: readonly T[]): T => items[crypto.getRandomValues(new Uint32Array(1))[0] % items.length];

/**
 * The bucket of a new organization: uniformly at random among `candidates` (src/db/pool.ts's `placementBuckets`); but
 * before BUCKETED_SINCE (`bucketedSince`, in ms), while the ids minted now still read as legacy (the first deploy of
 * docs/SHARDING.md §6's upgrade), the legacy bucket, so that an organization's bucket is always the one its ids read as.
 */
export const newOrganizationBucket = (bucketedSince: number, candidates: number[]) =>
  Date.now() < bucketedSince ? LEGACY_BUCKET : atRandom(candidates);

const threeHexDigits = (bucket: number) => bucket.toString(16).padStart(3, "0");

/**
 * A new id of a row of an organization in `bucket`: a UUIDv7 (uuid's v7: 48-bit millisecond time, a 32-bit counter
 * per isolate, 42 random bits) whose last three hex digits, random bits, are overwritten with the bucket. Version and
 * variant stay, so clients' UUID validators accept it; ids still sort by time, and within an isolate's millisecond
 * by counter; 30 random bits are left against another isolate's id of the same millisecond and counter.
 */
export function newId(bucket: number): string {
  assertBucket(bucket);
  return uuidv7().slice(0, -3) + threeHexDigits(bucket);
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/**
 * The bucket an id carries. An id that is not a UUIDv7, or whose time is earlier than `bucketedSince` (BUCKETED_SINCE,
 * in ms), was made without one: LEGACY_BUCKET. So is a UUIDv7 whose last three hex digits are 0x400 or more: no
 * `newId` makes one, so it was minted by something else (code from before buckets, running past BUCKETED_SINCE; a
 * client), and legacy is where what carries no bucket lives. Any string is taken: a malformed id reads as legacy.
 */
export function bucketOfId(id: string, bucketedSince: number): number {
  if (!UUID_V7.test(id)) return LEGACY_BUCKET;
  const millis = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  if (millis < bucketedSince) return LEGACY_BUCKET;
  const bucket = Number.parseInt(id.slice(-3), 16);
  return bucket < BUCKETS ? bucket : LEGACY_BUCKET;
}

/** The characters of an API key's prefix; a character's index is its base-62 digit. */
export const PREFIX_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const BASE = PREFIX_ALPHABET.length;
const PAIRS = BASE * BASE;

/** `count` prefix characters, each equally likely: bytes of 248 and more are rejected (62 does not divide 256). */
function randomPrefixCharacters(count: number): string {
  const characters: string[] = [];
  while (characters.length < count) {
    for (const byte of crypto.getRandomValues(new Uint8Array(2 * count))) {
      if (byte < 248 && characters.length < count) characters.push(PREFIX_ALPHABET[byte % BASE]);
    }
  }
  return characters.join("");
}

const asPair = (value: number) => PREFIX_ALPHABET[Math.floor(value / BASE)] + PREFIX_ALPHABET[value % BASE];
const pairValue = (pair: string) => PREFIX_ALPHABET.indexOf(pair[0]) * BASE + PREFIX_ALPHABET.indexOf(pair[1]);

/** The check of a prefix: (Σⱼ i(dⱼ)·31^j) mod 3844 over its bucket pair and its four random characters. */
function checkOf(bucketPair: string, random: string): number {
  let check = 0;
  for (const character of [...bucketPair, ...random].reverse()) check = (check * 31 + PREFIX_ALPHABET.indexOf(character)) % PAIRS;
  return check;
}

/**
 * A new API key prefix of a project in `bucket`: 8 characters, the bucket as two base-62 digits, a two-digit check,
 * four random characters (62⁴ prefixes per bucket).
 */
export function newKeyPrefix(bucket: number): string {
  assertBucket(bucket);
  const bucketPair = asPair(bucket);
  const random = randomPrefixCharacters(4);
  return `${bucketPair}${asPair(checkOf(bucketPair, random))}${random}`;
}

const PREFIX = /^[A-Za-z0-9]{8}$/;

/**
 * The bucket a key prefix carries. A prefix whose first pair is no bucket, or whose check fails, is a legacy one
 * (8 random characters, as every key before buckets; the seed's `localdev`): LEGACY_BUCKET. A random prefix passes
 * both by chance once in 14,444 (1,023 of the 3,844² first-four-character pairs name a bucket other than 0 and
 * check): §2's fallback covers it once there are shards.
 */
export function bucketOfPrefix(prefix: string): number {
  if (!PREFIX.test(prefix)) return LEGACY_BUCKET;
  const bucket = pairValue(prefix.slice(0, 2));
  if (bucket >= BUCKETS || checkOf(prefix.slice(0, 2), prefix.slice(4)) !== pairValue(prefix.slice(2, 4))) return LEGACY_BUCKET;
  return bucket;
}

/** A new invitation token of an organization in `bucket`: 64 hex digits, 244 random bits, the bucket the last three. */
export function newInvitationToken(bucket: number): string {
  assertBucket(bucket);
  const random = Array.from(crypto.getRandomValues(new Uint8Array(32)), (byte) => byte.toString(16).padStart(2, "0"));
  return random.join("").slice(0, -3) + threeHexDigits(bucket);
}

/**
 * The bucket an invitation token carries (anything but 64 hex digits, or last digits of 0x400 and more: legacy). A
 * token made before buckets reads as whatever its random last digits say: routing never reads a token's bucket (an
 * accept names its organization), operators and logs do.
 */
export function bucketOfToken(token: string): number {
  if (!/^[0-9a-f]{64}$/.test(token)) return LEGACY_BUCKET;
  const bucket = Number.parseInt(token.slice(-3), 16);
  return bucket < BUCKETS ? bucket : LEGACY_BUCKET;
}

/** Stands, in a request's refs, for the caller's key: its project is the default scope of what names no id. */
export const CALLER_KEY = Symbol("the caller's key");

/**
 * What a request names that may decide its bucket (src/http/request-bucket.ts): an id, a key prefix, the caller's
 * key, a bucket already chosen (a new organization's), or nothing (null, undefined: an optional id not given).
 */
export type BucketRef = string | { prefix: string } | { bucket: number } | typeof CALLER_KEY | null | undefined;

const RFC_3339 = /* @__PURE__ */ z.iso.datetime({ offset: true });

/** BUCKETED_SINCE is not an RFC 3339 instant: every request is answered 500 until it is fixed. */
export class BadBucketedSinceError extends Error {
  constructor(value: string | undefined) {
    super(
      `BUCKETED_SINCE (wrangler.toml [vars]) must be an RFC 3339 instant such as "2026-11-26T00:00:00Z"; it is ${JSON.stringify(value ?? null)}`,
    );
  }
}

let parsed: { value: string | undefined; since: number | BadBucketedSinceError } | undefined;

/**
 * BUCKETED_SINCE in ms since the epoch: ids older are legacy (`bucketOfId`). Parsed once per isolate (again only if
 * the value differs); a bad value throws BadBucketedSinceError, whose message says why.
 */
export function bucketedSince(env: { BUCKETED_SINCE?: string }): number {
  const value = env.BUCKETED_SINCE;
  if (parsed?.value !== value || parsed === undefined) {
    const valid = typeof value === "string" && RFC_3339.safeParse(value).success;
    parsed = { value, since: valid ? Date.parse(value) : new BadBucketedSinceError(value) };
  }
  if (parsed.since instanceof BadBucketedSinceError) throw parsed.since;
  return parsed.since;
}
