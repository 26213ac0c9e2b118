//! The rustls client configuration: web roots, a CA file, or (insecure) no verification, and
//! the client's own certificate when it has one (mutual TLS); and a testbed server's
//! self-signed one.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use throng_core::step::{ClientOptions, Identity};

/// How to trust servers, and which protocols to offer.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Accept any certificate (`--insecure`).
    pub insecure: bool,
    /// Trust the PEM certificates in this file instead of the built-in web roots.
    pub cacert: Option<std::path::PathBuf>,
    /// The certificate and key to present when a server asks for one (`--cert`, `--key`).
    pub identity: Option<Identity>,
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
    /// The client certificate or its key could not be read, held none, or do not match.
    #[error("cannot use client {what} {path}: {reason}")]
    Identity {
        /// `certificate` or `key`.
        what: &'static str,
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

/// How a protocol's target trusts its servers and shows itself: `None` for a plain target, on
/// which a CA file or a client certificate is an error (`plain` says what the target is, as
/// "tcps:// targets; X is plain tcp" ends); else the client configuration from `options`'
/// `cacert`, `identity` and `insecure` (no ALPN), made now so that a file that cannot be used
/// is said before any load.
pub fn trust(
    tls: bool,
    options: &ClientOptions,
    plain: impl FnOnce() -> String,
) -> Result<Option<Arc<rustls::ClientConfig>>, String> {
    if !tls {
        return match throng_core::flags::tls_refusal(
            options.cacert.is_some(),
            options.identity.is_some(),
        ) {
            Some(flags) => Err(format!("{flags} {}", plain())),
            None => Ok(None),
        };
    }
    let opts = TlsOptions {
        insecure: options.insecure,
        cacert: options.cacert.clone(),
        identity: options.identity.clone(),
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
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider, None)))
    } else {
        builder.with_root_certificates(roots(opts)?)
    };
    let mut config = client_auth(builder, opts.identity.as_ref())?;
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
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(provider, Some(chain))));
    let mut config = client_auth(builder, opts.identity.as_ref())?;
    config.alpn_protocols = opts.alpn.clone();
    Ok(Arc::new(config))
}

/// A testbed server's TLS: an acceptor with a fresh self-signed certificate for `localhost` and
/// `127.0.0.1` offering `alpn`, and the certificate in PEM (for a client's `--cacert`).
pub fn self_signed(alpn: &[&[u8]]) -> Result<(tokio_rustls::TlsAcceptor, String), TlsError> {
    self_signed_requiring(alpn, None)
}

/// [`self_signed`], requiring with `client_ca` (PEM) that every client present a certificate
/// that CA signed: a handshake without one, or with another's, fails (mutual TLS).
pub fn self_signed_requiring(
    alpn: &[&[u8]],
    client_ca: Option<&str>,
) -> Result<(tokio_rustls::TlsAcceptor, String), TlsError> {
    let err = |e: &dyn std::fmt::Display| TlsError::Config(e.to_string());
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let cert = rcgen::generate_simple_self_signed(names).map_err(|e| err(&e))?;
    let pem = cert.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| err(&e))?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for c in rustls_pemfile::certs(&mut ca.as_bytes()) {
                roots.add(c.map_err(|e| err(&e))?).map_err(|e| err(&e))?;
            }
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .map_err(|e| err(&e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .map_err(|e| err(&e))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok((tokio_rustls::TlsAcceptor::from(Arc::new(config)), pem))
}

/// A certificate authority for tests of mutual TLS: its PEM for a server's
/// [`self_signed_requiring`], and client certificates it signs.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

impl TestCa {
    /// A fresh CA named `name`.
    pub fn new(name: &str) -> Result<TestCa, TlsError> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let err = |e: rcgen::Error| TlsError::Config(e.to_string());
        let key = KeyPair::generate().map_err(err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).map_err(err)?;
        Ok(TestCa { cert, key })
    }

    /// The CA's certificate in PEM.
    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A client certificate for `name` it signed, and its private key (PKCS#8), both in PEM.
    pub fn issue(&self, name: &str) -> Result<(String, String), TlsError> {
        use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
        let err = |e: rcgen::Error| TlsError::Config(e.to_string());
        let key = KeyPair::generate().map_err(err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.cert, &self.key).map_err(err)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

/// The configuration presenting `identity`'s certificate when the server asks, or none.
fn client_auth(
    builder: rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>,
    identity: Option<&Identity>,
) -> Result<rustls::ClientConfig, TlsError> {
    let Some(identity) = identity else {
        return Ok(builder.with_no_client_auth());
    };
    let (chain, key) = load_identity(identity)?;
    // rustls checks that the key is the leaf's (`InconsistentKeys`), so a mismatch is said
    // here, before any load, not as a handshake every server refuses.
    builder
        .with_client_auth_cert(chain, key)
        .map_err(|e| TlsError::Identity {
            what: "key",
            path: identity.key.clone(),
            reason: match e {
                rustls::Error::InconsistentKeys(_) => format!(
                    "not the private key of the certificate in {}",
                    identity.cert.display()
                ),
                e => e.to_string(),
            },
        })
}

/// The certificate chain and private key of `identity`, read from their PEM files.
pub fn load_identity(
    identity: &Identity,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    fn err<'a>(what: &'static str, path: &'a std::path::Path) -> impl Fn(String) -> TlsError + 'a {
        move |reason| TlsError::Identity {
            what,
            path: path.to_path_buf(),
            reason,
        }
    }
    let cert_err = err("certificate", &identity.cert);
    let pem = std::fs::read(&identity.cert).map_err(|e| cert_err(e.to_string()))?;
    let chain = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_err(e.to_string()))?;
    if chain.is_empty() {
        return Err(cert_err("no PEM certificate in the file".into()));
    }
    let key_err = err("key", &identity.key);
    let pem = std::fs::read(&identity.key).map_err(|e| key_err(e.to_string()))?;
    let key = rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| key_err(e.to_string()))?
        .ok_or_else(|| {
            key_err("no PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC) in the file".into())
        })?;
    Ok((chain, key))
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
