import { ApiError } from "../http/errors";

export const configNameTaken = () =>
  new ApiError(400, "Config name already exists. Please use a different name or set overwrite to True.");

export const configArchived = () =>
  new ApiError(409, "Config is archived: unarchive it (POST /applications/variants/{variant_id}/unarchive) to save to it again");
