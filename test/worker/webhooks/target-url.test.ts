import fc from "fast-check";
import ipaddr from "ipaddr.js";
import { describe, expect, it } from "vitest";
import { webhookUrl } from "../../../src/webhooks/target-url";

/*
 * The webhook target check's address table (src/webhooks/target-url.ts) against ipaddr.js's special ranges, on which
 * the check was built and which the Worker no longer carries: for every address of both families, refused with the
 * same message, or accepted, as the check written with ipaddr.js judged it. The addresses go through the platform's
 * URL parser as a body's `url` does (webhooks.test.ts sends the named cases through the routes).
 */

const MESSAGES = {
  loopback: "url must not point to a loopback address",
  private: "url must not point to a private address",
  "link-local or metadata": "url must not point to a link-local or metadata address",
  "IPv4-embedding": "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)",
  reserved: "url must not point to a reserved address",
} as const;

/** ipaddr.js's range names as the check's categories; a name not listed is reserved, `unicast` public. */
const CATEGORY_OF_RANGE: Record<string, keyof typeof MESSAGES> = {
  loopback: "loopback",
  private: "private",
  carrierGradeNat: "private",
  uniqueLocal: "private",
  deprecatedSiteLocal: "private",
  linkLocal: "link-local or metadata",
  rfc6052: "IPv4-embedding",
  rfc6145: "IPv4-embedding",
  "6to4": "IPv4-embedding",
  teredo: "IPv4-embedding",
};
const GLOBAL_UNICAST_IPV6 = ipaddr.IPv6.parseCIDR("2000::/3");

/** The check as written with ipaddr.js: the refusal of the host the URL parser wrote, or undefined (public unicast). */
function judgedByIpaddr(host: string): string | undefined {
  const literal = host.startsWith("[") ? host.slice(1, -1) : host;
  if (!ipaddr.IPv6.isValid(literal) && !ipaddr.IPv4.isValidFourPartDecimal(literal)) return undefined;
  const address = ipaddr.process(literal);
  const range = address.range();
  if (range !== "unicast") return MESSAGES[CATEGORY_OF_RANGE[range] ?? "reserved"];
  if (address.kind() === "ipv6" && !address.match(GLOBAL_UNICAST_IPV6)) return MESSAGES.reserved;
  return undefined;
}

/** The address's refusal by the service's check, and by ipaddr.js's: equal when the two agree. */
function judgements(address: string) {
  const url = `https://${address}/in`;
  const checked = webhookUrl(url, false);
  return { url, service: "problem" in checked ? checked.problem : undefined, ipaddr: judgedByIpaddr(new URL(url).hostname) };
}

const ipv4Text = (bytes: number[]) => bytes.join(".");
const ipv6Text = (bytes: number[]) =>
  `[${Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16)).join(":")}]`;

/** The bytes of an address plus `delta` (-1 or 1), wrapping around. */
function step(bytes: number[], delta: number): number[] {
  const next = [...bytes];
  for (let i = next.length - 1; i >= 0; i--) {
    next[i] += delta;
    if (next[i] >= 0 && next[i] <= 255) break;
    next[i] = (next[i] + 256) % 256;
  }
  return next;
}

/** Every range ipaddr.js names, and 2000::/3: each one's first and last address and their neighbours either side. */
function rangeEdges(): string[] {
  type Subnet = [ipaddr.IPv4 | ipaddr.IPv6, number];
  type Family = { SpecialRanges: Record<string, Subnet | Subnet[]> };
  const families = [ipaddr.IPv4.prototype, ipaddr.IPv6.prototype].map((family) => (family as unknown as Family).SpecialRanges);
  const subnets = families.flatMap((ranges) =>
    Object.values(ranges).flatMap((subnet) => (Array.isArray(subnet[0]) ? (subnet as Subnet[]) : [subnet as Subnet])),
  );
  const edges: string[] = [];
  for (const [address, bits] of [...subnets, GLOBAL_UNICAST_IPV6]) {
    const first = address.toByteArray();
    const last = [...first];
    for (let bit = bits; bit < first.length * 8; bit++) {
      first[bit >> 3] &= ~(0x80 >> (bit & 7));
      last[bit >> 3] |= 0x80 >> (bit & 7);
    }
    for (const bytes of [first, last, step(first, -1), step(first, 1), step(last, -1), step(last, 1)]) {
      if (bytes.length === 4) edges.push(ipv4Text(bytes), `[::ffff:${ipv4Text(bytes)}]`);
      else edges.push(ipv6Text(bytes));
    }
  }
  return edges;
}

describe("the webhook target check's address ranges", () => {
  it("judge the edges of every range as ipaddr.js's ranges do", () => {
    const edges = rangeEdges();
    expect(edges.length).toBeGreaterThan(300);
    const disagreements = edges.map(judgements).filter((judged) => judged.service !== judged.ipaddr);
    expect(disagreements).toEqual([]);
  });

  it("judge any address as ipaddr.js's ranges do", () => {
    const byte = fc.integer({ min: 0, max: 255 });
    // IPv6 addresses mostly near the ranges' prefixes, with runs of zero groups for the URL parser to compress.
    const prefix = fc.constantFrom(
      [],
      [0, 0],
      [0x20, 0x01],
      [0x20, 0x02],
      [0x00, 0x64, 0xff, 0x9b],
      [0xfe],
      [0xfc],
      [0x3f, 0xff],
    );
    const ipv6 = fc
      .tuple(prefix, fc.array(fc.oneof(byte, fc.constant(0)), { minLength: 16, maxLength: 16 }))
      .map(([head, tail]) => ipv6Text([...head, ...tail.slice(head.length)]));
    const ipv4 = fc.array(byte, { minLength: 4, maxLength: 4 });
    const address = fc.oneof(
      ipv4.map(ipv4Text),
      ipv4.map((bytes) => `[::ffff:${ipv4Text(bytes)}]`),
      ipv6,
    );
    fc.assert(
      fc.property(address, (written) => {
        const judged = judgements(written);
        expect(judged.service, judged.url).toBe(judged.ipaddr);
      }),
      { numRuns: 10_000 },
    );
  });
});
