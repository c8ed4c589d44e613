//! Which driver runs a scheme, and what each driver can run. The simulator runs every spec. The UDP
//! runtime (`tailcut-net`, and the testbed's runtime hosts) runs the engines on real sockets: it
//! takes the same `[[schemes]]` entry, with a few defaults that describe the socket instead of the
//! simulated NIC ([`SOCKET_DEFAULTS`], applied only where the entry does not set the key), and refuses
//! what a socket network cannot give, naming the field. Nothing is approximated silently.

use crate::{EngineSpec, SchemeSpec, SwitchDefault};
use serde_json::{Map, Value};
use tailcut_proto::tcp::HostProfile;
use tailcut_proto::ConfigError;

/// Where a scheme runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// `tailcut-sim`: every scheme, on the simulated network.
    Simulator,
    /// `tailcut-net`: tailcut's engines on UDP sockets, over a real network with these features.
    Sockets(Network),
    /// Linux's own stacks on the testbed's hosts ([`KERNEL_STACKS`]): the entry names the stack,
    /// and only the parameters with a kernel setting may differ from their defaults.
    Kernel,
}

/// The transports Linux runs itself on the testbed, and the parameters each maps to a kernel
/// setting: `min_rto` to `net.ipv4.tcp_rto_min_us`, `ecn` to `net.ipv4.tcp_ecn`, `sack` to
/// `net.ipv4.tcp_sack`, `loss_detection` to `net.ipv4.tcp_recovery` and `tcp_early_retrans`
/// (`"dupthresh"`: RACK and TLP off, Linux's DupThresh recovery; `"rack_tlp"`: Linux's default),
/// DCTCP's `congestion_control.g` to the BPF DCTCP's gain, MPTCP's `subflows` and `coupled` to the
/// path manager's joins and the congestion control. `dctcp` is Linux TCP with tailcut's BPF DCTCP;
/// `tcp_tls13` and `dctcp_tls13` are the same with TLS 1.3 (rustls) over each connection, whose
/// handshake bytes are the real ones, not the simulator's model of them. `tcp_reconnect` and
/// `dctcp_reconnect` are `tcp` and `dctcp` under the testbed agent's reconnecting RPC client, which
/// takes `reconnect_after` from the scheme.
pub const KERNEL_STACKS: &[(&str, &[&str])] = &[
    ("tcp", &["min_rto", "ecn", "sack", "loss_detection"]),
    (
        "mptcp",
        &["min_rto", "ecn", "sack", "loss_detection", "subflows", "coupled"],
    ),
    (
        "dctcp",
        &["min_rto", "ecn", "sack", "loss_detection", "congestion_control"],
    ),
    ("tcp_tls13", &["min_rto", "ecn", "sack", "loss_detection"]),
    (
        "dctcp_tls13",
        &["min_rto", "ecn", "sack", "loss_detection", "congestion_control"],
    ),
    (
        "tcp_reconnect",
        &["min_rto", "ecn", "sack", "loss_detection", "reconnect_after"],
    ),
    (
        "dctcp_reconnect",
        &[
            "min_rto",
            "ecn",
            "sack",
            "loss_detection",
            "congestion_control",
            "reconnect_after",
        ],
    ),
];

/// What the real network under the UDP runtime provides beyond forwarding packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Network {
    /// Switch ports cut the payload of a packet they cannot queue instead of dropping it (the
    /// testbed fabric's trimming ports): CP's switch half is there.
    pub trims: bool,
}

/// The engine families a socket default applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// TCP and every scheme over it, MPTCP and FUSO's sub-flows included.
    Tcp,
    /// A single-path TCP connection, which on sockets always opens with a handshake (MPTCP's
    /// sub-flows start established, as in the simulator).
    TcpConnection,
    CloudBurst,
    Dcquic,
}

