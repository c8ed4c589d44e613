//! Topology files: TOML with `[[node]]` and `[[link]]` tables.
//!
//! ```toml
//! [[node]]
//! name = "h0"
//! kind = "host"
//! rack = 0          # hosts only, default 0
//! [[node]]
//! name = "s0"
//! kind = "switch"
//! [[link]]
//! a = "h0"
//! b = "s0"
//! rate = "10Gbps"
//! delay = "1us"
//! buffer = "256KB"  # optional: overrides the switch buffer at both switch ends
//! tier = 0          # optional, default 0
//! ```

use super::{LinkSpec, NodeKind, NodeSpec, PortQueueSpec, SwitchQueues, TopoSpec};
use crate::limits;
use serde::Deserialize;
use std::collections::HashMap;
use tailcut_proto::units::{Bytes, Rate};
use tailcut_proto::{ConfigError, Dur};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileNode {
    name: String,
    kind: NodeKind,
    #[serde(default)]
    rack: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLink {
    a: String,
    b: String,
    rate: Rate,
    delay: Dur,
    #[serde(default)]
    buffer: Option<Bytes>,
    #[serde(default)]
    tier: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TopoFile {
    node: Vec<FileNode>,
    #[serde(default)]
    link: Vec<FileLink>,
}

/// Reads and parses the file `path`. Errors are at `path` (the `topology` table's key naming the file),
/// with the file's own field in the reason: the field is in another document than the path's.
pub fn load(path: &str, q: &SwitchQueues) -> Result<TopoSpec, ConfigError> {
    let text = crate::limits::read_regular_file(std::path::Path::new(path))
        .map_err(|e| ConfigError::new("path", format!("cannot read topology file '{path}': {e}")))?;
    parse(&text, q).map_err(|e| ConfigError::new("path", format!("topology file '{path}': {e}")))
}

/// Parses a topology file's text; error paths are the file's own (`link[0].b`).
pub fn parse(text: &str, q: &SwitchQueues) -> Result<TopoSpec, ConfigError> {
    // Editors on Windows may save a UTF-8 byte order mark, which TOML does not allow.
    let de = toml::Deserializer::new(text.strip_prefix('\u{feff}').unwrap_or(text));
    let f: TopoFile = serde_path_to_error::deserialize(de)
        .map_err(|e| ConfigError::new(e.path().to_string(), e.inner().message()))?;
    let mut spec = TopoSpec::default();
    let mut ids = HashMap::new();
    for (i, n) in f.node.iter().enumerate() {
        if ids.insert(n.name.clone(), i as u32).is_some() {
            return Err(ConfigError::new(
                format!("node[{i}].name"),
                format!("duplicate node name '{}'", n.name),
            ));
        }
        if n.kind == NodeKind::Host {
            spec.host_rack.push(n.rack);
        }
        spec.nodes.push(NodeSpec {
            name: n.name.clone(),
            kind: n.kind,
        });
    }
    for (i, l) in f.link.iter().enumerate() {
        let end = |name: &str, field: &str| {
            ids.get(name).copied().ok_or_else(|| {
                let valid = super::describe_node_names(f.node.iter().map(|n| n.name.as_str()));
                ConfigError::new(
                    format!("link[{i}].{field}"),
                    format!("unknown node '{name}' (the file's nodes: {valid})"),
                )
            })
        };
        let (a, b) = (end(&l.a, "a")?, end(&l.b, "b")?);
        if a == b {
            return Err(ConfigError::new(
                format!("link[{i}]"),
                format!("a link needs two different nodes, got '{}' twice", l.a),
            ));
        }
        let kind = |n: u32| spec.nodes[n as usize].kind;
        if kind(a) == NodeKind::Host && kind(b) == NodeKind::Host {
            return Err(ConfigError::new(
                format!("link[{i}]"),
                format!(
                    "hosts do not forward, so a link between two hosts ('{}' and '{}') can carry no traffic; join them through a switch",
                    l.a, l.b
                ),
            ));
        }
        let checked = |e: ConfigError| e.at(&format!("link[{i}]"));
        limits::rate("rate", l.rate).map_err(checked)?;
        limits::delay("delay", l.delay).map_err(checked)?;
        if let Some(b) = l.buffer {
            limits::buffer("buffer", b).map_err(checked)?;
        }
        let queue = |n: u32| -> (u64, PortQueueSpec) {
            if spec.nodes[n as usize].kind == NodeKind::Host {
                (q.host_buffer.0, q.host_queue())
            } else {
                (
                    l.buffer.unwrap_or(q.buffer).0,
                    PortQueueSpec {
                        aqm: q.aqm.clone(),
                        classes: q.classes.clone(),
                        sched: q.sched.clone(),
                    },
                )
            }
        };
        let (buffer_a, aqm_a) = queue(a);
        let (buffer_b, aqm_b) = queue(b);
        spec.links.push(LinkSpec {
            a,
            b,
            rate_bps: l.rate.0,
            delay: l.delay,
            buffer_a,
            buffer_b,
            aqm_a,
            aqm_b,
            tier: l.tier,
        });
    }
    if spec.host_rack.is_empty() {
        return Err(ConfigError::new("node", "a topology needs at least one host"));
    }
    connected(&spec)?;
    Ok(spec)
}

/// Every host has a link, and every host can reach the first host through switches (hosts never
/// forward, so only switch-to-switch links join racks). A host no path reaches would otherwise make
/// its flows wait until `max_time`, or panic where its NIC rate is read.
///
/// The errors name the node inside the reason, with an empty path: "node[2] (host h2) has no link ..."
/// keeps the host's name next to its index, which a `path: reason` split would cut apart (and the
/// bad-input corpus and docs quote that text).
fn connected(spec: &TopoSpec) -> Result<(), ConfigError> {
    let n = spec.nodes.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let is_switch = |x: u32| spec.nodes[x as usize].kind == NodeKind::Switch;
    for l in &spec.links {
        if is_switch(l.a) && is_switch(l.b) {
            let (ra, rb) = (root(&mut parent, l.a as usize), root(&mut parent, l.b as usize));
            parent[ra] = rb;
        }
    }
    // The switch components each host is attached to.
    let mut attached: Vec<Vec<usize>> = vec![Vec::new(); n];
    for l in &spec.links {
        for (h, s) in [(l.a, l.b), (l.b, l.a)] {
            if !is_switch(h) && is_switch(s) {
                let r = root(&mut parent, s as usize);
                attached[h as usize].push(r);
            }
        }
    }
    let hosts: Vec<usize> = (0..n).filter(|&i| !is_switch(i as u32)).collect();
    for &h in &hosts {
        if attached[h].is_empty() {
            return Err(ConfigError::new(
                "",
                format!(
                    "node[{h}] (host {}) has no link to a switch; every host needs one",
                    spec.nodes[h].name
                ),
            ));
        }
    }
    let first = hosts[0];
    for &h in &hosts[1..] {
        if !attached[h].iter().any(|c| attached[first].contains(c)) {
            return Err(ConfigError::new(
                "",
                format!(
                    "node[{h}] (host {}) cannot reach node[{first}] (host {}): no path of switches joins them",
                    spec.nodes[h].name, spec.nodes[first].name
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field() {
        let q = SwitchQueues::default();
        let e = parse(
            "[[node]]\nname='h0'\nkind='host'\n[[link]]\na='h0'\nb='s9'\nrate='1Gbps'\ndelay='1us'",
            &q,
        )
        .err()
        .unwrap();
        assert_eq!(e.path, "link[0].b");
        assert_eq!(e.reason, "unknown node 's9' (the file's nodes: h0)");
        let e = parse("[[node]]\nname='h0'\nkind='router'", &q).err().unwrap();
        assert_eq!(e.path, "node[0].kind", "{e}");
    }

    #[test]
    fn a_byte_order_mark_is_accepted() {
        let text = "\u{feff}[[node]]\nname='h0'\nkind='host'\n[[node]]\nname='s0'\nkind='switch'\n\
                    [[link]]\na='h0'\nb='s0'\nrate='1Gbps'\ndelay='1us'\n";
        let spec = parse(text, &SwitchQueues::default()).unwrap();
        assert_eq!(spec.nodes.len(), 2);
    }
}
