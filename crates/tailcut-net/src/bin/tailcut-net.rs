//! `tailcut-net`: serve RPCs of one scheme on a UDP port, or measure RPC latency on loopback (a scheme
//! over the runtime, or kernel TCP for comparison). See `docs/net.md`.

use std::process::ExitCode;

const USAGE: &str = "\
usage:
  tailcut-net serve [--scheme cloudburst|tcp|mptcp|fuso|dcquic] [--bind 127.0.0.1:7000] [scheme flags]
      echo server: each request is answered with its own bytes
  tailcut-net cert --out DIR [--name localhost]...
      writes a throwaway CA (ca.pem) and a certificate for the names (cert.pem, key.pem): tests only
  tailcut-net bench [--scheme cloudburst|tcp|mptcp|fuso|dcquic|kernel-tcp|kernel-tls] [--size 10KB] [--count 2000] [--warmup 200]
                    [--server ADDR] [scheme flags] [--loss RATE [--loss-path P] [--seed 1]]
                    [--think-us 0] [--inline] [--spin-us 0]
      closed-loop echo RPCs (one outstanding); without --server an echo server runs in-process on
      127.0.0.1. cloudburst, tcp, mptcp and fuso run over the runtime (tailcut's engines; the last
      three over TCP-in-UDP); kernel-tcp is the kernel's TCP on the same loopback. --loss drops that share of
      each side's datagrams before the socket (only path P's with --loss-path). --inline issues the
      calls from the runtime thread itself (no thread hop; only the engine latency is printed).
      --spin-us busy-polls the sockets that long before each sleep (both ends of an in-process
      bench). --fresh (dcquic, kernel-tls) opens a new connection for every call and counts its
      set-up (kernel-tls: TCP connect + TLS 1.3 handshake, rustls). Prints the latency distribution.
  scheme flags: cloudburst: [--paths 4] [--nic-rate 2Gbps] [--symbol-bytes 1448]
                tcp, mptcp, fuso: [--mss 1372] [--min-rto-us 200000] [--initial-rto-us 1000000]
                                  [--dctcp] (DCTCP, g = 1/16: data sent ECT(0), CE echoed)
                mptcp, fuso: [--subflows 4]
                dcquic: [--cert cert.pem --key key.pem] (server; without them a throwaway CA, written by
                        [--ca-out ca.pem]) [--ca ca.pem] (client) [--server-name localhost]
                        [--alpn tailcut-rpc] [--task-bytes 0] (the MPS rule's task size) [--path-mtu 9000]
                        [--initial-window 14720B] (RFC 9002's byte limit of the initial window)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("serve") => tailcut_net::cli::serve(&args[1..]),
        Some("bench") => tailcut_net::cli::bench(&args[1..]),
        Some("cert") => tailcut_net::cli::cert(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tailcut-net: {e}");
            ExitCode::FAILURE
        }
    }
}