/// One default that differs on sockets: (family, parameter, value, why).
pub type SocketDefault = (Family, &'static str, &'static str, &'static str);

/// Defaults the UDP runtime lays under an entry's own keys. Each describes the socket rather than a
/// protocol choice; an entry that sets the key keeps its value.
pub const SOCKET_DEFAULTS: &[SocketDefault] = &[
    (
        Family::Tcp,
        "mss_bytes",
        "1372",
        "a 1,500-byte packet less IPv4 (20), UDP (8), the runtime's preamble (12), the largest TCP-in-UDP header (76) and 12 spare; the runtime replaces it with its path MTU less the same 128 bytes unless the entry sets mss_bytes",
    ),
    (
        Family::Tcp,
        "header_bytes",
        "128",
        "IPv4, UDP, preamble and TCP-in-UDP header bytes of a full segment, so a segment is 1,500 bytes",
    ),
    (
        Family::TcpConnection,
        "initial_rto",
        "1s",
        "RTO of the handshake's SYN, before any RTT sample: RFC 6298's 1 s, as Linux (the simulator's rule that it follows min_rto applies to connections modelled without a handshake; a socket connection always has one)",
    ),
    (
        Family::Tcp,
        "rcv_window_bytes",
        "1048576",
        "what one connection may hold above its cumulative ACK: a real socket buffer, not the simulator's 16 MB",
    ),
    (
        Family::Dcquic,
        "max_streams",
        "100",
        "quinn sets up state for every stream a peer may open; 1,024 cost ~13% of a fresh connection's CPU (quinn's own default is 100)",
    ),
    (
        Family::CloudBurst,
        "symbol_bytes",
        "1444",
        "a 1,500-byte packet less IPv4 (20), UDP (8), the preamble (12) and the block layout's header (16); with multi_block = false (Fig. 4's 12-byte header) 1448 fits too",
    ),
    (
        Family::CloudBurst,
        "header_bytes",
        "56",
        "IPv4, UDP, preamble and the block layout's header (52 with multi_block = false)",
    ),
    (
        Family::CloudBurst,
        "nic_rate",
        "2Gbps",
        "LINK_CAP: a rate one receiving thread keeps up with on a shared 2-vCPU host (at 10 Gbit/s its socket queue grew to milliseconds)",
    ),
    (
        Family::CloudBurst,
        "transmission_timeout",
        "20ms",
        "generous for a loaded host (a descheduled thread stalls for milliseconds); ids rest twice this after use",
    ),
    (
        Family::CloudBurst,
        "decoder_timeout",
        "5ms",
        "a finished message's record is kept this long after its last packet",
    ),
    (
        Family::CloudBurst,
        "pacing_quantum",
        "50us",
        "the rounds due within 50 us leave together, at the same average rate: one timer wake-up per round (24 us at 2 Gbit/s) cost ~24% of a 100 KB call's CPU in re-arming the timer, and a busy thread's late STOPs then let the sender spray 3.5x the source packets",
    ),
    (
        Family::CloudBurst,
        "stop_repeat_gap",
        "100us",
        "a receiver behind on a backlog of a finished block's packets repeats its STOP once per 100 us, not once per packet (which was ~40% of the datagrams of a 100 KB call on a loaded host)",
    ),
    (
        Family::CloudBurst,
        "exclude_host_delay",
        "true",
        "a loaded host's runtime thread was descheduled for 24-208 ms within one 1 MB call, past t: the call failed with nothing lost",
    ),
];

/// A default as the entry would write it: a number or boolean as such, anything else (a size, rate
/// or duration with its unit) as a string.
pub fn value_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// The engine loops of the UDP runtime (`tailcut-net` spawns one per association).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeFamily {
    CloudBurst,
    Tcp,
    Mptcp,
    Dcquic,
}

/// Which runtime loop runs `e` on sockets, or why none does (naming the field). The one match over
/// [`EngineSpec`] on the socket side: a new engine family decides here, and `tailcut-net` follows.
pub fn runtime_family(spec: &SchemeSpec) -> Result<RuntimeFamily, ConfigError> {
    let name = spec.transport;
    match &spec.engine {
        EngineSpec::Tcp(_) => Ok(RuntimeFamily::Tcp),
        EngineSpec::Mptcp { .. } => Ok(RuntimeFamily::Mptcp),
        EngineSpec::CloudBurst { .. } => Ok(RuntimeFamily::CloudBurst),
        EngineSpec::Dcquic(_) => Ok(RuntimeFamily::Dcquic),
        EngineSpec::Tls { .. } => Err(ConfigError::new(
            "transport",
            format!("'{name}' is the simulator's model of TCP + TLS 1.3; on sockets its baseline is the kernel's TCP + TLS 1.3 (scheme kernel-tls of tailcut net bench)"),
        )),
        EngineSpec::Reconnect { .. } => Err(ConfigError::new(
            "transport",
            format!("'{name}' (an application that reconnects from its next NIC) is not in the runtime (simulator only)"),
        )),
    }
}

/// The families whose socket defaults a resolved scheme takes (none for one the runtime refuses:
/// its refusal then comes from [`check`], not from a borrowed default).
pub fn families(spec: &SchemeSpec) -> &'static [Family] {
    match runtime_family(spec) {
        Ok(RuntimeFamily::CloudBurst) => &[Family::CloudBurst],
        Ok(RuntimeFamily::Dcquic) => &[Family::Dcquic],
        Ok(RuntimeFamily::Mptcp) => &[Family::Tcp],
        Ok(RuntimeFamily::Tcp) => &[Family::Tcp, Family::TcpConnection],
        Err(_) => &[],
    }
}

