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
use serde::Deserialize;
use std::collections::HashMap;
use tailcut_proto::units::{Bytes, Rate};
use tailcut_proto::Dur;

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

pub fn load(path: &str, q: &SwitchQueues) -> Result<TopoSpec, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("path: cannot read topology file '{path}': {e}"))?;
    parse(&text, q).map_err(|e| format!("path: topology file '{path}': {e}"))
}

pub fn parse(text: &str, q: &SwitchQueues) -> Result<TopoSpec, String> {
    // Editors on Windows may save a UTF-8 byte order mark, which TOML does not allow.
    let de = toml::Deserializer::new(text.strip_prefix('\u{feff}').unwrap_or(text));
    let f: TopoFile =
        serde_path_to_error::deserialize(de).map_err(|e| format!("{}: {}", e.path(), e.inner().message()))?;
    let mut spec = TopoSpec::default();
    let mut ids = HashMap::new();
    for (i, n) in f.node.iter().enumerate() {
        if ids.insert(n.name.clone(), i as u32).is_some() {
            return Err(format!("node[{i}].name: duplicate node name '{}'", n.name));
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
            ids.get(name)
                .copied()
                .ok_or_else(|| format!("link[{i}].{field}: unknown node '{name}'"))
        };
        let (a, b) = (end(&l.a, "a")?, end(&l.b, "b")?);
        if a == b {
            return Err(format!(
                "link[{i}]: a link needs two different nodes, got '{}' twice",
                l.a
            ));
        }
        if l.rate.0 == 0 {
            return Err(format!("link[{i}].rate: must be > 0"));
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
        return Err("node: a topology needs at least one host".into());
    }
    Ok(spec)
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
        assert!(e.contains("link[0].b: unknown node 's9'"), "{e}");
        let e = parse("[[node]]\nname='h0'\nkind='router'", &q).err().unwrap();
        assert!(e.starts_with("node[0].kind"), "{e}");
    }

    #[test]
    fn a_byte_order_mark_is_accepted() {
        let text = "\u{feff}[[node]]\nname='h0'\nkind='host'\n";
        let spec = parse(text, &SwitchQueues::default()).unwrap();
        assert_eq!(spec.nodes.len(), 1);
    }
}
