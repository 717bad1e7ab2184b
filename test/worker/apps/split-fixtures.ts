import { expect } from "vitest";
import { type Account, deploy, expectJson, send } from "../fixtures";

/** The split routes' path of an app's environment. */
export const splitPath = (appId: string, environment: string, query = "") =>
  `/apps/${appId}/environments/${environment}/split${query}`;

/** A split as the API answers it. */
export interface Split {
  id: string;
  environment: string;
  base: {
    variant_revision_id: string;
    config_name: string;
    revision: number;
    environment_revision: number;
    environment_revision_id: string;
  };
  candidate: { variant_revision_id: string; config_name: string; revision: number };
  weight: number;
  salt: string;
  steps: { weight: number; after_minutes: number }[];
  next_step_at: string | null;
  promote_at_end: boolean;
  held: boolean;
  last_verdict: { verdict: string; reason: string; at: string } | null;
  changes: { at: string; from: number; to: number; by: string; user: { user_id: string; username: string } | null }[];
  verdict_secret?: string;
  outcome?: string;
  environment_revision_id?: string | null;
}

/**
 * An app of `owner`'s (its key) whose `environments` run config `main` revision 1, with a config `next` at revision 1
 * (`{"next": true}`), not deployed: a split's candidate.
 */
export async function splitApp(owner: Account, environments = ["production"], key = owner.key) {
  const app = await expectJson<{ app_id: string }>(
    await send("POST", "/apps", { key, body: { app_name: `split-${crypto.randomUUID().slice(0, 8)}` } }),
  );
  for (const environment of environments) await deploy(app.app_id, environment, "main", owner);
  const added = await send("POST", "/variants/configs/add", {
    key,
    body: { application_ref: { id: app.app_id }, variant_ref: { slug: "next" } },
  });
  expect(added.status).toBe(200);
  const committed = await send("POST", "/variants/configs/commit", {
    key,
    body: { config: { application_ref: { id: app.app_id }, variant_ref: { slug: "next" }, params: { next: true } } },
  });
  expect(committed.status).toBe(200);
  return app.app_id;
}

/** Starts a split of the environment with candidate `next` (its latest revision), as PUT answers it. */
export async function startSplit(key: string, appId: string, environment: string, body: Record<string, unknown> = {}) {
  return expectJson<Split>(
    await send("PUT", splitPath(appId, environment), {
      key,
      body: { candidate: { variant_ref: { slug: "next" } }, weight: 1000, ...body },
    }),
  );
}
