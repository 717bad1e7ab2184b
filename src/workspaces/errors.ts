import { ApiError } from "../http/errors";

export const workspaceNotFound = () => new ApiError(404, "Workspace not found in this organization");

export const memberNotFound = () => new ApiError(404, "No member of this organization has that email");

export const lastOwner = () => new ApiError(409, "This is the organization's last owner: make another member an owner first");
