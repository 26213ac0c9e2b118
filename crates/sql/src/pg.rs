//! PostgreSQL's wire protocol (version 3) for the load's connections, plain or TLS, on
//! rust-postgres' protocol crate (`postgres-protocol`): its frontend messages, its backend
//! parsing for the login, its SCRAM-SHA-256 (with channel binding, `tls-server-end-point`,
//! over TLS) and MD5. sqlx turned every row into a `PgRow` (its column offsets in a vector,
//! its metadata behind an `Arc`) and passed it through a stream: about 800,000 instructions
//! for a sysbench read-only transaction (some 310 rows), against 173,000 for sysbench's whole
//! client. So the loop that reads a statement's results is ours: a row the load does not keep
//! is a length read and skipped, with no message built for it. So are the Bind, Execute and
//! Sync each execution sends (`bind`): through the kept crate's writer they took 840 of a
//! point select's 9,700 instructions.
//!
//! What it speaks: `sslmode` disable (and allow), prefer, require, verify-ca and verify-full
//! (TLS through throng-net's rustls, the bytes counted as they cross the wire); the startup
//! message; trust, cleartext, MD5 and SCRAM-SHA-256 logins; named statements prepared once per
//! connection (Parse and Describe, then Bind, Execute and Sync with text parameters whose
//! types the server infers); the simple query protocol for transaction control and scripts.
//! A login it does not speak (Kerberos, GSSAPI, SSPI) is a clear error. Opening the
//! connection and logging in are [`login`]'s; this file runs the statements.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator as _;
use postgres_protocol::message::{backend, frontend};

use crate::codec::Socket;
use crate::conn::Done;
use crate::error::DbError;
use crate::error::WireError;
use crate::param::Value;

mod login;

pub(crate) use login::open;

/// A column of a statement's result.
#[derive(Debug)]
struct Column {
    name: String,
    oid: u32,
}

/// A statement prepared on the connection.
#[derive(Debug)]
struct Statement {
    /// The start of its Bind message (see [`bind_head`]).
    bind_head: Vec<u8>,
    /// Its parameters' types, as the server inferred them.
    params: Vec<u32>,
    columns: Arc<[Column]>,
}

/// An open connection, ready for queries.
#[derive(Debug)]
pub(crate) struct PgConn {
    s: Socket,
    /// Messages being written, handed to the socket at [`PgConn::flush`].
    buf: BytesMut,
    /// Each statement's place in `prepared`, by its text. SipHash, std's, took 255
    /// instructions a lookup of a sysbench statement; foldhash takes a tenth of that.
    statements: HashMap<Arc<str>, usize, foldhash::fast::RandomState>,
    prepared: Vec<Statement>,
    /// How it logged in: `trust`, `password`, `MD5`, `SCRAM-SHA-256`, `SCRAM-SHA-256-PLUS`
    /// (bound to the TLS channel).
    login: &'static str,
}

fn protocol(what: impl Into<String>) -> DbError {
    DbError::Protocol(what.into())
}

/// An ErrorResponse (`message`: the whole message, tag and length too).
fn database_error(message: &[u8]) -> DbError {
    let mut code = String::new();
    let mut text = String::new();
    if let Ok(Some(backend::Message::ErrorResponse(body))) =
        backend::Message::parse(&mut BytesMut::from(message))
    {
        let mut fields = body.fields();
        while let Ok(Some(f)) = fields.next() {
            match f.type_() {
                b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
                b'M' => text = String::from_utf8_lossy(f.value_bytes()).into_owned(),
                _ => {}
            }
        }
    }
    WireError::postgres(code, text)
}

/// Reads a big-endian integer at `at` of `b`, or fails as a malformed message.
fn int<const N: usize>(b: &[u8], at: usize) -> Result<[u8; N], DbError> {
    b.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| protocol("PostgreSQL sent a message shorter than its fields"))
}

fn cstr_at(b: &[u8], at: usize) -> Result<(&[u8], usize), DbError> {
    let rest = b.get(at..).unwrap_or_default();
    let n = rest
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| protocol("PostgreSQL sent a string without its end"))?;
    Ok((&rest[..n], at + n + 1))
}

/// A message could not be written (a statement or value holding a NUL byte, or too long).
fn unwritable(e: impl std::fmt::Display) -> DbError {
    protocol(format!("cannot send it to PostgreSQL: {e}"))
}

impl PgConn {
    /// Hands the messages written to the socket and sends them.
    async fn flush(&mut self) -> Result<(), DbError> {
        self.s.tx.extend_from_slice(&self.buf);
        self.buf.clear();
        Ok(self.s.flush().await?)
    }

