//! `tailcut-net`: serve RPCs of one scheme on a UDP port, or measure RPC latency on loopback (a scheme
//! over the runtime, or kernel TCP for comparison). See `docs/net.md`.

use std::process::ExitCode;

const USAGE: &str = "\
usage:
  tailcut-net serve [SCHEME] [--bind 127.0.0.1:7000] [runtime flags]
      echo server: each request is answered with its own bytes
  tailcut-net cert --out DIR [--name localhost]...
      writes a throwaway CA (ca.pem) and a certificate for the names (cert.pem, key.pem): tests only
  tailcut-net bench [SCHEME | --scheme kernel-tcp|kernel-tls] [--size 10KB] [--count 2000] [--warmup 200]
                    [--server ADDR] [runtime flags] [--loss RATE [--loss-path P] [--seed 1]]
                    [--think-us 0] [--inline] [--fresh | --fresh-client] [--poisson RATE [--workers 16] [--seed 1]]
      closed-loop echo RPCs (one outstanding); without --server an echo server runs in-process on
      127.0.0.1. kernel-tcp and kernel-tls are the kernel's TCP (and rustls' TLS 1.3) on the same
      loopback. --loss drops that share of each side's datagrams before the socket (only path P's
      with --loss-path). --inline issues the calls from the runtime thread itself (no thread hop;
      only the engine latency is printed). --fresh (dcquic, kernel-tls) opens a new connection for
      every call and counts its set-up (dcquic: on one client, `Client::reconnect`); --fresh-client
      (dcquic) a new client for every call, its runtime thread and sockets too. --poisson RATE is an open loop instead: calls arrive as a
      Poisson process of RATE per second (seeded by --seed) over --workers threads (kernel-tcp: one
      connection each; a runtime scheme: one client they share), each latency from its arrival.
      Prints the latency distribution.
  SCHEME, exactly as an experiment file's [[schemes]] entry (same keys, units, defaults and errors;
  `tailcut schemes` lists them, docs/net.md says which run on sockets):
      --scheme NAME                         a registry scheme with its defaults (default cloudburst)
      --experiment FILE --entry NAME        the [[schemes]] entry of that name in an experiment file
      --param KEY=VALUE                     a params key over either (repeatable; min_rto=5ms,
                                            subflows=4, congestion_control={kind=\"dctcp\"}, mps.negotiate=false)
      --network-trims                       the network's switches cut payloads (CP can run)
  runtime flags: [--spin-us 0] (busy-poll the sockets that long before each sleep)
                 dcquic: [--cert cert.pem --key key.pem] (server; without them a throwaway CA, written by
                         [--ca-out ca.pem]) [--ca ca.pem] (client) [--server-name localhost]
                         [--alpn tailcut-rpc] [--task-bytes 0] (the MPS rule's task size) [--path-mtu 9000]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("serve") => tailcut_net::cli::serve(&args[1..]),
        Some("bench") => tailcut_net::cli::bench(&args[1..]),
        Some("cert") => tailcut_net::cli::cert(&args[1..]),
        _ => Err(USAGE.into()),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tailcut-net: {e}");
            ExitCode::FAILURE
        }
    }
}
