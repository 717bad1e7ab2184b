/**
 * Seeds the local database with a demo account whose ids and key are fixed and documented in the README, so
 * that its curl examples work as written. Idempotent. Local only: there is no way to point it at --remote.
 */
import { parseArgs } from "node:util";
import { hashApiKey, parseApiKey } from "../auth/api-keys";
import { createApiKey, createUser, findApiKeyOwner, findUserByEmail } from "../db/accounts";
import { createApp } from "../db/apps";
import { Caller } from "../db/caller";
import { isUniqueViolation } from "../db/d1";
import { deployVariant, findDeploymentTarget, readEnvironmentRevisions } from "../db/environments";
import { openDatabase, retryWhenBusy } from "./database";
import { runCli, UsageError } from "./run-cli";

// Local-only demo values, documented in the README. Never use them anywhere else.
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

// Applied in this order; a run that stopped part-way resumes where the history ends.
const DEMO_DEPLOYMENTS: [environment: string, variant: string][] = [
  ["development", "main"],
  ["development", "experiment"],
  ["development", "main"],
  ["staging", "main"],
  ["production", "main"],
];

const USAGE = "Usage: npm run db:seed [-- --persist-to DIR]   (local only)";
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
    await createUser(db, { email, username }, { userId, organizationId, workspaceId, projectId });
  } catch (error) {
    if (isUniqueViolation(error, "users") || isUniqueViolation(error, "organizations")) throw new UsageError(CONFLICT);
    throw error;
  }
  return true;
}

async function demoCaller(): Promise<Caller> {
  const key = parseApiKey(DEMO.apiKey);
  if (!key) throw new Error("the demo key is malformed");
  return new Caller(key.prefix, await hashApiKey(key.key));
}

async function ensureDemoKey(db: D1Database, caller: Caller): Promise<boolean> {
  const existing = await findApiKeyOwner(db, caller.prefix);
  if (existing) {
    if (existing.userId !== DEMO.userId) throw new UsageError(CONFLICT);
    return false;
  }
  await createApiKey(db, {
    prefix: caller.prefix,
    keyHash: caller.keyHash,
    userId: DEMO.userId,
    projectId: DEMO.projectId,
    expiresAt: null,
  });
  return true;
}

/** Creates the demo app if missing, then whatever demo deployments its history does not have yet. */
async function ensureDemoApp(db: D1Database, caller: Caller): Promise<string[]> {
  const done: string[] = [];
  if (!(await findDeploymentTarget(db, DEMO.appId, "production", DEMO.userId))) {
    await createApp(db, { projectId: DEMO.projectId, name: DEMO.appName, createdBy: DEMO.userId }, DEMO.appId);
    done.push("app");
  }
  let recorded = 0;
  for (const environment of new Set(DEMO_DEPLOYMENTS.map(([name]) => name))) {
    const found = await readEnvironmentRevisions(db, caller, DEMO.appId, environment);
    recorded += found?.revisions.length ?? 0;
  }
  for (const [environmentName, variantName] of DEMO_DEPLOYMENTS.slice(recorded)) {
    await deployVariant(db, { appId: DEMO.appId, environmentName, variantName, deployedBy: DEMO.userId });
  }
  if (recorded < DEMO_DEPLOYMENTS.length) done.push(`${DEMO_DEPLOYMENTS.length - recorded} deployments`);
  return done;
}

async function main(): Promise<undefined> {
  const { values } = parseArgs({ options: { "persist-to": { type: "string" }, remote: { type: "boolean" } }, strict: true });
  if (values.remote) throw new UsageError("the demo seed is local only; it never runs against the deployed database");
  const caller = await demoCaller();
  const { db, close } = await openDatabase({ persistTo: values["persist-to"] });
  try {
    const done = [
      ...((await retryWhenBusy(() => ensureDemoUser(db))) ? ["user"] : []),
      ...((await retryWhenBusy(() => ensureDemoKey(db, caller))) ? ["key"] : []),
      ...(await retryWhenBusy(() => ensureDemoApp(db, caller))),
    ];
    process.stderr.write(done.length ? `demo data seeded: ${done.join(", ")}\n` : "demo data already present\n");
  } finally {
    await close();
  }
  return undefined;
}

runCli(main, USAGE);