    /// The TLS version of the connection (`TLSv1.3`), or `None` in the clear.
    pub(crate) fn tls_version(&self) -> Option<&'static str> {
        self.s.tls_version()
    }

    /// How it logged in (`SCRAM-SHA-256-PLUS`, ...).
    pub(crate) fn login_method(&self) -> &'static str {
        self.login
    }

    /// The next message: its tag and the range of its body in `rx` (consume it after).
    async fn message(&mut self) -> Result<(u8, std::ops::Range<usize>), DbError> {
        loop {
            match self.buffered()? {
                Ok(m) => return Ok(m),
                Err(want) => self.s.fill(want).await?,
            }
        }
    }

    /// The next message if `rx` holds all of it (its tag and the range of its body), else
    /// how many unconsumed bytes it needs. Without an `await`: a statement's four messages
    /// mostly come in one read, and an async call a message cost some 60 instructions each.
    fn buffered(&self) -> Result<Result<(u8, std::ops::Range<usize>), usize>, DbError> {
        let (rx, at) = (&self.s.rx, self.s.at);
        let Some(h) = rx.get(at..at + 5) else {
            return Ok(Err(5));
        };
        let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
        if len < 4 {
            return Err(protocol("PostgreSQL sent a message with a bad length"));
        }
        if rx.len() - at > len {
            return Ok(Ok((h[0], at + 5..at + 1 + len)));
        }
        Ok(Err(len + 1))
    }

    fn consume(&mut self, body: &std::ops::Range<usize>) {
        self.s.at = body.end;
    }

    /// Answers a CopyInResponse (`COPY … FROM STDIN`): throng has no data to send, so it fails
    /// the copy, and the server answers with an error (57014, "COPY from stdin failed: …")
    /// rather than waiting for data until the timeout. After an extended-protocol statement a
    /// Sync follows: the server ignored the one sent with Execute while it was copying.
    async fn refuse_copy(&mut self, extended: bool) -> Result<(), DbError> {
        frontend::copy_fail(
            "throng sends no data to COPY FROM STDIN: load a file on the server instead",
            &mut self.buf,
        )
        .map_err(unwritable)?;
        if extended {
            frontend::sync(&mut self.buf);
        }
        self.flush().await
    }

    /// Reads to ReadyForQuery, returning the first error the server sent on the way.
    async fn until_ready(&mut self, mut err: Option<DbError>) -> Result<(), DbError> {
        loop {
            let (tag, body) = self.message().await?;
            if tag == b'E' && err.is_none() {
                err = Some(database_error(&self.s.rx[body.start - 5..body.end]));
            }
            self.consume(&body);
            if tag == b'G' {
                self.refuse_copy(false).await?;
            }
            if tag == b'Z' {
                return err.map_or(Ok(()), Err);
            }
        }
    }

    /// Prepares `sql` as statement `t<id>`, returning its parameter types and columns.
    async fn prepare(&mut self, name: &str, sql: &str) -> Result<Statement, DbError> {
        frontend::parse(name, sql, [], &mut self.buf).map_err(unwritable)?;
        frontend::describe(b'S', name, &mut self.buf).map_err(unwritable)?;
        frontend::sync(&mut self.buf);
        self.flush().await?;
        let mut params = Vec::new();
        let mut columns = Vec::new();
        let mut err = None;
        loop {
            let (tag, body) = self.message().await?;
            let b = &self.s.rx[body.clone()];
            match tag {
                b't' => {
                    let n = u16::from_be_bytes(int(b, 0)?) as usize;
                    for i in 0..n {
                        params.push(u32::from_be_bytes(int(b, 2 + 4 * i)?));
                    }
                }
                b'T' => {
                    let n = u16::from_be_bytes(int(b, 0)?) as usize;
                    let mut at = 2;
                    for _ in 0..n {
                        let (name, next) = cstr_at(b, at)?;
                        let oid = u32::from_be_bytes(int(b, next + 6)?);
                        columns.push(Column {
                            name: String::from_utf8_lossy(name).into_owned(),
                            oid,
                        });
                        at = next + 18;
                    }
                }
                b'E' if err.is_none() => {
                    err = Some(database_error(&self.s.rx[body.start - 5..body.end]))
                }
                b'Z' => {
                    self.consume(&body);
                    break;
                }
                _ => {}
            }
            self.consume(&body);
        }
        if let Some(e) = err {
            return Err(e);
        }
        Ok(Statement {
            bind_head: bind_head(name),
            params,
            columns: columns.into(),
        })
    }

    /// Prepares a statement (unnamed, not kept) and says how many parameters it takes.
    pub(crate) async fn parameters(&mut self, sql: &str) -> Result<usize, DbError> {
        Ok(self.prepare("", sql).await?.params.len())
    }

    /// Runs a statement, prepared on this connection at its first use, with `args` as text
    /// parameters; `keep` keeps the rows as JSON.
    pub(crate) async fn run(
        &mut self,
        sql: &Arc<str>,
        args: &[Value],
        keep: bool,
    ) -> Result<Done, DbError> {
        // One lookup a statement once it is prepared.
        let i = match self.statements.get(sql) {
            Some(&i) => i,
            None => {
                let name = format!("t{}", self.prepared.len() + 1);
                let st = self.prepare(&name, sql).await?;
                self.prepared.push(st);
                self.statements.insert(sql.clone(), self.prepared.len() - 1);
                self.prepared.len() - 1
            }
        };
        let st = &self.prepared[i];
        let columns = keep.then(|| st.columns.clone());
        bind(&mut self.s.tx, st, args)?;
        self.s.flush().await?;
        let mut done = Done::default();
        let mut err = None;
        loop {
            let (tag, body) = match self.buffered()? {
                Ok(m) => m,
                Err(want) => {
                    self.s.fill(want).await?;
                    continue;
                }
            };
            match tag {
                b'D' => {
                    done.rows += 1;
                    if let Some(cols) = &columns {
                        let row = row_json(&self.s.rx[body.clone()], cols)?;
                        done.data.push(row);
                    }
                }
                b'C' => done.affected += affected(&self.s.rx[body.clone()]),
                b'E' if err.is_none() => {
                    err = Some(database_error(&self.s.rx[body.start - 5..body.end]))
                }
                b'Z' => {
                    self.consume(&body);
                    return err.map_or(Ok(done), Err);
                }
                b'G' => {
                    self.consume(&body);
                    self.refuse_copy(true).await?;
                    continue;
                }
                // `COPY … TO STDOUT`: a row a CopyData.
                b'd' => done.rows += 1,
                _ => {}
            }
            self.consume(&body);
        }
    }

    /// Runs text as it is (the simple query protocol: transaction control, DDL, scripts).
    pub(crate) async fn raw(&mut self, sql: &str) -> Result<(), DbError> {
        frontend::query(sql, &mut self.buf).map_err(unwritable)?;
        self.flush().await?;
        self.until_ready(None).await
    }

    /// Says goodbye (Terminate), so the server logs no broken connection.
    pub(crate) async fn close(mut self) {
        frontend::terminate(&mut self.buf);
        let _ = self.flush().await;
    }

    /// Bytes sent and received since the last call (the login left out).
    pub(crate) fn traffic(&mut self) -> (u64, u64) {
        self.s.traffic()
    }
}

