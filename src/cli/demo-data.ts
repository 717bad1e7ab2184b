/**
 * The demo account whose ids and key are fixed and documented in the README, so that its curl examples work as written,
 * and a second organization of the demo user on another shard; seeded, then the directory filled from the shards
 * (`directory fill`). Idempotent: each step checks what is there first. Local only (`npm run db:seed`, `npm run dev`).
 */
import { createApp, findAppCreator } from "../apps/apps.sql.ts";
import { readEnvironmentRevisions } from "../apps/environments.sql.ts";
import { hashApiKey, parseApiKey } from "../auth/api-keys";
import { addConfig, commitConfig, fetchConfig } from "../core/configs.sql.ts";
import { type DeploymentOutcome, deployConfig } from "../core/deployments.sql.ts";
import {
  createApiKey,
  createOrganizationCopyingOwner,
  createUser,
  findApiKeyOwner,
  findOrganizationBucket,
  findUserByEmail,
} from "../db/accounts";
import { bucketedSince, bucketOfId, LEGACY_BUCKET } from "../db/buckets";
import { isUniqueViolation } from "../db/d1";
import { operatorDb } from "../db/handles";
import { shardOf } from "../db/pool";
import { type DatabasePool, type OpenDatabase, retryTransient } from "./database";
import { fillDirectory } from "./directory";
import { UsageError } from "./run-cli";

// Local-only demo values, documented in the README. Never use them anywhere else. The ids' time is 0: older than any
// BUCKETED_SINCE, they are legacy ids, and the demo organization is in the legacy bucket (as is the `localdev` prefix).
const DEMO = {
  email: "demo@example.com",
  username: "demo",
  userId: "00000000-0000-7000-8000-000000000001",
  organizationId: "00000000-0000-7000-8000-000000000002",
  workspaceId: "00000000-0000-7000-8000-000000000003",
  projectId: "00000000-0000-7000-8000-000000000004",
  appId: "00000000-0000-7000-8000-000000000005",
  appName: "demo-app",
  apiKey: "localdev.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
} as const;

// The demo user's second organization, with its default workspace and project: ids of bucket 512 (their last three hex
// digits, 0x200), which SHARD_MAP puts on SHARD_1 locally, so that the demo key (homed on SHARD_0) shows a request
// crossing shards. Their time, 0x01a21526e400 ms, is BUCKETED_SINCE's local default (2026-11-26T00:00:00Z): ids from
// that instant on carry a bucket.
const SECOND_ORGANIZATION = {
  name: "demo-second",
  organizationId: "01a21526-e400-7000-8000-000000000200",
  workspaceId: "01a21526-e400-7000-8000-000000001200",
  projectId: "01a21526-e400-7000-8000-000000002200",
} as const;

// The demo app's configs, each with the params of its latest revision (main is committed once, to revision 2).
const DEMO_CONFIGS: [name: string, params: Record<string, unknown> | null][] = [
  ["main", { model: "gpt-4o-mini", temperature: 0.2, prompt: "You are a helpful assistant." }],
  ["experiment", null],
];

// Applied in this order, each deploying the config's latest revision; a run that stopped part-way resumes where
// the history ends.
const DEMO_DEPLOYMENTS: [environment: string, variant: string][] = [
  ["development", "main"],
  ["development", "experiment"],
  ["development", "main"],
  ["staging", "main"],
  ["production", "main"],
];

const CONFLICT =
  "the demo values are taken by other data in this database; seed a fresh one (rm -rf .wrangler, or another --persist-to)";

async function ensureDemoUser(db: D1Database): Promise<boolean> {
  const existing = await findUserByEmail(db, DEMO.email);
  if (existing) {
    if (existing.id !== DEMO.userId) throw new UsageError(CONFLICT);
    return false;
  }
  const { email, username, userId, organizationId, workspaceId, projectId } = DEMO;
  try {
    await createUser(db, { email, username }, { bucket: LEGACY_BUCKET, userId, organizationId, workspaceId, projectId });
  } catch (error) {
    if (isUniqueViolation(error, "users") || isUniqueViolation(error, "organizations")) throw new UsageError(CONFLICT);
    throw error;
  }
  return true;
}

async function demoKey(): Promise<{ prefix: string; keyHash: string }> {
  const key = parseApiKey(DEMO.apiKey);
  if (!key) throw new Error("the demo key is malformed");
  return { prefix: key.prefix, keyHash: await hashApiKey(key.key) };
}

async function ensureDemoKey(db: D1Database): Promise<boolean> {
  const { prefix, keyHash } = await demoKey();
  const existing = await findApiKeyOwner(db, prefix);
  if (existing) {
    if (existing.userId !== DEMO.userId) throw new UsageError(CONFLICT);
    return false;
  }
  await createApiKey(db, {
    prefix,
    keyHash,
    userId: DEMO.userId,
    projectId: DEMO.projectId,
    expiresAt: null,
  });
  return true;
}

