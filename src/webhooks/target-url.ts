/**
 * Where webhooks may point (docs/EVENTS.md): `https://` only, no credentials in the URL, and no IP literal short of a
 * public unicast address. With local targets allowed (WEBHOOKS_ALLOW_LOCAL), `http://` and loopback too. Names are
 * not resolved (a Worker has no DNS lookup): only literals and the localhost and metadata names are judged.
 */

/** What a refused address is, in the words of the 422. */
type Category = "loopback" | "private" | "link-local or metadata" | "IPv4-embedding" | "reserved";

const MESSAGES: Record<Category, string> = {
  loopback: "url must not point to a loopback address",
  private: "url must not point to a private address",
  "link-local or metadata": "url must not point to a link-local or metadata address",
  "IPv4-embedding": "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)",
  reserved: "url must not point to a reserved address",
};

/** An address as 16-bit groups: two for IPv4 (`a.b.c.d` as a·256+b, c·256+d), eight for IPv6. */
type Groups = readonly number[];

/** A dotted quad (the only form the URL parser writes an IPv4 host in), or null. */
function ipv4(text: string): Groups | null {
  const octets = text.split(".");
  if (octets.length !== 4 || octets.some((octet) => !/^(0|[1-9]\d{0,2})$/.test(octet) || Number(octet) > 255)) return null;
  const [a, b, c, d] = octets.map(Number);
  return [a * 256 + b, c * 256 + d];
}

/** IPv6 as the URL parser writes it (hexadecimal groups, at most one `::`, no dotted quad at the end), or null. */
function ipv6(text: string): Groups | null {
  const halves = text.split("::");
  const groups = halves.map((half) => (half === "" ? [] : half.split(":")));
  const written = groups.flat();
  if (halves.length > 2 || written.some((group) => !/^[0-9a-f]{1,4}$/i.test(group))) return null;
  const zeros = 8 - written.length;
  if (halves.length === 1 ? zeros !== 0 : zeros < 1) return null;
  const numbers = groups.map((half) => half.map((group) => Number.parseInt(group, 16)));
  return halves.length === 1 ? numbers[0] : [...numbers[0], ...new Array<number>(zeros).fill(0), ...numbers[1]];
}

interface Range {
  groups: Groups;
  bits: number;
}

const range = (cidr: string): Range => {
  const [address, bits] = cidr.split("/");
  return { groups: (address.includes(":") ? ipv6 : ipv4)(address) as Groups, bits: Number(bits) };
};

/** Whether the address is in the range (an IPv4 range holds no IPv6 address, and the other way round). */
const within = (groups: Groups, { groups: prefix, bits }: Range) =>
  prefix.length === groups.length &&
  prefix.every((group, i) => (group ^ groups[i]) >> (16 - Math.min(16, Math.max(0, bits - 16 * i))) === 0);

/**
 * The ranges short of public unicast, the first that holds an address saying what it is: IANA's special-purpose
 * registries (RFC 6890) as ipaddr.js names them, which the tests hold this table to. Any other IPv4 address is public
 * unicast, and any other IPv6 one is if it is in IANA's global unicast block, 2000::/3 (the deprecated
 * IPv4-compatible `::a.b.c.d` and unallocated space are not).
 */
const RANGES: readonly (readonly [Range, Category])[] = (
  [
    ["127.0.0.0/8", "loopback"],
    ["10.0.0.0/8", "private"],
    ["172.16.0.0/12", "private"],
    ["192.168.0.0/16", "private"],
    ["100.64.0.0/10", "private"], // carrier-grade NAT
    ["169.254.0.0/16", "link-local or metadata"],
    ["0.0.0.0/8", "reserved"],
    ["224.0.0.0/4", "reserved"], // multicast
    ["240.0.0.0/4", "reserved"], // broadcast included
    ["192.0.0.0/24", "reserved"],
    ["192.0.2.0/24", "reserved"],
    ["192.88.99.0/24", "reserved"],
    ["198.18.0.0/15", "reserved"],
    ["198.51.100.0/24", "reserved"],
    ["203.0.113.0/24", "reserved"],
    ["192.175.48.0/24", "reserved"], // AS112
    ["192.31.196.0/24", "reserved"],
    ["192.52.193.0/24", "reserved"], // AMT
    ["::1/128", "loopback"],
    ["fc00::/7", "private"], // unique local
    ["fec0::/10", "private"], // deprecated site-local
    ["fe80::/10", "link-local or metadata"],
    // SIIT (::ffff:0:0:0/96), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 and Teredo (before 2001::/23, which holds it)
    // reach an IPv4 address through a translator or relay: refused whatever that address is (the IPv4 address itself
    // may be given instead).
    ["::ffff:0:0:0/96", "IPv4-embedding"],
    ["64:ff9b::/96", "IPv4-embedding"],
    ["64:ff9b:1::/48", "IPv4-embedding"],
    ["2002::/16", "IPv4-embedding"],
    ["2001::/32", "IPv4-embedding"],
    ["2001::/23", "reserved"], // IETF protocol assignments: benchmarking, AMT, AS112, ORCHIDs, ...
    ["2001:db8::/32", "reserved"], // documentation
    ["3fff::/20", "reserved"], // documentation
    ["2620:4f:8000::/48", "reserved"], // AS112
  ] as const
).map(([cidr, category]) => [range(cidr), category]);

