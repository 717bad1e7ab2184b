import { Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { addConfig, type ConfigWrite, commitConfig, fetchConfig, forkConfig } from "../db/configs";
import { readSession, writeSession } from "../http/d1-session";
import { configExists, configNotFound, forbidden, staleConfig } from "../http/errors";
import { jsonBody, MAX_CONFIG_BODY_BYTES, validate } from "../http/validation";
import type { AppEnv } from "../types";
import {
  AddConfigBody,
  CommitConfigBody,
  type ConfigOutput,
  FetchConfigBody,
  toConfigOutput,
  toConfigRefs,
} from "./configs.schemas";

/** The config a write made, or the error that says why it made none. */
function madeConfig(write: ConfigWrite): ConfigOutput {
  switch (write.outcome) {
    case "done":
      return toConfigOutput(write.config);
    case "exists":
      throw configExists();
    case "forbidden":
      throw forbidden();
    case "stale":
      throw staleConfig(write.latest);
    case "not_found":
      throw configNotFound();
  }
}

/** Routes under /variants/configs: the platform's config registry. */
export const configsRoutes = new Hono<AppEnv>()
  .post("/fetch", requireApiKey, ...jsonBody(), validate("json", FetchConfigBody), async (c) => {
    const refs = toConfigRefs(c.req.valid("json"));
    const config = await readSession(c, (db) => fetchConfig(db, c.var.caller, refs));
    if (!config) throw configNotFound();
    return c.json(toConfigOutput(config), 200);
  })
  .post("/add", requireApiKey, ...jsonBody(), validate("json", AddConfigBody), async (c) => {
    const { variant_ref, application_ref } = c.req.valid("json");
    const write = await writeSession(c, (db) => addConfig(db, c.var.caller, application_ref, variant_ref.slug));
    return c.json(madeConfig(write), 200);
  })
  .post("/commit", requireApiKey, ...jsonBody(MAX_CONFIG_BODY_BYTES), validate("json", CommitConfigBody), async (c) => {
    const body = c.req.valid("json");
    const refs = { application: body.application_ref, variant: body.variant_ref };
    const change = { params: body.params, url: body.url ?? null };
    const write = await writeSession(c, (db) => commitConfig(db, c.var.caller, refs, change));
    return c.json(madeConfig(write), 200);
  })
  .post("/fork", requireApiKey, ...jsonBody(), validate("json", FetchConfigBody), async (c) => {
    const refs = toConfigRefs(c.req.valid("json"));
    const write = await writeSession(c, (db) => forkConfig(db, c.var.caller, refs));
    return c.json(madeConfig(write), 200);
  });
