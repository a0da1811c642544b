// The SDK's own crate calls its helper by another path: a wrapper call.
use crate::model::CallToolResult;

fn fail() -> CallToolResult {
    CallToolResult::error(vec![])
}
