//! The login: the connection opened (TCP or a Unix-domain socket), TLS negotiated as the
//! `sslmode` says (the SSLRequest, then the handshake over the same counted socket), the startup
//! message, then the server's challenge answered: trust, cleartext, MD5 or SCRAM-SHA-256, bound
//! to the TLS channel (`tls-server-end-point`) when both sides can. A server that is not
//! PostgreSQL is named as such; a login throng does not speak is a clear error.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::BytesMut;
use fallible_iterator::FallibleIterator as _;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};
use postgres_protocol::message::{backend, frontend};

use super::{database_error, protocol, unwritable, PgConn};
use crate::codec::Socket;
use crate::error::DbError;
use crate::tls::TlsPlan;

/// Opens a connection, with TLS as `tls` says, and logs in. `url` is where the password comes
/// from (`PGPASSWORD` where it gives none); `connected` is set once a server accepted the
/// connection (what a timeout's message tells apart).
pub(crate) async fn open(
    o: &crate::options::Options,
    url: &str,
    tls: &TlsPlan,
    connected: &AtomicBool,
) -> Result<PgConn, DbError> {
    let s = match &o.socket {
        Some(dir) => Socket::unix(format!("{dir}/.s.PGSQL.{}", o.port)).await?,
        None => Socket::tcp(&o.host, o.port).await?,
    };
    connected.store(true, Ordering::Relaxed);
    let mut c = PgConn {
        s,
        buf: BytesMut::with_capacity(1024),
        statements: HashMap::default(),
        prepared: Vec::new(),
        login: "trust",
    };
    // As libpq: no TLS over a Unix-domain socket, whatever the mode.
    if let (Some(target), true) = (tls.target(), c.s.is_tcp()) {
        frontend::ssl_request(&mut c.buf);
        c.flush().await?;
        while c.s.rx.len() == c.s.at {
            c.s.fill(1).await?;
        }
        c.s.at += 1;
        match c.s.rx[c.s.at - 1] {
            b'S' => c.s = c.s.start_tls(target).await?,
            b'N' if tls.required() => {
                return Err(DbError::Tls(format!(
                    "the server does not offer TLS, and sslmode={} needs it",
                    tls.mode_name()
                )))
            }
            b'N' => {}
            _ => return Err(not_postgres(&c.s.rx[c.s.at - 1..], "SSLRequest")),
        }
    }
    c.login(o, url).await?;
    c.s.traffic();
    Ok(c)
}

/// The error for a server that answered `seen` to `what` as PostgreSQL never would: an HTTP
/// server's status line, or MySQL's and MariaDB's greeting (they speak first: a packet's
/// 3-byte length, sequence 0, then protocol 10 or an error's 0xFF), named as such.
fn not_postgres(seen: &[u8], what: &str) -> DbError {
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

/// The channel binding data `tls-server-end-point` (RFC 5929) of a server's certificate: its
/// hash by its signature's hash function, SHA-256 for MD5, SHA-1 and what this does not
/// recognise (as PostgreSQL computes it: `be_tls_get_certificate_hash`).
fn end_point(cert: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    // The OIDs (DER content) of sha384WithRSAEncryption, ecdsa-with-SHA384, and the SHA-512 ones.
    const SHA384: [&[u8]; 2] = [
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c],
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03],
    ];
    const SHA512: [&[u8]; 2] = [
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d],
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04],
    ];
    let oid = signature_oid(cert).unwrap_or_default();
    if SHA384.contains(&oid) {
        sha2::Sha384::digest(cert).to_vec()
    } else if SHA512.contains(&oid) {
        sha2::Sha512::digest(cert).to_vec()
    } else {
        sha2::Sha256::digest(cert).to_vec()
    }
}

/// The OID of a DER certificate's signatureAlgorithm: `SEQUENCE { tbsCertificate SEQUENCE,
/// signatureAlgorithm SEQUENCE { OID, ... }, signature }`.
fn signature_oid(cert: &[u8]) -> Option<&[u8]> {
    // A DER element at `at`: its tag, where its content starts, and its length.
    fn element(b: &[u8], at: usize) -> Option<(u8, usize, usize)> {
        let tag = *b.get(at)?;
        let first = *b.get(at + 1)?;
        if first < 0x80 {
            return Some((tag, at + 2, first as usize));
        }
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 {
            return None;
        }
        let len = b
            .get(at + 2..at + 2 + n)?
            .iter()
            .fold(0usize, |l, &d| (l << 8) | d as usize);
        Some((tag, at + 2 + n, len))
    }
    let (0x30, outer, _) = element(cert, 0)? else {
        return None;
    };
    let (0x30, tbs, tbs_len) = element(cert, outer)? else {
        return None;
    };
    let (0x30, alg, _) = element(cert, tbs + tbs_len)? else {
        return None;
    };
    let (0x06, oid, oid_len) = element(cert, alg)? else {
        return None;
    };
    cert.get(oid..oid + oid_len)
}

