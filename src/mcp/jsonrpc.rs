//! JSON-RPC checks made before a message reaches rmcp, on every transport.
//!
//! rmcp stays silent on a line that is not JSON (stdio), answers `-32600`
//! without the request's `id` when `method` is missing, `-32601` when
//! `tools/call` has no `name`, and HTTP 415 for a body that is not JSON. This
//! module answers those itself, as JSON-RPC 2.0 says: `-32700` (id `null`) for
//! text that is not JSON, `-32600` (with the `id` when there is one) for JSON
//! that is not a request, notification or response, `-32602` (with the `id`)
//! for a request whose params do not fit its method. Everything else passes
//! through untouched.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Value, json};

/// `Parse error`: the text is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// `Invalid Request`: JSON, but not a JSON-RPC message.
pub const INVALID_REQUEST: i64 = -32600;
/// `Invalid params`: a request whose params do not fit its method.
pub const INVALID_PARAMS: i64 = -32602;

/// A message answered here instead of by rmcp.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The whole error response (`{"jsonrpc":"2.0","id":...,"error":{...}}`).
    pub reply: Value,
}

impl Rejection {
    fn new(code: i64, id: Value, message: impl Into<String>) -> Self {
        let reply = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message.into() },
        });
        Self { code, reply }
    }

    /// The reply as one line of JSON, without the newline.
    pub fn to_line(&self) -> Vec<u8> {
        serde_json::to_vec(&self.reply).unwrap_or_default()
    }
}

/// What to do with one incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Screened {
    /// Hand it to rmcp.
    Pass,
    /// Answer it with this error; rmcp never sees it.
    Reject(Rejection),
    /// A notification rmcp cannot read: JSON-RPC forbids answering it, so
    /// it is dropped (and logged).
    Drop(String),
}

/// The answer to a message longer than `limit` bytes (not read as JSON).
pub fn too_long(limit: usize) -> Rejection {
    Rejection::new(
        PARSE_ERROR,
        Value::Null,
        format!("parse error: message of {limit} bytes or more"),
    )
}

/// Checks one message (a stdio line or an HTTP body).
pub fn screen(message: &[u8]) -> Screened {
    let value: Value = match serde_json::from_slice(message) {
        Ok(value) => value,
        Err(e) => return Screened::Reject(Rejection::new(PARSE_ERROR, Value::Null, format!("parse error: {e}"))),
    };
    let Value::Object(object) = &value else {
        let what = if value.is_array() {
            "batches are not supported: send one JSON-RPC message at a time"
        } else {
            "a JSON-RPC message is a JSON object"
        };
        return Screened::Reject(Rejection::new(INVALID_REQUEST, Value::Null, what));
    };
    // The id is echoed only when it is one MCP allows: a string or an integer
    // (of 64 bits, signed, as rmcp reads it).
    let id = match object.get("id") {
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(id @ Value::Number(n)) if n.is_i64() => Some(id.clone()),
        // MCP forbids a null id; taken for a notification, the request would
        // go unanswered. A response with one answers nothing the server sent.
        Some(Value::Null) if object.contains_key("method") => {
            return Screened::Reject(Rejection::new(
                INVALID_REQUEST,
                Value::Null,
                "`id` must be a string or an integer, never null (a notification has no `id`)",
            ));
        }
        Some(Value::Null) => return Screened::Drop("a response with a null `id`".to_string()),
        None => None,
        Some(_) => {
            return Screened::Reject(Rejection::new(
                INVALID_REQUEST,
                Value::Null,
                "`id` must be a string or an integer between -2^63 and 2^63-1",
            ));
        }
    };
    let reject =
        |code, message: String| Screened::Reject(Rejection::new(code, id.clone().unwrap_or(Value::Null), message));
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return reject(INVALID_REQUEST, "`jsonrpc` must be \"2.0\"".to_string());
    }
    let method = match object.get("method") {
        Some(Value::String(method)) => method.as_str(),
        Some(_) => return reject(INVALID_REQUEST, "`method` must be a string".to_string()),
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            return Screened::Pass; // a response to one of the server's requests
        }
        None => return reject(INVALID_REQUEST, "missing `method`".to_string()),
    };
    // rmcp reads a cursor that is not a string as none, and a client asking
    // for page 2 would get page 1 again.
    if id.is_some()
        && let Some(cursor) = object.get("params").and_then(|p| p.get("cursor"))
        && !cursor.is_string()
        && !cursor.is_null()
    {
        return reject(
            INVALID_PARAMS,
            format!("`params.cursor` of `{method}` must be a string, as `nextCursor` gave it"),
        );
    }
    if id.is_some() && method == "tools/call" {
        let name = object.get("params").and_then(|p| p.get("name"));
        if !name.is_some_and(Value::is_string) {
            return reject(
                INVALID_PARAMS,
                "`tools/call` needs `params.name`, the name of a tool (see `tools/list`)".to_string(),
            );
        }
    }
    // Whatever rmcp cannot read would get a reply without the id (or none);
    // a standard method whose params do not fit would be read as a custom
    // request and answered "method not found".
    match serde_json::from_slice::<ClientJsonRpcMessage>(message) {
        Err(e) if id.is_some() => reject(INVALID_PARAMS, format!("invalid params for `{method}`: {e}")),
        Err(e) => Screened::Drop(format!("unreadable `{method}` notification: {e}")),
        Ok(ClientJsonRpcMessage::Request(request))
            if matches!(request.request, ClientRequest::CustomRequest(_)) && STANDARD_METHODS.contains(&method) =>
        {
            reject(INVALID_PARAMS, format!("invalid params for `{method}`"))
        }
        Ok(_) => Screened::Pass,
    }
}

/// The MCP requests rmcp knows; with params it cannot read, it takes them for
/// custom methods.
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(message: &str) -> (i64, Value) {
        match screen(message.as_bytes()) {
            Screened::Reject(r) => (r.code, r.reply["id"].clone()),
            other => panic!("{message}: {other:?}"),
        }
    }

    #[test]
    fn protocol_errors_carry_their_code_and_id() {
        assert_eq!(rejected("{not json"), (PARSE_ERROR, Value::Null));
        assert_eq!(rejected(""), (PARSE_ERROR, Value::Null));
        assert_eq!(rejected("[]"), (INVALID_REQUEST, Value::Null));
        assert_eq!(rejected("7"), (INVALID_REQUEST, Value::Null));
        assert_eq!(rejected(r#"{"jsonrpc":"2.0","id":7}"#), (INVALID_REQUEST, json!(7)));
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":"a","method":3}"#),
            (INVALID_REQUEST, json!("a"))
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#),
            (INVALID_REQUEST, json!(2))
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            (INVALID_REQUEST, Value::Null)
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            (INVALID_REQUEST, Value::Null)
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":12,"method":"skills/list","params":{"cursor":12}}"#),
            (INVALID_PARAMS, json!(12))
        );
        // A null id was taken for a notification and left unanswered.
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            (INVALID_REQUEST, Value::Null)
        );
        assert!(matches!(
            screen(br#"{"jsonrpc":"2.0","id":null,"result":{}}"#),
            Screened::Drop(_)
        ));
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}}"#),
            (INVALID_PARAMS, json!(8))
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call"}"#),
            (INVALID_PARAMS, json!(9))
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{}}"#),
            (INVALID_PARAMS, json!(10))
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"arguments":{}}}"#),
            (INVALID_PARAMS, json!(11))
        );
    }

    #[test]
    fn valid_messages_pass() {
        for message in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"aam_search","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        ] {
            assert_eq!(screen(message.as_bytes()), Screened::Pass, "{message}");
        }
    }
}
