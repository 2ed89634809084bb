//! A minimal MCP client over a server's stdio: initialize, list tools, call tools.
//!
//! Lines are read with the proxy's framing ([`crate::proxy::framing`]); only what the scan
//! needs is parsed. Requests from the server (`roots/list`, `ping`, sampling…) are answered so
//! the server is never left waiting: `roots/list` with the scan scope, anything else with
//! "method not found".

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use crate::proxy::framing::{Frame, FramedReader};

const MAX_LINE: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the server did not answer {method} within {secs} s")]
    Timeout { method: String, secs: u64 },
    #[error("the server closed its stdout (it exited) while {method} was pending")]
    Closed { method: String },
    #[error("i/o with the server: {0}")]
    Io(#[from] std::io::Error),
    #[error("{method} failed: {message}")]
    Rpc { method: String, message: String },
}

/// The outcome of one `tools/call`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CallOutcome {
    /// A result without `isError: true`.
    pub ok: bool,
    /// The result (or error) as JSON text.
    pub text: String,
    pub timed_out: bool,
    /// The server's stdout closed during the call.
    pub server_exited: bool,
}

pub struct McpClient<W, R> {
    stdin: W,
    reader: FramedReader<R>,
    next_id: u64,
    roots: Vec<PathBuf>,
}

impl<W: AsyncWrite + Unpin, R: AsyncRead + Unpin> McpClient<W, R> {
    pub fn new(stdin: W, stdout: R, roots: Vec<PathBuf>) -> Self {
        McpClient {
            stdin,
            reader: FramedReader::new(stdout, MAX_LINE),
            next_id: 1,
            roots,
        }
    }

    async fn send(&mut self, msg: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await
    }

    /// Send a request and wait for its response (the whole JSON-RPC message).
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        match crate::proxy::timer::timeout(timeout, self.wait_for(id, method)).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout {
                method: method.into(),
                secs: timeout.as_secs(),
            }),
        }
    }

    async fn wait_for(&mut self, id: u64, method: &str) -> Result<Value, ClientError> {
        loop {
            let frame = self.reader.next_frame().await?;
            let line = match frame {
                None => {
                    return Err(ClientError::Closed {
                        method: method.into(),
                    })
                }
                Some(Frame::Line(b)) => b,
                // Over-long or streamed lines are not ours to parse.
                Some(_) => continue,
            };
            let Ok(msg) = serde_json::from_slice::<Value>(Frame::content(&line)) else {
                continue;
            };
            if let (Some(m), Some(req_id)) = (msg.get("method"), msg.get("id")) {
                let reply = self.answer(m.as_str().unwrap_or(""), req_id.clone());
                self.send(&reply).await?;
                continue;
            }
            if msg.get("id").and_then(Value::as_u64) == Some(id) {
                return Ok(msg);
            }
        }
    }

    fn answer(&self, method: &str, id: Value) -> Value {
        match method {
            "roots/list" => {
                let roots: Vec<Value> = self
                    .roots
                    .iter()
                    .map(|r| json!({"uri": format!("file://{}", r.display()), "name": "scope"}))
                    .collect();
                json!({"jsonrpc": "2.0", "id": id, "result": {"roots": roots}})
            }
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            _ => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "not supported by mcpjail scan"}}),
        }
    }

    /// `initialize` + `notifications/initialized`; the server's `initialize` result.
    pub async fn initialize(&mut self, timeout: Duration) -> Result<Value, ClientError> {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": false}},
            "clientInfo": {"name": "mcpjail-scan", "version": env!("CARGO_PKG_VERSION")}
        });
        let resp = self.request("initialize", params, timeout).await?;
        let result = result_of("initialize", resp)?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(result)
    }

    /// Every tool, following `nextCursor`.
    pub async fn list_tools(&mut self, timeout: Duration) -> Result<Vec<Value>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let resp = self.request("tools/list", params, timeout).await?;
            let result = result_of("tools/list", resp)?;
            if let Some(page) = result.get("tools").and_then(Value::as_array) {
                tools.extend(page.iter().cloned());
            }
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        Ok(tools)
    }

    pub async fn call_tool(&mut self, name: &str, args: &Value, timeout: Duration) -> CallOutcome {
        let params = json!({"name": name, "arguments": args});
        match self.request("tools/call", params, timeout).await {
            Ok(resp) => {
                let text = resp
                    .get("result")
                    .or_else(|| resp.get("error"))
                    .map(Value::to_string)
                    .unwrap_or_default();
                let ok = resp
                    .get("result")
                    .is_some_and(|r| r.get("isError").and_then(Value::as_bool) != Some(true));
                CallOutcome {
                    ok,
                    text,
                    timed_out: false,
                    server_exited: false,
                }
            }
            Err(e) => CallOutcome {
                ok: false,
                text: e.to_string(),
                timed_out: matches!(e, ClientError::Timeout { .. }),
                server_exited: matches!(e, ClientError::Closed { .. } | ClientError::Io(_)),
            },
        }
    }
}

fn result_of(method: &str, resp: Value) -> Result<Value, ClientError> {
    if let Some(r) = resp.get("result") {
        return Ok(r.clone());
    }
    Err(ClientError::Rpc {
        method: method.into(),
        message: resp
            .get("error")
            .map(Value::to_string)
            .unwrap_or_else(|| "no result".into()),
    })
}
