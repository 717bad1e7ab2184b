import { DEMO_CONFIG_PARAMS, DEMO_IDS, EXAMPLE_IDS } from "../http/openapi-parts";
import type { Revision } from "./revisions.schemas";

/** The demo app's config `main` at revision 2, as the current API shows it. */
export const demoRevision = {
  id: EXAMPLE_IDS.variantRevision,
  slug: "3f9a0c12d4e5",
  version: "2",
  message: "Lower the temperature",
  data: { parameters: DEMO_CONFIG_PARAMS, url: "" },
  application_id: DEMO_IDS.app,
  application_slug: "demo-app",
  application_variant_id: EXAMPLE_IDS.variant,
  application_variant_slug: "main",
  variant_id: EXAMPLE_IDS.variant,
  variant_slug: "main",
  artifact_id: DEMO_IDS.app,
  artifact_slug: "demo-app",
  created_at: "2026-11-22T02:54:51.236Z",
  created_by_id: DEMO_IDS.user,
  updated_by: "demo@example.com",
  updated_by_id: DEMO_IDS.user,
} satisfies Revision;
