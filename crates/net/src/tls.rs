//! The rustls client configuration: web roots, a CA file, or (insecure) no verification; and
//! a testbed server's self-signed one.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// How to trust servers, and which protocols to offer.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Accept any certificate (`--insecure`).
    pub insecure: bool,
    /// Trust the PEM certificates in this file instead of the built-in web roots.
    pub cacert: Option<std::path::PathBuf>,
    /// The ALPN protocols to offer, in order (`h2`, `http/1.1`).
    pub alpn: Vec<Vec<u8>>,
}

/// Why a TLS configuration could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// The CA file could not be read or held no certificate.
    #[error("cannot use CA file {path}: {reason}")]
    CaCert {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The name a server's certificate must carry, from a URL's host (an IPv6 address without its
/// brackets).
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.trim_matches(|c| c == '[' || c == ']').to_string())
        .map_err(|e| e.to_string())
}

/// How a protocol's target trusts its servers: `None` for a plain target, on which a CA file
/// is an error (`plain` says what the target is, as "tcps:// targets; X is plain tcp" ends);
/// else the client configuration from `cacert` and `insecure` (no ALPN), made now so that a CA
/// file that cannot be read is said before any load.
pub fn trust(
    tls: bool,
    cacert: Option<&std::path::Path>,
    insecure: bool,
    plain: impl FnOnce() -> String,
) -> Result<Option<Arc<rustls::ClientConfig>>, String> {
    if !tls {
        return match cacert {
            Some(_) => Err(format!("--cacert applies to {}", plain())),
            None => Ok(None),
        };
    }
    let opts = TlsOptions {
        insecure,
        cacert: cacert.map(std::path::Path::to_path_buf),
        alpn: Vec::new(),
    };
    client_config(&opts).map(Some).map_err(|e| e.to_string())
}

/// A rustls client configuration: web roots, a CA file, or (insecure) no verification.
pub fn client_config(opts: &TlsOptions) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider, None)))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(roots(opts)?)
            .with_no_client_auth()
    };
    config.alpn_protocols = opts.alpn.clone();
    Ok(Arc::new(config))
}

/// A configuration that verifies the server's certificate chain against the roots of `opts`
/// (its CA file, or the web roots) but not the name it was issued for: PostgreSQL's
/// `sslmode=verify-ca`, MySQL's `VERIFY_CA`.
pub fn client_config_any_name(opts: &TlsOptions) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots(opts)?),
        provider.clone(),
    )
    .build()
    .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(provider, Some(chain))))
        .with_no_client_auth();
    config.alpn_protocols = opts.alpn.clone();
    Ok(Arc::new(config))
}

/// A testbed server's TLS: an acceptor with a fresh self-signed certificate for `localhost` and
/// `127.0.0.1` offering `alpn`, and the certificate in PEM (for a client's `--cacert`).
pub fn self_signed(alpn: &[&[u8]]) -> Result<(tokio_rustls::TlsAcceptor, String), TlsError> {
    let err = |e: &dyn std::fmt::Display| TlsError::Config(e.to_string());
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let cert = rcgen::generate_simple_self_signed(names).map_err(|e| err(&e))?;
    let pem = cert.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| err(&e))?
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .map_err(|e| err(&e))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok((tokio_rustls::TlsAcceptor::from(Arc::new(config)), pem))
}

/// The roots to verify against: the CA file's certificates, or the web roots.
fn roots(opts: &TlsOptions) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    match &opts.cacert {
        Some(path) => {
            let err = |reason: String| TlsError::CaCert {
                path: path.clone(),
                reason,
            };
            let pem = std::fs::read(path).map_err(|e| err(e.to_string()))?;
            let mut n = 0;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                roots
                    .add(cert.map_err(|e| err(e.to_string()))?)
                    .map_err(|e| err(e.to_string()))?;
                n += 1;
            }
            if n == 0 {
                return Err(err("no PEM certificate in the file".into()));
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(roots)
}

/// A verifier that checks less than rustls' own: with a chain verifier, a certificate's chain,
/// dates and signatures but not the name it was issued for (`verify-ca`); without, nothing but
/// that the handshake's signatures are well formed (`--insecure`).
#[derive(Debug)]
struct AcceptAny(
    Arc<CryptoProvider>,
    Option<Arc<rustls::client::WebPkiServerVerifier>>,
);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError as C;
        let Some(chain) = &self.1 else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                C::NotValidForName | C::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
