export interface CallToolResult {
  content: unknown[];
  isError?: boolean;
}
export declare const failed: { isError: true };
