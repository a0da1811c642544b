class Server {
    // isError(true) in a comment
    String doc = "CallToolResult.builder().isError(true)";

    CallToolResult fail(String message) {
        return CallToolResult.builder()
            .addTextContent(message)
            .isError(true)
            .build();
    }

    CallToolResult ok() {
        return CallToolResult.builder().isError(false).build();
    }
}
