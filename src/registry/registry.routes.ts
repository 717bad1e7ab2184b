import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { parametersAsSent } from "../configs/configs.schemas";
import { appIsVisible } from "../db/apps";
import { type ConfigRefs, environmentRevisionRefs, fetchConfig } from "../db/configs";
import { saveConfig } from "../db/registry";
import { readAs, writeAs } from "../http/d1-session";
import { appNotFound, configNameTaken, configNotFound, forbidden } from "../http/errors";
import { idempotent, settleClaim } from "../http/idempotency";
import { jsonBody, MAX_CONFIG_BODY_BYTES, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { BASE_NAME } from "../variants/variant-names";
import {
  type Base,
  DeploymentRevisionParams,
  GetConfigQuery,
  ListBasesQuery,
  SaveConfigBody,
  toRegistryConfig,
} from "./registry.schemas";

/** What `get_config` names: what the environment runs (it wins when both are given), or the config's latest revision. */
function registryRefs(query: { base_id: string; environment_name?: string; config_name?: string }): ConfigRefs {
  const application = { slug: null, version: null, id: query.base_id };
  return query.environment_name !== undefined
    ? { application, variant: null, environment: { slug: query.environment_name, version: null, id: null } }
    : { application, variant: { slug: query.config_name ?? null, version: null, id: null }, environment: null };
}

/** Routes under /configs: the registry as the platform's older SDK reads and saves it. */
export const registryRoutes = new Hono<AppEnv>()
  .get("/", requireApiKey, validate("query", GetConfigQuery), async (c) => {
    const refs = registryRefs(c.req.valid("query"));
    const config = await readAs(c, (db) => fetchConfig(db, refs));
    if (!config) throw configNotFound();
    return c.json(toRegistryConfig(config, config.revision), 200);
  })
  .post("/", requireApiKey, ...jsonBody(MAX_CONFIG_BODY_BYTES), idempotent, validate("json", SaveConfigBody), async (c) => {
    const { base_id, config_name, overwrite } = c.req.valid("json");
    const save = { appId: base_id, configName: config_name, params: parametersAsSent(await c.req.text()), overwrite };
    const saved = await writeAs(c, (db) => saveConfig(db, save, c.var.claim));
    settleClaim(c, saved);
    if (saved.outcome === "not_found") throw appNotFound();
    if (saved.outcome === "forbidden") throw forbidden();
    if (saved.outcome === "exists") throw configNameTaken();
    return c.json(null, 200);
  })
  .get("/deployment/:deployment_revision_id", requireApiKey, validate("param", DeploymentRevisionParams), async (c) => {
    const refs = environmentRevisionRefs(c.req.valid("param").deployment_revision_id);
    const config = await readAs(c, (db) => fetchConfig(db, refs));
    if (!config?.environment) throw configNotFound();
    return c.json(toRegistryConfig(config, config.environment.revision), 200);
  });

/** Routes under /bases: an app's one implicit base. */
export const basesRoutes = new Hono<AppEnv>().get("/", requireApiKey, validate("query", ListBasesQuery), async (c) => {
  const { app_id, base_name } = c.req.valid("query");
  if (!(await readAs(c, (db) => appIsVisible(db, app_id)))) throw appNotFound();
  const bases: Base[] = base_name === undefined || base_name === BASE_NAME ? [{ base_id: app_id, base_name: BASE_NAME }] : [];
  return c.json(bases, 200);
});
