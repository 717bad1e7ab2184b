import { expect, vi } from "vitest";
import { z } from "zod";
import { type Account, createAppVia, DEFAULT_ENVIRONMENTS, deploy, type Role, send } from "./fixtures";
import { createWorld, type Holder, TIMESTAMP, Timestamp, UUID_V7, Uuid, type World } from "./fuzz-support";
import { type changes, databaseProblems, type Snapshot, Tracker } from "./harness";
import { shardNameFor } from "./pool";

/** A shard of the pool, by name. */
export type ShardName = ReturnType<typeof shardNameFor>;

/*
 * The fuzz oracle of the apps, variants and configs endpoints: what each answers, predicted from every row of the
 * database (read with plain SQL by harness.ts's `snapshot()`) and the contract (docs/LEGACY-API.md), written
 * independently of src/. The strict shapes below are the contract's; the expected bodies are built row by row.
 */

// ---------------------------------------------------------------------------------------------------------------
// Strict shapes of the new endpoints' 200 bodies.

const Params = z.record(z.string(), z.unknown());
export const AppListBody = z.array(z.strictObject({ app_id: Uuid, app_name: z.string(), updated_at: Timestamp }));
export const RenamedBody = z.strictObject({ app_id: Uuid, app_name: z.string() });
/** POST /apps's 200. */
export const CreatedBody = z.strictObject({ app_id: z.string().regex(UUID_V7), app_name: z.string() });
export const EnvironmentsBody = z
  .array(
    z.strictObject({
      name: z.string(),
      app_id: Uuid,
      project_id: Uuid,
      deployed_app_variant_id: Uuid.nullable(),
      deployed_variant_name: z.string().startsWith("app.").nullable(),
      deployed_app_variant_revision_id: Uuid.nullable(),
      deployed_variant_archived: z.boolean(),
      revision: z.number().int().min(0),
      organization_id: Uuid,
      workspace_id: Uuid,
    }),
  )
  .length(DEFAULT_ENVIRONMENTS.length);
export const AppVariantBody = z.strictObject({
  app_id: Uuid,
  app_name: z.string(),
  variant_id: Uuid,
  variant_name: z.string().startsWith("app."),
  project_id: Uuid,
  base_name: z.literal("app"),
  base_id: Uuid,
  config_name: z.string(),
  revision: z.number().int().min(1),
  parameters: Params,
  uri: z.null(),
  created_at: Timestamp,
  updated_at: Timestamp,
  modified_by_id: Uuid,
});
export const VariantRevisionBody = z.strictObject({
  id: Uuid,
  revision: z.number().int().min(1),
  modified_by: z.string(),
  config: z.strictObject({ config_name: z.string(), parameters: Params }),
  created_at: Timestamp,
  commit_message: z.string().nullable(),
});
const Reference = z.strictObject({ slug: z.string(), version: z.number().int().min(0).nullable(), id: Uuid });
const Lifecycle = z.strictObject({ created_at: Timestamp, updated_at: Timestamp, updated_by: z.string(), updated_by_id: Uuid });
export const ConfigBody = z.strictObject({
  params: Params,
  url: z.string(),
  application_ref: Reference.extend({ version: z.null() }),
  service_ref: z.null(),
  variant_ref: Reference,
  environment_ref: Reference.nullable(),
  variant_lifecycle: Lifecycle,
  environment_lifecycle: Lifecycle.nullable(),
});

/** GET /configs's and GET /configs/deployment/{id}'s 200. */
export const RegistryConfigBody = z.strictObject({
  config_name: z.string(),
  current_version: z.number().int().min(1),
  parameters: Params,
});
/** GET /bases's 200: the app's one base, or none. */
export const BasesBody = z.array(z.strictObject({ base_id: Uuid, base_name: z.literal("app") })).max(1);

// ---------------------------------------------------------------------------------------------------------------
// Rows, as the migrations define them.

