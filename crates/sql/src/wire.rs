//! Bytes on a connection's socket, as the kernel counts them. sqlx owns its sockets and counts
//! nothing, so after a TCP connection is made its socket is found among the process's open
//! files (`/proc/self/fd`: a connected TCP socket whose peer is the database's address, not yet
//! taken by another connection) and read with Linux's `TCP_INFO` (`tcpi_bytes_acked`: bytes
//! sent and acknowledged; `tcpi_bytes_received`), one `getsockopt` per step. What the handshake
//! and login sent is left out (the counters are read once when the socket is found).
//!
//! Two connections opened at the same moment to the same database may each take the other's
//! socket: the totals stay right. A process that also opens connections of its own to the
//! same database (a library user's pool) may have one of them taken instead. Unix-domain
//! sockets, SQLite and systems other than Linux are not measured: their bytes are 0.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

/// Sockets taken by connections: their file descriptors (and local ports). A taken descriptor
/// is skipped before any system call, so a thousand users' connects do not each ask about every
/// socket of the others (the lock is held on a worker thread).
static TAKEN: Mutex<Option<HashMap<i32, u16>>> = Mutex::new(None);

/// The database's address as the connection options give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    /// Its port.
    pub(crate) port: u16,
    /// Its address when the host is one (a name is matched on the port alone).
    pub(crate) ip: Option<IpAddr>,
}

/// One connection's socket.
#[derive(Debug)]
pub(crate) struct Wire {
    fd: i32,
    local_port: u16,
    sent: u64,
    received: u64,
}

impl Wire {
    /// Finds and takes the socket of a connection just made to `peer`; `None` when there is
    /// none to take (or the system cannot say).
    pub(crate) fn take(peer: &Peer) -> Option<Wire> {
        let mut taken = TAKEN.lock().ok()?;
        let taken = taken.get_or_insert_with(HashMap::new);
        for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
            let Some(fd) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Some((ip, port)) = address(fd, false) else {
                continue;
            };
            if port != peer.port || peer.ip.is_some_and(|want| want != ip) {
                continue;
            }
            let Some((_, local_port)) = address(fd, true) else {
                continue;
            };
            let (sent, received) = counters(fd)?;
            taken.insert(fd, local_port);
            return Some(Wire {
                fd,
                local_port,
                sent,
                received,
            });
        }
        None
    }

    /// Bytes sent and received since the last call (or since the socket was taken).
    pub(crate) fn since_last(&mut self) -> (u64, u64) {
        match counters(self.fd) {
            Some((sent, received)) => {
                let d = (
                    sent.saturating_sub(self.sent),
                    received.saturating_sub(self.received),
                );
                (self.sent, self.received) = (sent, received);
                d
            }
            None => (0, 0),
        }
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        if let Ok(mut taken) = TAKEN.lock() {
            if let Some(t) = taken.as_mut() {
                // Only this connection's entry: its descriptor is not yet reused.
                if t.get(&self.fd) == Some(&self.local_port) {
                    t.remove(&self.fd);
                }
            }
        }
    }
}

/// The peer's (or with `local`, this end's) IP address and port of a TCP/IP socket.
fn address(fd: i32, local: bool) -> Option<(IpAddr, u16)> {
    // SAFETY: an all-zero sockaddr_storage is a valid value; the calls write at most `len`
    // bytes into it, and an fd that is not a socket only makes them fail.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let p = std::ptr::addr_of_mut!(ss).cast::<libc::sockaddr>();
    // SAFETY: `p` and `len` describe the storage above.
    let rc = unsafe {
        match local {
            true => libc::getsockname(fd, p, &mut len),
            false => libc::getpeername(fd, p, &mut len),
        }
    };
    if rc != 0 {
        return None;
    }
    match i32::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a = unsafe { *std::ptr::addr_of!(ss).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some((IpAddr::V4(ip), u16::from_be(a.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe { *std::ptr::addr_of!(ss).cast::<libc::sockaddr_in6>() };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some((IpAddr::V6(ip), u16::from_be(a.sin6_port)))
        }
        _ => None,
    }
}

/// The kernel's bytes sent (acknowledged) and received on a TCP socket.
#[cfg(target_os = "linux")]
fn counters(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: an all-zero tcp_info is a valid value; getsockopt writes at most `len` bytes.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and `len` describe `info`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            std::ptr::addr_of_mut!(info).cast(),
            &mut len,
        )
    };
    // Kernels before 4.2 fill a shorter struct without the byte counters.
    let needed = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_received) + 8;
    (rc == 0 && len as usize >= needed).then_some((info.tcpi_bytes_acked, info.tcpi_bytes_received))
}

#[cfg(not(target_os = "linux"))]
fn counters(_fd: i32) -> Option<(u64, u64)> {
    None
}
