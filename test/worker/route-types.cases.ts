import { describe, expectTypeOf, it } from "vitest";
import type { RequestCaller } from "../../src/http/request-caller";
import type { RouteEnv } from "../../src/http/route";

// Checked by the compiler (npm run typecheck): a handler reaches D1 only as its caller, and a route open to anyone
// without a key (`auth: "none"`) has no caller to reach it with.
describe("a route handler's context", () => {
  it("carries the caller on a route that takes a key, and none on a route with auth none", () => {
    expectTypeOf<RouteEnv<"key">["Variables"]>().toHaveProperty("caller").toEqualTypeOf<RequestCaller>();
    expectTypeOf<RouteEnv<"optional">["Variables"]>().toHaveProperty("caller").toEqualTypeOf<RequestCaller>();
    expectTypeOf<RouteEnv<"none">["Variables"]>().not.toHaveProperty("caller");
  });
});