/// Resolves `transport` with `params` for `driver`: the registry's resolution, with the driver's
/// defaults under the entry's keys, then the driver's refusals. Error paths are relative to the
/// scheme's table (`params.multi_block`, `transport`).
pub fn resolve_for(
    transport: &str,
    params: &Map<String, Value>,
    driver: Driver,
) -> Result<SchemeSpec, ConfigError> {
    let Driver::Sockets(_) = driver else {
        let spec = crate::resolve(transport, params)?;
        if driver == Driver::Kernel {
            on_kernel(transport, params)?;
        }
        return Ok(spec);
    };
    // Real hosts' applications wake up when they do: a modelled wake-up cannot be added to them. (The
    // `testbed` profile's, which describes real hosts, is accepted and left to the hosts.)
    if params.contains_key("host_delay") {
        return Err(ConfigError::new(
            "params.host_delay",
            "the runtime's applications are real: their wake-ups are the host's own, not a modelled \
             delay (simulator only)",
        ));
    }
    let fams = families(&crate::resolve(transport, &Map::new())?);
    let mut merged = Map::new();
    for &(f, key, value, _) in SOCKET_DEFAULTS {
        if fams.contains(&f) && !params.contains_key(key) {
            merged.insert(key.to_string(), value_of(value));
        }
    }
    merged.extend(params.iter().map(|(k, v)| (k.clone(), v.clone())));
    let spec = crate::resolve(transport, &merged)?;
    check(&spec, driver)?;
    Ok(spec)
}

/// Whether `driver` can run `spec`: `Err` names the field and says why not.
pub fn check(spec: &SchemeSpec, driver: Driver) -> Result<(), ConfigError> {
    match driver {
        Driver::Simulator => Ok(()),
        Driver::Sockets(net) => on_sockets(spec, net),
        Driver::Kernel => on_kernel(spec.transport, &Map::new()),
    }
}

