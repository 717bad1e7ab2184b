import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { parametersAsSent } from "../configs/configs.schemas";
import { addConfig, commitConfig } from "../db/configs";
import { getVariant, getVariantDeployedTo, listAppVariants, listVariantRevisions, removeVariant } from "../db/variants";
import { readAs, writeAs } from "../http/d1-session";
import {
  appEnvironmentNotFound,
  appNotFound,
  configExists,
  forbidden,
  nothingDeployed,
  variantNotFound,
  variantRevisionNotFound,
  variantStillDeployed,
} from "../http/errors";
import { AppParams } from "../http/fields";
import { idempotent, settleClaim } from "../http/idempotency";
import { jsonBody, MAX_CONFIG_BODY_BYTES, validate } from "../http/validation";
import type { AppEnv } from "../types";
import {
  AddVariantFromBaseBody,
  configAsAppVariant,
  toAppVariant,
  toAppVariantRevision,
  UpdateVariantParametersBody,
  VariantByEnvironmentQuery,
  VariantParams,
  VariantRevisionParams,
} from "./variants.schemas";

/** Routes under /apps that read an app's variants. */
export const appVariantsRoutes = new Hono<AppEnv>()
  .get("/get_variant_by_env", requireApiKey, validate("query", VariantByEnvironmentQuery), async (c) => {
    const { app_id, environment } = c.req.valid("query");
    const found = await readAs(c, (db) => getVariantDeployedTo(db, app_id, environment));
    if (!found.environmentFound) throw appEnvironmentNotFound();
    if (!found.variant) throw nothingDeployed();
    return c.json(toAppVariant(found.variant), 200);
  })
  .get("/:app_id/variants", requireApiKey, validate("param", AppParams), async (c) => {
    const { app_id } = c.req.valid("param");
    const variants = await readAs(c, (db) => listAppVariants(db, app_id));
    if (!variants) throw appNotFound();
    return c.json(variants.map(toAppVariant), 200);
  });

/** Routes under /variants: one variant and its revisions; the older SDK's variant writes. */
export const variantsRoutes = new Hono<AppEnv>()
  .post(
    "/from-base",
    requireApiKey,
    ...jsonBody(MAX_CONFIG_BODY_BYTES),
    idempotent,
    validate("json", AddVariantFromBaseBody),
    async (c) => {
      const { base_id, new_config_name } = c.req.valid("json");
      const application = { slug: null, version: null, id: base_id };
      const params = parametersAsSent(await c.req.text());
      const write = await writeAs(c, (db) => addConfig(db, application, new_config_name, c.var.claim, params));
      settleClaim(c, write);
      if (write.outcome === "exists") throw configExists();
      if (write.outcome === "forbidden") throw forbidden();
      if (write.outcome !== "done") throw appNotFound();
      return c.json(configAsAppVariant(write.config), 200);
    },
  )
  .put(
    "/:variant_id/parameters",
    requireApiKey,
    validate("param", VariantParams),
    ...jsonBody(MAX_CONFIG_BODY_BYTES),
    idempotent,
    validate("json", UpdateVariantParametersBody),
    async (c) => {
      const refs = { application: null, variant: null, variantId: c.req.valid("param").variant_id };
      const change = { params: parametersAsSent(await c.req.text()), url: null };
      const write = await writeAs(c, (db) => commitConfig(db, refs, change, c.var.claim));
      settleClaim(c, write);
      if (write.outcome === "forbidden") throw forbidden();
      if (write.outcome !== "done") throw variantNotFound();
      return c.json(null, 200);
    },
  )
  .delete("/:variant_id", requireApiKey, validate("param", VariantParams), async (c) => {
    const removed = await writeAs(c, (db) => removeVariant(db, c.req.valid("param").variant_id));
    if (removed === "not_found") throw variantNotFound();
    if (removed === "forbidden") throw forbidden();
    if (removed !== "done") throw variantStillDeployed(removed.deployedTo);
    return c.json(null, 200);
  })
  .get("/:variant_id", requireApiKey, validate("param", VariantParams), async (c) => {
    const { variant_id } = c.req.valid("param");
    const variant = await readAs(c, (db) => getVariant(db, variant_id));
    if (!variant) throw variantNotFound();
    return c.json(toAppVariant(variant), 200);
  })
  .get("/:variant_id/revisions", requireApiKey, validate("param", VariantParams), async (c) => {
    const { variant_id } = c.req.valid("param");
    const revisions = await readAs(c, (db) => listVariantRevisions(db, variant_id));
    if (!revisions) throw variantNotFound();
    return c.json(revisions.map(toAppVariantRevision), 200);
  })
  .get("/:variant_id/revisions/:revision_number", requireApiKey, validate("param", VariantRevisionParams), async (c) => {
    const { variant_id, revision_number } = c.req.valid("param");
    const revisions = await readAs(c, (db) => listVariantRevisions(db, variant_id, revision_number));
    if (!revisions) throw variantNotFound();
    if (revisions.length === 0) throw variantRevisionNotFound();
    return c.json(toAppVariantRevision(revisions[0]), 200);
  });
