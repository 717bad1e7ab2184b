import { ApiError } from "../http/errors";

export const appNameTaken = () => new ApiError(409, "App with the same name already exists");
