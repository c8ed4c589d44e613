//! The workload agent (filled in below).
pub fn main() -> Result<(), String> {
    Err("agent: not built yet".into())
}
