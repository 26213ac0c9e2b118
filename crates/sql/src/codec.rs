//! What the two wire codecs (`pg` for PostgreSQL, `my` for MySQL and MariaDB) share: the
//! socket (plain or TLS) with its buffers and byte counts.

use std::io;
use std::path::Path;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use throng_net::{CountedTcp, Counters};

use crate::error::DbError;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpStream, UnixStream};

/// The socket under a connection.
enum Io {
    /// TCP, plain or TLS, counted by throng-net as it crosses the wire (TLS's bytes
    /// encrypted, its records' overhead too).
    Net(throng_net::Stream),
    /// A Unix-domain socket, counted here.
    Unix(UnixStream),
}

impl std::fmt::Debug for Io {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Io::Net(throng_net::Stream::Plain(_)) => "tcp",
            Io::Net(throng_net::Stream::Tls(_)) => "tls",
            Io::Unix(_) => "unix",
        })
    }
}

/// A connection's socket, what it received and has not consumed, what is to be sent, and the
/// bytes that crossed it.
#[derive(Debug)]
pub(crate) struct Socket {
    io: Io,
    /// Bytes received; those before `at` are consumed.
    pub(crate) rx: Vec<u8>,
    pub(crate) at: usize,
    /// Bytes to send at the next [`Socket::flush`].
    pub(crate) tx: Vec<u8>,
    /// Bytes that crossed the socket (both ways), and how many of them [`Socket::traffic`]
    /// has already reported.
    counters: Arc<Counters>,
    reported: (u64, u64),
}

impl Socket {
    fn new(io: Io, counters: Arc<Counters>) -> Socket {
        Socket {
            io,
            rx: Vec::with_capacity(8192),
            at: 0,
            tx: Vec::with_capacity(1024),
            counters,
            reported: (0, 0),
        }
    }

    /// Connects over TCP, with Nagle's algorithm off: a statement is one small write that
    /// must not wait for the last one's acknowledgement.
    pub(crate) async fn tcp(host: &str, port: u16) -> io::Result<Socket> {
        let tcp = TcpStream::connect((host, port)).await?;
        tcp.set_nodelay(true)?;
        let counters = Arc::new(Counters::default());
        let counted = CountedTcp {
            tcp,
            counters: counters.clone(),
        };
        Ok(Socket::new(
            Io::Net(throng_net::Stream::Plain(counted)),
            counters,
        ))
    }

    /// Connects to a Unix-domain socket.
    pub(crate) async fn unix(path: impl AsRef<Path>) -> io::Result<Socket> {
        let io = Io::Unix(UnixStream::connect(path).await?);
        Ok(Socket::new(io, Arc::default()))
    }

    /// Whether it is a TCP connection.
    pub(crate) fn is_tcp(&self) -> bool {
        matches!(self.io, Io::Net(_))
    }

    /// Goes on over TLS (after the protocol's own request for it). Bytes the server sent
    /// before the handshake and nobody read are refused: they came in the clear, and read
    /// as if they had come encrypted they would be a man in the middle's (CVE-2021-23222).
    pub(crate) async fn start_tls(self, target: &throng_net::TlsTarget) -> Result<Socket, DbError> {
        if self.rx.len() > self.at {
            return Err(DbError::Protocol(
                "the server sent data after agreeing to TLS and before its handshake".into(),
            ));
        }
        let tcp = match self.io {
            Io::Net(throng_net::Stream::Plain(tcp)) => tcp,
            _ => {
                return Err(DbError::Protocol(
                    "TLS asked twice or on a Unix socket".into(),
                ))
            }
        };
        let stream = throng_net::handshake(tcp, target)
            .await
            .map_err(|e| DbError::Tls(e.to_string()))?;
        Ok(Socket {
            io: Io::Net(stream),
            rx: self.rx,
            at: self.at,
            tx: self.tx,
            counters: self.counters,
            reported: self.reported,
        })
    }

    /// The TLS session, when there is one.
    pub(crate) fn tls(&self) -> Option<&rustls::ClientConnection> {
        match &self.io {
            Io::Net(throng_net::Stream::Tls(s)) => Some(s.get_ref().1),
            _ => None,
        }
    }

    /// The TLS version in use (`TLSv1.3`), when there is one.
    pub(crate) fn tls_version(&self) -> Option<&'static str> {
        Some(match self.tls()?.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3",
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2",
            _ => "TLS",
        })
    }

    /// Sends what is in `tx`.
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        // In the clear a statement mostly goes in one write, tried at once: through tokio's
        // `write_all` future it cost some 330 instructions (its polling, the task's budget).
        if let Io::Net(throng_net::Stream::Plain(t)) = &self.io {
            match t.tcp.try_write(&self.tx) {
                Ok(n) => {
                    t.counters.sent.fetch_add(n as u64, Ordering::Relaxed);
                    self.tx.drain(..n);
                    if self.tx.is_empty() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    self.tx.clear();
                    return Err(e);
                }
            }
        }
        let r = match &mut self.io {
            Io::Net(s) => match s.write_all(&self.tx).await {
                // TLS holds records back until flushed.
                Ok(()) => s.flush().await,
                e => e,
            },
            Io::Unix(s) => {
                let r = s.write_all(&self.tx).await;
                self.counters
                    .sent
                    .fetch_add(self.tx.len() as u64, Ordering::Relaxed);
                r
            }
        };
        self.tx.clear();
        r
    }

    /// Reads what the server sent next, with room for at least `want` unconsumed bytes; the
    /// consumed ones are dropped first when that is cheap (all of them) or due (they fill
    /// half the buffer). A closed connection is an I/O error.
    pub(crate) async fn fill(&mut self, want: usize) -> Result<(), DbError> {
        if self.at > 0 && self.at == self.rx.len() {
            self.rx.clear();
            self.at = 0;
        } else if self.at > self.rx.capacity() / 2 {
            self.rx.drain(..self.at);
            self.at = 0;
        }
        let have = self.rx.len() - self.at;
        if want > have {
            // In steps: a length from a server that is not the database may say a gigabyte.
            self.rx.reserve((want - have).min(1 << 16));
        }
        if self.rx.capacity() - self.rx.len() < 4096 {
            self.rx.reserve(8192);
        }
        let n = match &mut self.io {
            Io::Net(s) => s.read_buf(&mut self.rx).await?,
            Io::Unix(s) => {
                let n = s.read_buf(&mut self.rx).await?;
                self.counters
                    .received
                    .fetch_add(n as u64, Ordering::Relaxed);
                n
            }
        };
        if n == 0 {
            return Err(DbError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the database closed the connection",
            )));
        }
        Ok(())
    }

    /// Bytes sent and received since the last call, as they crossed the socket.
    pub(crate) fn traffic(&mut self) -> (u64, u64) {
        let now = self.counters.read();
        let since = (now.0 - self.reported.0, now.1 - self.reported.1);
        self.reported = now;
        since
    }
}
