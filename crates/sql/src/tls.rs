//! TLS to PostgreSQL and MySQL/MariaDB as their own clients ask for it: PostgreSQL's `sslmode`
//! and MySQL's `ssl-mode`, made into one plan (whether to ask, whether the server must agree,
//! and how its certificate is checked) over throng-net's rustls configurations.

use std::path::PathBuf;

use rustls::pki_types::ServerName;
use throng_core::step::Identity;
use throng_net::{TlsOptions, TlsTarget};

/// How much TLS a connection asks for, in the words of PostgreSQL's `sslmode` (MySQL's
/// `ssl-mode` maps onto it: DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// In the clear (also PostgreSQL's `allow`, which only tries TLS when the server refuses
    /// the clear: none of the servers tested does).
    Disable,
    /// TLS if the server offers it, its certificate not checked; else in the clear.
    Prefer,
    /// TLS or no connection, the certificate not checked (checked against `sslrootcert`
    /// when one is named, as libpq does).
    Require,
    /// TLS, the certificate's chain checked against the CA, not its name.
    VerifyCa,
    /// TLS, the certificate's chain and the host name checked.
    VerifyFull,
}

/// A connection's TLS: its mode and, unless disabled, the rustls configuration and the name
/// to check.
#[derive(Debug, Clone)]
pub(crate) struct TlsPlan {
    mode: Mode,
    /// The name the mode is written as, for messages.
    name: &'static str,
    target: Option<TlsTarget>,
}

impl TlsPlan {
    /// The plan for `mode` to `host`, trusting `ca` (a PEM file; the web roots when none) and
    /// presenting `identity` when the server asks for a certificate.
    pub(crate) fn new(
        mode: Mode,
        name: &'static str,
        ca: Option<PathBuf>,
        identity: Option<Identity>,
        host: &str,
    ) -> Result<TlsPlan, String> {
        let mode = match (mode, &ca) {
            (Mode::Require, Some(_)) => Mode::VerifyCa,
            _ => mode,
        };
        let opts = |insecure| TlsOptions {
            insecure,
            cacert: ca.clone(),
            identity: identity.clone(),
            alpn: Vec::new(),
        };
        let config = match mode {
            Mode::Disable => None,
            Mode::Prefer | Mode::Require => Some(throng_net::client_config(&opts(true))),
            Mode::VerifyCa => Some(throng_net::client_config_any_name(&opts(false))),
            Mode::VerifyFull => Some(throng_net::client_config(&opts(false))),
        }
        .transpose()
        .map_err(|e| e.to_string())?;
        let target = match config {
            None => None,
            Some(c) => {
                let host = host.trim_matches(['[', ']']).to_string();
                let server = ServerName::try_from(host.clone())
                    .map_err(|e| format!("TLS to `{host}`: not a host name: {e}"))?;
                Some((c, server))
            }
        };
        Ok(TlsPlan { mode, name, target })
    }

    /// The configuration and name to start TLS with, unless the mode is `disable`.
    pub(crate) fn target(&self) -> Option<&TlsTarget> {
        self.target.as_ref()
    }

    /// Whether a server that offers no TLS is refused.
    pub(crate) fn required(&self) -> bool {
        !matches!(self.mode, Mode::Disable | Mode::Prefer)
    }

    /// The mode as the URL (or the flags) gave it.
    pub(crate) fn mode_name(&self) -> &'static str {
        self.name
    }
}
