export function fail(text) {
  return { content: [{ type: "text", text }], isError: true };
}
