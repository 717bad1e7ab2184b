import * as z from "zod";
import { nameField, uuid } from "../http/fields";

export const CreateAppBody = z.object({
  app_name: nameField("app_name", { nfc: true }).meta({
    description: "Not blank, no control characters; stored NFC-normalised, unique per project",
  }),
  project_id: uuid.nullish(),
  workspace_id: uuid.nullish(),
  organization_id: uuid.nullish(),
});
export type CreateAppBody = z.infer<typeof CreateAppBody>;

// Response bodies are the typed shapes of what the routes answer, and the source of the OpenAPI document, whose
// test checks real responses against them; nothing parses them at run time.

export const CreateAppOutput = z.object({
  app_id: z.uuid(),
  app_name: z.string(),
});
export type CreateAppOutput = z.infer<typeof CreateAppOutput>;
