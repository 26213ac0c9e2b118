//! The login, on mysql_common's packets and scrambles: the server's greeting, TLS when the
//! `ssl-mode` asks for it (the SSL request, then the handshake over the same counted socket),
//! the answer to the login's challenge (mysql_native_password, caching_sha2_password), an
//! AuthSwitchRequest's other plugin and nonce, caching_sha2_password's full authentication (the
//! password over TLS or a Unix-domain socket, else encrypted with the server's RSA key), then
//! the session settings sqlx made. Another plugin is a clear error.

use std::sync::atomic::{AtomicBool, Ordering};

use mysql_common::auth::plugins::caching_sha2_password::scramble_sha256;
use mysql_common::auth::plugins::mysql_native_password::scramble_native;
use mysql_common::constants::{CapabilityFlags, MariadbCapabilities};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthSwitchRequest, HandshakePacket, SslRequest};
use mysql_common::proto::MySerialize as _;

use crate::error::DbError;
use crate::tls::TlsPlan;

// The packets, the capability flags and the connection this module fills in.
use super::*;

/// mysql_native_password: SHA1(password) XOR SHA1(nonce + SHA1(SHA1(password))); nothing
/// for no password.
pub(super) fn native_password(password: &str, nonce: &[u8]) -> Vec<u8> {
    scramble_native(nonce, password.as_bytes()).map_or_else(Vec::new, |s| s.to_vec())
}

/// caching_sha2_password's fast path: SHA256(password) XOR SHA256(SHA256(SHA256(password)) +
/// nonce); nothing for no password.
pub(super) fn sha2_password(password: &str, nonce: &[u8]) -> Vec<u8> {
    let Some(nonce) = nonce.get(..20).and_then(|n| <&[u8; 20]>::try_from(n).ok()) else {
        return Vec::new();
    };
    scramble_sha256(nonce, password.as_bytes()).map_or_else(Vec::new, |s| s.to_vec())
}

/// The answer to a login's challenge, for the plugins this module speaks.
pub(super) fn scramble(plugin: &[u8], password: &str, nonce: &[u8]) -> Option<Vec<u8>> {
    match plugin {
        b"mysql_native_password" => Some(native_password(password, nonce)),
        b"caching_sha2_password" => Some(sha2_password(password, nonce)),
        _ => None,
    }
}

/// The server's greeting: its capabilities (MariaDB's past 32 bits), its login plugin and that
/// plugin's nonce.
pub(super) struct Greeting {
    pub(super) caps: u64,
    pub(super) plugin: Vec<u8>,
    pub(super) nonce: Vec<u8>,
}

pub(super) fn greeting(b: &[u8]) -> Result<Greeting, DbError> {
    match b.first() {
        Some(10) => {}
        Some(0xFF) => return Err(error(b)),
        v => {
            return Err(protocol(format!(
                "MySQL greeted with protocol {v:?}, not 10"
            )))
        }
    }
    let hello = ParseBuf(b)
        .parse::<HandshakePacket>(())
        .map_err(|e| protocol(format!("MySQL's greeting: {e}")))?;
    let mut caps = u64::from(hello.capabilities().bits());
    // MariaDB leaves out CLIENT_MYSQL (bit 0) and says its capabilities past 32 bits.
    if caps & 1 == 0 {
        caps |= u64::from(hello.mariadb_ext_capabilities().bits()) << 32;
    }
    Ok(Greeting {
        caps,
        plugin: hello
            .auth_plugin_name_ref()
            .unwrap_or(b"mysql_native_password")
            .to_vec(),
        nonce: hello.nonce(),
    })
}

/// The capabilities as mysql_common's two sets.
fn flags(caps: u64) -> (CapabilityFlags, MariadbCapabilities) {
    (
        CapabilityFlags::from_bits_retain(caps as u32),
        MariadbCapabilities::from_bits_retain((caps >> 32) as u32),
    )
}

