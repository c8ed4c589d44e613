//! `tcp_reconnect`, `dctcp_reconnect`: a TCP or DCTCP RPC client that reconnects from its next NIC at
//! application level (DCQUIC Sec. 4.3's baseline). One layer over two TCP bases.

use super::over_tcp::{dctcp_cfg, Layer, OnTcpBase};
use super::{bad, Doc};
use crate::{EngineSpec, SchemeSpec, TcpParts};
use serde::{Deserialize, Serialize};
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::{ConfigError, Dur};

pub struct Reconnect;

pub const TCP_RECONNECT: OnTcpBase<Reconnect> = OnTcpBase {
    name: "tcp_reconnect",
    description:
        "TCP RPC client that reconnects from its next NIC at application level (DCQUIC Sec. 4.3 baseline)",
    base: TcpConfig::default,
    layer: Reconnect,
};

pub const DCTCP_RECONNECT: OnTcpBase<Reconnect> = OnTcpBase {
    name: "dctcp_reconnect",
    description:
        "DCTCP RPC client that reconnects from its next NIC at application level (DCQUIC Sec. 4.3 baseline)",
    base: dctcp_cfg,
    layer: Reconnect,
};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconnectParams {
    reconnect_after: Dur,
}

impl Layer for Reconnect {
    type Params = ReconnectParams;

    fn defaults(&self) -> ReconnectParams {
        ReconnectParams {
            reconnect_after: Dur::from_millis(1000),
        }
    }

    fn docs(&self) -> &'static [Doc] {
        &[(
            "reconnect_after",
            "the client reconnects from its next NIC when an RPC has made no progress this long (DCQUIC Sec. 4.3's application-level reconnection)",
        )]
    }

    fn build(&self, p: ReconnectParams, t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        if p.reconnect_after.0 == 0 {
            return bad("reconnect_after", "must be > 0");
        }
        Ok(SchemeSpec::of(EngineSpec::Reconnect {
            tcp: t.cfg,
            reconnect_after: p.reconnect_after,
        }))
    }
}
