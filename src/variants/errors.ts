import { ApiError } from "../http/errors";

export const variantRevisionNotFound = () => new ApiError(404, "Variant revision not found");

export const deploymentRevisionNotFound = () => new ApiError(404, "Deployment revision not found");

export const nothingDeployed = () => new ApiError(404, "No variant is deployed to this environment");

export const configExists = () => new ApiError(400, "Config already exists.");

export const variantArchived = () =>
  new ApiError(
    409,
    "This revision belongs to an archived variant, which cannot be deployed again until it is unarchived " +
      "(POST /applications/variants/{variant_id}/unarchive): deploy another config, or unarchive it first",
  );

export const variantStillDeployed = (environments: string[]) =>
  new ApiError(
    409,
    `Variant is deployed to ${environments.join(", ")}: deploy another variant there first, then remove this one`,
  );

export const staleConfig = (latest: number) =>
  new ApiError(409, `Config has changed: its latest version is ${latest}. Fetch it and commit on top of it.`);
