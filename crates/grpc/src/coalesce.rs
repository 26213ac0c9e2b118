//! A connection's socket that holds back a write made in the same turn as a read for one turn
//! of the scheduler, so that it leaves in one system call with the calls that read woke.
//!
//! Why: h2's connection task reads a batch of replies, wakes their users and, before they run,
//! flushes what the read made it owe (a PING's acknowledgement, a window update); the users then
//! start their next calls and the task writes again. grpc-go pings at every batch it receives
//! (its bandwidth estimator), so each batch cost two writes (strace on `-n 20000`: 1,852 against
//! h2load's 810, each a trip through loopback's TCP stack). Held back one turn, the
//! acknowledgement goes out with the next calls.
//!
//! The turn is `tokio::task::yield_now`'s: on the current-thread runtime of a worker, the
//! connection task runs again after the runtime has polled the users' tasks. A write is held
//! back at most once, and only in a turn that read something and has not flushed since: a
//! connection that only sends (the users' new calls) writes at once.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `S` with the first write after a read held back one turn.
pub(crate) struct Coalesce<S> {
    inner: S,
    /// Bytes were read since the last flush.
    read: bool,
    /// The turn's yield, while a write waits for it.
    wait: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<S> Coalesce<S> {
    pub(crate) fn new(inner: S) -> Self {
        Coalesce {
            inner,
            read: false,
            wait: None,
        }
    }

    /// Ready when the write may go: at once, or after the turn it waits for.
    fn poll_turn(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.read && self.wait.is_none() {
            self.wait = Some(Box::pin(tokio::task::yield_now()));
        }
        // What this write carries answers every read so far.
        self.read = false;
        if let Some(w) = self.wait.as_mut() {
            std::task::ready!(w.as_mut().poll(cx));
            self.wait = None;
        }
        Poll::Ready(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Coalesce<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let filled = buf.filled().len();
        std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.read |= buf.filled().len() > filled;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Coalesce<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        std::task::ready!(this.poll_turn(cx));
        Pin::new(&mut this.inner).poll_write(cx, data)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        std::task::ready!(this.poll_turn(cx));
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    /// The end of the connection's turn: a read before it wakes nobody who could write with it.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.read = false;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn poll_write(c: &mut Coalesce<tokio::io::DuplexStream>, data: &[u8]) -> Poll<usize> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        match Pin::new(c).poll_write(&mut cx, data) {
            Poll::Ready(r) => Poll::Ready(r.unwrap()),
            Poll::Pending => Poll::Pending,
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_after_a_read_waits_one_turn_and_only_then() {
        let (a, mut b) = tokio::io::duplex(64);
        let mut c = Coalesce::new(a);
        // Nothing read: writes go at once.
        assert_eq!(poll_write(&mut c, b"x"), Poll::Ready(1));
        // Read, then write in the same turn: held back once, then it goes.
        b.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(c.read(&mut buf).await.unwrap(), 4);
        assert_eq!(poll_write(&mut c, b"ack"), Poll::Pending);
        tokio::task::yield_now().await;
        assert_eq!(poll_write(&mut c, b"ack"), Poll::Ready(3));
        assert_eq!(poll_write(&mut c, b"more"), Poll::Ready(4));
        // Read, then a flush (the turn ended with nothing to write): the next write goes at once.
        b.write_all(b"pong").await.unwrap();
        assert_eq!(c.read(&mut buf).await.unwrap(), 4);
        c.flush().await.unwrap();
        assert_eq!(poll_write(&mut c, b"y"), Poll::Ready(1));
        let mut got = [0u8; 9];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"xackmorey");
    }
}
