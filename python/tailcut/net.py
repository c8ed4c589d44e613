"""Real RPCs over UDP with tailcut's schemes: the ``tailcut-net`` runtime from Python.

Each :class:`Server` and :class:`Client` owns a runtime thread with its sockets and engine (see
``docs/net.md``). :meth:`Client.call` blocks without holding the GIL, so several Python threads can
call at once; a Python ``handler`` runs on the server's runtime thread and takes the GIL per request::

    from tailcut import net

    with net.Server(scheme="fuso", params={"min_rto": "5ms"}) as server:  # echo on 127.0.0.1
        with net.Client(server.address, scheme="fuso", params={"min_rto": "5ms"}) as client:
            assert client.call(b"hello") == b"hello"

The scheme is given exactly as an experiment file's ``[[schemes]]`` entry gives it: ``scheme`` is a
registry name (``tailcut schemes``) or a whole entry (``{"transport": "fuso", "params": {...}}``, e.g.
one of ``tailcut.load(...)``'s schemes), and ``params`` is laid over the entry's; the keys, units,
defaults and errors are the simulator's. The runtime runs ``tcp`` and every scheme over TCP whose
network needs it can meet (``dctcp``, ``tlp``, ``tcp_ir``, ``proactive``; ``cp`` with
``trims=True``), ``mptcp``, ``fuso``, ``cloudburst`` (one block per message) and ``dcquic``
(tailcut's QUIC engine with TLS 1.3 on plain QUIC datagrams: any QUIC v1 peer speaking its ALPN, e.g.
aioquic, is a peer; see ``docs/dcquic.md``); it refuses the others with the reason
(``docs/net.md`` lists the few defaults that describe the socket instead). Runtime options (keyword
arguments, the same on both ends): ``seed``; ``trims`` (the network's switches cut payloads);
``call_timeout_ms``, ``max_message_bytes`` (stream schemes); the server's ``max_associations``,
``association_idle_timeout_ms`` (60 s) and ``address_validation`` (``"under_load"``, the default: a
full server checks that a new client receives at its address before it lets it replace another;
``"always"``: every new client is checked, one round trip); ``spin_us`` (busy-poll the sockets
that long before each sleep). DCQUIC's: ``cert`` and ``key`` (a server's PEM
files; without them the server makes a throwaway CA, its :attr:`Server.ca_pem`), ``ca`` (a PEM file) or
``ca_pem`` (PEM text: the roots a client trusts), ``server_name`` (default ``localhost``), ``alpn``
(default ``tailcut-rpc``), ``task_bytes`` (the MPS rule's task size), ``path_mtu`` (default 9000),
``local_addrs`` (a client's local IP addresses, one path each: proactive migration moves between them),
``loss`` and ``loss_path`` (``tailcut-net``'s ``--loss RATE`` and ``--loss-path N``: the runtime drops
that fraction of its own outgoing datagrams before the socket, on every path or only path ``N``, drawn
from an RNG seeded by ``seed``; a test hook, not a network; ``stats()["dropped_by_hook"]`` counts them).
A bad option raises :class:`tailcut.ConfigError` naming it (``net.<option>``, or
``scheme.params.<key>`` for a scheme parameter).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tailcut._core import KERNEL_BASELINES as _KERNEL_BASELINES
from tailcut._core import KernelClient as _KernelClient
from tailcut._core import NetClient, NetServer
from tailcut._core import generate_cert as _generate_cert

__all__ = ["KERNEL_BASELINES", "Client", "KernelClient", "Server", "generate_cert"]

#: ``tailcut-net bench``'s baselines: the kernel's stacks, not schemes of the registry (the Rust
#: constant ``tailcut_net::cli::KERNEL_BASELINES``).
KERNEL_BASELINES: tuple[str, ...] = tuple(_KERNEL_BASELINES)


def generate_cert(names: list[str] | None = None) -> tuple[str, str, str]:
    """A throwaway CA and a certificate it signed for ``names`` (default ``["localhost"]``), as PEM
    text ``(ca, cert, key)``. For tests and testbeds only: not a deployment's PKI."""
    return _generate_cert(names or ["localhost"])


Scheme = str | dict[str, Any]


def _options(scheme: Scheme, params: dict[str, Any] | None, options: dict[str, Any]) -> str:
    return json.dumps({"scheme": scheme, "params": params or {}, **options})


