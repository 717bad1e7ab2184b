/**
 * Seeds the local database with a demo account whose ids and key are fixed and documented in the README, so
 * that its curl examples work as written. Idempotent. Local only: there is no way to point it at --remote.
 */
import { parseArgs } from "node:util";
import { hashApiKey, parseApiKey } from "../auth/api-keys";
import { createApiKey, createUser, findApiKey, findUserByEmail } from "../db/accounts";
import { createApp, deployVariant, environmentExists } from "../db/apps";
import { assertMigrated, openDatabase } from "./database";

// Local-only demo values, documented in the README. Never use them anywhere else.
export const DEMO = {
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

const DEMO_DEPLOYMENTS: [environment: string, variant: string][] = [
  ["development", "main"],
  ["development", "experiment"],
  ["development", "main"],
  ["staging", "main"],
  ["production", "main"],
];

async function seed(db: D1Database): Promise<string[]> {
  const done: string[] = [];
  if (!(await findUserByEmail(db, DEMO.email))) {
    const { email, username, userId, organizationId, workspaceId, projectId } = DEMO;
    await createUser(db, { email, username }, { userId, organizationId, workspaceId, projectId });
    done.push("user");
  }
  const key = parseApiKey(DEMO.apiKey);
  if (key && !(await findApiKey(db, key.prefix))) {
    const keyHash = await hashApiKey(key.key);
    await createApiKey(db, { prefix: key.prefix, keyHash, userId: DEMO.userId, projectId: DEMO.projectId, expiresAt: null });
    done.push("key");
  }
  if (!(await environmentExists(db, DEMO.appId, "production"))) {
    await createApp(db, { projectId: DEMO.projectId, name: DEMO.appName, createdBy: DEMO.userId }, DEMO.appId);
    for (const [environmentName, variantName] of DEMO_DEPLOYMENTS) {
      await deployVariant(db, { appId: DEMO.appId, environmentName, variantName, deployedBy: DEMO.userId });
    }
    done.push("app with deployments");
  }
  return done;
}

const { values } = parseArgs({ options: { "persist-to": { type: "string" }, remote: { type: "boolean" } }, strict: true });
if (values.remote) {
  process.stderr.write("error: the demo seed is local only; it never runs against the deployed database\n");
  process.exit(2);
}
const { db, close } = await openDatabase({ persistTo: values["persist-to"] });
try {
  await assertMigrated(db);
  const done = await seed(db);
  process.stderr.write(done.length ? `demo data seeded: ${done.join(", ")}\n` : "demo data already present\n");
} finally {
  await close();
}
