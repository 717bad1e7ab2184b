import ipaddr from "ipaddr.js";

/**
 * Where webhooks may point (docs/EVENTS.md): `https://` only, no credentials in the URL, and no IP literal short of a
 * public unicast address. With local targets allowed (WEBHOOKS_ALLOW_LOCAL), `http://` and loopback too. Names are
 * not resolved (a Worker has no DNS lookup): only literals and the localhost and metadata names are judged.
 */

/** What a refused address is, in the words of the 422. */
type Category = "loopback" | "private" | "link-local or metadata" | "IPv4-embedding" | "reserved";

/**
 * ipaddr.js's range names (`range()`, IPv4 and IPv6) as categories. Only `unicast` is accepted; a name not listed
 * here (a range a later version adds) is refused as reserved.
 */
const CATEGORY_OF_RANGE: Record<string, Category> = {
  loopback: "loopback",
  private: "private",
  carrierGradeNat: "private",
  uniqueLocal: "private",
  deprecatedSiteLocal: "private",
  linkLocal: "link-local or metadata",
  // NAT64 (64:ff9b::/96, 64:ff9b:1::/48), SIIT (::ffff:0:0:0/96), 6to4 and Teredo reach an IPv4 address through a
  // translator or relay: refused whatever that address is (the IPv4 address itself may be given instead).
  rfc6052: "IPv4-embedding",
  rfc6145: "IPv4-embedding",
  "6to4": "IPv4-embedding",
  teredo: "IPv4-embedding",
};

const MESSAGES: Record<Category, string> = {
  loopback: "url must not point to a loopback address",
  private: "url must not point to a private address",
  "link-local or metadata": "url must not point to a link-local or metadata address",
  "IPv4-embedding": "url must not point to an IPv6 address that embeds an IPv4 one (NAT64, 6to4, Teredo)",
  reserved: "url must not point to a reserved address",
};

/**
 * IANA's global unicast block: ipaddr.js calls any IPv6 address outside its named ranges `unicast`, the deprecated
 * IPv4-compatible `::a.b.c.d` and unallocated space included; only this block holds public unicast addresses.
 */
const GLOBAL_UNICAST_IPV6 = ipaddr.IPv6.parseCIDR("2000::/3");

/** The category of an IP literal as the URL parser writes it (IPv4 dotted, IPv6 in brackets); null: public unicast, or not a literal. */
function addressCategory(host: string): Category | null {
  const literal = host.startsWith("[") ? host.slice(1, -1) : host;
  if (!ipaddr.IPv6.isValid(literal) && !ipaddr.IPv4.isValidFourPartDecimal(literal)) return null;
  // process(): an IPv4-mapped address (::ffff:a.b.c.d) is the IPv4 address it maps, and is judged as that one.
  const address = ipaddr.process(literal);
  const range: string = address.range();
  if (range !== "unicast") return CATEGORY_OF_RANGE[range] ?? "reserved";
  if (address.kind() === "ipv6" && !address.match(GLOBAL_UNICAST_IPV6)) return "reserved";
  return null;
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