const IPV4_MAPPED = range("::ffff:0:0/96");
const GLOBAL_UNICAST_IPV6 = range("2000::/3");

/** The category of an IP literal as the URL parser writes it (IPv4 dotted, IPv6 in brackets); null: public unicast, or not a literal. */
function addressCategory(host: string): Category | null {
  let groups = host.startsWith("[") ? ipv6(host.slice(1, -1)) : ipv4(host);
  if (groups === null) return null;
  // An IPv4-mapped address (::ffff:a.b.c.d) is the IPv4 address it maps, and is judged as that one.
  if (within(groups, IPV4_MAPPED)) groups = groups.slice(6);
  for (const [held, category] of RANGES) if (within(groups, held)) return category;
  return groups.length === 8 && !within(groups, GLOBAL_UNICAST_IPV6) ? "reserved" : null;
}

const LOCAL_NAMES = /(^|\.)localhost\.?$/;
const METADATA_NAMES = /^(metadata|metadata\.google\.internal|instance-data)\.?$/;

/** The authority as the text writes it, as RFC 3986 parsers read it: up to the first `/`, `?` or `#` after `//`. */
const WRITTEN_AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i;

/** The longest URL kept, normalized (the body's `url` has the same bound, as sent). */
export const MAX_URL_LENGTH = 2048;

/**
 * `text` as a webhook's URL, normalized by the platform's URL parser (`href`: the URL deliveries go to, as stored and
 * answered), or why it may not be one.
 */
export function webhookUrl(text: string, allowLocal: boolean): { href: string } | { problem: string } {
  // The whole text is what is sent to: the URL parser would quietly drop tabs and newlines, and trim spaces.
  if (/[\p{Cc}\s]/u.test(text)) return { problem: "url must not contain spaces or control characters" };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { problem: "url must be an absolute URL" };
  }
  if (url.protocol !== "https:" && !(allowLocal && url.protocol === "http:")) {
    return { problem: allowLocal ? "url must be an https:// or http:// URL" : "url must be an https:// URL" };
  }
  // The parser finds a host in `https:///x` or `https:x` (`x`), and none but a path in `https://a\@b/`, where other
  // parsers read user info `a\` before host `b`: the text itself must name its host after `//`, with no `@`.
  const authority = WRITTEN_AUTHORITY.exec(text)?.[1];
  if (!authority) return { problem: "url must name its host after // (https://host/...)" };
  // The parser's user info (ended by `\` too) is always within it.
  if (authority.includes("@")) return { problem: "url must not carry credentials (user:password@)" };
  if (url.port === "0") return { problem: "url must not name port 0" };
  // The URL parser has already written any IPv4 form (0x7f.1, 2130706433) as a dotted quad, and IPv6 compressed.
  const host = url.hostname;
  const category = LOCAL_NAMES.test(host)
    ? "loopback"
    : METADATA_NAMES.test(host)
      ? "link-local or metadata"
      : addressCategory(host);
  if (category !== null && !(category === "loopback" && allowLocal)) return { problem: MESSAGES[category] };
  // Percent-encoding lengthens what the text wrote (a non-ASCII character: up to 12 characters).
  if (url.href.length > MAX_URL_LENGTH) return { problem: `url must be at most ${MAX_URL_LENGTH} characters once normalized` };
  return { href: url.href };
}