/// Refuses a transport Linux does not run, or a parameter with no kernel setting, naming it.
fn on_kernel(transport: &str, params: &Map<String, Value>) -> Result<(), ConfigError> {
    let stacks: Vec<&str> = KERNEL_STACKS.iter().map(|(n, _)| *n).collect();
    let Some((_, settable)) = KERNEL_STACKS.iter().find(|(n, _)| *n == transport) else {
        return Err(ConfigError::new(
            "transport",
            format!(
                "'{transport}' has no kernel implementation on the testbed (available: {}); the testbed \
                 runs the other schemes on tailcut's engines over UDP",
                stacks.join(", ")
            ),
        ));
    };
    // The testbed's hosts are Linux: a profile describing Linux (`linux`, or `testbed`, which is
    // these very hosts) is what they run; the papers' ns-2 sender is not.
    // (The registry's resolution, before this, refused a value that names no profile.)
    if let Some(host) = params.get("host") {
        let profile = serde_json::from_value::<HostProfile>(host.clone()).ok();
        if !profile.is_some_and(HostProfile::is_linux) {
            return Err(ConfigError::new(
                "params.host",
                format!(
                    "the testbed's hosts run Linux's sender (host = \"linux\" or \"testbed\"), not {host} \
                     (the papers' ns-2 sender runs in the simulator only)"
                ),
            ));
        }
    }
    match params
        .keys()
        .find(|k| *k != "host" && !settable.contains(&k.as_str()))
    {
        Some(k) => Err(ConfigError::new(
            format!("params.{k}"),
            format!(
                "the testbed runs the kernel's {transport}, which has no such setting (only {} map to \
                 it); set kernel parameters in [testbed], or name the scheme in testbed.runtime to run \
                 tailcut's own {transport} engine instead",
                settable.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// Refuses what the UDP runtime cannot run, naming the field.
fn on_sockets(spec: &SchemeSpec, net: Network) -> Result<(), ConfigError> {
    let refuse = |path: &str, why: &str| Err(ConfigError::new(path, why));
    let name = spec.transport;
    if spec.replicas.copies > 1 {
        return refuse(
            "transport",
            &format!("'{name}' sends a flow on several connections; the runtime runs one connection per call (simulator only)"),
        );
    }
    match spec.switch {
        SwitchDefault::Unchanged | SwitchDefault::CloudBurstClass { .. } => {}
        SwitchDefault::Trim { .. } if net.trims => {}
        SwitchDefault::Trim { .. } => {
            return refuse(
                if name == "cp" || name == "cp_dctcp" { "transport" } else { "params.cp" },
                "CP needs switch ports that cut payloads instead of dropping; this network has none \
                 (the testbed's fabric has them with trim = true; the simulator always)",
            )
        }
        SwitchDefault::PriorityClasses { .. } => {
            return refuse(
                "transport",
                &format!("'{name}' needs strict-priority switch classes, which a socket network does not give (simulator only)"),
            )
        }
        SwitchDefault::Pfabric { .. } => {
            return refuse(
                "transport",
                &format!("'{name}' needs pFabric's priority-dropping switch queues (simulator only)"),
            )
        }
    }
    runtime_family(spec)?;
    match &spec.engine {
        // Refused above.
        EngineSpec::Tls { .. } | EngineSpec::Reconnect { .. } => Ok(()),
        EngineSpec::Tcp(c) | EngineSpec::Mptcp { tcp: c, .. } => {
            if c.spray_paths > 0 {
                return refuse(
                    "params.spray_paths",
                    "per-packet source routing is the simulator's; on sockets use mptcp or fuso for several paths",
                );
            }
            Ok(())
        }
        EngineSpec::Dcquic(c) => {
            if c.zero_rtt {
                return refuse(
                    "params.zero_rtt",
                    "not available on real sockets (session tickets are simulated)",
                );
            }
            if c.tail_fec {
                return refuse("params.tail_fec", "not available on real sockets");
            }
            Ok(())
        }
        EngineSpec::CloudBurst {
            cfg,
            nic_rate_from_host,
        } => {
            if *nic_rate_from_host {
                return refuse(
                    "params.nic_rate",
                    "\"host\" is the simulated host's NIC rate; on sockets give LINK_CAP as a rate (default 2Gbps)",
                );
            }
            if cfg.path_mode != tailcut_proto::cloudburst::PathMode::Explicit {
                return refuse(
                    "params.path_mode",
                    "the runtime's paths are its sockets (explicit); ecmp source-port pools are the simulator's",
                );
            }
            Ok(())
        }
    }
}

/// A `[[schemes]]` entry as a socket driver takes it: the registry name and its parameters. `name`
/// (a label) is kept; keys that describe the simulated network are refused, naming them.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub name: Option<String>,
    pub transport: String,
    pub params: Map<String, Value>,
}

impl Entry {
    /// Lays `more` over the entry's `params`, table by table (`{mps = {negotiate = false}}` keeps
    /// the entry's other MPS keys), as the command line's dotted `--param` keys do.
    pub fn overlay(&mut self, more: &Map<String, Value>) {
        fn deep(base: &mut Map<String, Value>, over: &Map<String, Value>) {
            for (k, v) in over {
                match (base.get_mut(k), v) {
                    (Some(Value::Object(b)), Value::Object(o)) => deep(b, o),
                    _ => {
                        base.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        deep(&mut self.params, more);
    }

    /// Reads an entry table (`{ name, transport, params }`, as an experiment file writes it). Error
    /// paths are relative to the entry.
    pub fn from_table(t: &Map<String, Value>) -> Result<Entry, ConfigError> {
        let mut e = Entry {
            name: None,
            transport: String::new(),
            params: Map::new(),
        };
        for (k, v) in t {
            match k.as_str() {
                "name" => {
                    e.name = Some(v.as_str().ok_or_else(|| ConfigError::new("name", "must be a string"))?.to_string())
                }
                "transport" => {
                    e.transport = v
                        .as_str()
                        .ok_or_else(|| ConfigError::new("transport", "must be a string (tailcut schemes lists them)"))?
                        .to_string()
                }
                "params" => {
                    e.params = v
                        .as_object()
                        .ok_or_else(|| ConfigError::new("params", "must be a table"))?
                        .clone()
                }
                // Which of the experiment's workload components the scheme carries: a socket
                // driver's calls are its one workload, so there is nothing to choose.
                "applies_to" => {}
                "network" => {
                    return Err(ConfigError::new(
                        k,
                        "switch queues of the simulated network; on sockets the network is the real one (remove it, or run the entry in the simulator)",
                    ))
                }
                "shim" => {
                    return Err(ConfigError::new(
                        k,
                        "a host shim under kernel TCP (T-RACKs runs as tailcut-tracksd on the testbed's hosts), not under the UDP runtime",
                    ))
                }
                _ => {
                    return Err(ConfigError::new(
                        k,
                        "unknown key of a scheme entry (name, transport, params)",
                    ))
                }
            }
        }
        if e.transport.is_empty() {
            return Err(ConfigError::new(
                "transport",
                "missing (tailcut schemes lists them)",
            ));
        }
        Ok(e)
    }
}
