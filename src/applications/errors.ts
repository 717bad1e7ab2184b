import { ApiError } from "../http/errors";

// The current API's (docs/CURRENT-SDK-API.md), in the platform's words, which its SDK shows as they are.
export const applicationRevisionNotFound = () => new ApiError(404, "Application revision not found.");

export const environmentRevisionNotFound = () => new ApiError(404, "Environment revision not found.");

export const applicationVariantNotFound = () => new ApiError(404, "Application variant not found.");

export const environmentRunsNothing = () =>
  new ApiError(404, "Environment revision does not contain application references for the requested key.");

export const deployRefsMissing = () => new ApiError(400, "application_ref and environment_ref (with a slug) are required.");
