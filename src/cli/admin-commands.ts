/**
 * The operators' way in: accounts, organizations, API keys and deployments, written through the Worker's own
 * data-access code. JSON on stdout, messages on stderr. Run with `npm run admin -- <command> [options]` (admin.ts);
 * the CLI tests call `runAdmin` in their own process.
 */
import { parseArgs } from "node:util";
import * as z from "zod/mini";
import { findAppCreator } from "../apps/apps.sql.ts";
import { generateApiKey, hashApiKey } from "../auth/api-keys";
import { addConfig, commitConfig, type Ref } from "../core/configs.sql.ts";
import { deployConfig } from "../core/deployments.sql.ts";
import {
  addOrganizationMember,
  changeMemberRole,
  createApiKeyAsOperator,
  createOrganizationCopyingOwner,
  createUser,
  findOrganizationBucket,
  findProjectForUser,
  findUserByEmail,
  newAccountIds,
  newOrganizationIds,
  type OrganizationRef,
  removeOrganizationMember,
  revokeApiKeyAsOperator,
  type User,
} from "../db/accounts";
import { bucketedSince, bucketOfId, bucketOfPrefix, LEGACY_BUCKET, newOrganizationBucket } from "../db/buckets";
import { isFenceTrip, isLastOwnerViolation, isUniqueViolation } from "../db/d1";
import { claimUser, confirmClaim, directoryUser, emailHolder, releaseClaim } from "../db/directory";
import { InexactNumberError, parseJsonExactly } from "../db/exact-json";
import { type CallerWriteDb, operatorDb } from "../db/handles";
import { openShards, placementBuckets, type ShardName, shardOf } from "../db/pool";
import { DEPLOYER_ROLES, ROLE_SYNONYMS, ROLES, type Role, roleNamed, WRITER_ROLES } from "../db/roles";
import { liveAfter } from "../http/edge-settings";
import { httpUrlOrEmpty, jsonObject } from "../http/fields";
import { PROTECTION_BYPASS_PATTERN } from "../http/protection-bypass";
import { abortMove, type BucketOptions, deleteMovedRows, finishMove, moveBuckets } from "./bucket-moves";
import {
  configuredBucketedSince,
  type DatabasePool,
  type OpenDatabase,
  openDatabase,
  retryTransient,
  type Target,
} from "./database";
import { checkDirectory, fillDirectory } from "./directory";
import { runCommand, type Streams, UsageError } from "./run-cli";

