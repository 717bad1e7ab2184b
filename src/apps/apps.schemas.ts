import { z } from "zod";

const NO_CONTROL_CHARACTERS = /^\P{Cc}*$/u;

/** An id as a UUID string, compared in its canonical lowercase form. */
const uuid = z.uuid().transform((id) => id.toLowerCase());

export const CreateAppBody = z.object({
  app_name: z
    .string()
    .normalize("NFC") // names that look the same are the same name
    .min(1, { abort: true })
    .max(255, { abort: true })
    .refine((name) => name.trim() !== "", "app_name must not be blank")
    .refine((name) => NO_CONTROL_CHARACTERS.test(name), "app_name must not contain control characters"),
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
    .refine((name) => NO_CONTROL_CHARACTERS.test(name), "environment_name must not contain control characters"),
});
