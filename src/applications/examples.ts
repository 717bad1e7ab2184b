import {
  DEMO_APP_ID,
  DEMO_CONFIG_PARAMS,
  DEMO_USER_ID,
  EXAMPLE_VARIANT_ID,
  EXAMPLE_VARIANT_REVISION_ID,
} from "../http/openapi-parts";
import type { Revision } from "./revisions.schemas";

/** The demo app's config `main` at revision 2, as the current API shows it. */
export const demoRevision = {
  id: EXAMPLE_VARIANT_REVISION_ID,
  slug: "3f9a0c12d4e5",
  version: "2",
  message: "Lower the temperature",
  data: { parameters: DEMO_CONFIG_PARAMS, url: "" },
  application_id: DEMO_APP_ID,
  application_slug: "demo-app",
  application_variant_id: EXAMPLE_VARIANT_ID,
  application_variant_slug: "main",
  variant_id: EXAMPLE_VARIANT_ID,
  variant_slug: "main",
  artifact_id: DEMO_APP_ID,
  artifact_slug: "demo-app",
  created_at: "2026-11-22T02:54:51.236Z",
  created_by_id: DEMO_USER_ID,
  updated_by: "demo@example.com",
  updated_by_id: DEMO_USER_ID,
} satisfies Revision;