const USAGE = `Usage: npm run --silent admin -- <command> [options] [--persist-to DIR | --remote]

Commands:
  user create --email E [--username U] [--shard SHARD_n]
  org create --name N --owner E [--shard SHARD_n]
  org add-member --org ID --email E --role ROLE
  org set-role --org ID --email E --role ROLE
  org remove-member --org ID --email E
  key create --email E [--project ID] [--expires-in-days N]
  key revoke --prefix P
  deploy --app ID --env NAME --variant CONFIG_NAME --email E [--bypass-reason TEXT]
  variant commit --app ID --name CONFIG_NAME --params JSON [--url URL] [--email E]
  directory fill [--check]
  bucket move --buckets B[-C] --to SHARD_n [--shard-map MAP]
  bucket finish --buckets B[-C] --to SHARD_n [--shard-map MAP]
  bucket delete --buckets B[-C] [--shard-map MAP]
  bucket abort --buckets B[-C] [--shard-map MAP]

ROLE is one of ${ROLES.join(", ")};
admin is a synonym of workspace_admin.
add-member adds the user, or changes the role of one who is a member already; set-role changes
an existing member's role only; remove-member also revokes the user's keys for the organization's
projects. An organization keeps at least one owner.

Each change is recorded as an event of its organization's audit log (docs/EVENTS.md), with no API key
as its actor's: member.joined, member.role_changed (add-member of a member, set-role),
member.removed, api_key.created, api_key.deleted (revoke of a live key), and for deploy and
variant commit, as the user they act as, environment.deployed and config.added or
config.committed. user create and org create record none (no event type names them).

deploy to a protected environment (docs/CHANGE-REQUESTS.md) is refused (exit 1), as over HTTP;
--bypass-reason TEXT deploys anyway when the user's role is one of the environment's bypass_roles,
recording environment.protection_bypassed with the reason.

user create and org create place the new organization on --shard, else on a shard of OPEN_SHARDS
(wrangler.toml) at random; every other command acts on the shard of what it names.

directory fill copies every shard's users and memberships into the directory (docs/SHARDING.md
§6; adds only what is missing: run it again any time) and prints what it added per shard; a user
whose id, email or username the directory holds otherwise stops it, named. With --check it writes
nothing and exits 1, naming each row, unless the directory holds every shard's users and
memberships and every id (and key prefix) carries its organization's bucket, read by wrangler.toml's
BUCKETED_SINCE.

bucket moves buckets of organizations to another shard (docs/SHARDING.md §5), in four steps:
move fences the buckets' writes (answered 503 with Retry-After; reads go on), copies their rows
to SHARD_n and verifies each table's row count and SHA-256 on both shards, printing them (run it
again after a stop: it copies again); then edit SHARD_MAP in wrangler.toml to route the buckets to
SHARD_n and deploy; finish sets the old shard's fence to moved (it refuses everything of the
buckets) and lets writes through on SHARD_n; delete deletes the buckets' rows on the old shard.
abort, before finish, deletes the copy and lets writes through on the old shard again. Each
command reads SHARD_MAP from wrangler.toml's [vars], or the deployed value given with --shard-map.

Targets the local D1 of \`npm run dev\` by default (.wrangler/state), the folder given
with --persist-to (as wrangler's own flag), or the deployed database with --remote.
Prints JSON on stdout (--silent keeps npm's own banner off it), messages on stderr.`;

