//! `proactive`: Proactive (Flach et al., SIGCOMM'13), every data packet sent twice.

use super::over_tcp::Plain;
use tailcut_proto::tcp::TcpConfig;

pub const PROACTIVE: Plain = Plain {
    name: "proactive",
    description: "Proactive (Flach et al., SIGCOMM'13): every data packet sent twice",
    base: TcpConfig::default,
    set: |c| c.proactive = true,
};