interface UserRow {
  id: string;
  username: string;
  email: string;
}
interface ProjectRow {
  id: string;
  workspace_id: string;
  is_default: number;
}
interface WorkspaceRow {
  id: string;
  organization_id: string;
}
interface AppRow {
  id: string;
  project_id: string;
  name: string;
  created_at: string;
  updated_at: string | null;
}
export interface VariantRow {
  id: string;
  app_id: string;
  /** For a removed variant, a tombstone no request can send (U+0001 and its id). */
  name: string;
  created_at: string;
  /** Set when the variant was removed (DELETE /variants/{variant_id}); its name then moved to removed_name. */
  removed_at: string | null;
  removed_name: string | null;
}
export interface RevisionRow {
  id: string;
  variant_id: string;
  revision: number;
  modified_by: string;
  created_at: string;
  params: string;
  url: string;
  message: string | null;
}
export interface EnvironmentRow {
  id: string;
  app_id: string;
  name: string;
  revision: number;
  deployed_app_variant_id: string | null;
  deployed_app_variant_revision_id: string | null;
}
export interface EnvironmentRevisionRow {
  id: string;
  environment_id: string;
  revision: number;
  modified_by: string;
  deployed_app_variant_revision_id: string | null;
  created_at: string;
}

/** A ref as the contract reads one: every part optional; an app or config slug NFC-normalised. */
export interface Ref {
  slug: string | null;
  version: number | null;
  id: string | null;
}

export interface Refs {
  application: Ref | null;
  variant: Ref | null;
  environment: Ref | null;
}

const byKey = <T extends { id: string }>(rows: unknown[]) => new Map((rows as T[]).map((row) => [row.id, row]));
const groupBy = <T>(rows: unknown[], key: (row: T) => string) => {
  const groups = new Map<string, T[]>();
  for (const row of rows as T[]) groups.set(key(row), [...(groups.get(key(row)) ?? []), row]);
  return groups;
};

/** The tables of an organization's rows that the model reads, each row on the shard its id's bucket names. */
const SHARDED_TABLES = [
  "workspaces",
  "projects",
  "apps",
  "app_variants",
  "app_variant_revisions",
  "environments",
  "deployments",
  "environment_revisions",
] as const;

/** The database as the oracle reads it, and what each endpoint must answer from it. */
export class Model {
  readonly apps: Map<string, AppRow>;
  readonly variants: Map<string, VariantRow>;
  readonly revisions: Map<string, RevisionRow>;
  readonly environments: Map<string, EnvironmentRow>;
  readonly environmentRevisions: Map<string, EnvironmentRevisionRow>;
  private readonly users: Map<string, UserRow>;
  private readonly projects: Map<string, ProjectRow>;
  private readonly workspaces: Map<string, WorkspaceRow>;
  private readonly variantsByApp: Map<string, VariantRow[]>;
  private readonly revisionsByVariant: Map<string, RevisionRow[]>;
  private readonly environmentsByApp: Map<string, EnvironmentRow[]>;
  private readonly revisionsByEnvironment: Map<string, EnvironmentRevisionRow[]>;
  /** The database as each shard holds it (`on`), made on first use. */
  private readonly onShards = new Map<ShardName, Model>();

  constructor(readonly rows: Snapshot) {
    this.users = byKey(rows.users);
    this.projects = byKey(rows.projects);
    this.workspaces = byKey(rows.workspaces);
    this.apps = byKey(rows.apps);
    this.variants = byKey(rows.app_variants);
    this.revisions = byKey(rows.app_variant_revisions);
    this.environments = byKey(rows.environments);
    this.environmentRevisions = byKey(rows.environment_revisions);
    this.variantsByApp = groupBy<VariantRow>(rows.app_variants, (row) => row.app_id);
    this.revisionsByVariant = groupBy<RevisionRow>(rows.app_variant_revisions, (row) => row.variant_id);
    this.environmentsByApp = groupBy<EnvironmentRow>(rows.environments, (row) => row.app_id);
    this.revisionsByEnvironment = groupBy<EnvironmentRevisionRow>(rows.environment_revisions, (row) => row.environment_id);
    for (const revisions of [...this.revisionsByVariant.values(), ...this.revisionsByEnvironment.values()])
      revisions.sort((a, b) => a.revision - b.revision);
  }

