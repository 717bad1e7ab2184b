import * as z from "zod";

const NO_CONTROL_CHARACTERS = /^\P{Cc}*$/u;
// A JSON escape can carry half of a surrogate pair, which is not text: it cannot be stored as UTF-8.
const LONE_SURROGATE = /\p{Cs}/u;

/** An id as a UUID string, compared in its canonical lowercase form. */
const uuid = z.uuid().transform((id) => id.toLowerCase());

export const CreateAppBody = z.object({
  app_name: z
    .string()
    .normalize("NFC") // names that look the same are the same name
    .min(1, { abort: true })
    .max(255, { abort: true })
    .refine((name) => name.trim() !== "", "app_name must not be blank")
    .refine((name) => NO_CONTROL_CHARACTERS.test(name), "app_name must not contain control characters")
    .refine((name) => !LONE_SURROGATE.test(name), "app_name must be valid Unicode (no unpaired surrogates)")
    .meta({ description: "Not blank, no control characters; stored NFC-normalised, unique per project" }),
  project_id: uuid.nullish(),
  workspace_id: uuid.nullish(),
  organization_id: uuid.nullish(),
});
export type CreateAppBody = z.infer<typeof CreateAppBody>;

export const EnvironmentRevisionsParams = z.object({
  app_id: uuid,
  environment_name: z
    .string()
    .min(1, { abort: true })
    .max(255, { abort: true })
    .refine((name) => NO_CONTROL_CHARACTERS.test(name), "environment_name must not contain control characters")
    .refine((name) => !LONE_SURROGATE.test(name), "environment_name must be valid Unicode (no unpaired surrogates)")
    .meta({ description: "Matched exactly (case-sensitive); no control characters" }),
});

// The response bodies (SPEC 2.2 to 2.4). Nothing parses them at run time: they are the typed shapes of what the
// routes answer, and the source of the OpenAPI document, whose test checks real responses against them.

export const CreateAppOutput = z.object({
  app_id: z.uuid(),
  app_name: z.string(),
});
export type CreateAppOutput = z.infer<typeof CreateAppOutput>;

export const RevisionEntry = z.object({
  id: z.uuid(),
  revision: z.int().min(1),
  modified_by: z.string().meta({ description: "Username of who recorded the deployment" }),
  deployed_app_variant_revision: z.uuid().nullable(),
  deployment: z.uuid().nullable(),
  created_at: z.iso.datetime().meta({ description: "RFC 3339 UTC with milliseconds" }),
});
export type RevisionEntry = z.infer<typeof RevisionEntry>;

export const EnvironmentRevisions = z.object({
  name: z.string().meta({ description: "Environment name" }),
  app_id: z.uuid(),
  project_id: z.uuid(),
  deployed_app_variant_id: z.uuid().nullable(),
  deployed_variant_name: z.string().nullable(),
  deployed_app_variant_revision_id: z.uuid().nullable(),
  revision: z.int().min(0).nullable().meta({ description: "Current revision; 0 before the first deployment" }),
  revisions: z.array(RevisionEntry).meta({ description: "Every revision, oldest first" }),
  organization_id: z.uuid().nullable(),
  workspace_id: z.uuid().nullable(),
});
export type EnvironmentRevisions = z.infer<typeof EnvironmentRevisions>;
