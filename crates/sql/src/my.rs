//! MySQL's and MariaDB's client/server protocol for the load's own connections, in place of
//! sqlx on the hot path. sqlx decodes every row of a result into a `MySqlRow` (a vector of
//! the values' ranges, the columns behind an `Arc`) and passes it through a stream, which made
//! a sysbench read-only transaction (some 310 rows) cost throng 1.46x sysbench's client CPU.
//! Here a row the load does not keep is a packet header read and skipped: 0.94x sysbench's
//! CPU per read-only transaction at 0.99x its TPS, 0.96x per write-only one at 0.98x its TPS
//! (`benches/sql.sh`, medians of 3 rounds of 10 s, 10 connections, on 2 shared cores).
//!
//! What it speaks: the handshake (protocol 10, with or without DEPRECATE_EOF) on
//! mysql_common's packets, `ssl-mode` DISABLED, PREFERRED (the default), REQUIRED, VERIFY_CA
//! and VERIFY_IDENTITY (TLS through throng-net's rustls), the mysql_native_password and
//! caching_sha2_password logins (fast and full authentication), also after an
//! AuthSwitchRequest ([`login`]); statements prepared once per connection (COM_STMT_PREPARE,
//! kept by their text) and run with COM_STMT_EXECUTE's binary parameters; COM_QUERY for
//! transaction control and scripts of several statements. The session is set up as sqlx set
//! it up (utf8mb4, `sql_mode` with PIPES_AS_CONCAT and NO_ENGINE_SUBSTITUTION, `time_zone`
//! +00:00), so statements behave as they did. Ours are the packets' framing and the loop over
//! a command's results (a row not kept is a header read and skipped): what makes the CPU
//! figure above.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use crate::codec::Socket;
use crate::conn::Done;
use crate::error::DbError;
use crate::error::WireError;
use crate::param::Value;

mod login;
mod row;

pub(crate) use login::open;

/// The largest payload of one packet; a longer one goes on in the next.
const MAX: usize = 0xFF_FFFF;

/// Capability flags (`CLIENT_*`).
const FOUND_ROWS: u64 = 1 << 1;
const CONNECT_WITH_DB: u64 = 1 << 3;
const IGNORE_SPACE: u64 = 1 << 8;
const PROTOCOL_41: u64 = 1 << 9;
const SSL: u64 = 1 << 11;
const TRANSACTIONS: u64 = 1 << 13;
const SECURE_CONNECTION: u64 = 1 << 15;
const MULTI_STATEMENTS: u64 = 1 << 16;
const MULTI_RESULTS: u64 = 1 << 17;
const PS_MULTI_RESULTS: u64 = 1 << 18;
const PLUGIN_AUTH: u64 = 1 << 19;
const PLUGIN_AUTH_LENENC_DATA: u64 = 1 << 21;
const DEPRECATE_EOF: u64 = 1 << 24;
/// MariaDB's (10.6 and later) capabilities past 32 bits: MARIADB_CLIENT_CACHE_METADATA, the
/// server sends a prepared statement's column definitions with COM_STMT_EXECUTE only when they
/// changed since COM_STMT_PREPARE (a flag after the column count says which), as MariaDB's own
/// client (and so sysbench) asks.
const CACHE_METADATA: u64 = 1 << 36;

/// What sqlx asks for (FOUND_ROWS: an UPDATE counts the rows it matched, as sqlx's results
/// count them), less TLS.
const WANTED: u64 = PROTOCOL_41
    | IGNORE_SPACE
    | DEPRECATE_EOF
    | FOUND_ROWS
    | TRANSACTIONS
    | SECURE_CONNECTION
    | PLUGIN_AUTH_LENENC_DATA
    | MULTI_STATEMENTS
    | MULTI_RESULTS
    | PLUGIN_AUTH
    | PS_MULTI_RESULTS;

/// SERVER_MORE_RESULTS_EXISTS, in an OK or EOF packet's status.
const MORE_RESULTS: u16 = 0x0008;

/// utf8mb4_general_ci, the collation sqlx's handshake names.
const UTF8MB4_GENERAL_CI: u8 = 45;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;

