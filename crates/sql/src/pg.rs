//! PostgreSQL's wire protocol (version 3) for the load's own connections, in place of sqlx on
//! the hot path. sqlx turns every row into a `PgRow` (its column offsets in a vector, its
//! metadata behind an `Arc`) and passes it through a stream: about 800,000 instructions for a
//! sysbench read-only transaction (some 310 rows), against 173,000 for sysbench's whole client.
//! Here a row the load does not keep is a length read and skipped.
//!
//! What it speaks: the startup message; trust, cleartext, MD5 and SCRAM-SHA-256 logins (no
//! channel binding); named statements prepared once per connection (Parse and Describe, then
//! Bind, Execute and Sync with text parameters whose types the server infers); the simple
//! query protocol for transaction control and scripts. Everything else (TLS, a login this
//! module does not know, a password it would have to find in a password file) goes to sqlx:
//! [`open`] says [`Opened::Sqlx`] and the caller connects with sqlx instead.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sqlx::postgres::{PgConnectOptions, PgSslMode};

use crate::codec::{Socket, WireError};
use crate::conn::Done;
use crate::param::Value;

/// A column of a statement's result.
#[derive(Debug)]
struct Column {
    name: String,
    oid: u32,
}

/// A statement prepared on the connection.
#[derive(Debug)]
struct Statement {
    /// Its name on the server: `t` and this number.
    id: u32,
    /// Its parameters' types, as the server inferred them.
    params: Vec<u32>,
    columns: Arc<[Column]>,
}

/// An open connection, ready for queries.
#[derive(Debug)]
pub(crate) struct PgConn {
    s: Socket,
    statements: HashMap<Arc<str>, Statement>,
}

/// What [`open`] made.
pub(crate) type Opened = crate::codec::Opened<PgConn>;

fn protocol(what: impl Into<String>) -> sqlx::Error {
    sqlx::Error::Protocol(what.into())
}

/// The fields of an ErrorResponse.
fn database_error(body: &[u8]) -> sqlx::Error {
    let mut code = String::new();
    let mut message = String::new();
    let mut fields = body;
    while let [kind, rest @ ..] = fields {
        if *kind == 0 {
            break;
        }
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let value = String::from_utf8_lossy(&rest[..end]);
        match kind {
            b'C' => code = value.into_owned(),
            b'M' => message = value.into_owned(),
            _ => {}
        }
        fields = rest.get(end + 1..).unwrap_or_default();
    }
    WireError::postgres(code, message)
}

/// A message being written: its tag, then a length filled in by [`end`].
fn begin(tx: &mut Vec<u8>, tag: u8) -> usize {
    tx.push(tag);
    let at = tx.len();
    tx.extend_from_slice(&[0; 4]);
    at
}

fn end(tx: &mut [u8], at: usize) {
    let len = (tx.len() - at) as u32;
    tx[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn cstr(tx: &mut Vec<u8>, s: &[u8]) {
    tx.extend_from_slice(s);
    tx.push(0);
}

/// Reads a big-endian integer at `at` of `b`, or fails as a malformed message.
fn int<const N: usize>(b: &[u8], at: usize) -> Result<[u8; N], sqlx::Error> {
    b.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| protocol("PostgreSQL sent a message shorter than its fields"))
}

fn cstr_at(b: &[u8], at: usize) -> Result<(&[u8], usize), sqlx::Error> {
    let rest = b.get(at..).unwrap_or_default();
    let n = rest
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| protocol("PostgreSQL sent a string without its end"))?;
    Ok((&rest[..n], at + n + 1))
}

