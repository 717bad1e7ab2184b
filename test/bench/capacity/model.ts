/**
 * The capacity model: from what each phase of the workload added to each table (bytes and rows, measured), the
 * bytes each operation costs, what an organization of a given profile takes after one and three years, how many of
 * them one shard holds, and when to add a shard.
 */
import { fixed, table, thousands } from "../report";
import type { DatabaseSize } from "./sizes";
import type { PhaseId, PhaseResult } from "./workload";

/** D1's limit per database, 10 GB, read as 10^9 bytes (the smaller reading of "GB"). */
export const SHARD_BYTES = 10e9;
/** Add a shard when one reaches this fill (BENCHMARKS.md, "Capacity": the copy a move writes, and the lead time). */
export const ADD_SHARD_AT = 0.7;
/** Pruning (src/webhooks/deliveries.sql.ts): events after 400 days, settled deliveries and their attempts after 30. */
export const EVENT_RETENTION_DAYS = 400;
const DELIVERY_RETENTION_DAYS = 30;
/** Peak writes: a day's writes within 8 working hours, the busiest hour at 3 times their average. */
const WORKING_HOURS = 8;
const PEAK_FACTOR = 3;
/** Plan for peaks at half the write rate measured, leaving the other half to bursts, retries, crons and moves. */
const WRITE_HEADROOM = 0.5;

/** What a row costs for how long: kept while its organization lives, or pruned after a while. */
type Retention = "kept" | "events" | "deliveries" | "claims";
const RETENTION: Record<string, Retention> = {
  events: "events",
  webhook_deliveries: "deliveries",
  webhook_attempts: "deliveries",
  idempotency_keys: "claims",
};
const retentionOf = (name: string): Retention => RETENTION[name] ?? "kept";

type Bytes = Record<Retention, number>;
const noBytes = (): Bytes => ({ kept: 0, events: 0, deliveries: 0, claims: 0 });
const total = (bytes: Bytes) => bytes.kept + bytes.events + bytes.deliveries + bytes.claims;

export interface Measured {
  /** Before the first phase (migrations and the seeded user), then after each phase. */
  before: DatabaseSize;
  after: Record<PhaseId, DatabaseSize>;
  phases: PhaseResult[];
  labels: Record<PhaseId, string>;
  /** Mean length of the committed params, in characters of JSON. */
  paramsChars: number;
  concurrency: number;
}

/** Bytes and rows a phase added to each table. */
function deltas(before: DatabaseSize, after: DatabaseSize) {
  return Object.entries(after.tables).map(([name, size]) => {
    const previous = before.tables[name] ?? { rows: 0, tableBytes: 0, indexBytes: 0 };
    return {
      name,
      rows: size.rows - previous.rows,
      bytes: size.tableBytes + size.indexBytes - previous.tableBytes - previous.indexBytes,
    };
  });
}

/** Bytes one operation of each phase added, by retention. */
function perOperation(measured: Measured): Record<PhaseId, Bytes> {
  const result = {} as Record<PhaseId, Bytes>;
  let before = measured.before;
  for (const phase of measured.phases) {
    const after = measured.after[phase.id];
    const bytes = noBytes();
    for (const delta of deltas(before, after)) bytes[retentionOf(delta.name)] += delta.bytes / phase.operations;
    result[phase.id] = bytes;
    before = after;
  }
  return result;
}

/** Bytes per row of the table that phase `id` grew, from that phase alone (pages it added over rows it added). */
function marginalBytesPerRow(measured: Measured, tableName: string): number {
  let best = { rows: 0, bytes: 0 };
  let before = measured.before;
  for (const phase of measured.phases) {
    const delta = deltas(before, measured.after[phase.id]).find((entry) => entry.name === tableName);
    if (delta && delta.rows > best.rows) best = delta;
    before = measured.after[phase.id];
  }
  return best.rows > 0 ? best.bytes / best.rows : Number.NaN;
}

export interface Profile {
  name: string;
  changesPerDay: number;
  apps: number;
  members: number;
  keys: number;
  webhooks: number;
}

/** A change is a commit (~1 KB of params) and a deploy of it; every app has one config. Days are calendar days. */
export const PROFILES: Profile[] = [
  { name: "small", changesPerDay: 5, apps: 3, members: 3, keys: 2, webhooks: 0 },
  { name: "team", changesPerDay: 50, apps: 10, members: 10, keys: 5, webhooks: 1 },
  { name: "large", changesPerDay: 500, apps: 50, members: 50, keys: 20, webhooks: 2 },
];

