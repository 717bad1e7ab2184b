import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { getVariant, getVariantDeployedTo, listAppVariants, listVariantRevisions } from "../db/variants";
import { readSession } from "../http/d1-session";
import { appEnvironmentNotFound, appNotFound, nothingDeployed, variantNotFound, variantRevisionNotFound } from "../http/errors";
import { AppParams } from "../http/fields";
import { validate } from "../http/validation";
import type { AppEnv } from "../types";
import {
  toAppVariant,
  toAppVariantRevision,
  VariantByEnvironmentQuery,
  VariantParams,
  VariantRevisionParams,
} from "./variants.schemas";

/** Routes under /apps that read an app's variants. */
export const appVariantsRoutes = new Hono<AppEnv>()
  .get("/get_variant_by_env", requireApiKey, validate("query", VariantByEnvironmentQuery), async (c) => {
    const { app_id, environment } = c.req.valid("query");
    const found = await readSession(c, (db) => getVariantDeployedTo(db, c.var.caller, app_id, environment));
    if (!found.environmentFound) throw appEnvironmentNotFound();
    if (!found.variant) throw nothingDeployed();
    return c.json(toAppVariant(found.variant), 200);
  })
  .get("/:app_id/variants", requireApiKey, validate("param", AppParams), async (c) => {
    const { app_id } = c.req.valid("param");
    const variants = await readSession(c, (db) => listAppVariants(db, c.var.caller, app_id));
    if (!variants) throw appNotFound();
    return c.json(variants.map(toAppVariant), 200);
  });

/** Routes under /variants that read one variant and its revisions. */
export const variantsRoutes = new Hono<AppEnv>()
  .get("/:variant_id", requireApiKey, validate("param", VariantParams), async (c) => {
    const { variant_id } = c.req.valid("param");
    const variant = await readSession(c, (db) => getVariant(db, c.var.caller, variant_id));
    if (!variant) throw variantNotFound();
    return c.json(toAppVariant(variant), 200);
  })
  .get("/:variant_id/revisions", requireApiKey, validate("param", VariantParams), async (c) => {
    const { variant_id } = c.req.valid("param");
    const revisions = await readSession(c, (db) => listVariantRevisions(db, c.var.caller, variant_id));
    if (!revisions) throw variantNotFound();
    return c.json(revisions.map(toAppVariantRevision), 200);
  })
  .get("/:variant_id/revisions/:revision_number", requireApiKey, validate("param", VariantRevisionParams), async (c) => {
    const { variant_id, revision_number } = c.req.valid("param");
    const revisions = await readSession(c, (db) => listVariantRevisions(db, c.var.caller, variant_id, revision_number));
    if (!revisions) throw variantNotFound();
    if (revisions.length === 0) throw variantRevisionNotFound();
    return c.json(toAppVariantRevision(revisions[0]), 200);
  });