  /**
   * The database as a request routed to `shard` sees it (docs/SHARDING.md §3.1): only that shard's rows, so that an id
   * of another shard names nothing, as one that does not exist. Users are copied to every shard they act on, whole.
   */
  on(shard: ShardName): Model {
    let model = this.onShards.get(shard);
    if (!model) {
      const rows = { ...this.rows };
      for (const table of SHARDED_TABLES) rows[table] = rows[table].filter((row) => shardNameFor(row.id as string) === shard);
      model = new Model(rows);
      this.onShards.set(shard, model);
    }
    return model;
  }

  organizationOfProject(projectId: string): string | undefined {
    const project = this.projects.get(projectId);
    return project && this.workspaces.get(project.workspace_id)?.organization_id;
  }

  /** The caller's role in the app's organization; undefined: the app does not exist or the caller cannot see it. */
  role(holder: Holder, appId: string | undefined): Role | undefined {
    const app = appId === undefined ? undefined : this.apps.get(appId);
    const organization = app && this.organizationOfProject(app.project_id);
    return organization === undefined ? undefined : holder.roles.get(organization);
  }

  /** The app, when the caller can see it. */
  visibleApp(holder: Holder, appId: string | undefined): AppRow | undefined {
    return this.role(holder, appId) && appId !== undefined ? this.apps.get(appId) : undefined;
  }

  defaultProject(workspaceId: string): string | undefined {
    return [...this.projects.values()].find((project) => project.workspace_id === workspaceId && project.is_default === 1)?.id;
  }

  appsOfProject(projectId: string): AppRow[] {
    return [...this.apps.values()].filter((app) => app.project_id === projectId);
  }

  appByName(projectId: string, name: string): AppRow | undefined {
    return this.appsOfProject(projectId).find((app) => app.name === name);
  }

  /** The app's variants, removed ones left out (as lists and lookups by name leave them out), oldest first. */
  variantsOf(appId: string): VariantRow[] {
    return this.everyVariantOf(appId).filter((variant) => variant.removed_at === null);
  }

  /** The app's variants, removed ones included: their revisions stay reachable by their ids. */
  everyVariantOf(appId: string): VariantRow[] {
    return this.variantsByApp.get(appId) ?? [];
  }

  /** The variant, unless it does not exist or was removed (lookups by a variant's id leave removed ones out). */
  liveVariant(variantId: string): VariantRow | undefined {
    const variant = this.variants.get(variantId);
    return variant?.removed_at === null ? variant : undefined;
  }

  /** Whether the revision belongs to a removed variant. */
  isRemovedRevision(revision: RevisionRow): boolean {
    return this.variants.get(revision.variant_id)?.removed_at !== null;
  }

  /** The name a variant's revisions are shown under: for a removed variant, the name it had. */
  configName(variant: VariantRow): string {
    return variant.removed_name ?? variant.name;
  }

  revisionsOf(variantId: string): RevisionRow[] {
    return this.revisionsByVariant.get(variantId) ?? [];
  }

  latest(variantId: string): RevisionRow | undefined {
    return this.revisionsOf(variantId).at(-1);
  }

  environmentsOf(appId: string): EnvironmentRow[] {
    return DEFAULT_ENVIRONMENTS.flatMap((name) => this.environmentsByApp.get(appId)?.find((row) => row.name === name) ?? []);
  }

  environmentRevisionsOf(environmentId: string): EnvironmentRevisionRow[] {
    return this.revisionsByEnvironment.get(environmentId) ?? [];
  }

  /** Every row that goes with the app: what deleting it must remove. */
  subtree(appId: string): Partial<Record<keyof Snapshot, unknown[]>> {
    const environments = new Set(this.environmentsOf(appId).map((row) => row.id));
    const variants = new Set(this.everyVariantOf(appId).map((row) => row.id));
    const rows = (table: keyof Snapshot, belongs: (row: Record<string, unknown>) => boolean) => this.rows[table].filter(belongs);
    return {
      apps: rows("apps", (row) => row.id === appId),
      app_variants: rows("app_variants", (row) => row.app_id === appId),
      app_variant_revisions: rows("app_variant_revisions", (row) => variants.has(row.variant_id as string)),
      environments: rows("environments", (row) => row.app_id === appId),
      deployments: rows("deployments", (row) => environments.has(row.environment_id as string)),
      environment_revisions: rows("environment_revisions", (row) => environments.has(row.environment_id as string)),
    };
  }

