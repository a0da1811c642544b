import { fail } from "./server";

test("fail", () => {
  expect(fail("x")).toEqual({ content: [{ type: "text", text: "x" }], isError: true });
});
