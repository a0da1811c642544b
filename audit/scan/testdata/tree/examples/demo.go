package main

func main() {
	_ = mcp.CallToolResult{IsError: true}
}
