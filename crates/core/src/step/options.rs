//! The options a run gives every target's client: the shared ones, and each protocol's own by
//! type.

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Options shared by every target of a run, from the command line or the library. Each
/// protocol takes what applies to it, and finds its own options (HTTP/2 for HTTP, `.proto` files
/// for gRPC) under its own type ([`ClientOptions::of`]).
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// A request (a call, a transaction) must finish within this.
    pub timeout: Duration,
    /// A connection (TCP and TLS) must be made within this.
    pub connect_timeout: Duration,
    /// Accept any server certificate.
    pub insecure: bool,
    /// Trust these PEM certificates instead of the built-in web roots.
    pub cacert: Option<PathBuf>,
    /// The certificate and key to present to servers that ask for one (mutual TLS).
    pub identity: Option<Identity>,
    /// Sessions sharing one connection, where connections are shared (HTTP/2, gRPC).
    pub streams: usize,
    /// Headers (gRPC: metadata) added to every request, `name: value` parsed.
    pub headers: Vec<(String, String)>,
    /// Each protocol's own options (see [`ClientOptions::with`] and [`ClientOptions::of`]).
    pub own: OwnOptions,
}

/// A client's TLS identity (`--cert`, `--key`): a PEM certificate chain and its PEM private key,
/// both required, so that a certificate without its key cannot reach a protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// The leaf's private key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub key: PathBuf,
}

impl Identity {
    /// The identity of `cert` and `key` as given: none, or both; one alone is refused, in the
    /// words of `cert_name` and `key_name` (`--cert`, or a scenario's `cert`).
    pub fn pair(
        cert: Option<PathBuf>,
        key: Option<PathBuf>,
        (cert_name, key_name): (&str, &str),
    ) -> Result<Option<Identity>, String> {
        match (cert, key) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => Ok(Some(Identity { cert, key })),
            (cert, _) => Err(format!(
                "{cert_name} and {key_name} go together (the client certificate and its private \
                 key); {} is given without {}",
                if cert.is_some() { cert_name } else { key_name },
                if cert.is_some() { key_name } else { cert_name },
            )),
        }
    }
}

/// Each protocol's own options, one value per type.
#[derive(Debug, Clone, Default)]
pub struct OwnOptions(Vec<Arc<dyn Any + Send + Sync>>);

impl ClientOptions {
    /// Sets a protocol's own options (replacing any of the same type).
    pub fn with<T: Any + Send + Sync>(mut self, options: T) -> Self {
        self.own.0.retain(|o| !o.is::<T>());
        self.own.0.push(Arc::new(options));
        self
    }

    /// A protocol's own options, if they were set.
    pub fn of<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.own.0.iter().find_map(|o| o.downcast_ref::<T>())
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            insecure: false,
            cacert: None,
            identity: None,
            streams: 100,
            headers: Vec::new(),
            own: OwnOptions::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocol_finds_its_own_options_by_type() {
        #[derive(Debug, PartialEq)]
        struct Mine(u8);
        #[derive(Debug, PartialEq)]
        struct Theirs(&'static str);
        let o = ClientOptions::default()
            .with(Mine(1))
            .with(Theirs("x"))
            .with(Mine(2));
        assert_eq!(
            o.of::<Mine>(),
            Some(&Mine(2)),
            "a second value replaces the first"
        );
        assert_eq!(o.of::<Theirs>(), Some(&Theirs("x")));
        assert_eq!(ClientOptions::default().of::<Mine>(), None);
    }
}