const OPTIONS = {
  email: { type: "string" },
  username: { type: "string" },
  name: { type: "string" },
  owner: { type: "string" },
  org: { type: "string" },
  role: { type: "string" },
  project: { type: "string" },
  "expires-in-days": { type: "string" },
  prefix: { type: "string" },
  app: { type: "string" },
  env: { type: "string" },
  variant: { type: "string" },
  "bypass-reason": { type: "string" },
  params: { type: "string" },
  url: { type: "string" },
  check: { type: "boolean" },
  buckets: { type: "string" },
  to: { type: "string" },
  "shard-map": { type: "string" },
  shard: { type: "string" },
  "persist-to": { type: "string" },
  remote: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

type Options = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

function required(options: Options, name: keyof Options): string {
  const value = options[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value.trim();
}

/**
 * The user named by `email`: their row on the shard `db`, else the directory's (a user homed on another shard, whose
 * row a change making them a member or an owner on `db` copies there in its batch).
 */
async function userByEmail(db: D1Database, email: string, pool: DatabasePool): Promise<User> {
  const user = (await findUserByEmail(db, email)) ?? (await directoryUser(pool.directory, email));
  if (!user) throw new UsageError(`no user with email ${email}`);
  return user;
}

/**
 * The operator acting as the user named by --email, or else as the app's creator, minting ids in the app's bucket;
 * checks the app exists.
 */
async function operatorOnApp(
  db: D1Database,
  pool: DatabasePool,
  appId: string,
  email: string | undefined,
): Promise<{ caller: CallerWriteDb; as: string }> {
  const creator = await findAppCreator(db, appId);
  const bucket = await findOrganizationBucket(db, { appId });
  if (!creator || bucket === null) throw new UsageError(`no app with id ${appId}`);
  const user = email ? await userByEmail(db, email, pool) : creator;
  return { caller: operatorDb(db, user.id, bucket, liveAfter(pool.env)), as: user.email };
}

/** "an owner, workspace_admin or editor" */
const roleList = (roles: readonly Role[]) => `an ${roles.slice(0, -1).join(", ")} or ${roles.at(-1)}`;

/** The operator's user may not do this in the app's organization: who may, by docs/ACCOUNTS-API.md's roles. */
const mayNot = (email: string, roles: readonly Role[], what: string) =>
  new UsageError(`${email} must be ${roleList(roles)} of the app's organization to ${what}`);

/**
 * Adds the config when the app has none of that name (revision 1, params {}), as deploy always did for a new
 * variant name; an app the operator's user cannot write to is refused.
 */
async function ensureConfig(caller: CallerWriteDb, as: string, application: Ref, configName: string) {
  const added = await addConfig(caller, application, configName);
  if (added.outcome === "forbidden" || added.outcome === "not_found") {
    throw mayNot(as, WRITER_ROLES, `add config ${configName}`);
  }
}

/** --role: one of ROLES, or a synonym of one (`admin`); the role itself. */
function roleOption(options: Options): Role {
  const role = roleNamed(required(options, "role"));
  if (!role) {
    const synonyms = Object.entries(ROLE_SYNONYMS).map(([synonym, of]) => `${synonym} for ${of}`);
    throw new UsageError(`--role must be one of ${ROLES.join(", ")} (or ${synonyms.join(", ")})`);
  }
  return role;
}

/** The organization named by --org (which must exist) and the user named by --email. */
async function organizationAndUser(
  db: D1Database,
  options: Options,
  pool: DatabasePool,
): Promise<{ organization: OrganizationRef; user: User }> {
  const organizationId = required(options, "org");
  const user = await userByEmail(db, required(options, "email"), pool);
  const bucket = await findOrganizationBucket(db, { organizationId });
  if (bucket === null) throw new UsageError(`no organization with id ${organizationId}`);
  return { organization: { id: organizationId, bucket }, user };
}

/**
 * Runs a change of membership (`what`: "remove E from organization O"); the database's refusal to leave the
 * organization without an owner (migrations/0006's triggers), which changes nothing, as a UsageError.
 */
async function keepingAnOwner<T>(change: Promise<T>, what: string): Promise<T> {
  try {
    return await change;
  } catch (error) {
    if (!isLastOwnerViolation(error)) throw error;
    throw new UsageError(
      `cannot ${what}: they are its last owner (an organization keeps at least one owner; make another member an owner first)`,
    );
  }
}

/** `variant commit`'s params and url, by the rules of HTTP's configs/commit. */
const CommitOptions = z.object({ params: jsonObject("--params"), url: z.optional(httpUrlOrEmpty("--url")) });

const EMAIL = /^[^\s@]+@[^\s@]+$/;
const USERNAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Where `user create` and `org create` place a new organization (docs/SHARDING.md §2): on --shard, which must take new
 * organizations (OPEN_SHARDS), else on one of those at random, as `POST /organizations` does for a key whose shard does
 * not take them; in one of its buckets at random (bucket 0, before BUCKETED_SINCE). The bucket, and the database of its
 * shard.
 */
function placement(options: Options, { env }: DatabasePool): { bucket: number; db: D1Database } {
  const open = openShards(env);
  const shard = options.shard?.trim() ?? null;
  if (shard !== null && !open.includes(shard as ShardName)) {
    throw new UsageError(`--shard must name a shard that takes new organizations (OPEN_SHARDS): ${open.join(", ")}`);
  }
  const bucket = newOrganizationBucket(bucketedSince(env), placementBuckets(env, shard as ShardName | null));
  return { bucket, db: shardOf(env, bucket) };
}

/** What the bucket commands read of the command line. */
const bucketOptions = (options: Options): BucketOptions => ({
  buckets: options.buckets,
  to: options.to,
  shardMap: options["shard-map"],
});

/** A command on SHARD_0 (`db`, where the CLI writes until it places by bucket) or on the whole pool. */
type Command = (db: D1Database, options: Options, pool: DatabasePool) => Promise<Record<string, unknown>>;

const COMMANDS: Record<string, Command> = {
  async "user create"(db, options, pool) {
    const email = required(options, "email");
    if (!EMAIL.test(email)) throw new UsageError(`not an email address: ${email}`);
    const username =
      options.username === undefined
        ? email
            .split("@")[0]
            .replace(/[^A-Za-z0-9._-]/g, "")
            .slice(0, 64)
        : options.username.trim();
    if (!USERNAME.test(username)) throw new UsageError("--username must be 1-64 letters, digits, dots, dashes or underscores");
    if (await findUserByEmail(db, email)) throw new UsageError(`a user with email ${email} already exists`);
    const placed = placement(options, pool);
    const ids = newAccountIds(placed.bucket);
    // Email and username are unique across the shards: claimed in the directory first, confirmed once made
    // (docs/SHARDING.md §3.3).
    const createdAt = new Date().toISOString();
    const claim = await claimUser(pool.directory, { id: ids.userId, username, email, createdAt });
    if (claim === "email_taken") throw new UsageError(`a user with email ${email} already exists`);
    if (claim === "username_taken") throw new UsageError(`the username ${username} is taken: choose another with --username`);
    try {
      await createUser(placed.db, { email, username, createdAt }, ids);
      await confirmClaim(pool.directory, ids.userId);
      return {
        user_id: ids.userId,
        username,
        organization_id: ids.organizationId,
        workspace_id: ids.workspaceId,
        project_id: ids.projectId,
      };
    } catch (error) {
      await releaseClaim(pool.directory, ids.userId);
      if (isUniqueViolation(error, "users"))
        throw new UsageError(`the username ${username} is taken: choose another with --username`);
      throw error;
    }
  },

  async "org create"(db, options, pool) {
    const name = required(options, "name");
    // The owner's row is copied to the shard in the same batch when they are homed elsewhere.
    const owner = await userByEmail(db, required(options, "owner"), pool);
    const placed = placement(options, pool);
    const ids = newOrganizationIds(placed.bucket);
    await createOrganizationCopyingOwner(placed.db, name, owner, ids);
    return { organization_id: ids.organizationId, workspace_id: ids.workspaceId, project_id: ids.projectId };
  },

  async "org add-member"(db, options, pool) {
    const role = roleOption(options);
    const { organization, user } = await organizationAndUser(db, options, pool);
    const change = addOrganizationMember(db, organization, user, role);
    await keepingAnOwner(change, `make ${user.email} ${role} in organization ${organization.id}`);
    return { organization_id: organization.id, user_id: user.id, role };
  },

  async "org set-role"(db, options, pool) {
    const role = roleOption(options);
    const { organization, user } = await organizationAndUser(db, options, pool);
    const change = changeMemberRole(db, organization, user.id, role);
    const changed = await keepingAnOwner(change, `make ${user.email} ${role} in organization ${organization.id}`);
    if (!changed)
      throw new UsageError(`${user.email} is not a member of organization ${organization.id}: add them with org add-member`);
    return { organization_id: organization.id, user_id: user.id, role };
  },

  async "org remove-member"(db, options, pool) {
    const { organization, user } = await organizationAndUser(db, options, pool);
    const removal = removeOrganizationMember(db, organization, user.id);
    const removed = await keepingAnOwner(removal, `remove ${user.email} from organization ${organization.id}`);
    if (!removed) throw new UsageError(`${user.email} is not a member of organization ${organization.id}`);
    return { organization_id: organization.id, user_id: user.id, revoked_keys: removed.revokedKeys };
  },

  async "key create"(db, options, pool) {
    const user = await userByEmail(db, required(options, "email"), pool);
    const days = options["expires-in-days"];
    if (days !== undefined && !/^[1-9][0-9]{0,4}$/.test(days))
      throw new UsageError("--expires-in-days must be a whole number of days, 1 or more");
    const projectId = await findProjectForUser(db, user.id, options.project);
    if (!projectId) {
      throw new UsageError(
        options.project
          ? `no project ${options.project} in an organization of ${user.email}`
          : `${user.email} has no personal project`,
      );
    }
    const expiresAt = days ? new Date(Date.now() + Number(days) * 86_400_000).toISOString() : null;
    const bucket = await findOrganizationBucket(db, { projectId });
    const { key, prefix } = generateApiKey(bucket ?? LEGACY_BUCKET);
    await createApiKeyAsOperator(db, { prefix, keyHash: await hashApiKey(key), userId: user.id, projectId, expiresAt });
    return { key, prefix, user_id: user.id, project_id: projectId, expires_at: expiresAt };
  },

  async "key revoke"(db, options) {
    const prefix = required(options, "prefix");
    // No key, no bucket: nothing is written then.
    const bucket = await findOrganizationBucket(db, { keyPrefix: prefix });
    const revoked = await revokeApiKeyAsOperator(db, prefix, bucket ?? LEGACY_BUCKET);
    if (!revoked) throw new UsageError(`no key with prefix ${prefix}`);
    return revoked;
  },

  async deploy(db, options, pool) {
    const appId = required(options, "app");
    const environmentName = required(options, "env");
    const configName = required(options, "variant").normalize("NFC");
    const { caller, as } = await operatorOnApp(db, pool, appId, required(options, "email"));
    const application = { id: appId, slug: null, version: null };
    const target = {
      application,
      variant: { slug: configName, version: null, id: null },
      environment: { slug: environmentName, version: null, id: null },
    };
    const bypassReason = options["bypass-reason"] ?? null;
    if (bypassReason !== null && !PROTECTION_BYPASS_PATTERN.test(bypassReason)) {
      throw new UsageError("--bypass-reason must be 1 to 500 printable characters of UTF-8 text");
    }
    const deployOnce = () => deployConfig(caller, target, null, null, { bypassReason });
    let deployed = await deployOnce();
    if (deployed.outcome === "not_found" && deployed.missing === "config") {
      await ensureConfig(caller, as, application, configName);
      deployed = await deployOnce();
    }
    if (deployed.outcome === "not_found" && deployed.missing === "environment") {
      throw new UsageError(`app ${appId} has no environment ${environmentName}`);
    }
    if (deployed.outcome === "refused") {
      if (deployed.refusal === "split_running") {
        throw new Error(`a split runs in environment ${environmentName} of app ${appId}: end it first (DELETE …/split)`);
      }
      throw new Error(
        deployed.refusal === "protected"
          ? `environment ${environmentName} of app ${appId} is protected: propose the change with POST /change-requests ` +
              "(or, in an emergency, --bypass-reason TEXT as a user whose role may bypass it)"
          : `environment ${environmentName} of app ${appId} is protected, and ${as}'s role may not bypass its protection`,
      );
    }
    // The app exists (operatorOnApp): not found means not visible to the user, who is no member of its organization.
    if (deployed.outcome !== "done") throw mayNot(as, DEPLOYER_ROLES, "deploy");
    const environment = deployed.config.environment;
    if (!environment) throw new Error("a deployment answered no environment");
    return { environment: environmentName, revision: environment.revision, revision_id: environment.revisionId };
  },

  async "variant commit"(db, options, pool) {
    const appId = required(options, "app");
    const configName = required(options, "name").normalize("NFC");
    let params: unknown;
    try {
      params = parseJsonExactly(required(options, "params"));
    } catch (error) {
      throw new UsageError(error instanceof InexactNumberError ? `--params: ${error.message}` : "--params must be JSON");
    }
    if (typeof params !== "object" || params === null || Array.isArray(params)) {
      throw new UsageError("--params must be a JSON object");
    }
    // What HTTP refuses, the CLI refuses too: params nested too deep, a url that is not "" or http(s).
    const checked = CommitOptions.safeParse({ params, url: options.url });
    if (!checked.success) throw new UsageError(checked.error.issues[0].message);
    const { caller, as } = await operatorOnApp(db, pool, appId, options.email);
    const refs = {
      application: { id: appId, slug: null, version: null },
      variant: { slug: configName, version: null, id: null },
    };
    const change = { params: checked.data.params, url: checked.data.url ?? null };
    let committed = await commitConfig(caller, refs, change);
    if (committed.outcome === "not_found") {
      await ensureConfig(caller, as, refs.application, configName);
      committed = await commitConfig(caller, refs, change);
    }
    if (committed.outcome !== "done") throw mayNot(as, WRITER_ROLES, "commit");
    const { config } = committed;
    return {
      app_id: config.appId,
      variant_id: config.variantId,
      config_name: config.configName,
      revision: config.revision,
      revision_id: config.revisionId,
      params: config.params,
      url: config.url,
    };
  },

  async "directory fill"(_db, options, pool) {
    return options.check ? checkDirectory(pool, await configuredBucketedSince()) : fillDirectory(pool);
  },

  "bucket move": (_db, options, pool) => moveBuckets(pool, bucketOptions(options)),
  "bucket finish": (_db, options, pool) => finishMove(pool, bucketOptions(options)),
  "bucket delete": (_db, options, pool) => deleteMovedRows(pool, bucketOptions(options)),
  "bucket abort": (_db, options, pool) => abortMove(pool, bucketOptions(options)),
};

/**
 * The shard a command acts on (docs/SHARDING.md §2): that of the bucket of the id it names (--org, --app, --project; a
 * key's --prefix), else of the user --email names (their id's bucket: their first organization's), else bucket 0's
 * (`user create` and `org create` place there).
 */
async function commandShard(options: Options, pool: DatabasePool): Promise<D1Database> {
  const since = bucketedSince(pool.env);
  const named = options.org ?? options.app ?? options.project;
  let bucket = named ? bucketOfId(named.trim(), since) : options.prefix ? bucketOfPrefix(options.prefix.trim()) : null;
  if (bucket === null && options.email) {
    const holder = await emailHolder(pool.directory, options.email.trim());
    if (holder) bucket = bucketOfId(holder.id, since);
  }
  return shardOf(pool.env, bucket ?? LEGACY_BUCKET);
}

async function main(argv: string[], streams: Streams, open: OpenTarget): Promise<Record<string, unknown> | undefined> {
  const { values: options, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const name = positionals.join(" ");
  if (options.help) {
    streams.stderr.write(`${USAGE}\n`);
    return undefined;
  }
  const command = COMMANDS[name];
  if (!command) throw new UsageError(`${name ? `unknown command: ${name}` : "no command given"}\n\n${USAGE}`);
  if (options.remote && options["persist-to"]) throw new UsageError("--remote and --persist-to cannot be used together");

  if (options.check && name !== "directory fill") throw new UsageError("--check belongs to directory fill only");
  const { pool, close } = await open({ persistTo: options["persist-to"], remote: options.remote });
  try {
    return await retryTransient(async () => command(await commandShard(options, pool), options, pool));
  } catch (error) {
    if (isFenceTrip(error)) throw new Error(FENCED);
    throw error;
  } finally {
    await close();
  }
}

/** A write refused by a fence (docs/SHARDING.md §5): the CLI's writes are fenced as the Worker's are. */
const FENCED =
  "the organization's bucket is fenced on the shard SHARD_MAP gives it; nothing was written. Being moved: run this " +
  "again after bucket finish (or bucket abort). Moved away: set SHARD_MAP in wrangler.toml to the deployed map.";

/** Opens the database a command line names; the CLI tests pass one that keeps it open from command to command. */
export type OpenTarget = (target: Target) => Promise<OpenDatabase>;

/** Runs one command line (`argv` without the program): its JSON on `streams.stdout`, messages on stderr; its exit code. */
export function runAdmin(argv: string[], streams: Streams = process, open: OpenTarget = openDatabase): Promise<number> {
  return runCommand(() => main(argv, streams, open), USAGE, streams);
}