/// Opens a connection and logs in, or says that sqlx must (see [`Opened`]). `url` is where the
/// password comes from (sqlx's options do not give it back); `connected` is set once a server
/// accepted the connection (what a timeout's message tells apart).
pub(crate) async fn open(
    o: &PgConnectOptions,
    url: &str,
    connected: &AtomicBool,
) -> Result<Opened, sqlx::Error> {
    let tls = match o.get_ssl_mode() {
        PgSslMode::Disable | PgSslMode::Allow => false,
        PgSslMode::Prefer => true,
        _ => return Ok(Opened::Sqlx),
    };
    let socket = match o.get_socket() {
        Some(dir) => Some(format!("{}/.s.PGSQL.{}", dir.display(), o.get_port())),
        None if o.get_host().starts_with('/') => {
            Some(format!("{}/.s.PGSQL.{}", o.get_host(), o.get_port()))
        }
        None => None,
    };
    let s = match socket {
        Some(path) => Socket::unix(path).await?,
        None => Socket::tcp(o.get_host(), o.get_port()).await?,
    };
    connected.store(true, Ordering::Relaxed);
    let mut c = PgConn {
        s,
        statements: HashMap::new(),
    };
    // `prefer` asks for TLS over TCP; a server that would give it is left to sqlx, which
    // speaks it.
    if tls && c.s.is_tcp() {
        c.s.tx.extend_from_slice(&[0, 0, 0, 8, 4, 210, 22, 47]);
        c.s.flush().await?;
        while c.s.rx.len() == c.s.at {
            c.s.fill(1).await?;
        }
        c.s.at += 1;
        match c.s.rx[c.s.at - 1] {
            b'N' => {}
            b'S' => return Ok(Opened::Sqlx),
            _ => return Err(not_postgres(&c.s.rx[c.s.at - 1..], "SSLRequest")),
        }
    }
    if !c.login(o, url).await? {
        return Ok(Opened::Sqlx);
    }
    c.s.traffic();
    Ok(Opened::Ready(c))
}

/// The error for a server that answered `seen` to `what` as PostgreSQL never would: an HTTP
/// server's status line, or MySQL's and MariaDB's greeting (they speak first: a packet's
/// 3-byte length, sequence 0, then protocol 10 or an error's 0xFF), named as such.
fn not_postgres(seen: &[u8], what: &str) -> sqlx::Error {
    if let [_, _, _, 0, 10 | 0xFF, ..] = seen {
        return protocol(
            "not a PostgreSQL server: it greeted first, as a MySQL or MariaDB server does \
             (mysql:// is for those)",
        );
    }
    let seen = &seen[..seen.len().min(24)];
    protocol(format!(
        "not a PostgreSQL server: it answered `{}` to {what}",
        String::from_utf8_lossy(seen).escape_debug()
    ))
}

impl PgConn {
    /// The startup message and the login; `false` when the server asks for a login this module
    /// does not speak, or for a password the URL does not give.
    async fn login(&mut self, o: &PgConnectOptions, url: &str) -> Result<bool, sqlx::Error> {
        let tx = &mut self.s.tx;
        tx.clear();
        tx.extend_from_slice(&[0; 4]);
        tx.extend_from_slice(&196_608u32.to_be_bytes());
        let mut params = vec![
            ("user", o.get_username()),
            ("DateStyle", "ISO, MDY"),
            ("client_encoding", "UTF8"),
            ("TimeZone", "UTC"),
        ];
        params.extend(o.get_database().map(|d| ("database", d)));
        params.extend(o.get_application_name().map(|a| ("application_name", a)));
        params.extend(o.get_options().map(|a| ("options", a)));
        for (k, v) in params {
            cstr(tx, k.as_bytes());
            cstr(tx, v.as_bytes());
        }
        tx.push(0);
        let len = tx.len() as u32;
        tx[..4].copy_from_slice(&len.to_be_bytes());
        self.s.flush().await?;
        // A server that is not PostgreSQL (an HTTP server on the port) is named as such, not
        // waited on for a message length it never meant.
        while self.s.rx.len() == self.s.at {
            self.s.fill(1).await?;
        }
        if !matches!(self.s.rx[self.s.at], b'R' | b'E' | b'N' | b'v') {
            return Err(not_postgres(&self.s.rx[self.s.at..], "its startup message"));
        }
        let password = crate::url::password_or_env(url);
        let mut scram: Option<Scram> = None;
        loop {
            let (tag, body) = self.message().await?;
            let b = &self.s.rx[body.clone()];
            match tag {
                b'R' => {
                    let kind = u32::from_be_bytes(int(b, 0)?);
                    let rest = b[4..].to_vec();
                    self.consume(&body);
                    let Some(pw) = password.as_deref() else {
                        if kind == 0 {
                            continue;
                        }
                        return Ok(false);
                    };
                    match kind {
                        0 => {}
                        3 => {
                            let at = begin(&mut self.s.tx, b'p');
                            cstr(&mut self.s.tx, pw.as_bytes());
                            end(&mut self.s.tx, at);
                            self.s.flush().await?;
                        }
                        5 => {
                            let inner = hex_md5(&[pw.as_bytes(), o.get_username().as_bytes()]);
                            let outer = hex_md5(&[inner.as_bytes(), &rest]);
                            let at = begin(&mut self.s.tx, b'p');
                            cstr(&mut self.s.tx, format!("md5{outer}").as_bytes());
                            end(&mut self.s.tx, at);
                            self.s.flush().await?;
                        }
                        10 => {
                            let offers = rest.split(|&c| c == 0).any(|m| m == b"SCRAM-SHA-256");
                            if !offers {
                                return Ok(false);
                            }
                            let s = Scram::new(pw);
                            let first = s.first();
                            let at = begin(&mut self.s.tx, b'p');
                            cstr(&mut self.s.tx, b"SCRAM-SHA-256");
                            self.s
                                .tx
                                .extend_from_slice(&(first.len() as u32).to_be_bytes());
                            self.s.tx.extend_from_slice(first.as_bytes());
                            end(&mut self.s.tx, at);
                            self.s.flush().await?;
                            scram = Some(s);
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(|| protocol("SASL out of turn"))?;
                            let last = s.last(&rest)?;
                            let at = begin(&mut self.s.tx, b'p');
                            self.s.tx.extend_from_slice(last.as_bytes());
                            end(&mut self.s.tx, at);
                            self.s.flush().await?;
                        }
                        12 => {
                            let s = scram.as_ref().ok_or_else(|| protocol("SASL out of turn"))?;
                            s.verify(&rest)?;
                        }
                        _ => return Ok(false),
                    }
                }
                b'E' => return Err(database_error(b)),
                b'Z' => {
                    self.consume(&body);
                    return Ok(true);
                }
                // ParameterStatus, BackendKeyData, NoticeResponse.
                _ => self.consume(&body),
            }
        }
    }