  email(userId: string): string | undefined {
    return this.users.get(userId)?.email;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Expected bodies.

  appListItem(app: AppRow) {
    return { app_id: app.id, app_name: app.name, updated_at: app.updated_at ?? app.created_at };
  }

  environmentItem(environment: EnvironmentRow) {
    const app = this.apps.get(environment.app_id)!;
    const project = this.projects.get(app.project_id)!;
    const deployed = environment.deployed_app_variant_id && this.variants.get(environment.deployed_app_variant_id);
    return {
      name: environment.name,
      app_id: app.id,
      project_id: app.project_id,
      deployed_app_variant_id: environment.deployed_app_variant_id,
      deployed_variant_name: deployed ? `app.${deployed.name}` : null,
      deployed_app_variant_revision_id: environment.deployed_app_variant_revision_id,
      // The model makes no archived variant (no call of it archives one).
      deployed_variant_archived: false,
      revision: environment.revision,
      organization_id: this.workspaces.get(project.workspace_id)!.organization_id,
      workspace_id: project.workspace_id,
    };
  }

  /** A variant with its latest revision: its params, when and by whom it was made. */
  appVariant(variant: VariantRow) {
    const app = this.apps.get(variant.app_id)!;
    const latest = this.latest(variant.id)!;
    return {
      app_id: app.id,
      app_name: app.name,
      variant_id: variant.id,
      variant_name: `app.${variant.name}`,
      project_id: app.project_id,
      base_name: "app",
      base_id: app.id,
      config_name: variant.name,
      revision: latest.revision,
      parameters: JSON.parse(latest.params),
      uri: null,
      created_at: variant.created_at,
      updated_at: latest.created_at,
      modified_by_id: latest.modified_by,
    };
  }

  variantRevision(revision: RevisionRow) {
    return {
      id: revision.id,
      revision: revision.revision,
      modified_by: this.users.get(revision.modified_by)!.username,
      config: { config_name: this.configName(this.variants.get(revision.variant_id)!), parameters: JSON.parse(revision.params) },
      created_at: revision.created_at,
      commit_message: revision.message,
    };
  }

  /** A config as the older SDK reads it (GET /configs, GET /configs/deployment/{id}), with the route's current_version. */
  registryConfig(revision: RevisionRow, currentVersion: number) {
    return {
      config_name: this.configName(this.variants.get(revision.variant_id)!),
      current_version: currentVersion,
      parameters: JSON.parse(revision.params),
    };
  }

  /** The Config of a variant revision, reached through an environment revision or not. */
  config(revision: RevisionRow, through?: EnvironmentRevisionRow) {
    const variant = this.variants.get(revision.variant_id)!;
    const app = this.apps.get(variant.app_id)!;
    const lifecycle = (at: string, by: string) => ({
      created_at: at,
      updated_at: expect.stringMatching(TIMESTAMP),
      updated_by: this.email(by),
      updated_by_id: by,
    });
    const environment = through && this.environments.get(through.environment_id)!;
    return {
      params: JSON.parse(revision.params),
      url: revision.url,
      application_ref: { slug: app.name, version: null, id: app.id },
      service_ref: null,
      variant_ref: { slug: this.configName(variant), version: revision.revision, id: revision.id },
      environment_ref: through && environment ? { slug: environment.name, version: through.revision, id: through.id } : null,
      variant_lifecycle: lifecycle(revision.created_at, revision.modified_by),
      environment_lifecycle: through ? lifecycle(through.created_at, through.modified_by) : null,
    };
  }

  // -------------------------------------------------------------------------------------------------------------
  // How configs requests name things (docs/LEGACY-API.md, "What applies everywhere" and the configs rows).

  /**
   * The app the refs name, whether or not the caller can see it: by application_ref's id (its slug, when given
   * too, must agree), else by its slug in the key's project; without an application_ref, the app of the variant
   * revision named by id, else (none: no such revision) of the environment revision named by id.
   */
  namedApp(holder: Holder, refs: Refs): AppRow | undefined {
    const { application, variant, environment } = refs;
    if (application) {
      const app =
        application.id !== null ? this.apps.get(application.id) : this.appByName(holder.keyProjectId, application.slug ?? "");
      return app && (application.slug === null || app.name === application.slug) ? app : undefined;
    }
    const byVariant = variant?.id ? this.revisions.get(variant.id) : undefined;
    if (byVariant) return this.apps.get(this.variants.get(byVariant.variant_id)!.app_id);
    const revision = environment?.id ? this.environmentRevisions.get(environment.id) : undefined;
    return revision && this.apps.get(this.environments.get(revision.environment_id)!.app_id);
  }

  /**
   * The variant revision a variant ref names within the app (its id, else its slug), every part given agreeing. A
   * removed variant is no longer found by its name, but its revisions still are by their ids (a slug given along never
   * agrees: its name is now a tombstone no request can send).
   */
  namedRevision(appId: string, ref: Ref): RevisionRow | undefined {
    let revision: RevisionRow | undefined;
    if (ref.id !== null) {
      revision = this.revisions.get(ref.id);
    } else {
      const variant = this.variantsOf(appId).find((row) => row.name === ref.slug);
      const revisions = variant ? this.revisionsOf(variant.id) : [];
      revision = ref.version === null ? revisions.at(-1) : revisions.find((row) => row.revision === ref.version);
    }
    const variant = revision && this.variants.get(revision.variant_id);
    if (!revision || variant?.app_id !== appId) return undefined;
    if (ref.slug !== null && variant.name !== ref.slug) return undefined;
    return ref.version === null || revision.revision === ref.version ? revision : undefined;
  }

  /** The environment revision an environment ref names within the app (production's current one without a ref). */
  namedEnvironmentRevision(appId: string, ref: Ref | null): EnvironmentRevisionRow | undefined {
    let revision: EnvironmentRevisionRow | undefined;
    if (ref?.id) {
      revision = this.environmentRevisions.get(ref.id);
    } else {
      const environment = this.environmentsOf(appId).find((row) => row.name === (ref?.slug ?? "production"));
      const version = ref?.version ?? environment?.revision;
      revision = environment && this.environmentRevisionsOf(environment.id).find((row) => row.revision === version);
    }
    const environment = revision && this.environments.get(revision.environment_id);
    if (!revision || environment?.app_id !== appId) return undefined;
    if (ref?.slug != null && environment.name !== ref.slug) return undefined;
    return ref?.version == null || revision.revision === ref.version ? revision : undefined;
  }

  /**
   * The environment a deploy's environment ref names within the app: by an environment revision's id, that revision's
   * environment (a slug given too must be its name), else the environment of that name.
   */
  targetEnvironment(appId: string, ref: Ref): EnvironmentRow | undefined {
    const byId = ref.id !== null ? this.environmentRevisions.get(ref.id) : undefined;
    const environment =
      ref.id !== null
        ? byId && this.environments.get(byId.environment_id)
        : this.environmentsOf(appId).find((row) => row.name === ref.slug);
    if (environment?.app_id !== appId) return undefined;
    return ref.slug === null || environment.name === ref.slug ? environment : undefined;
  }

  /**
   * What configs/fetch (and fork) find: the app (when visible to the caller) and, there, the config a variant ref
   * names, else the one an environment ref (else production) has deployed.
   */
  fetched(holder: Holder, refs: Refs) {
    const app = this.visibleApp(holder, this.namedApp(holder, refs)?.id);
    if (!app) return { app };
    if (refs.variant) return { app, revision: this.namedRevision(app.id, refs.variant) };
    const through = this.namedEnvironmentRevision(app.id, refs.environment);
    const id = through?.deployed_app_variant_revision_id;
    const revision = id ? this.revisions.get(id) : undefined;
    return { app, revision, through: revision && through };
  }
}

/** Ids (of apps, or of things `appOf` says the app of): those of apps the holder can see twice as likely as the others. */
export const visibleFirst = (model: Model, holder: Holder | undefined, ids: string[], appOf = (id: string) => id) => {
  const visible = ids.filter((id) => holder && model.role(holder, appOf(id)));
  return [...visible, ...visible, ...ids];
};

/** The ETag of an environment's record: its id and revision (docs/http-contract.md, "Retries and races"). */
export const etagOf = ({ id, revision }: EnvironmentRow) => `"${id}.${revision}"`;

/**
 * A deployment of variant revision `deployed` to `environment` by `userId` changed exactly these rows: one deployment,
 * the environment's next revision (naming that deployment), and the environment's record moved onto it. Returns the
 * new environment revision.
 */
export function expectDeployment(
  changed: ReturnType<typeof changes>,
  environment: EnvironmentRow,
  deployed: RevisionRow,
  userId: string,
): EnvironmentRevisionRow {
  const deployment = changed.deployments?.added[0];
  const id = expect.stringMatching(UUID_V7);
  const at = expect.stringMatching(TIMESTAMP);
  const revision = environment.revision + 1;
  expect(changed).toEqual({
    deployments: {
      added: [{ id, environment_id: environment.id, app_variant_revision_id: deployed.id, deployed_by: userId, created_at: at }],
      removed: [],
    },
    environment_revisions: {
      added: [
        {
          id,
          environment_id: environment.id,
          revision,
          modified_by: userId,
          deployed_app_variant_revision_id: deployed.id,
          deployment_id: deployment?.id,
          created_at: at,
        },
      ],
      removed: [],
    },
    environments: {
      added: [
        { ...environment, revision, deployed_app_variant_id: deployed.variant_id, deployed_app_variant_revision_id: deployed.id },
      ],
      removed: [environment],
    },
  });
  return changed.environment_revisions!.added[0] as unknown as EnvironmentRevisionRow;
}

/** Oldest first: the same rows as expected, in an order whose creation times never go back (ties in any order). */
export function expectOldestFirst(actual: string[], expected: { id: string; created_at: string }[]) {
  expect([...actual].sort()).toEqual(expected.map((row) => row.id).sort());
  const createdAt = new Map(expected.map((row) => [row.id, row.created_at]));
  const times = actual.map((id) => createdAt.get(id)!);
  expect(times).toEqual([...times].sort());
}

/** The database before the request being checked, and its model: `changes()` says what that request changed. */
export class Tracked {
  private cached: Model | undefined;

