import { ApiError } from "../http/errors";

export const projectNotFound = () => new ApiError(404, "Project not found");