    /// The next message: its tag and the range of its body in `rx` (consume it after).
    async fn message(&mut self) -> Result<(u8, std::ops::Range<usize>), sqlx::Error> {
        loop {
            let (rx, at) = (&self.s.rx, self.s.at);
            let have = rx.len() - at;
            let mut want = 5;
            if have >= 5 {
                let h = &rx[at..at + 5];
                let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
                if len < 4 {
                    return Err(protocol("PostgreSQL sent a message with a bad length"));
                }
                if have > len {
                    return Ok((h[0], at + 5..at + 1 + len));
                }
                want = len + 1;
            }
            self.s.fill(want).await?;
        }
    }

    fn consume(&mut self, body: &std::ops::Range<usize>) {
        self.s.at = body.end;
    }

    /// Answers a CopyInResponse (`COPY … FROM STDIN`): throng has no data to send, so it fails
    /// the copy, and the server answers with an error (57014, "COPY from stdin failed: …")
    /// rather than waiting for data until the timeout. After an extended-protocol statement a
    /// Sync follows: the server ignored the one sent with Execute while it was copying.
    async fn refuse_copy(&mut self, extended: bool) -> Result<(), sqlx::Error> {
        let tx = &mut self.s.tx;
        let at = begin(tx, b'f');
        cstr(
            tx,
            b"throng sends no data to COPY FROM STDIN: load a file on the server instead",
        );
        end(tx, at);
        if extended {
            let at = begin(tx, b'S');
            end(tx, at);
        }
        Ok(self.s.flush().await?)
    }

