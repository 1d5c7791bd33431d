//! The stdio transport: rmcp behind a line filter.
//!
//! stdin is read line by line; each line goes through [`jsonrpc::screen`]:
//! valid messages go on to rmcp over an in-memory pipe, protocol errors are
//! answered here. One task writes stdout, whole lines only, so replies from
//! both never interleave. Closing stdin, at any point (even before
//! `initialize`), ends the session cleanly.

use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::AamServer;
use super::jsonrpc::{self, Screened};
use crate::error::{Error, Result};

/// Lines on stdin of this many bytes or more (newline left out) are a parse
/// error: the same cap as an HTTP body. A message costs many times its size
/// once parsed (a 15 MiB line of `[{},{},...]` took 1.6 GB), and no message a
/// client sends needs more.
const MAX_LINE_BYTES: usize = super::http::MAX_BODY_BYTES;

/// Discards input up to and including the next newline (or the end), a
/// buffer at a time: the rest of a line too long to take costs no memory.
async fn skip_line(reader: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(());
            }
            None => {
                let all = buffer.len();
                reader.consume(all);
            }
        }
    }
}

/// Serves one client over stdin/stdout until stdin closes.
pub(super) async fn serve(server: AamServer) -> Result<()> {
    let (rmcp_side, our_side) = tokio::io::duplex(1 << 20);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(our_side);
    let (replies, mut pending) = mpsc::unbounded_channel::<Vec<u8>>();

    let input = tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            match (&mut stdin)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .await
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let ended = line.last() == Some(&b'\n');
            let too_long = line.len() - usize::from(ended) >= MAX_LINE_BYTES;
            if too_long && !ended && skip_line(&mut stdin).await.is_err() {
                break;
            }
            let message = line.trim_ascii();
            if message.is_empty() && !too_long {
                continue;
            }
            let screened = if too_long {
                Screened::Reject(jsonrpc::too_long(MAX_LINE_BYTES))
            } else {
                jsonrpc::screen(message)
            };
            match screened {
                Screened::Pass => {
                    let mut framed = message.to_vec();
                    framed.push(b'\n');
                    if to_rmcp.write_all(&framed).await.is_err() {
                        break;
                    }
                }
                Screened::Reject(rejection) => {
                    tracing::warn!(code = rejection.code, "JSON-RPC message refused");
                    let _ = replies.send(rejection.to_line());
                }
                Screened::Drop(why) => tracing::warn!("{why}"),
            }
        }
        // End of input: rmcp sees end of file and finishes.
        let _ = to_rmcp.shutdown().await;
    });

    let output = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut from_rmcp = BufReader::new(from_rmcp);
        let mut line = Vec::new();
        loop {
            // `read_until` keeps partial reads in `line` if the other branch wins.
            let out = tokio::select! {
                read = from_rmcp.read_until(b'\n', &mut line) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => std::mem::take(&mut line),
                },
                Some(mut reply) = pending.recv() => {
                    reply.push(b'\n');
                    reply
                }
            };
            if stdout.write_all(&out).await.is_err() || stdout.flush().await.is_err() {
                return; // the client is gone
            }
        }
        while let Ok(mut reply) = pending.try_recv() {
            reply.push(b'\n');
            if stdout.write_all(&reply).await.is_err() {
                return;
            }
        }
        let _ = stdout.flush().await;
    });

    let outcome = match server.serve(rmcp_side).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| Error::internal(format!("the MCP session ended abnormally: {e}"))),
        // stdin closed before (or during) the handshake: nothing to serve.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(ServerInitializeError::ExpectedInitializeRequest(_)) => Err(Error::invalid_argument(
            "the MCP client sent something other than `initialize` first",
        )
        .with_hint("an MCP session starts with an `initialize` request")),
        Err(e) => Err(Error::internal(format!("the MCP session failed to start: {e}"))),
    };
    let _ = output.await;
    input.abort();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_rest_of_a_long_line_is_skipped_a_buffer_at_a_time() {
        let input = [vec![b'x'; 1000], b"\nnext\n".to_vec()].concat();
        let mut reader = BufReader::with_capacity(16, input.as_slice());
        skip_line(&mut reader).await.unwrap();
        assert!(reader.buffer().len() <= 16, "never more than one buffer held");
        let mut line = Vec::new();
        reader.read_until(b'\n', &mut line).await.unwrap();
        assert_eq!(line, b"next\n");
        // At the end of input it just stops.
        let mut ended = BufReader::new(&b"no newline"[..]);
        skip_line(&mut ended).await.unwrap();
        assert_eq!(ended.fill_buf().await.unwrap(), b"");
    }
}
