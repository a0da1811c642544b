// A TypeScript MCP server. Traps: isError: true in this comment,
/* in a block comment: { isError: true } */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";

const doc = "return { isError: true }"; // a string
const help = 'isError: true';
const re = /isError: true/g; // a regexp

interface ErrorResult {
  isError: true; // a type, not a value
  content: { type: "text"; text: string }[];
}

type Failure = { isError: true } | { isError: false };

export function fail(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

export const notFound = async (name: string): Promise<CallToolResult> => {
  const result: CallToolResult = { content: [], isError: false };
  result.isError = true;
  return result;
};

class Tools {
  async call(args: unknown) {
    if (!args) {
      return {
        content: [{ type: "text", text: `bad ${JSON.stringify(args)}` }],
        isError: true,
      } as const;
    }
    const flag = ok ? isError : true; // a ternary, not a member
    return { isError: cond };
  }
}