    /// Reads to ReadyForQuery, returning the first error the server sent on the way.
    async fn until_ready(&mut self, mut err: Option<sqlx::Error>) -> Result<(), sqlx::Error> {
        loop {
            let (tag, body) = self.message().await?;
            if tag == b'E' && err.is_none() {
                err = Some(database_error(&self.s.rx[body.clone()]));
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
    async fn prepare(&mut self, name: &str, sql: &str) -> Result<Statement, sqlx::Error> {
        let tx = &mut self.s.tx;
        let at = begin(tx, b'P');
        cstr(tx, name.as_bytes());
        cstr(tx, sql.as_bytes());
        tx.extend_from_slice(&0u16.to_be_bytes());
        end(tx, at);
        let at = begin(tx, b'D');
        tx.push(b'S');
        cstr(tx, name.as_bytes());
        end(tx, at);
        let at = begin(tx, b'S');
        end(tx, at);
        self.s.flush().await?;
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
                b'E' if err.is_none() => err = Some(database_error(b)),
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
            id: 0,
            params,
            columns: columns.into(),
        })
    }

    /// Prepares a statement (unnamed, not kept) and says how many parameters it takes.
    pub(crate) async fn parameters(&mut self, sql: &str) -> Result<usize, sqlx::Error> {
        Ok(self.prepare("", sql).await?.params.len())
    }

    /// Runs a statement, prepared on this connection at its first use, with `args` as text
    /// parameters; `keep` keeps the rows as JSON.
    pub(crate) async fn run(
        &mut self,
        sql: &Arc<str>,
        args: &[Value],
        keep: bool,
    ) -> Result<Done, sqlx::Error> {
        if !self.statements.contains_key(sql) {
            let id = self.statements.len() as u32 + 1;
            let mut st = self.prepare(&format!("t{id}"), sql).await?;
            st.id = id;
            self.statements.insert(sql.clone(), st);
        }
        let st = &self.statements[sql];
        let columns = keep.then(|| st.columns.clone());
        bind(&mut self.s.tx, st, args);
        self.s.flush().await?;
        let mut done = Done::default();
        let mut err = None;
        loop {
            let (tag, body) = self.message().await?;
            match tag {
                b'D' => {
                    done.rows += 1;
                    if let Some(cols) = &columns {
                        let row = row_json(&self.s.rx[body.clone()], cols)?;
                        done.data.push(row);
                    }
                }
                b'C' => done.affected += affected(&self.s.rx[body.clone()]),
                b'E' if err.is_none() => err = Some(database_error(&self.s.rx[body.clone()])),
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
    pub(crate) async fn raw(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        let at = begin(&mut self.s.tx, b'Q');
        cstr(&mut self.s.tx, sql.as_bytes());
        end(&mut self.s.tx, at);
        self.s.flush().await?;
        self.until_ready(None).await
    }

    /// Says goodbye (Terminate), so the server logs no broken connection.
    pub(crate) async fn close(mut self) {
        let at = begin(&mut self.s.tx, b'X');
        end(&mut self.s.tx, at);
        let _ = self.s.flush().await;
    }

    /// Bytes sent and received since the last call (the login left out).
    pub(crate) fn traffic(&mut self) -> (u64, u64) {
        self.s.traffic()
    }
}

/// Bind (text parameters, text results), Execute and Sync for a prepared statement.
fn bind(tx: &mut Vec<u8>, st: &Statement, args: &[Value]) {
    use std::io::Write as _;
    let at = begin(tx, b'B');
    tx.push(0); // the unnamed portal
    let _ = write!(tx, "t{}", st.id);
    tx.push(0);
    tx.extend_from_slice(&0u16.to_be_bytes()); // every parameter in text
    tx.extend_from_slice(&(args.len() as u16).to_be_bytes());
    for (i, a) in args.iter().enumerate() {
        if let Value::Null = a {
            tx.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        let len_at = tx.len();
        tx.extend_from_slice(&[0; 4]);
        match a {
            Value::Int(n) => {
                let mut b = itoa::Buffer::new();
                tx.extend_from_slice(b.format(*n).as_bytes());
            }
            Value::Float(x) => {
                let _ = write!(tx, "{x}");
            }
            Value::Text(s) => tx.extend_from_slice(s.as_bytes()),
            // A boolean bound to a number (an integer parameter) is 1 or 0.
            Value::Bool(b) => tx.extend_from_slice(match (st.params.get(i), b) {
                (Some(16) | None, true) => b"t",
                (Some(16) | None, false) => b"f",
                (_, true) => b"1",
                (_, false) => b"0",
            }),
            Value::Null => unreachable!("written above"),
        }
        let len = (tx.len() - len_at - 4) as u32;
        tx[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
    }
    tx.extend_from_slice(&0u16.to_be_bytes()); // every result column in text
    end(tx, at);
    let at = begin(tx, b'E');
    tx.push(0);
    tx.extend_from_slice(&0u32.to_be_bytes());
    end(tx, at);
    let at = begin(tx, b'S');
    end(tx, at);
}

/// The rows a CommandComplete's tag counts (`INSERT 0 5`, `UPDATE 3`, `SELECT 10`), as sqlx
/// counts them: its last number.
fn affected(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&c| c == b' ').next().unwrap_or_default();
    std::str::from_utf8(last)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A DataRow as a JSON object, each value by its column's type: numbers, booleans and text;
/// other types as their text.
fn row_json(b: &[u8], cols: &[Column]) -> Result<serde_json::Value, sqlx::Error> {
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

fn hex_md5(parts: &[&[u8]]) -> String {
    use md5::Digest as _;
    let mut h = md5::Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A SCRAM-SHA-256 exchange (RFC 5802 and 7677), without channel binding: PostgreSQL checks
/// the password given at startup and ignores the user name sent here.
struct Scram {
    password: String,
    nonce: String,
    /// The client-first-message-bare, then the AuthMessage.
    auth: String,
    /// The server's signature to expect.
    server: Vec<u8>,
}

impl Scram {
    fn new(password: &str) -> Scram {
        use rand::Rng as _;
        let mut rng = rand::rng();
        // Printable ASCII except ','.
        let nonce: String = (0..24)
            .map(|_| match rng.random_range(0x21u8..0x7e) {
                b',' => '~',
                c => c as char,
            })
            .collect();
        let password = stringprep::saslprep(password)
            .map_or_else(|_| password.to_string(), |p| p.into_owned());
        Scram {
            auth: format!("n=,r={nonce}"),
            password,
            nonce,
            server: Vec::new(),
        }
    }

    fn first(&self) -> String {
        format!("n,,{}", self.auth)
    }

    /// The client-final-message for the server-first-message `server_first`.
    fn last(&mut self, server_first: &[u8]) -> Result<String, sqlx::Error> {
        use base64::prelude::{Engine as _, BASE64_STANDARD};
        use sha2::Digest as _;
        let first = std::str::from_utf8(server_first).map_err(|_| protocol("SCRAM: not UTF-8"))?;
        let attr = |k: &str| {
            first
                .split(',')
                .find_map(|kv| kv.strip_prefix(k))
                .ok_or_else(|| protocol(format!("SCRAM: no `{k}` in the server's message")))
        };
        let nonce = attr("r=")?;
        if !nonce.starts_with(&self.nonce) {
            return Err(protocol("SCRAM: the server's nonce does not extend ours"));
        }
        let salt = BASE64_STANDARD
            .decode(attr("s=")?)
            .map_err(|_| protocol("SCRAM: bad salt"))?;
        let rounds: u32 = attr("i=")?
            .parse()
            .map_err(|_| protocol("SCRAM: bad iteration count"))?;
        // SaltedPassword := Hi(password, salt, i), PBKDF2 with HMAC-SHA-256.
        let mut u = hmac(self.password.as_bytes(), &[&salt, &1u32.to_be_bytes()]);
        let mut salted = u;
        for _ in 1..rounds {
            u = hmac(self.password.as_bytes(), &[&u]);
            salted.iter_mut().zip(u).for_each(|(a, b)| *a ^= b);
        }
        let client_key = hmac(&salted, &[b"Client Key"]);
        let stored_key: [u8; 32] = sha2::Sha256::digest(client_key).into();
        let without_proof = format!("c=biws,r={nonce}");
        self.auth = format!("{},{first},{without_proof}", self.auth);
        let signature = hmac(&stored_key, &[self.auth.as_bytes()]);
        let proof: Vec<u8> = client_key
            .iter()
            .zip(signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = hmac(&salted, &[b"Server Key"]);
        self.server = hmac(&server_key, &[self.auth.as_bytes()]).to_vec();
        Ok(format!(
            "{without_proof},p={}",
            BASE64_STANDARD.encode(proof)
        ))
    }

    /// Checks the server-final-message: the server knew the password too.
    fn verify(&self, server_final: &[u8]) -> Result<(), sqlx::Error> {
        use base64::prelude::{Engine as _, BASE64_STANDARD};
        let text = std::str::from_utf8(server_final).unwrap_or_default();
        let ok = text
            .strip_prefix("v=")
            .and_then(|v| BASE64_STANDARD.decode(v.trim_end_matches('\0')).ok())
            .is_some_and(|v| v == self.server);
        ok.then_some(())
            .ok_or_else(|| protocol("SCRAM: the server's signature does not match"))
    }
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    use hmac::{KeyInit as _, Mac as _};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_logins_hash_as_postgresql_does() {
        // md5(md5(password + user) + salt), as Python's hashlib gives it.
        let inner = hex_md5(&[b"pw", b"throng"]);
        assert_eq!(inner, "e44716bd955b0a5869be376c89557ed8");
        assert_eq!(
            hex_md5(&[inner.as_bytes(), &[1, 2, 3, 4]]),
            "a8bfa18bd702e84b3cca1a10d44ef99b"
        );
    }

    #[test]
    fn command_tags_count_their_rows() {
        assert_eq!(affected(b"INSERT 0 5\0"), 5);
        assert_eq!(affected(b"UPDATE 3\0"), 3);
        assert_eq!(affected(b"BEGIN\0"), 0);
    }

    #[test]
    fn scram_matches_rfc_7677() {
        // RFC 7677's example: user "user", password "pencil".
        let mut s = Scram::new("pencil");
        s.nonce = "rOprNGfwEbeRWgbNEkqO".into();
        s.auth = "n=user,r=rOprNGfwEbeRWgbNEkqO".into();
        let last = s
            .last(
                b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                  s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            )
            .unwrap();
        assert_eq!(
            last,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        s.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
    }
}
