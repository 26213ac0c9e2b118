//! The login: the server's greeting, the answer to its challenge (mysql_native_password, or
//! caching_sha2_password's fast path), an AuthSwitchRequest's other plugin and nonce, then
//! the session settings sqlx makes. What needs more (TLS, RSA, another plugin) is left to
//! sqlx.

use std::sync::atomic::{AtomicBool, Ordering};

use sqlx::mysql::{MySqlConnectOptions, MySqlSslMode};

// The packets, the capability flags and the connection this module fills in.
use super::*;

/// mysql_native_password: SHA1(password) XOR SHA1(nonce + SHA1(SHA1(password))); nothing
/// for no password.
pub(super) fn native_password(password: &str, nonce: &[u8]) -> Vec<u8> {
    xor_scramble::<sha1::Sha1>(password, nonce, true)
}

/// caching_sha2_password's fast path: SHA256(password) XOR SHA256(SHA256(SHA256(password)) +
/// nonce); nothing for no password.
pub(super) fn sha2_password(password: &str, nonce: &[u8]) -> Vec<u8> {
    xor_scramble::<sha2::Sha256>(password, nonce, false)
}

fn xor_scramble<D: sha2::Digest>(password: &str, nonce: &[u8], nonce_first: bool) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let hash = D::digest(password.as_bytes());
    let twice = D::digest(&hash);
    let mut h = D::new();
    match nonce_first {
        true => {
            h.update(nonce);
            h.update(&twice);
        }
        false => {
            h.update(&twice);
            h.update(nonce);
        }
    }
    let salted = h.finalize();
    hash.iter().zip(salted).map(|(a, b)| a ^ b).collect()
}

/// The answer to a login's challenge, for the plugins this module speaks.
pub(super) fn scramble(plugin: &[u8], password: &str, nonce: &[u8]) -> Option<Vec<u8>> {
    match plugin {
        b"mysql_native_password" => Some(native_password(password, nonce)),
        b"caching_sha2_password" => Some(sha2_password(password, nonce)),
        _ => None,
    }
}

/// The server's greeting: its capabilities, its login plugin and that plugin's nonce.
pub(super) struct Greeting {
    pub(super) caps: u64,
    pub(super) plugin: Vec<u8>,
    pub(super) nonce: Vec<u8>,
}

pub(super) fn greeting(b: &[u8]) -> Result<Greeting, sqlx::Error> {
    let mut f = Fields::new(b, 0);
    match f.u8()? {
        10 => {}
        0xFF => return Err(error(b)),
        v => return Err(protocol(format!("MySQL greeted with protocol {v}, not 10"))),
    }
    f.cstr(); // server version
    f.int::<4>()?; // connection id
    let mut nonce = f.bytes(8)?.to_vec();
    f.u8()?;
    let mut caps = f.int::<2>()?;
    f.u8()?; // collation
    f.int::<2>()?; // status
    caps |= f.int::<2>()? << 16;
    let nonce_len = f.u8()?;
    // Reserved; MariaDB (which leaves out CLIENT_MYSQL, bit 0) puts its capabilities past 32
    // bits in the last four.
    let reserved = f.bytes(10)?;
    if caps & 1 == 0 {
        caps |= u64::from(u32::from_le_bytes([
            reserved[6],
            reserved[7],
            reserved[8],
            reserved[9],
        ])) << 32;
    }
    if caps & SECURE_CONNECTION != 0 {
        let n = usize::from(nonce_len).saturating_sub(9).max(12);
        nonce.extend_from_slice(f.bytes(n)?);
        f.u8()?;
    }
    let plugin = if caps & PLUGIN_AUTH != 0 {
        f.cstr().to_vec()
    } else {
        b"mysql_native_password".to_vec()
    };
    Ok(Greeting {
        caps,
        plugin,
        nonce,
    })
}