class Server:
    """Answers requests of one scheme with ``handler(request) -> bytes`` (an echo without one).

    A handler that raises, or returns something other than bytes, answers with no bytes; the error
    is printed and counted in ``stats()["handler_errors"]``, and the server goes on.
    """

    def __init__(
        self,
        bind: str = "127.0.0.1:0",
        scheme: Scheme = "cloudburst",
        handler: Callable[[bytes], bytes] | None = None,
        params: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        self._server = NetServer(bind, _options(scheme, params, options), handler)

    @property
    def address(self) -> str:
        """The bound address, e.g. ``127.0.0.1:41234``."""
        return self._server.local_addr or ""

    @property
    def ca_pem(self) -> str | None:
        """The throwaway CA (PEM) of a DCQUIC server started without ``cert``, for its clients."""
        return self._server.ca_pem

    def stats(self) -> dict[str, int]:
        return json.loads(self._server.stats_json())

    def close(self) -> None:
        self._server.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Client:
    """One association to a server of the same scheme; calls may come from several threads."""

    def __init__(
        self,
        server: str,
        scheme: Scheme = "cloudburst",
        params: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        self._client = NetClient(server, _options(scheme, params, options))

    def call(self, request: bytes) -> bytes:
        """Sends ``request`` and returns the response; raises ``TimeoutError`` without one, and
        ``ConnectionError`` (with the handshake's or the peer's reason) when the connection ended
        before it, e.g. a DCQUIC server whose certificate the client does not trust."""
        return self._client.call(request)[0]

    def call_timed(self, request: bytes) -> tuple[bytes, float]:
        """The response and the call's latency in seconds, measured on the runtime thread."""
        response, ns, *_ = self._client.call(request)
        return response, ns / 1e9

    def call_stats(self, request: bytes) -> tuple[bytes, dict[str, int]]:
        """The response, and the call's latency (``latency_ns``) with its request's sender counters
        (``timeouts``, ``fast_retransmits``, ``retransmitted_bytes``, ``redundant_bytes``,
        ``sent_bytes``) as the simulator's flow table names them."""
        response, *numbers = self._client.call(request)
        keys = (
            "latency_ns",
            "timeouts",
            "fast_retransmits",
            "retransmitted_bytes",
            "redundant_bytes",
            "sent_bytes",
        )
        return response, dict(zip(keys, numbers, strict=True))

    def reconnect(self) -> None:
        """Ends the connection and opens a new one for the next call, on the same runtime thread
        and sockets (DCQUIC: a new QUIC connection and handshake; the others: a new association).
        Raises ``RuntimeError`` while calls are outstanding."""
        self._client.reconnect()

    def stats(self) -> dict[str, Any]:
        """Counters; DCQUIC's ``dcquic_*`` (handshakes, migrations, MPS, path) are None for other
        schemes."""
        return json.loads(self._client.stats_json())

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class KernelClient:
    """A baseline of ``tailcut-net bench``: ``kernel-tcp`` (kernel TCP, ``TCP_NODELAY``) or
    ``kernel-tls`` (TLS 1.3 by rustls over kernel TCP), one connection carrying framed echo calls,
    the same Rust code as that command. Without ``server`` it starts an echo server on 127.0.0.1 (for
    ``kernel-tls`` with a throwaway certificate for ``server_name``). No runtime options: the kernel
    has no loss hook (loss on loopback TCP needs root and netem)."""

    def __init__(
        self,
        baseline: str,
        server: str | None = None,
        server_name: str | None = None,
        ca: str | None = None,
    ) -> None:
        self._client = _KernelClient(baseline, server, server_name, ca)
        self._calls = 0

    @property
    def server(self) -> str:
        """The server's address."""
        return self._client.server

    def call(self, request: bytes) -> bytes:
        """Sends ``request`` and returns the echo; raises ``ConnectionError`` if the connection fails."""
        return self.call_stats(request)[0]

    def call_stats(self, request: bytes) -> tuple[bytes, dict[str, int]]:
        """The response and the call's latency (``latency_ns``); kernel TCP's counters are not seen."""
        response, ns = self._client.call(request)
        self._calls += 1
        return response, {"latency_ns": ns}

    def stats(self) -> dict[str, Any]:
        return {"calls_completed": self._calls}

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> KernelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