/// A statement prepared on the connection.
#[derive(Debug, Clone)]
struct Statement {
    id: u32,
    params: usize,
    /// Its column definitions from COM_STMT_PREPARE, when the server caches them (for rows
    /// kept as JSON when an execution sends none).
    columns: Option<Arc<[row::Column]>>,
    /// The parameter types of its last execution: the server keeps them, so an execution
    /// with the same types sends none (as libmysqlclient does after its first).
    types: Vec<u8>,
}

/// An open connection, ready for commands.
#[derive(Debug)]
pub(crate) struct MyConn {
    s: Socket,
    /// The sequence id of the next packet sent.
    seq: u8,
    /// The server ends column definitions and rows with an OK packet, not an EOF one.
    deprecate_eof: bool,
    /// The server sends column definitions with an execution only when they changed.
    cache_metadata: bool,
    /// Each statement's place in `prepared`, by its text.
    statements: HashMap<Arc<str>, usize>,
    prepared: Vec<Statement>,
    /// How it logged in (`mysql_native_password`, `caching_sha2_password (full)`, ...).
    login: &'static str,
}

fn protocol(what: impl Into<String>) -> DbError {
    DbError::Protocol(what.into())
}

/// Reads a packet's fields in order, failing as a malformed packet when it is too short.
struct Fields<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn new(b: &'a [u8], at: usize) -> Fields<'a> {
        Fields { b, at }
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], DbError> {
        let v = self
            .b
            .get(self.at..self.at.saturating_add(n))
            .ok_or_else(|| protocol("MySQL sent a packet shorter than its fields"))?;
        self.at += n;
        Ok(v)
    }

    fn int<const N: usize>(&mut self) -> Result<u64, DbError> {
        let mut le = [0u8; 8];
        le[..N].copy_from_slice(self.bytes(N)?);
        Ok(u64::from_le_bytes(le))
    }

    fn u8(&mut self) -> Result<u8, DbError> {
        Ok(self.bytes(1)?[0])
    }

    /// A length-encoded integer.
    fn lenenc(&mut self) -> Result<u64, DbError> {
        match self.u8()? {
            0xFC => self.int::<2>(),
            0xFD => self.int::<3>(),
            0xFE => self.int::<8>(),
            0xFB | 0xFF => Err(protocol("MySQL sent a bad length-encoded integer")),
            n => Ok(u64::from(n)),
        }
    }

    /// A length-encoded string.
    fn lenenc_bytes(&mut self) -> Result<&'a [u8], DbError> {
        let n = self.lenenc()?;
        self.bytes(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// Appends a length-encoded integer.
fn put_lenenc(tx: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => tx.push(n as u8),
        251..=0xFFFF => {
            tx.push(0xFC);
            tx.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            tx.push(0xFD);
            tx.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            tx.push(0xFE);
            tx.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// An ERR packet as the database's error: its number, SQLSTATE (after `#`) and message.
fn error(b: &[u8]) -> DbError {
    let number = u16::from_le_bytes([
        b.get(1).copied().unwrap_or(0),
        b.get(2).copied().unwrap_or(0),
    ]);
    let rest = b.get(3..).unwrap_or_default();
    let (code, message) = match rest.strip_prefix(b"#") {
        Some(r) if r.len() >= 5 => (String::from_utf8_lossy(&r[..5]).into_owned(), &r[5..]),
        _ => (String::new(), rest),
    };
    WireError::mysql(number, code, String::from_utf8_lossy(message).into_owned())
}

/// What an OK packet (or an EOF packet, `eof`) says: rows changed and the server's status.
fn ok(b: &[u8], eof: bool) -> Result<(u64, u16), DbError> {
    let mut f = Fields::new(b, 1);
    if eof {
        f.int::<2>()?; // warnings
        return Ok((0, f.int::<2>()? as u16));
    }
    let affected = f.lenenc()?;
    f.lenenc()?; // last insert id
    Ok((affected, f.int::<2>()? as u16))
}

/// The payload of the packet at `at` of `rx` once all of it has come: its range, and the
/// sequence id of its last piece. A piece of `max` bytes goes on in the next packet; the
/// pieces are joined in place, their headers taken out, when the last one is there.
fn frame(rx: &mut Vec<u8>, at: usize, max: usize) -> Option<(Range<usize>, u8)> {
    let header = |rx: &[u8], i: usize| {
        let h = rx.get(i..i + 4)?;
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        (rx.len() >= i + 4 + len).then_some((len, h[3]))
    };
    let (len, seq) = header(rx, at)?;
    if len < max {
        return Some((at + 4..at + 4 + len, seq));
    }
    // Check that every piece has come before moving any.
    let mut end = at + 4 + len;
    loop {
        let (len, _) = header(rx, end)?;
        end += 4 + len;
        if len < max {
            break;
        }
    }
    let (mut write, mut read) = (at + 4 + len, at + 4 + len);
    let mut seq = seq;
    while read < end {
        let (len, s) = header(rx, read)?;
        seq = s;
        rx.copy_within(read + 4..read + 4 + len, write);
        write += len;
        read += 4 + len;
    }
    rx.drain(write..end);
    Some((at + 4..write, seq))
}

/// Ends the packet whose header `at` holds a place for: its length and sequence id, split
/// into pieces of `max` bytes when it is longer (then an empty piece ends one of exactly
/// that many). Gives the next sequence id.
fn seal(tx: &mut Vec<u8>, at: usize, mut seq: u8, max: usize) -> u8 {
    let len = tx.len() - at - 4;
    if len < max {
        tx[at..at + 3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
        tx[at + 3] = seq;
        return seq.wrapping_add(1);
    }
    let payload = tx.split_off(at + 4);
    tx.truncate(at);
    for piece in payload.chunks(max) {
        tx.extend_from_slice(&(piece.len() as u32).to_le_bytes()[..3]);
        tx.push(seq);
        tx.extend_from_slice(piece);
        seq = seq.wrapping_add(1);
    }
    if len.is_multiple_of(max) {
        tx.extend_from_slice(&[0, 0, 0, seq]);
        seq = seq.wrapping_add(1);
    }
    seq
}

impl MyConn {
    /// Starts a packet: a place for its header.
    fn begin(&mut self) -> usize {
        let at = self.s.tx.len();
        self.s.tx.extend_from_slice(&[0; 4]);
        at
    }

    fn end(&mut self, at: usize) {
        self.seq = seal(&mut self.s.tx, at, self.seq, MAX);
    }

    /// Starts a command: sequence ids start again at 0.
    fn command(&mut self, cmd: u8) -> usize {
        self.seq = 0;
        let at = self.begin();
        self.s.tx.push(cmd);
        at
    }

    /// The next packet's payload, in `rx` (consumed already: read it before the next call).
    async fn packet(&mut self) -> Result<Range<usize>, DbError> {
        loop {
            if let Some((r, seq)) = frame(&mut self.s.rx, self.s.at, MAX) {
                self.s.at = r.end;
                self.seq = seq.wrapping_add(1);
                return Ok(r);
            }
            let have = self.s.rx.len() - self.s.at;
            let want = match self.s.rx.get(self.s.at..self.s.at + 3) {
                Some(h) => 4 + u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize,
                None => 4,
            };
            self.s.fill(want.max(have + 1)).await?;
        }
    }

    /// Skips `n` packets (column definitions), and the EOF packet after them when the server
    /// sends one.
    async fn skip(&mut self, n: usize) -> Result<(), DbError> {
        let eof = usize::from(n > 0 && !self.deprecate_eof);
        for _ in 0..n + eof {
            self.packet().await?;
        }
        Ok(())
    }

    /// Reads a command's response to its end: an OK, an ERR, or result sets, as many as the
    /// server says follow. Rows are counted, and decoded (binary rows) when `keep`. For a
    /// prepared statement's execution (`cached` is `Some`, holding its cached definitions),
    /// definitions the server sends because they changed (a parameter's type decides a
    /// column's) are read and put in the cache for the executions that follow.
    async fn response(
        &mut self,
        keep: bool,
        mut cached: Option<&mut Option<Arc<[row::Column]>>>,
    ) -> Result<Done, DbError> {
        let mut done = Done::default();
        loop {
            let r = self.packet().await?;
            let b = &self.s.rx[r];
            let (n, follows) = match b.first() {
                Some(0x00) => {
                    let (affected, status) = ok(b, false)?;
                    done.affected += affected;
                    if status & MORE_RESULTS != 0 {
                        continue;
                    }
                    return Ok(done);
                }
                Some(0xFF) => return Err(error(b)),
                // A result set: its column count (a table has 4,096 at most: anything else
                // is a packet out of place, which must not be taken for that many columns).
                _ => {
                    let mut f = Fields::new(b, 0);
                    let n = match f.lenenc()? {
                        n @ 1..=4096 => n as usize,
                        n => return Err(protocol(format!("MySQL sent a result of {n} columns"))),
                    };
                    // With cached metadata a flag says whether column definitions follow.
                    (n, !self.cache_metadata || f.u8()? != 0)
                }
            };
            let recache = follows && self.cache_metadata && cached.is_some();
            let columns: Option<Arc<[row::Column]>> = if follows && (keep || recache) {
                let mut columns = Vec::with_capacity(n);
                for _ in 0..n {
                    let r = self.packet().await?;
                    columns.push(row::Column::parse(&self.s.rx[r])?);
                }
                if !self.deprecate_eof {
                    self.packet().await?;
                }
                let columns: Arc<[row::Column]> = columns.into();
                if let (true, Some(slot)) = (recache, cached.as_deref_mut()) {
                    *slot = Some(columns.clone());
                }
                Some(columns)
            } else if follows {
                self.skip(n).await?;
                None
            } else if keep {
                Some(cached.as_deref().cloned().flatten().ok_or_else(|| {
                    protocol("MariaDB sent no column definitions for a statement it did not cache")
                })?)
            } else {
                None
            };
            loop {
                let r = self.packet().await?;
                let b = &self.s.rx[r];
                match b.first() {
                    // The end of the rows: an EOF packet, or an OK one with an EOF's header.
                    Some(0xFE) if b.len() < MAX => {
                        let (affected, status) = ok(b, !self.deprecate_eof)?;
                        done.affected += affected;
                        if status & MORE_RESULTS == 0 {
                            return Ok(done);
                        }
                        break;
                    }
                    Some(0xFF) => return Err(error(b)),
                    _ => {
                        done.rows += 1;
                        if let Some(columns) = &columns {
                            done.data.push(row::json(b, columns)?);
                        }
                    }
                }
            }
        }
    }

    /// Prepares `sql`, giving its id and how many parameters it takes.
    async fn prepare(&mut self, sql: &str) -> Result<Statement, DbError> {
        let at = self.command(COM_STMT_PREPARE);
        self.s.tx.extend_from_slice(sql.as_bytes());
        self.end(at);
        self.s.flush().await?;
        let r = self.packet().await?;
        let b = &self.s.rx[r];
        match b.first() {
            Some(0x00) => {}
            Some(0xFF) => return Err(error(b)),
            _ => {
                return Err(protocol(
                    "MySQL answered COM_STMT_PREPARE with neither OK nor ERR",
                ))
            }
        }
        let mut f = Fields::new(b, 1);
        let id = f.int::<4>()? as u32;
        let columns = f.int::<2>()? as usize;
        let params = f.int::<2>()? as usize;
        self.skip(params).await?;
        if !self.cache_metadata || columns == 0 {
            self.skip(columns).await?;
            return Ok(Statement {
                id,
                params,
                columns: None,
                types: Vec::new(),
            });
        }
        // Kept: an execution will not send them again (no EOF after them: cached metadata is
        // asked for only with DEPRECATE_EOF).
        let mut defs = Vec::with_capacity(columns);
        for _ in 0..columns {
            let r = self.packet().await?;
            defs.push(row::Column::parse(&self.s.rx[r])?);
        }
        Ok(Statement {
            id,
            params,
            columns: Some(defs.into()),
            types: Vec::new(),
        })
    }

    /// Prepares a statement (not kept) and says how many parameters it takes.
    pub(crate) async fn parameters(&mut self, sql: &str) -> Result<usize, DbError> {
        let st = self.prepare(sql).await?;
        let at = self.command(COM_STMT_CLOSE);
        self.s.tx.extend_from_slice(&st.id.to_le_bytes());
        self.end(at);
        self.s.flush().await?;
        Ok(st.params)
    }

    /// Runs a statement, prepared on this connection at its first use, with `args` as binary
    /// parameters; `keep` keeps the rows as JSON.
    pub(crate) async fn run(
        &mut self,
        sql: &Arc<str>,
        args: &[Value],
        keep: bool,
    ) -> Result<Done, DbError> {
        let i = match self.statements.get(sql) {
            Some(&i) => i,
            None => {
                let st = self.prepare(sql).await?;
                self.prepared.push(st);
                self.statements.insert(sql.clone(), self.prepared.len() - 1);
                self.prepared.len() - 1
            }
        };
        let params = self.prepared[i].params;
        if args.len() != params {
            return Err(protocol(format!(
                "prepared statement expected {params} parameters but {} parameters were provided",
                args.len()
            )));
        }
        let at = self.command(COM_STMT_EXECUTE);
        execute(&mut self.s.tx, &mut self.prepared[i], args);
        self.end(at);
        self.s.flush().await?;
        // The cache is taken out for the response and put back (with what it may have
        // learned): the response reads through `self`, which holds the statements.
        let mut cached = self.prepared[i].columns.take();
        let done = self.response(keep, Some(&mut cached)).await;
        let st = &mut self.prepared[i];
        st.columns = cached;
        if done.is_err() {
            // Whether the server kept the types of a failed execution is not ours to know:
            // the next one sends them again.
            st.types.clear();
        }
        done
    }

    /// Runs text as it is (COM_QUERY: transaction control, DDL, scripts), reading every
    /// result and skipping the rows.
    pub(crate) async fn raw(&mut self, sql: &str) -> Result<(), DbError> {
        let at = self.command(COM_QUERY);
        self.s.tx.extend_from_slice(sql.as_bytes());
        self.end(at);
        self.s.flush().await?;
        self.response(false, None).await.map(drop)
    }

    /// Says goodbye (COM_QUIT), so the server counts no aborted connection.
    pub(crate) async fn close(mut self) {
        let at = self.command(COM_QUIT);
        self.end(at);
        let _ = self.s.flush().await;
    }

    /// The TLS version of the connection (`TLSv1.3`), or `None` in the clear.
    pub(crate) fn tls_version(&self) -> Option<&'static str> {
        self.s.tls_version()
    }

    /// How it logged in (`caching_sha2_password (full)`, ...).
    pub(crate) fn login_method(&self) -> &'static str {
        self.login
    }

    /// Bytes sent and received since the last call (the login left out).
    pub(crate) fn traffic(&mut self) -> (u64, u64) {
        self.s.traffic()
    }
}

/// A parameter's type code in COM_STMT_EXECUTE.
fn type_of(a: &Value) -> u8 {
    match a {
        Value::Int(_) => 0x08,   // LONGLONG
        Value::Float(_) => 0x05, // DOUBLE
        Value::Text(_) => 0xFD,  // VAR_STRING
        Value::Bool(_) => 0x01,  // TINY
        Value::Null => 0x06,     // NULL
    }
}

/// COM_STMT_EXECUTE's body after its command byte: the statement, no cursor, one
/// iteration, then the parameters' null bitmap, their types (only when they differ from the
/// statement's last execution: the server keeps them) and values.
fn execute(tx: &mut Vec<u8>, st: &mut Statement, args: &[Value]) {
    tx.extend_from_slice(&st.id.to_le_bytes());
    tx.push(0);
    tx.extend_from_slice(&1u32.to_le_bytes());
    if args.is_empty() {
        return;
    }
    let nulls = tx.len();
    tx.resize(nulls + args.len().div_ceil(8), 0);
    for (i, a) in args.iter().enumerate() {
        if let Value::Null = a {
            tx[nulls + i / 8] |= 1 << (i % 8);
        }
    }
    let same =
        st.types.len() == args.len() && st.types.iter().zip(args).all(|(t, a)| *t == type_of(a));
    tx.push(u8::from(!same));
    if !same {
        st.types.clear();
        for a in args {
            st.types.push(type_of(a));
            tx.extend_from_slice(&[type_of(a), 0]);
        }
    }
    for a in args {
        match a {
            Value::Int(n) => tx.extend_from_slice(&n.to_le_bytes()),
            Value::Float(x) => tx.extend_from_slice(&x.to_le_bytes()),
            Value::Text(s) => {
                put_lenenc(tx, s.len() as u64);
                tx.extend_from_slice(s.as_bytes());
            }
            Value::Bool(b) => tx.push(u8::from(*b)),
            Value::Null => {}
        }
    }
}

#[cfg(test)]
mod tests;
