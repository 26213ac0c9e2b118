//! The rustls client configuration: web roots, a CA file, or (insecure) no verification.

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

/// A rustls client configuration: web roots, a CA file, or (insecure) no verification.
pub fn client_config(opts: &TlsOptions) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
            .with_no_client_auth()
    } else {
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
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = opts.alpn.clone();
    Ok(Arc::new(config))
}

/// Accepts any certificate (still checking that signatures are well formed), for `--insecure`.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
