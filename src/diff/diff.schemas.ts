import * as z from "zod/mini";
import { documented, schemaName } from "../http/documentation";
import { uuid } from "../http/fields";

export const DiffQuery = /* @__PURE__ */ z.object({
  from: uuid.apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The revision the patch starts from" })),
  to: uuid.apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The revision the patch leads to" })),
});

const PatchOperationOutput = /* @__PURE__ */ z.object({
  op: z.enum(["add", "remove", "replace"]),
  path: z.string().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "An RFC 6901 JSON Pointer" })),
  value: z
    .optional(z.unknown())
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Absent for a remove" })),
});

const ChangeOutput = /* @__PURE__ */ z.object({
  path: z.string(),
  op: z.enum(["add", "remove", "replace"]),
  from: z.unknown().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "null for an add" })),
  to: z.unknown().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "null for a remove" })),
});

/** A diff of two documents (src/core/diff.ts), as every answer that carries one writes it. */
export const DocumentDiffOutput = /* @__PURE__ */ z
  .object({
    identical: z.boolean(),
    coarse: z.boolean().apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "Over 1,000 operations: `patch` is one replace of the whole document, `changes` empty",
        },
      ),
    ),
    patch: z
      .array(PatchOperationOutput)
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "RFC 6902: turns `from` into `to`, applied in order" },
        ),
      ),
    changes: z
      .array(ChangeOutput)
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "One per operation of `patch`, in its order" }),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "DocumentDiff"));

const ConfigSide = /* @__PURE__ */ z.object({
  id: z.uuid(),
  config_name: z.string(),
  revision: z.int(),
});

export const ConfigDiffOutput = /* @__PURE__ */ z
  .object({ from: ConfigSide, to: ConfigSide, ...DocumentDiffOutput.shape })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ConfigDiff"));

const EnvironmentSide = /* @__PURE__ */ z
  .object({
    id: z.uuid().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The environment revision's id" })),
    config_name: z.nullable(z.string()),
    revision: z
      .nullable(z.int())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The config revision deployed; null (with config_name) for none" },
        ),
      ),
    environment: z.string(),
    environment_revision: z.int(),
  })
  .apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Its document: what it deployed, null when nothing" }),
  );

export const EnvironmentDiffOutput = /* @__PURE__ */ z
  .object({ from: EnvironmentSide, to: EnvironmentSide, ...DocumentDiffOutput.shape })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "EnvironmentDiff"));