/// Opens a connection, with TLS as `tls` says, and logs in. `url` is where the password and
/// the time zone come from (without a password there, `MYSQL_PWD`); `connected` is set once a server accepted the connection (what a timeout's
/// message tells apart).
pub(crate) async fn open(
    o: &crate::options::Options,
    url: &str,
    tls: &TlsPlan,
    connected: &AtomicBool,
) -> Result<MyConn, DbError> {
    let s = match &o.socket {
        Some(path) => Socket::unix(path).await?,
        None => Socket::tcp(&o.host, o.port).await?,
    };
    connected.store(true, Ordering::Relaxed);
    let mut c = MyConn {
        s,
        seq: 0,
        deprecate_eof: false,
        cache_metadata: false,
        statements: HashMap::new(),
        prepared: Vec::new(),
        login: "",
    };
    let r = c.packet().await?;
    let hello = greeting(&c.s.rx[r])?;
    let mut caps = (WANTED & hello.caps) | PROTOCOL_41;
    if o.database.is_some() {
        caps |= CONNECT_WITH_DB & hello.caps;
    }
    c.deprecate_eof = caps & DEPRECATE_EOF != 0;
    if c.deprecate_eof {
        caps |= CACHE_METADATA & hello.caps;
    }
    c.cache_metadata = caps & CACHE_METADATA != 0;
    // As MySQL's own client: no TLS over a Unix-domain socket, which is as private.
    if let (Some(target), true) = (tls.target(), c.s.is_tcp()) {
        if hello.caps & SSL != 0 {
            caps |= SSL;
            let (std, maria) = flags(caps);
            let at = c.begin();
            SslRequest::new(std, MAX as u32 + 1, UTF8MB4_GENERAL_CI)
                .with_mariadb_capabilities(maria)
                .serialize(&mut c.s.tx);
            c.end(at);
            c.s.flush().await?;
            c.s = c.s.start_tls(target).await?;
        } else if tls.required() {
            return Err(DbError::Tls(format!(
                "the server does not offer TLS, and ssl-mode={} needs it",
                tls.mode_name()
            )));
        }
    }
    let password = crate::url::password_or_env(url).unwrap_or_default();
    let unknown = |plugin: &[u8]| {
        protocol(format!(
            "the server asks for the login plugin {}, which throng does not speak (it speaks \
             mysql_native_password and caching_sha2_password)",
            String::from_utf8_lossy(plugin)
        ))
    };
    let Some(answer) = scramble(&hello.plugin, &password, &hello.nonce) else {
        return Err(unknown(&hello.plugin));
    };
    let at = c.begin();
    let tx = &mut c.s.tx;
    tx.extend_from_slice(&(caps as u32).to_le_bytes());
    // The largest packet the client sends.
    tx.extend_from_slice(&(MAX as u32 + 1).to_le_bytes());
    tx.push(UTF8MB4_GENERAL_CI);
    // Reserved, but for MariaDB's capabilities past 32 bits in the last four.
    tx.extend_from_slice(&[0; 19]);
    tx.extend_from_slice(&((caps >> 32) as u32).to_le_bytes());
    tx.extend_from_slice(o.user.as_bytes());
    tx.push(0);
    if caps & PLUGIN_AUTH_LENENC_DATA != 0 {
        put_lenenc(tx, answer.len() as u64);
    } else {
        tx.push(answer.len() as u8);
    }
    tx.extend_from_slice(&answer);
    if caps & CONNECT_WITH_DB != 0 {
        tx.extend_from_slice(o.database.as_deref().unwrap_or_default().as_bytes());
        tx.push(0);
    }
    if caps & PLUGIN_AUTH != 0 {
        tx.extend_from_slice(&hello.plugin);
        tx.push(0);
    }
    c.end(at);
    c.s.flush().await?;
    let mut plugin = hello.plugin;
    let mut nonce = hello.nonce;
    loop {
        let r = c.packet().await?;
        let b = &c.s.rx[r];
        match b.first() {
            Some(0x00) => break,
            Some(0xFF) => return Err(error(b)),
            // AuthSwitchRequest: another plugin, another nonce.
            Some(0xFE) => {
                let switch = ParseBuf(b)
                    .parse::<AuthSwitchRequest>(())
                    .map_err(|e| protocol(format!("MySQL's AuthSwitchRequest: {e}")))?;
                plugin = switch.auth_plugin().as_bytes().to_vec();
                nonce = switch.plugin_data().to_vec();
                let Some(answer) = scramble(&plugin, &password, &nonce) else {
                    return Err(unknown(&plugin));
                };
                let at = c.begin();
                c.s.tx.extend_from_slice(&answer);
                c.end(at);
                c.s.flush().await?;
            }
            // caching_sha2_password: 3 is the fast path's success (an OK follows); 4 asks
            // for the password itself: in the clear over TLS or a Unix-domain socket, else
            // encrypted with the server's RSA key (asked for with 2).
            Some(0x01) if plugin == b"caching_sha2_password" && b.get(1) == Some(&3) => {
                c.login = "caching_sha2_password (fast)";
            }
            Some(0x01) if plugin == b"caching_sha2_password" && b.get(1) == Some(&4) => {
                let mut secret = password.as_bytes().to_vec();
                secret.push(0);
                if c.s.tls().is_none() && c.s.is_tcp() {
                    let at = c.begin();
                    c.s.tx.push(2);
                    c.end(at);
                    c.s.flush().await?;
                    let r = c.packet().await?;
                    let key = c.s.rx[r].get(1..).unwrap_or_default().to_vec();
                    for (i, byte) in secret.iter_mut().enumerate() {
                        *byte ^= nonce[i % nonce.len().max(1)];
                    }
                    secret = mysql_common::crypto::encrypt(&secret, &key).map_err(|e| {
                        protocol(format!("caching_sha2_password: the server's RSA key: {e}"))
                    })?;
                }
                let at = c.begin();
                c.s.tx.extend_from_slice(&secret);
                c.end(at);
                c.s.flush().await?;
                c.login = "caching_sha2_password (full)";
            }
            _ => {
                return Err(protocol(format!(
                    "MySQL's login: an answer throng does not know ({:?})",
                    b.get(..2)
                )))
            }
        }
    }
    if c.login.is_empty() {
        c.login = match plugin.as_slice() {
            b"caching_sha2_password" => "caching_sha2_password",
            _ => "mysql_native_password",
        };
    }
    // The session sqlx sets up after its login, to the letter.
    let names = match &o.collation {
        Some(collation) => format!("NAMES {} COLLATE {collation}", o.charset),
        None => format!("NAMES {}", o.charset),
    };
    let zone = crate::url::param(url, "timezone")
        .or_else(|| crate::url::param(url, "time-zone"))
        .unwrap_or_else(|| "+00:00".into());
    // A zone is a name (`Europe/Paris`), an offset (`+01:00`) or SYSTEM: nothing else goes
    // into the statement.
    if !zone
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || "+-:/_".contains(ch))
    {
        return Err(protocol(format!(
            "time zone `{zone}`: not a zone name or offset"
        )));
    }
    c.raw(&format!(
        "SET sql_mode=(SELECT CONCAT(@@sql_mode, ',PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION')),\
         time_zone='{zone}',{names};"
    ))
    .await?;
    c.s.traffic();
    Ok(c)
}
