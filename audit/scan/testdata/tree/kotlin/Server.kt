// A Kotlin server. Traps: isError = true in this comment.
fun fail(message: String, isError: Boolean = true): CallToolResult {
    val doc = """isError = true"""
    return CallToolResult(content = listOf(TextContent(message)), isError = true)
}
