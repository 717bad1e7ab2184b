import { type Context, Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { addConfig, type ConfigWrite, commitConfig, fetchConfig, forkConfig } from "../db/configs";
import { readAs, writeAs } from "../http/d1-session";
import { configExists, configNotFound, forbidden, staleConfig } from "../http/errors";
import { idempotent, settleClaim } from "../http/idempotency";
import { jsonBody, MAX_CONFIG_BODY_BYTES, validate } from "../http/validation";
import type { AppEnv } from "../types";
import {
  AddConfigBody,
  CommitConfigBody,
  type ConfigOutput,
  FetchConfigBody,
  paramsAsSent,
  toConfigOutput,
  toConfigRefs,
} from "./configs.schemas";

/** The config a write made (or, replaying a retry, had made), or the error that says why it made none. */
function madeConfig<E extends { Bindings: Env }>(c: Context<E>, write: ConfigWrite): ConfigOutput {
  settleClaim(c, write);
  switch (write.outcome) {
    case "done":
      return toConfigOutput(write.config);
    case "exists":
      throw configExists();
    case "forbidden":
      throw forbidden();
    case "stale":
      throw staleConfig(write.latest);
    default:
      throw configNotFound();
  }
}

/** Routes under /variants/configs: the platform's config registry. */
export const configsRoutes = new Hono<AppEnv>()
  // A read: it accepts an Idempotency-Key, as every POST does, but has nothing to replay.
  .post("/fetch", requireApiKey, ...jsonBody(), idempotent, validate("json", FetchConfigBody), async (c) => {
    const refs = toConfigRefs(c.req.valid("json"));
    const config = await readAs(c, (db) => fetchConfig(db, refs));
    if (!config) throw configNotFound();
    return c.json(toConfigOutput(config), 200);
  })
  .post("/add", requireApiKey, ...jsonBody(), idempotent, validate("json", AddConfigBody), async (c) => {
    const { variant_ref, application_ref } = c.req.valid("json");
    const write = await writeAs(c, (db) => addConfig(db, application_ref, variant_ref.slug, c.var.claim));
    return c.json(madeConfig(c, write), 200);
  })
  .post(
    "/commit",
    requireApiKey,
    ...jsonBody(MAX_CONFIG_BODY_BYTES),
    idempotent,
    validate("json", CommitConfigBody),
    async (c) => {
      const body = c.req.valid("json");
      const refs = { application: body.application_ref, variant: body.variant_ref };
      const change = { params: paramsAsSent(await c.req.text()), url: body.url ?? null };
      const write = await writeAs(c, (db) => commitConfig(db, refs, change, c.var.claim));
      return c.json(madeConfig(c, write), 200);
    },
  )
  .post("/fork", requireApiKey, ...jsonBody(), idempotent, validate("json", FetchConfigBody), async (c) => {
    const refs = toConfigRefs(c.req.valid("json"));
    const write = await writeAs(c, (db) => forkConfig(db, refs, c.var.claim));
    return c.json(madeConfig(c, write), 200);
  });
