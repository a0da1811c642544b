// A Rust server on rmcp. Traps: is_error: Some(true) in this comment.
use rmcp::model::{CallToolResult, Content};
struct Wrapper<'a> {
    text: &'a str,
    is_error: Option<bool>,
}

fn quote() -> char {
    '"'
}

fn fail(msg: &str) -> Result<CallToolResult, McpError> {
    let raw = r#"{"is_error": Some(true)}"#;
    if msg.is_empty() {
        return Ok(CallToolResult::error(vec![Content::text("empty")]));
    }
    Ok(CallToolResult {
        content: vec![Content::text(msg)],
        structured_content: None,
        is_error: Some(true),
        meta: None,
    })
}