/// Opens a connection and logs in, or says that sqlx must (see [`Opened`]). `url` is where the
/// password and the time zone come from (sqlx's options do not give them back; without one
/// there, `MYSQL_PWD`); `connected` is set once a server accepted the connection (what a
/// timeout's message tells apart).
pub(crate) async fn open(
    o: &MySqlConnectOptions,
    url: &str,
    connected: &AtomicBool,
) -> Result<Opened, sqlx::Error> {
    let prefer_tls = match o.get_ssl_mode() {
        MySqlSslMode::Disabled => false,
        MySqlSslMode::Preferred => true,
        _ => return Ok(Opened::Sqlx),
    };
    let s = match o.get_socket() {
        Some(path) => Socket::unix(path).await?,
        None => Socket::tcp(o.get_host(), o.get_port()).await?,
    };
    connected.store(true, Ordering::Relaxed);
    let mut c = MyConn {
        s,
        seq: 0,
        deprecate_eof: false,
        cache_metadata: false,
        statements: HashMap::new(),
        prepared: Vec::new(),
    };
    let r = c.packet().await?;
    let hello = greeting(&c.s.rx[r])?;
    // `PREFERRED` asks for TLS; a server that would give it is left to sqlx, which speaks it.
    if prefer_tls && hello.caps & SSL != 0 {
        return Ok(Opened::Sqlx);
    }
    let mut caps = (WANTED & hello.caps) | PROTOCOL_41;
    if o.get_database().is_some() {
        caps |= CONNECT_WITH_DB & hello.caps;
    }
    c.deprecate_eof = caps & DEPRECATE_EOF != 0;
    if c.deprecate_eof {
        caps |= CACHE_METADATA & hello.caps;
    }
    c.cache_metadata = caps & CACHE_METADATA != 0;
    let password = crate::url::password_or_env(url).unwrap_or_default();
    let Some(answer) = scramble(&hello.plugin, &password, &hello.nonce) else {
        return Ok(Opened::Sqlx);
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
    tx.extend_from_slice(o.get_username().as_bytes());
    tx.push(0);
    if caps & PLUGIN_AUTH_LENENC_DATA != 0 {
        put_lenenc(tx, answer.len() as u64);
    } else {
        tx.push(answer.len() as u8);
    }
    tx.extend_from_slice(&answer);
    if caps & CONNECT_WITH_DB != 0 {
        tx.extend_from_slice(o.get_database().unwrap_or_default().as_bytes());
        tx.push(0);
    }
    if caps & PLUGIN_AUTH != 0 {
        tx.extend_from_slice(&hello.plugin);
        tx.push(0);
    }
    c.end(at);
    c.s.flush().await?;
    let mut plugin = hello.plugin;
    loop {
        let r = c.packet().await?;
        let b = &c.s.rx[r];
        match b.first() {
            Some(0x00) => break,
            Some(0xFF) => return Err(error(b)),
            // AuthSwitchRequest: another plugin, another nonce.
            Some(0xFE) => {
                let mut f = Fields::new(b, 1);
                plugin = f.cstr().to_vec();
                let nonce = f.rest();
                let nonce = nonce.strip_suffix(&[0]).unwrap_or(nonce).to_vec();
                let Some(answer) = scramble(&plugin, &password, &nonce) else {
                    return Ok(Opened::Sqlx);
                };
                let at = c.begin();
                c.s.tx.extend_from_slice(&answer);
                c.end(at);
                c.s.flush().await?;
            }
            // caching_sha2_password: 3 is the fast path's success (an OK follows); 4 asks
            // for the password itself, over TLS or encrypted with the server's RSA key.
            Some(0x01) if plugin == b"caching_sha2_password" && b.get(1) == Some(&3) => {}
            _ => return Ok(Opened::Sqlx),
        }
    }
    // The session sqlx sets up after its login, to the letter.
    let names = match o.get_collation() {
        Some(collation) => format!("NAMES {} COLLATE {collation}", o.get_charset()),
        None => format!("NAMES {}", o.get_charset()),
    };
    let zone = crate::url::param(url, "timezone")
        .or_else(|| crate::url::param(url, "time-zone"))
        .unwrap_or_else(|| "+00:00".into());
    c.raw(&format!(
        "SET sql_mode=(SELECT CONCAT(@@sql_mode, ',PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION')),\
         time_zone='{zone}',{names};"
    ))
    .await?;
    c.s.traffic();
    Ok(Opened::Ready(c))
}
