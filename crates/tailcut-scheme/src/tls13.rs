//! `tcp_tls13`, `dctcp_tls13`: TCP or DCTCP with its 3-way handshake plus a TLS 1.3 handshake before data
//! (DCQUIC's baselines). One layer over two TCP bases.

use super::over_tcp::{dctcp_cfg, Layer, OnTcpBase};
use super::Doc;
use crate::{EngineSpec, SchemeSpec, TcpParts};
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::tls13::TlsModel;
use tailcut_proto::ConfigError;

pub struct Tls13;

pub const TCP_TLS13: OnTcpBase<Tls13> = OnTcpBase {
    name: "tcp_tls13",
    description: "TCP with its 3-way handshake plus a TLS 1.3 handshake (one more round trip and its bytes) before data",
    base: TcpConfig::default,
    layer: Tls13,
};

pub const DCTCP_TLS13: OnTcpBase<Tls13> = OnTcpBase {
    name: "dctcp_tls13",
    description: "DCTCP with its 3-way handshake plus a TLS 1.3 handshake (one more round trip and its bytes) before data",
    base: dctcp_cfg,
    layer: Tls13,
};

impl Layer for Tls13 {
    type Params = TlsModel;

    fn defaults(&self) -> TlsModel {
        TlsModel::default()
    }

    fn docs(&self) -> &'static [Doc] {
        &[
            ("tls_client_hello", "ClientHello bytes (first client flight)"),
            (
                "tls_server_flight",
                "ServerHello .. Finished bytes (certificate and its verify included)",
            ),
            ("tls_client_finished", "client Finished bytes"),
        ]
    }

    fn build(&self, tls: TlsModel, t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        tls.validate().map_err(|e| e.at("params"))?;
        Ok(SchemeSpec::of(EngineSpec::Tls { tcp: t.cfg, tls }))
    }
}
