//! Deserialisation of `kind`-tagged tables with full error paths.
//!
//! Serde buffers internally tagged enums before picking the variant, which loses the path of an error
//! inside them ("topology: invalid type" instead of "topology.leaves: invalid type"). These enums
//! instead read the table, dispatch on `kind` themselves and deserialise the variant's own struct with
//! path tracking; the outer path and the inner one are joined by `api::path_error`.

use serde_json::Value;

/// Deserialises `v` as `T`, prefixing any error with the path inside `v`.
pub fn with_path<T: serde::de::DeserializeOwned, E: serde::de::Error>(v: Value) -> Result<T, E> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        if path.is_empty() || path == "." {
            E::custom(e.inner())
        } else {
            E::custom(format!("{path}: {}", e.inner()))
        }
    })
}

/// Splits a `kind`-tagged table into its kind and the remaining keys.
pub fn split_kind<E: serde::de::Error>(v: Value, kinds: &[&str]) -> Result<(String, Value), E> {
    let Value::Object(mut map) = v else {
        return Err(E::custom(format!(
            "expected a table with a `kind` key (one of {})",
            kinds.join(", ")
        )));
    };
    match map.remove("kind") {
        Some(Value::String(k)) if kinds.contains(&k.as_str()) => Ok((k, Value::Object(map))),
        Some(Value::String(k)) => Err(E::custom(format!(
            "kind: unknown kind '{k}', expected one of {}",
            kinds.join(", ")
        ))),
        Some(other) => Err(E::custom(format!("kind: expected a string, got {other}"))),
        None => Err(E::custom(format!(
            "missing field `kind` (one of {})",
            kinds.join(", ")
        ))),
    }
}

/// JSON has no NaN or infinity, so reading a table into a `serde_json::Value` would turn
/// `oversubscription = nan` into `null`, i.e. an absent option. Non-finite floats are instead kept as
/// strings with this prefix and refused by [`refuse_non_finite`] with the key's path.
const NON_FINITE: &str = "\u{0}non-finite:";

/// A `serde_json::Value` read from any format, with non-finite floats marked (see [`NON_FINITE`]).
pub struct Marked(pub Value);

impl<'de> serde::Deserialize<'de> for Marked {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Marked;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a value")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Marked, E> {
                Ok(Marked(Value::Bool(b)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Marked, E> {
                Ok(Marked(Value::from(n)))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Marked, E> {
                Ok(Marked(Value::from(n)))
            }
            fn visit_f64<E>(self, x: f64) -> Result<Marked, E> {
                Ok(Marked(match serde_json::Number::from_f64(x) {
                    Some(n) => Value::Number(n),
                    None => Value::String(format!("{NON_FINITE}{x}")),
                }))
            }
            fn visit_str<E>(self, s: &str) -> Result<Marked, E> {
                Ok(Marked(Value::String(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Marked, E> {
                Ok(Marked(Value::String(s)))
            }
            fn visit_unit<E>(self) -> Result<Marked, E> {
                Ok(Marked(Value::Null))
            }
            fn visit_none<E>(self) -> Result<Marked, E> {
                Ok(Marked(Value::Null))
            }
            fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Marked, D2::Error> {
                <Marked as serde::Deserialize>::deserialize(d)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Marked, A::Error> {
                let mut v = Vec::new();
                while let Some(Marked(x)) = a.next_element()? {
                    v.push(x);
                }
                Ok(Marked(Value::Array(v)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Marked, A::Error> {
                let mut m = serde_json::Map::new();
                while let Some((k, Marked(x))) = a.next_entry::<String, Marked>()? {
                    m.insert(k, x);
                }
                Ok(Marked(Value::Object(m)))
            }
        }
        d.deserialize_any(V)
    }
}

/// The first non-finite float of `v` as an error naming its path (`oversubscription: must be a finite
/// number, got NaN`).
pub fn refuse_non_finite<E: serde::de::Error>(v: &Value, path: &str) -> Result<(), E> {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::String(s) => match s.strip_prefix(NON_FINITE) {
            Some(x) => Err(E::custom(format!("{path}: must be a finite number, got {x}"))),
            None => Ok(()),
        },
        Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| refuse_non_finite(x, &format!("{path}[{i}]"))),
        Value::Object(m) => m.iter().try_for_each(|(k, x)| refuse_non_finite(x, &join(k))),
        _ => Ok(()),
    }
}

/// Implements `Deserialize` for an enum of newtype variants tagged by `kind`.
macro_rules! kind_tagged {
    ($enum:ident { $($kind:literal => $var:ident($ty:ty)),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $enum {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let $crate::tagged::Marked(v) = <$crate::tagged::Marked as serde::Deserialize>::deserialize(d)?;
                $crate::tagged::refuse_non_finite::<D::Error>(&v, "")?;
                let (kind, rest) = $crate::tagged::split_kind::<D::Error>(v, &[$($kind),*])?;
                match kind.as_str() {
                    $($kind => $crate::tagged::with_path::<$ty, D::Error>(rest).map($enum::$var),)*
                    _ => unreachable!("split_kind checked the kind"),
                }
            }
        }
    };
}
pub(crate) use kind_tagged;
