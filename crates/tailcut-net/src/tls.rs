//! TLS material for DCQUIC on real sockets: a server's certificate chain and key, the roots a client
//! trusts, the name it asks for and the ALPN, from PEM files or generated on the spot.
//!
//! Generated material is a throwaway certificate authority and a leaf it signs for the names given
//! (rcgen, ECDSA P-256): enough for tests and testbeds, where both ends are ours. It is not a
//! deployment's PKI: its key sits in a file next to the certificates, and anyone who can read that
//! file can impersonate the server.

use crate::quic_crypto::{Identity, Tls};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use tailcut_proto::dcquic::real::ALPN;

/// DER bytes, so the configuration stays plain data (cloneable, comparable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsConfig {
    /// The server's certificate chain, leaf first (empty on a client).
    pub cert_chain: Vec<Vec<u8>>,
    /// The server's private key (PKCS#8, SEC1 or PKCS#1 DER).
    pub key: Vec<u8>,
    /// Certificates a client trusts as roots.
    pub roots: Vec<Vec<u8>>,
    /// The name a client asks for and checks the certificate against.
    pub server_name: String,
    /// Application protocols, in preference order.
    pub alpn: Vec<Vec<u8>>,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            cert_chain: Vec::new(),
            key: Vec::new(),
            roots: Vec::new(),
            server_name: "localhost".into(),
            alpn: vec![ALPN.to_vec()],
        }
    }
}

/// A generated CA and the leaf it signed, as PEM text.
pub struct Generated {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TlsConfig {
    /// Reads PEM files: `cert` (chain, leaf first) and `key` for a server, `ca` (one or more roots)
    /// for a client; each is optional. Errors name the file.
    pub fn from_pem_files(
        cert: Option<&Path>,
        key: Option<&Path>,
        ca: Option<&Path>,
    ) -> Result<TlsConfig, String> {
        let mut t = TlsConfig::default();
        if let Some(p) = cert {
            t.cert_chain = certs_in(p)?;
        }
        if let Some(p) = key {
            let k = PrivateKeyDer::from_pem_file(p).map_err(|e| format!("{}: {e}", p.display()))?;
            t.key = k.secret_der().to_vec();
        }
        if let Some(p) = ca {
            t.roots = certs_in(p)?;
        }
        Ok(t)
    }

    /// A throwaway CA and a leaf for `names` (DNS names or IP addresses): the server side gets the
    /// leaf and its key, the client side the CA as its root. Prints nothing; callers that write the
    /// material out say that it is for tests (see [`Generated`]).
    pub fn generate(names: &[String]) -> Result<(TlsConfig, Generated), String> {
        let err = |e: rcgen::Error| e.to_string();
        let ca_key = rcgen::KeyPair::generate().map_err(err)?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::new()).map_err(err)?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "tailcut throwaway CA");
        let ca = ca_params.self_signed(&ca_key).map_err(err)?;
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf_key = rcgen::KeyPair::generate().map_err(err)?;
        let leaf_params = rcgen::CertificateParams::new(names.to_vec()).map_err(err)?;
        let leaf = leaf_params.signed_by(&leaf_key, &issuer).map_err(err)?;
        let t = TlsConfig {
            cert_chain: vec![leaf.der().to_vec()],
            key: leaf_key.serialize_der(),
            roots: vec![ca.der().to_vec()],
            server_name: names.first().cloned().unwrap_or_else(|| "localhost".into()),
            alpn: vec![ALPN.to_vec()],
        };
        let g = Generated {
            ca_pem: ca.pem(),
            cert_pem: leaf.pem(),
            key_pem: leaf_key.serialize_pem(),
        };
        Ok((t, g))
    }

    /// This material as [`crate::quic_crypto`] takes it.
    pub fn quic(&self) -> Result<Tls<'_>, String> {
        let identity = if self.cert_chain.is_empty() {
            None
        } else {
            let key = PrivateKeyDer::try_from(self.key.clone()).map_err(|e| format!("tls.key: {e}"))?;
            Some(Identity {
                certs: self
                    .cert_chain
                    .iter()
                    .map(|c| CertificateDer::from(c.clone()))
                    .collect(),
                key,
            })
        };
        Ok(Tls {
            alpn: &self.alpn,
            identity,
            roots: self
                .roots
                .iter()
                .map(|c| CertificateDer::from(c.clone()))
                .collect(),
            server_name: &self.server_name,
        })
    }
}

/// The certificates in PEM text (roots for a client).
pub fn certs_in_pem(text: &str) -> Result<Vec<Vec<u8>>, String> {
    let certs = CertificateDer::pem_slice_iter(text.as_bytes())
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no certificate in the text".into());
    }
    Ok(certs)
}

fn certs_in(p: &Path) -> Result<Vec<Vec<u8>>, String> {
    let certs = CertificateDer::pem_file_iter(p)
        .map_err(|e| format!("{}: {e}", p.display()))?
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", p.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in the file", p.display()));
    }
    Ok(certs)
}