/// Bind (text parameters, text results), Execute and Sync for a prepared statement, into
/// `out`: the bytes postgres-protocol's `frontend::bind`, `execute` and `sync` write (a test
/// holds them to it), written here because that is a third of the client's own instructions
/// a point select: a dozen `BytesMut::put_slice` calls, a closure a value, a copy into the
/// socket's buffer. Here: the statement's head made once, a length and the text a value.
fn bind(out: &mut Vec<u8>, st: &Statement, args: &[Value]) -> Result<(), DbError> {
    let start = out.len();
    out.extend_from_slice(&st.bind_head);
    let n = u16::try_from(args.len())
        .map_err(|_| unwritable(format!("{} parameters, over 65,535", args.len())))?;
    out.extend_from_slice(&n.to_be_bytes());
    for (i, a) in args.iter().enumerate() {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        match a {
            Value::Null => {
                out[at..at + 4].copy_from_slice(&(-1i32).to_be_bytes());
                continue;
            }
            Value::Int(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
            Value::Float(x) => {
                use std::io::Write as _;
                let _ = write!(out, "{x}");
            }
            Value::Text(s) => out.extend_from_slice(s.as_bytes()),
            // A boolean bound to a number (an integer parameter) is 1 or 0.
            Value::Bool(b) => out.extend_from_slice(match (st.params.get(i), b) {
                (Some(16) | None, true) => b"t",
                (Some(16) | None, false) => b"f",
                (_, true) => b"1",
                (_, false) => b"0",
            }),
        }
        let len =
            i32::try_from(out.len() - at - 4).map_err(|_| unwritable("a value over 2 GiB"))?;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    // No result formats (all text); Execute of the unnamed portal, every row; Sync.
    out.extend_from_slice(&[0, 0, b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, b'S', 0, 0, 0, 4]);
    let len = i32::try_from(out.len() - start - 1 - 15)
        .map_err(|_| unwritable("a message over 2 GiB"))?;
    out[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// The start of a Bind of statement `name`: its tag, room for its length, the unnamed portal,
/// the name, and no parameter formats (all text).
fn bind_head(name: &str) -> Vec<u8> {
    let mut head = Vec::with_capacity(name.len() + 9);
    head.extend_from_slice(&[b'B', 0, 0, 0, 0, 0]);
    head.extend_from_slice(name.as_bytes());
    head.extend_from_slice(&[0, 0, 0]);
    head
}

/// The rows a CommandComplete's tag counts (`INSERT 0 5`, `UPDATE 3`, `SELECT 10`), as sqlx
/// counts them: its last number.
/// Read digit by digit: `str::parse` took 118 instructions a statement.
fn affected(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&c| c == b' ').next().unwrap_or_default();
    if last.is_empty() {
        return 0;
    }
    last.iter()
        .try_fold(0u64, |n, &d| {
            let d = d.checked_sub(b'0').filter(|d| *d < 10)?;
            n.checked_mul(10)?.checked_add(u64::from(d))
        })
        .unwrap_or(0)
}

/// A DataRow as a JSON object, each value by its column's type: numbers, booleans and text;
/// other types as their text.
fn row_json(b: &[u8], cols: &[Column]) -> Result<serde_json::Value, DbError> {
    let mut m = serde_json::Map::new();
    let mut at = 2;
    for c in cols {
        let len = i32::from_be_bytes(int(b, at)?);
        at += 4;
        let v = if len < 0 {
            serde_json::Value::Null
        } else {
            let raw = b
                .get(at..at + len as usize)
                .ok_or_else(|| protocol("PostgreSQL sent a row shorter than its columns"))?;
            at += len as usize;
            let text = String::from_utf8_lossy(raw);
            match c.oid {
                // bool
                16 => serde_json::Value::Bool(text == "t"),
                // int8, int2, int4, oid, float4, float8, numeric
                20 | 21 | 23 | 26 | 700 | 701 | 1700 => text
                    .parse::<serde_json::Number>()
                    .map_or(serde_json::Value::String(text.into_owned()), |n| {
                        serde_json::Value::Number(n)
                    }),
                _ => serde_json::Value::String(text.into_owned()),
            }
        };
        m.insert(c.name.clone(), v);
    }
    Ok(serde_json::Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// postgres-protocol's Bind of `t12` (each value as `text` writes it), Execute and Sync.
    fn theirs(args: &[Value], text: &[&str]) -> BytesMut {
        let mut buf = BytesMut::new();
        let values = args.iter().zip(text);
        let write = |(a, t): (&Value, &&str), buf: &mut BytesMut| {
            if matches!(a, Value::Null) {
                return Ok(postgres_protocol::IsNull::Yes);
            }
            buf.extend_from_slice(t.as_bytes());
            Ok(postgres_protocol::IsNull::No)
        };
        let bound = frontend::bind("", "t12", [], values, write, [], &mut buf);
        assert!(bound.is_ok());
        frontend::execute("", 0, &mut buf).unwrap();
        frontend::sync(&mut buf);
        buf
    }

    /// Our Bind, Execute and Sync are postgres-protocol's, byte for byte.
    #[test]
    fn bind_writes_what_postgres_protocol_writes() {
        let st = Statement {
            bind_head: bind_head("t12"),
            params: vec![23, 25, 16, 23, 701, 1043],
            columns: Arc::from([]),
        };
        let args = [
            Value::Int(-42),
            Value::Text("a\0b é".into()),
            Value::Bool(true),
            Value::Bool(false),
            Value::Float(1.5),
            Value::Null,
        ];
        let text = ["-42", "a\0b é", "t", "0", "1.5", ""];
        for n in [args.len(), 1, 0] {
            let mut ours = b"before".to_vec();
            bind(&mut ours, &st, &args[..n]).unwrap();
            assert_eq!(&ours[..6], b"before");
            assert_eq!(ours[6..], theirs(&args[..n], &text[..n])[..], "{n} values");
        }
    }

    #[test]
    fn command_tags_count_their_rows() {
        assert_eq!(affected(b"INSERT 0 5\0"), 5);
        assert_eq!(affected(b"UPDATE 3\0"), 3);
        assert_eq!(affected(b"BEGIN\0"), 0);
        assert_eq!(affected(b"SELECT 18446744073709551615\0"), u64::MAX);
        assert_eq!(affected(b"SELECT 18446744073709551616\0"), 0);
        assert_eq!(affected(b"SELECT 1x\0"), 0);
        assert_eq!(affected(b"SELECT \0"), 0);
    }
}
