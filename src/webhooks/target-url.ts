/**
 * Where webhooks may point (docs/EVENTS.md): `https://` only, no credentials in the URL, no IP literal of a loopback,
 * private, link-local or metadata range. With local targets allowed (WEBHOOKS_ALLOW_LOCAL), `http://` and loopback
 * too. Names are not resolved (a Worker has no DNS lookup): only literals and the localhost names are judged.
 */

const IPV4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/;

type Range = "loopback" | "private" | "link-local or metadata" | "reserved";

/** [first address as a number, prefix length, kind]: the IPv4 ranges a webhook may not target. */
const IPV4_RANGES: [string, number, Range][] = [
  ["0.0.0.0", 8, "reserved"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "private"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local or metadata"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "reserved"],
  ["224.0.0.0", 3, "reserved"],
];

const ipv4Number = (a: number, b: number, c: number, d: number) => ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;

function ipv4Range(address: string): Range | null {
  const parts = IPV4.exec(address);
  if (!parts) return null;
  const value = ipv4Number(+parts[1], +parts[2], +parts[3], +parts[4]);
  for (const [first, bits, kind] of IPV4_RANGES) {
    const [a, b, c, d] = first.split(".").map(Number);
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    if ((value & mask) >>> 0 === ipv4Number(a, b, c, d)) return kind;
  }
  return null;
}

/** The eight 16-bit groups of an IPv6 address as the URL parser writes it (compressed, lower case, no brackets). */
function ipv6Groups(address: string): number[] {
  const [head, tail] = address.includes("::") ? address.split("::") : [address, null];
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((group) => Number.parseInt(group, 16)));
  const first = parse(head);
  if (tail === null) return first;
  const last = parse(tail);
  return [...first, ...new Array(8 - first.length - last.length).fill(0), ...last];
}

function ipv6Range(address: string): Range | null {
  const groups = ipv6Groups(address);
  if (groups.every((group) => group === 0)) return "reserved";
  if (groups.slice(0, 7).every((group) => group === 0) && groups[7] === 1) return "loopback";
  // ::ffff:a.b.c.d (mapped) and 64:ff9b::a.b.c.d (NAT64) reach an IPv4 address: judge that one.
  const embedsIpv4 =
    (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) ||
    (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((group) => group === 0));
  if (embedsIpv4) {
    return ipv4Range([groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join("."));
  }
  if ((groups[0] & 0xfe00) === 0xfc00) return "private";
  if ((groups[0] & 0xffc0) === 0xfe80) return "link-local or metadata";
  if ((groups[0] & 0xff00) === 0xff00) return "reserved";
  return null;
}

const LOCAL_NAMES = /(^|\.)localhost\.?$/;
const METADATA_NAMES = /^(metadata|metadata\.google\.internal|instance-data)\.?$/;

/** Why `text` may not be a webhook's URL, or null if it may. */
export function webhookUrlProblem(text: string, allowLocal: boolean): string | null {
  // The whole text is what is sent to: the URL parser would quietly drop tabs and newlines, and trim spaces.
  if (/[\p{Cc}\s]/u.test(text)) return "url must not contain spaces or control characters";
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "url must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(allowLocal && url.protocol === "http:")) {
    return allowLocal ? "url must be an https:// or http:// URL" : "url must be an https:// URL";
  }
  if (url.username || url.password) return "url must not carry credentials (user:password@)";
  const host = url.hostname;
  const range = host.startsWith("[")
    ? ipv6Range(host.slice(1, -1))
    : LOCAL_NAMES.test(host)
      ? "loopback"
      : METADATA_NAMES.test(host)
        ? "link-local or metadata"
        : ipv4Range(host);
  if (range === null || (range === "loopback" && allowLocal)) return null;
  return `url must not point to a ${range} address`;
}
