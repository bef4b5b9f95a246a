//! A cap on one message from a server. rmcp reads a whole line before it
//! parses it, so a server that never sends a newline would otherwise grow
//! mecha's memory without end. Past the cap the stream fails, rmcp ends
//! the session, and the call that was waiting gets a failed result; the
//! server is restarted on the next call, as after any other death.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest message mecha takes from a server: room for a large
/// screenshot in base64, far below what would hurt.
pub(crate) const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// Reads from `inner`, failing once a line outgrows `max` bytes.
pub(crate) struct BoundedLines<R> {
    inner: R,
    max: usize,
    /// Bytes since the last newline.
    line: usize,
    server: String,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R, max: usize, server: String) -> Self {
        Self {
            inner,
            max,
            line: 0,
            server,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let over = buf.filled()[before..].iter().any(|&byte| {
                this.line = if byte == b'\n' { 0 } else { this.line + 1 };
                this.line > this.max
            });
            if over {
                // A failed read hands back nothing.
                buf.set_filled(before);
                tracing::warn!(
                    server = %this.server,
                    max = this.max,
                    "MCP server sent a message over the size cap; ending its session"
                );
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a message from the server exceeded {} bytes", this.max),
                )));
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn read_all(input: &[u8], max: usize) -> io::Result<Vec<u8>> {
        let mut reader = BoundedLines::new(input, max, "t".into());
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.map(|_| out)
    }

    #[tokio::test]
    async fn lines_within_the_cap_pass_through_whole() {
        let input = b"{\"a\":1}\n{\"b\":22}\n".repeat(1000);
        assert_eq!(read_all(&input, 9).await.unwrap(), input);
    }

    #[tokio::test]
    async fn a_line_over_the_cap_fails_the_stream() {
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100));
        let err = read_all(&input, 50).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("exceeded 50 bytes"), "{err}");
    }
}