  private constructor(private readonly tracker: Tracker) {}

  static async start(): Promise<Tracked> {
    return new Tracked(await Tracker.start());
  }

  get model(): Model {
    if (this.cached?.rows !== this.tracker.rows) this.cached = new Model(this.tracker.rows);
    return this.cached;
  }

  changes() {
    return this.tracker.changes();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The apps requests are made against.

type Deployments = [environment: string, config: string][];

/** Commits params and url as the config's next revision, as `by`. */
async function commit(by: Account, appId: string, config: string, params: object, url: string) {
  const response = await send("POST", "/variants/configs/commit", {
    key: by.key,
    body: { application_ref: { id: appId }, variant_ref: { slug: config }, params, url },
  });
  if (response.status !== 200) throw new Error(`commit failed: ${response.status} ${await response.text()}`);
}

/**
 * Creates an app as `by` (body: its name, and where) and, for each deployment, deploys the config's latest revision
 * there and then commits a new revision of it (params and url that say which step made it): configs with several
 * revisions, deployed ones and newer ones.
 */
async function plant(by: Account, body: Record<string, unknown>, deployments: Deployments): Promise<string> {
  const appId = await createAppVia(by.key, body);
  for (const [step, [environment, config]] of deployments.entries()) {
    await deploy(appId, environment, config, by);
    await commit(by, appId, config, { step, nested: { list: [step, "x"], none: null } }, `https://example.test/${step}`);
  }
  return appId;
}

/**
 * Makes config `config` of the app (two revisions) and removes it, as `by` (DELETE /variants/{variant_id}): first
 * deployed to an environment and then replaced there by another config, when `replacedIn` says so (its revision stays
 * in that environment's history); and, when `reborn`, makes a new config of the name it had (the name is free again).
 */
async function retire(
  by: Account,
  appId: string,
  config: string,
  { replacedIn, reborn = false }: { replacedIn?: [environment: string, replacement: string]; reborn?: boolean },
) {
  if (replacedIn) await deploy(appId, replacedIn[0], config, by);
  else {
    const body = { application_ref: { id: appId }, variant_ref: { slug: config } };
    const added = await send("POST", "/variants/configs/add", { key: by.key, body });
    if (added.status !== 200) throw new Error(`add failed: ${added.status} ${await added.text()}`);
  }
  await commit(by, appId, config, { retired: config, nested: [{ before: "removal" }] }, "https://example.test/retired");
  if (replacedIn) await deploy(appId, replacedIn[0], replacedIn[1], by);
  const listed = await send("GET", `/apps/${appId}/variants`, { key: by.key });
  const variant = ((await listed.json()) as { variant_id: string; config_name: string }[]).find(
    (each) => each.config_name === config,
  );
  const removed = await send("DELETE", `/variants/${variant?.variant_id}`, { key: by.key });
  if (removed.status !== 200) throw new Error(`removal failed: ${removed.status} ${await removed.text()}`);
  if (!reborn) return;
  const body = { base_id: appId, config_name: config, parameters: { reborn: true }, overwrite: false };
  const saved = await send("POST", "/configs", { key: by.key, body });
  if (saved.status !== 200) throw new Error(`save failed: ${saved.status} ${await saved.text()}`);
}

/**
 * Apps in the owner's, the team's, the editor's and the outsider's organizations: names that are SQL, NFC or 255
 * long; configs deployed to one environment or several, never deployed, or named 250 characters long; removed
 * configs, once deployed (their revisions in an environment's history) or never, one whose name a new config took.
 */
async function populate({ owner, editor, outsider, team }: World): Promise<void> {
  const inTeam = (app_name: string) => ({ app_name, organization_id: team.organizationId });
  const own = await plant(owner, { app_name: "fuzz-own" }, [
    ["development", "main"],
    ["development", "main"],
    ["staging", "canary"],
  ]);
  await retire(owner, own, "retired", { replacedIn: ["production", "main"], reborn: true });
  await plant(owner, { app_name: "caf\u00e9" }, []);
  await plant(owner, { app_name: "' OR 1=1 --" }, [["production", "main"]]);
  await plant(owner, { app_name: "x".repeat(255) }, [["production", "' OR 1=1 --"]]);
  const shared = await plant(owner, inTeam("fuzz-team"), [
    ["production", "main"],
    ["production", "main"],
    ["production", "canary"],
    ["staging", "main"],
  ]);
  await retire(owner, shared, "scratch", {});
  await plant(owner, inTeam("App"), [["development", "c".repeat(250)]]);
  await plant(owner, inTeam("billing"), []);
  await plant(editor, { app_name: "editor-app" }, [["staging", "main"]]);
  const other = await plant(outsider, { app_name: "fuzz-other" }, [["production", "main"]]);
  await retire(outsider, other, "old", { replacedIn: ["staging", "main"] });
}

/** Who of the world may write to a project's apps (owns it, or owns its organization). */
export const writerOf = ({ owner, editor, outsider }: World, projectId: string): Account =>
  [editor, outsider].find((account) => account.projectId === projectId) ?? owner;

/** A world with its apps planted, and the database tracked from there; request logs silenced (thousands of lines). */
export async function plantedWorld(): Promise<{ world: World; db: Tracked }> {
  vi.spyOn(console, "log").mockImplementation(() => {});
  const world = await createWorld();
  await populate(world);
  const db = await Tracked.start();
  expect(await databaseProblems()).toEqual([]);
  return { world, db };
}