const scale = (bytes: Bytes, factor: number): Bytes => ({
  kept: bytes.kept * factor,
  events: bytes.events * factor,
  deliveries: bytes.deliveries * factor,
  claims: bytes.claims * factor,
});
const sum = (...all: Bytes[]): Bytes =>
  all.reduce(
    (a, b) => ({
      kept: a.kept + b.kept,
      events: a.events + b.events,
      deliveries: a.deliveries + b.deliveries,
      claims: a.claims + b.claims,
    }),
    noBytes(),
  );

export interface ProfileFigures {
  profile: Profile;
  /** Bytes of one organization after 1 and 3 years. */
  year1: number;
  year3: number;
  /** Organizations that fill a shard, after 1 and 3 years. */
  full1: number;
  full3: number;
  /** Organizations one shard holds at the threshold, after 1 and 3 years. */
  perShard1: number;
  perShard3: number;
  /** Days a shard at the threshold, full of such organizations, takes to fill up: in their first year, and in their fourth. */
  leadDays1: number;
  leadDays3: number;
  /** Organizations at which the shard's peak writes reach WRITE_HEADROOM of the measured rate. */
  perShardByWrites: number;
}

export interface Model {
  operations: Record<PhaseId, Bytes>;
  change: Bytes;
  /** Bytes of one settled delivery (with its attempt). */
  delivery: number;
  /** Bytes of one Idempotency-Key claim. */
  claim: number;
  /** Deploys a second the shard took here (the deploy phase). */
  writesPerSecond: number;
  profiles: ProfileFigures[];
}

export function buildModel(measured: Measured): Model {
  const operations = perOperation(measured);
  const change = sum(operations.commits, operations.deploys);
  const delivery = operations.hookedDeploys.deliveries;
  const claim = marginalBytesPerRow(measured, "idempotency_keys");
  const deploys = measured.phases.find((phase) => phase.id === "deploys");
  const writesPerSecond = deploys ? deploys.operations / deploys.seconds : Number.NaN;

  const sizeAfter = (profile: Profile, days: number) => {
    // What an organization is made with: its events pruned after 400 days, the app's claim after a day.
    const setup = sum(
      operations.organizations,
      scale(operations.keys, profile.keys),
      scale(operations.invitations, profile.members),
      scale(sum(operations.apps, operations.variants), profile.apps),
      scale(operations.webhooks, profile.webhooks),
    );
    const changes = profile.changesPerDay;
    return (
      setup.kept +
      (days <= EVENT_RETENTION_DAYS ? setup.events : 0) +
      changes * days * change.kept +
      changes * Math.min(days, EVENT_RETENTION_DAYS) * change.events +
      changes * Math.min(days, DELIVERY_RETENTION_DAYS) * profile.webhooks * delivery +
      // A commit and a deploy a change, each with an Idempotency-Key, claimed for 24 hours.
      changes * 2 * claim
    );
  };
  const usable = SHARD_BYTES * ADD_SHARD_AT;
  const profiles = PROFILES.map((profile): ProfileFigures => {
    const [year1, year3] = [sizeAfter(profile, 365), sizeAfter(profile, 3 * 365)];
    const [perShard1, perShard3] = [Math.floor(usable / year1), Math.floor(usable / year3)];
    // Growth a day: in the first year events still accumulate; after 400 days they are pruned as fast as made.
    const daily1 = profile.changesPerDay * (change.kept + change.events);
    const daily3 = profile.changesPerDay * change.kept;
    const headroom = SHARD_BYTES - usable;
    const writesPerDay = profile.changesPerDay * (2 + profile.webhooks);
    const peakPerSecond = (writesPerDay * PEAK_FACTOR) / (WORKING_HOURS * 3600);
    return {
      profile,
      year1,
      year3,
      full1: Math.floor(SHARD_BYTES / year1),
      full3: Math.floor(SHARD_BYTES / year3),
      perShard1,
      perShard3,
      leadDays1: headroom / (perShard1 * daily1),
      leadDays3: headroom / (perShard3 * daily3),
      perShardByWrites: Math.floor((writesPerSecond * WRITE_HEADROOM) / peakPerSecond),
    };
  });
  return { operations, change, delivery, claim, writesPerSecond, profiles };
}

