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

/// Implements `Deserialize` for an enum of newtype variants tagged by `kind`.
macro_rules! kind_tagged {
    ($enum:ident { $($kind:literal => $var:ident($ty:ty)),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $enum {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
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
