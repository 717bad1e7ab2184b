import { useState } from "preact/hooks";
import type { Schemas } from "./api";

/** The app's variants, each with its versions oldest first (runs.ts's appVersions). */
export type VariantVersions = {
  variant: Pick<Schemas["AppVariant"], "variant_id" | "config_name">;
  list: Schemas["AppVariantRevision"][];
}[];

/** A variant of the app and one of its versions, the first variant and its latest version until one is picked. */
export function useVersionPick(variants: VariantVersions) {
  const [variantId, setVariantId] = useState("");
  const [versionId, setVersionId] = useState("");
  const chosen = variants.find(({ variant }) => variant.variant_id === variantId) ?? variants[0];
  const newestFirst = chosen ? [...chosen.list].reverse() : [];
  const version = newestFirst.find((one) => one.id === versionId) ?? newestFirst[0];
  return { variants, chosen, newestFirst, version, setVariantId, setVersionId };
}

/** The two selects of a pick: the variant (`variantLabel`), then its versions, newest first. */
export function VersionPicker({
  pick: { variants, chosen, newestFirst, version, setVariantId, setVersionId },
  variantLabel,
}: {
  pick: ReturnType<typeof useVersionPick>;
  variantLabel: string;
}) {
  if (!chosen) return null;
  return (
    <>
      <label>
        {variantLabel}
        <select value={chosen.variant.variant_id} onChange={(event) => setVariantId(event.currentTarget.value)}>
          {variants.map(({ variant }) => (
            <option key={variant.variant_id} value={variant.variant_id}>
              {variant.config_name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Version
        <select value={version?.id} onChange={(event) => setVersionId(event.currentTarget.value)}>
          {newestFirst.map((one, i) => (
            <option key={one.id} value={one.id}>
              v{one.revision}
              {i === 0 ? " (latest)" : ""}
            </option>
          ))}
        </select>
      </label>
    </>
  );
}