/**
 * Creates the second demo organization if missing, in the bucket its ids read as (512; were BUCKETED_SINCE moved
 * past their time, 0, so that the organization still agrees with its ids) and on that bucket's shard, the demo user's row
 * (from SHARD_0, `db`) copied there in the same batch.
 */
async function ensureSecondOrganization(db: D1Database, pool: DatabasePool): Promise<boolean> {
  const { name, organizationId, workspaceId, projectId } = SECOND_ORGANIZATION;
  const bucket = bucketOfId(organizationId, bucketedSince(pool.env));
  const shard = shardOf(pool.env, bucket);
  if ((await findOrganizationBucket(shard, { organizationId })) !== null) return false;
  const [owner, sameEmail] = [await findUserByEmail(db, DEMO.email), await findUserByEmail(shard, DEMO.email)];
  if (!owner) throw new Error("the demo user is missing");
  if (sameEmail && sameEmail.id !== DEMO.userId) throw new UsageError(CONFLICT);
  try {
    await createOrganizationCopyingOwner(shard, name, owner, { bucket, organizationId, workspaceId, projectId });
  } catch (error) {
    if (isUniqueViolation(error, "organizations")) throw new UsageError(CONFLICT);
    throw error;
  }
  return true;
}

/** What a demo step did, and what it left undone because the data is no longer as the seed made it (`skipped`). */
interface Seeded {
  done: string[];
  skipped: string[];
}

/** Why a demo deployment was not made, as the seed says it. */
const DEPLOY_REFUSED: Partial<Record<Exclude<DeploymentOutcome["outcome"], "done">, string>> = {
  refused: "the environment is protected: a change request deploys there",
  archived: "its config is archived",
  removed: "its config is removed",
  forbidden: "the demo user may no longer deploy",
  not_found: "its config or environment is gone",
};

/**
 * Creates the demo app if missing, its configs, then whatever demo deployments its history does not have yet. What the
 * demo's owner has changed since is theirs: a demo app deleted is made again, but where its name is taken now, or a
 * deployment is refused (production protected, a config archived), the seed stops there and says so; a start never
 * fails on what the seed would redo.
 */
async function ensureDemoApp(db: D1Database): Promise<Seeded> {
  const done: string[] = [];
  const demo = operatorDb(db, DEMO.userId);
  const application = { id: DEMO.appId, slug: null, version: null };
  if (!(await findAppCreator(db, DEMO.appId))) {
    const app = { projectId: DEMO.projectId, name: DEMO.appName, createdBy: DEMO.userId };
    try {
      await createApp(db, app, LEGACY_BUCKET, DEMO.appId);
    } catch (error) {
      if (!isUniqueViolation(error, "apps")) throw error;
      return { done, skipped: [`the demo app (another app is named ${DEMO.appName} in the demo project)`] };
    }
    done.push("app");
  }
  for (const [name, params] of DEMO_CONFIGS) {
    const variant = { slug: name, version: null, id: null };
    if ((await addConfig(demo, application, name)).outcome === "done") done.push(`config ${name}`);
    const latest = await fetchConfig(demo, { application, variant, environment: null });
    if (params && latest?.revision === 1) await commitConfig(demo, { application, variant }, { params, url: null });
  }
  let recorded = 0;
  for (const environment of new Set(DEMO_DEPLOYMENTS.map(([name]) => name))) {
    recorded += (await readEnvironmentRevisions(demo, DEMO.appId, environment))?.environment.revision ?? 0;
  }
  let deployed = 0;
  for (const [environmentName, configName] of DEMO_DEPLOYMENTS.slice(recorded)) {
    const variant = { slug: configName, version: null, id: null };
    const environment = { slug: environmentName, version: null, id: null };
    const { outcome } = await deployConfig(demo, { application, variant, environment });
    if (outcome !== "done") {
      const why = DEPLOY_REFUSED[outcome];
      if (!why) throw new Error(`the demo deployment to ${environmentName} failed: ${outcome}`);
      if (deployed > 0) done.push(`${deployed} deployments`);
      return { done, skipped: [`the deployment of ${configName} to ${environmentName} and those after it (${why})`] };
    }
    deployed += 1;
  }
  if (deployed > 0) done.push(`${deployed} deployments`);
  return { done, skipped: [] };
}

/** Seeds what the demo data lacks, then fills the directory: the lines that say what it did, and what it left undone. */
export async function seedDemo({ db, pool }: OpenDatabase): Promise<string[]> {
  const user = await retryTransient(() => ensureDemoUser(db));
  const key = await retryTransient(() => ensureDemoKey(db));
  const app = await retryTransient(() => ensureDemoApp(db));
  const second = await retryTransient(() => ensureSecondOrganization(db, pool));
  const done = [...(user ? ["user"] : []), ...(key ? ["key"] : []), ...app.done, ...(second ? ["second organization"] : [])];
  const { users_added, memberships_added } = await fillDirectory(pool);
  return [
    done.length ? `demo data seeded: ${done.join(", ")}` : "demo data already present",
    ...app.skipped.map((what) => `demo data not redone: ${what}`),
    `directory filled: ${users_added} users, ${memberships_added} memberships added`,
  ];
}
