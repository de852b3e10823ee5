//! The stdio transport of the MCP server: newline-delimited JSON-RPC, with an answer for every
//! line that is not a message.

use std::future::Future;
use std::io;
use std::sync::Arc;

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, Mutex};

/// Largest incoming line (one JSON-RPC message); the same cap as rmcp's own stdio transport.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The stdio transport: newline-delimited JSON-RPC, with an answer for every line that is not a
/// message.
///
/// rmcp's own transport drops a line that is not JSON without a word, so the client waits for its
/// own timeout. Here a reader task takes each line: invalid UTF-8 or invalid JSON (truncated, lone
/// surrogate escapes, ...) gets a JSON-RPC parse error (-32700, id null), well-formed JSON that is
/// not a JSON-RPC message gets an invalid request error (-32600, with its id when it has one), a
/// malformed notification only a log line, and every message goes on to rmcp. Those answers and
/// rmcp's own messages are written as whole lines under one lock, so they never interleave.
pub struct LineTransport<W> {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    writer: Arc<Mutex<Option<W>>>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> LineTransport<W> {
    /// Starts the reader task on `reader`; must run inside a Tokio runtime.
    pub fn new<R: AsyncRead + Send + Unpin + 'static>(reader: R, writer: W) -> Self {
        let writer = Arc::new(Mutex::new(Some(writer)));
        let (tx, incoming) = mpsc::channel(32);
        tokio::spawn(read_messages(BufReader::new(reader), tx, writer.clone()));
        LineTransport { incoming, writer }
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Transport<RoleServer> for LineTransport<W> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let line = serde_json::to_vec(&item).map_err(io::Error::from);
        async move { write_line(&writer, line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        if let Some(mut w) = self.writer.lock().await.take() {
            w.flush().await?;
        }
        Ok(())
    }
}

/// Writes one message and its newline in one go, under the transport's lock.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<Option<W>>,
    mut line: Vec<u8>,
) -> io::Result<()> {
    line.push(b'\n');
    let mut guard = writer.lock().await;
    let Some(w) = guard.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "transport is closed",
        ));
    };
    w.write_all(&line).await?;
    w.flush().await
}

/// One line of input.
#[derive(Debug, PartialEq)]
enum RawLine {
    /// Its bytes, without the `\n`.
    Line(Vec<u8>),
    /// Longer than the cap: consumed and dropped; its length.
    TooLong(usize),
}

/// Reads up to and including the next `\n` (or the end of input), never buffering more than `max`
/// bytes of one line. `None` at the end of input.
async fn read_raw_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> io::Result<Option<RawLine>> {
    let mut line = Vec::new();
    let mut len = 0usize;
    let mut started = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            // End of input; an unterminated last line still counts.
            return Ok(started.then(|| finish_line(line, len, max)));
        }
        started = true;
        let newline = buf.iter().position(|&b| b == b'\n');
        let content = &buf[..newline.unwrap_or(buf.len())];
        len = len.saturating_add(content.len());
        if len <= max {
            line.extend_from_slice(content);
        } else {
            line = Vec::new();
        }
        let consumed = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(Some(finish_line(line, len, max)));
        }
    }
}

fn finish_line(line: Vec<u8>, len: usize, max: usize) -> RawLine {
    if len > max {
        RawLine::TooLong(len)
    } else {
        RawLine::Line(line)
    }
}

/// What to do with one line of input.
enum Incoming {
    /// A message for rmcp.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Blank: nothing to do.
    Blank,
    /// A malformed notification: logged, never answered (JSON-RPC forbids replies to notifications).
    Ignore { log: String },
    /// Answer with this error response and log why.
    Reply { response: Value, log: String },
}

fn error_response(id: Value, code: i32, message: String) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn parse_error(detail: String) -> Incoming {
    Incoming::Reply {
        response: error_response(Value::Null, -32700, format!("Parse error: {detail}")),
        log: format!("{detail}; answered with a parse error (-32700)"),
    }
}