const bytesText = (bytes: number) => (Number.isFinite(bytes) ? thousands(Math.round(bytes)) : "n/a");
const megabytes = (bytes: number) => `${fixed(bytes / 1e6, 1)} MB`;

/** The measured tables and the model, as markdown. */
export function capacityTables(measured: Measured, model: Model): string {
  const last = measured.after[measured.phases[measured.phases.length - 1].id];
  const perRow = table(
    ["table", "rows", "table B/row", "indexes B/row", "total B/row", "marginal B/row"],
    Object.entries(last.tables)
      .filter(([name]) => Number.isFinite(marginalBytesPerRow(measured, name)))
      .sort(([, a], [, b]) => b.tableBytes + b.indexBytes - (a.tableBytes + a.indexBytes))
      .map(([name, size]) => [
        name,
        thousands(size.rows),
        bytesText(size.tableBytes / size.rows),
        bytesText(size.indexBytes / size.rows),
        bytesText((size.tableBytes + size.indexBytes) / size.rows),
        bytesText(marginalBytesPerRow(measured, name)),
      ]),
    ["l", "r", "r", "r", "r", "r"],
  );
  const perOperationTable = table(
    ["operation", "count", "s", "per s", "kept B", "events B", "deliveries B", "claims B", "total B"],
    measured.phases.map((phase) => {
      const bytes = model.operations[phase.id];
      return [
        measured.labels[phase.id],
        thousands(phase.operations),
        fixed(phase.seconds, 1),
        fixed(phase.operations / phase.seconds, 0),
        bytesText(bytes.kept),
        bytesText(bytes.events),
        bytesText(bytes.deliveries),
        bytesText(bytes.claims),
        bytesText(total(bytes)),
      ];
    }),
    ["l", "r", "r", "r", "r", "r", "r", "r", "r"],
  );
  const profileTable = table(
    [
      "profile (changes/day; apps, members, keys, webhooks)",
      "1 year",
      "3 years",
      "fill a shard, 1 y",
      "3 y",
      `add a shard at (${ADD_SHARD_AT * 100}%), 1 y`,
      "3 y",
      "days from there to full, year 1",
      "year 4",
      "peak writes at half the rate",
    ],
    model.profiles.map((figures) => {
      const { profile } = figures;
      return [
        `${profile.name} (${profile.changesPerDay}; ${profile.apps}, ${profile.members}, ${profile.keys}, ${profile.webhooks})`,
        megabytes(figures.year1),
        megabytes(figures.year3),
        thousands(figures.full1),
        thousands(figures.full3),
        thousands(figures.perShard1),
        thousands(figures.perShard3),
        fixed(figures.leadDays1, 0),
        fixed(figures.leadDays3, 0),
        thousands(figures.perShardByWrites),
      ];
    }),
    ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r"],
  );
  return [
    `Database: page size ${last.pageSize} B, ${thousands(last.pageCount)} pages (${megabytes(last.pageCount * last.pageSize)}), ${thousands(last.freelistCount)} free. Params committed: ${fixed(measured.paramsChars, 0)} characters of JSON on average. ${measured.concurrency} requests in flight.`,
    "",
    "Bytes per row (dbstat: the pages of each table's b-tree and of its indexes, whole, over its rows, at the end; marginal: the pages the phase that added most of its rows added, over those rows):",
    "",
    perRow,
    "",
    `Bytes per operation (what its phase added to every table, over the operations; kept: while the organization lives; events: ${EVENT_RETENTION_DAYS} days; deliveries and attempts: ${DELIVERY_RETENTION_DAYS} days once settled; claims: 24 hours):`,
    "",
    perOperationTable,
    "",
    `A change (a commit and a deploy): ${bytesText(total(model.change))} B, of which ${bytesText(model.change.kept)} kept and ${bytesText(model.change.events)} of events; a delivery with its attempt ${bytesText(model.delivery)} B; an Idempotency-Key claim ${bytesText(model.claim)} B. Deploys measured at ${fixed(model.writesPerSecond, 0)} a second.`,
    "",
    `Organizations (a shard of ${SHARD_BYTES / 1e9} GB; add one at ${ADD_SHARD_AT * 100}%; peak writes: a day's writes in ${WORKING_HOURS} hours, the busiest hour ${PEAK_FACTOR} times their mean, at most ${WRITE_HEADROOM * 100}% of the deploy rate measured):`,
    "",
    profileTable,
  ].join("\n");
}