impl PgConn {
    /// The startup message and the login.
    async fn login(&mut self, o: &crate::options::Options, url: &str) -> Result<(), DbError> {
        let mut params = vec![
            ("user", o.user.as_str()),
            ("DateStyle", "ISO, MDY"),
            ("client_encoding", "UTF8"),
            ("TimeZone", "UTC"),
        ];
        params.extend(o.database.as_deref().map(|d| ("database", d)));
        params.extend(
            o.application_name
                .as_deref()
                .map(|a| ("application_name", a)),
        );
        params.extend(o.options.as_deref().map(|a| ("options", a)));
        frontend::startup_message(params, &mut self.buf).map_err(unwritable)?;
        self.flush().await?;
        // A server that is not PostgreSQL (an HTTP server on the port) is named as such, not
        // waited on for a message length it never meant.
        while self.s.rx.len() == self.s.at {
            self.s.fill(1).await?;
        }
        if !matches!(self.s.rx[self.s.at], b'R' | b'E' | b'N' | b'v') {
            return Err(not_postgres(&self.s.rx[self.s.at..], "its startup message"));
        }
        let password = crate::url::password_or_env(url);
        let need = |what: &str| {
            password.as_deref().map(str::as_bytes).ok_or_else(|| {
                protocol(format!(
                    "the server asks for a password ({what}) and the URL gives none (nor \
                     PGPASSWORD)"
                ))
            })
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            let (tag, body) = self.message().await?;
            let whole = body.start - 5..body.end;
            let mut m = BytesMut::from(&self.s.rx[whole.clone()]);
            self.consume(&body);
            if tag == b'E' {
                return Err(database_error(&m));
            }
            let Some(message) = backend::Message::parse(&mut m)? else {
                return Err(protocol(
                    "PostgreSQL sent a message shorter than its length",
                ));
            };
            use backend::Message as M;
            match message {
                M::AuthenticationOk => {}
                M::AuthenticationCleartextPassword => {
                    frontend::password_message(need("cleartext")?, &mut self.buf)
                        .map_err(unwritable)?;
                    self.login = "password";
                    self.flush().await?;
                }
                M::AuthenticationMd5Password(b) => {
                    let hash = postgres_protocol::authentication::md5_hash(
                        o.user.as_bytes(),
                        need("MD5")?,
                        b.salt(),
                    );
                    frontend::password_message(hash.as_bytes(), &mut self.buf)
                        .map_err(unwritable)?;
                    self.login = "MD5";
                    self.flush().await?;
                }
                M::AuthenticationSasl(b) => {
                    let (mut plain, mut plus) = (false, false);
                    let mut mechanisms = b.mechanisms();
                    while let Some(m) = mechanisms.next()? {
                        plain |= m == "SCRAM-SHA-256";
                        plus |= m == "SCRAM-SHA-256-PLUS";
                    }
                    let cert = self
                        .s
                        .tls()
                        .and_then(|t| t.peer_certificates())
                        .and_then(|c| c.first())
                        .map(|c| end_point(c));
                    // As libpq and tokio-postgres: bind to the TLS channel when both can.
                    let (binding, mechanism) = match (plus, plain, cert) {
                        (true, _, Some(c)) => (
                            ChannelBinding::tls_server_end_point(c),
                            "SCRAM-SHA-256-PLUS",
                        ),
                        (_, true, Some(_)) => (ChannelBinding::unrequested(), "SCRAM-SHA-256"),
                        (true, _, None) | (_, true, None) => {
                            (ChannelBinding::unsupported(), "SCRAM-SHA-256")
                        }
                        (false, false, _) => {
                            return Err(protocol(
                                "the server asks for a SASL login throng does not speak \
                                 (it speaks SCRAM-SHA-256, with channel binding over TLS)",
                            ))
                        }
                    };
                    let s = ScramSha256::new(need("SCRAM-SHA-256")?, binding);
                    frontend::sasl_initial_response(mechanism, s.message(), &mut self.buf)
                        .map_err(unwritable)?;
                    self.flush().await?;
                    self.login = mechanism;
                    scram = Some(s);
                }
                M::AuthenticationSaslContinue(b) => {
                    let s = scram.as_mut().ok_or_else(|| protocol("SASL out of turn"))?;
                    s.update(b.data())
                        .map_err(|e| protocol(format!("SCRAM: {e}")))?;
                    frontend::sasl_response(s.message(), &mut self.buf).map_err(unwritable)?;
                    self.flush().await?;
                }
                M::AuthenticationSaslFinal(b) => {
                    let s = scram.as_mut().ok_or_else(|| protocol("SASL out of turn"))?;
                    s.finish(b.data()).map_err(|e| {
                        protocol(format!(
                            "SCRAM: the server did not prove it knows the password: {e}"
                        ))
                    })?;
                }
                M::AuthenticationKerberosV5
                | M::AuthenticationScmCredential
                | M::AuthenticationGss
                | M::AuthenticationGssContinue(_)
                | M::AuthenticationSspi => {
                    return Err(protocol(
                        "the server asks for a login throng does not speak (Kerberos, GSSAPI, \
                         SSPI or SCM): it speaks scram-sha-256, md5, password and trust \
                         (pg_hba.conf)",
                    ))
                }
                M::ReadyForQuery(_) => return Ok(()),
                // ParameterStatus, BackendKeyData, NoticeResponse.
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_binding_hashes_by_the_signature_algorithm() {
        // A certificate's skeleton: SEQUENCE { tbs SEQUENCE {}, SEQUENCE { OID } }.
        let cert = |oid: &[u8]| {
            let mut alg = vec![0x06, oid.len() as u8];
            alg.extend_from_slice(oid);
            let mut body = vec![0x30, 0x00, 0x30, alg.len() as u8];
            body.extend_from_slice(&alg);
            let mut c = vec![0x30, body.len() as u8];
            c.extend_from_slice(&body);
            c
        };
        let ecdsa_sha256 = cert(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]);
        let ecdsa_sha384 = cert(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03]);
        let rsa_sha512 = cert(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d]);
        assert_eq!(
            signature_oid(&ecdsa_sha384),
            Some(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03][..])
        );
        assert_eq!(end_point(&ecdsa_sha256).len(), 32);
        assert_eq!(end_point(&ecdsa_sha384).len(), 48);
        assert_eq!(end_point(&rsa_sha512).len(), 64);
        assert_eq!(end_point(b"not DER").len(), 32);
    }
}