/// Sorts one line (without its `\n`) into a message, an error answer or nothing.
fn classify(raw: &[u8]) -> Incoming {
    let line = raw.strip_suffix(b"\r").unwrap_or(raw);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Incoming::Blank;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return parse_error(format!("not UTF-8 ({e})")),
    };
    // Parsing into a Value first rejects what rmcp would silently drop: syntax errors, truncation,
    // lone surrogates in string escapes.
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return parse_error(format!("not JSON ({e})")),
    };
    match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(message) => Incoming::Message(Box::new(message)),
        Err(e) => {
            let id = value.get("id");
            if id.is_none() && value.get("method").is_some_and(Value::is_string) {
                return Incoming::Ignore {
                    log: format!("malformed notification ignored ({e})"),
                };
            }
            let id = id
                .filter(|id| id.is_string() || id.is_number())
                .cloned()
                .unwrap_or(Value::Null);
            Incoming::Reply {
                response: error_response(id, -32600, format!("Invalid request: {e}")),
                log: format!(
                    "not a JSON-RPC message ({e}); answered with an invalid request error (-32600)"
                ),
            }
        }
    }
}

/// The reader task: classifies every line, answers the bad ones itself and hands messages to
/// rmcp. Ends (and so ends the session) at the end of input or when the output is gone.
async fn read_messages<R, W>(
    mut reader: R,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    writer: Arc<Mutex<Option<W>>>,
) where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut number = 0u64;
    loop {
        let incoming = match read_raw_line(&mut reader, MAX_LINE_BYTES).await {
            Ok(None) => break,
            Ok(Some(RawLine::Line(line))) => classify(&line),
            Ok(Some(RawLine::TooLong(len))) => parse_error(format!(
                "message of {len} bytes exceeds the {MAX_LINE_BYTES}-byte limit"
            )),
            Err(e) => {
                eprintln!("wt-mcp-server: reading stdin failed: {e}");
                break;
            }
        };
        number += 1;
        match incoming {
            Incoming::Message(message) => {
                if tx.send(*message).await.is_err() {
                    break;
                }
            }
            Incoming::Blank => {}
            Incoming::Ignore { log } => eprintln!("wt-mcp-server: stdin line {number}: {log}"),
            Incoming::Reply { response, log } => {
                eprintln!("wt-mcp-server: stdin line {number}: {log}");
                let bytes = serde_json::to_vec(&response).unwrap_or_default();
                if let Err(e) = write_line(&writer, bytes).await {
                    eprintln!("wt-mcp-server: writing stdout failed: {e}");
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply_of(line: &[u8]) -> Value {
        match classify(line) {
            Incoming::Reply { response, log } => {
                assert!(!log.contains('\n'), "one log line: {log}");
                response
            }
            Incoming::Message(_) => panic!("{line:?} passed as a message"),
            Incoming::Blank => panic!("{line:?} taken as blank"),
            Incoming::Ignore { log } => panic!("{line:?} ignored: {log}"),
        }
    }

    #[test]
    fn lines_that_are_not_json_are_parse_errors_with_a_null_id() {
        for line in [
            &b"{"[..],
            b"not json",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","x":"\ud800"}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}",
        ] {
            let reply = reply_of(line);
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
            assert_eq!(reply.get("id"), Some(&Value::Null), "{reply}");
        }
    }

    #[test]
    fn messages_pass_and_blank_lines_are_skipped() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(classify(ping), Incoming::Message(_)));
        let mut crlf_bom = b"\xEF\xBB\xBF".to_vec();
        crlf_bom.extend_from_slice(ping);
        crlf_bom.extend_from_slice(b"\r");
        assert!(matches!(classify(&crlf_bom), Incoming::Message(_)));
        assert!(matches!(classify(b""), Incoming::Blank));
        assert!(matches!(classify(b" \t\r"), Incoming::Blank));
    }

    #[test]
    fn json_that_is_no_message_is_an_invalid_request_with_its_id() {
        let reply = reply_of(br#"{"jsonrpc":"2.0","id":"a"}"#);
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        assert_eq!(reply["id"], "a");
        let reply = reply_of(b"[1, 2]");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        assert_eq!(reply.get("id"), Some(&Value::Null), "{reply}");
    }

    #[tokio::test]
    async fn lines_are_read_whole_and_overlong_ones_dropped() {
        let mut input = &b"abc\n0123456789\n\nxy"[..];
        let mut lines = Vec::new();
        while let Some(line) = read_raw_line(&mut input, 8).await.unwrap() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                RawLine::Line(b"abc".to_vec()),
                RawLine::TooLong(10),
                RawLine::Line(Vec::new()),
                RawLine::Line(b"xy".to_vec()),
            ]
        );
    }
}
