//! The hot path does not allocate per packet: ten times more packets through the same flows cost almost
//! no more heap allocations. (Its own test binary: dhat replaces the global allocator.)

use tailcut_sim::api;
use tailcut_sim::run::run;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn experiment(size: &str) -> String {
    format!(
        r#"
name = "alloc"
max_time = "2s"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
host_rate = "10Gbps"
fabric_rate = "10Gbps"
[network]
buffer = "200KB"
aqm = {{ kind = "ecn", k = "60KB" }}
[[faults]]
kind = "loss"
link = {{ between = ["leaf0", "spine0"] }}
model = {{ kind = "bernoulli", p = 0.01 }}
[[workload]]
name = "perm"
pattern = {{ kind = "permutation" }}
fixed = "{size}"
[[schemes]]
name = "dctcp"
transport = "dctcp"
params = {{ min_rto = "1ms" }}
"#
    )
}

/// (heap allocations during the run, packet-hops).
fn allocations(size: &str) -> (u64, u64) {
    let exp = api::parse_toml(&experiment(size)).unwrap();
    let before = dhat::HeapStats::get().total_blocks;
    let t = run(&exp, &mut |_| true).unwrap();
    let after = dhat::HeapStats::get().total_blocks;
    assert!(t.flows.iter().all(|f| f.finish_ns.is_some()));
    (after - before, t.runs[0].packet_hops)
}

#[test]
fn allocations_do_not_grow_with_packets() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let (small_allocs, small_hops) = allocations("1MB");
    let (big_allocs, big_hops) = allocations("10MB");
    assert!(big_hops > 8 * small_hops, "{big_hops} vs {small_hops}");
    let extra_allocs = big_allocs.saturating_sub(small_allocs) as f64;
    let extra_hops = (big_hops - small_hops) as f64;
    // Amortised growth of reused buffers (queues, event buckets) is allowed; one allocation per
    // thousand packet-hops is not reached unless something allocates per packet.
    assert!(
        extra_allocs / extra_hops < 1e-3,
        "{extra_allocs} more allocations for {extra_hops} more packet-hops (small run: {small_allocs} allocations)"
    );
}
