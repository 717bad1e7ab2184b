import { ApiError } from "../http/errors";

// Accounts (docs/ACCOUNTS-API.md).
export const apiKeyNotFound = () => new ApiError(404, "API key not found");

export const userNotFound = () => new ApiError(404, "User not found");
