"""DCQUIC against an independent QUIC implementation, aioquic, on loopback, both ways: handshake with
certificate verification and the ALPN, stream RPCs of several sizes byte-exact, connection close, and
a client address change mid-connection. Functional facts only (bytes, counters)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from pathlib import Path

import pytest

from tailcut import net

aioquic = pytest.importorskip("aioquic", reason="aioquic is in the test extras")

from aioquic.asyncio import QuicConnectionProtocol, connect, serve  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import ConnectionTerminated, HandshakeCompleted  # noqa: E402

ALPN = "tailcut-rpc"
SIZES = [0, 1, 1_000, 9_000, 10_000, 100_000, 1_000_000]


def answer(req: bytes) -> bytes:
    """A response the caller can check: the request reversed, then its length."""
    return req[::-1] + len(req).to_bytes(4, "big")


def payload(n: int, salt: int) -> bytes:
    return bytes((i * 31 + salt) % 251 for i in range(n))


async def _rpc(client: QuicConnectionProtocol, req: bytes) -> bytes:
    reader, writer = await client.create_stream()
    writer.write(req)
    writer.write_eof()
    return await reader.read()


class _Recorder(QuicConnectionProtocol):
    """Keeps the connection events an aioquic client saw (the ALPN it agreed, how it ended)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[object] = []

    def quic_event_received(self, event) -> None:
        self.seen.append(event)
        super().quic_event_received(event)


def test_an_aioquic_client_calls_a_dcquic_server(tmp_path: Path) -> None:
    with net.Server(scheme="dcquic", handler=answer) as server:
        ca = tmp_path / "ca.pem"
        ca.write_text(server.ca_pem)
        host, port = server.address.rsplit(":", 1)

        async def run() -> tuple[list[bytes], _Recorder]:
            cfg = QuicConfiguration(is_client=True, alpn_protocols=[ALPN], server_name="localhost")
            cfg.verify_mode = ssl.CERT_REQUIRED
            cfg.load_verify_locations(cafile=str(ca))
            got = []
            async with connect(host, int(port), configuration=cfg, create_protocol=_Recorder) as c:
                for i, n in enumerate(SIZES):
                    got.append(await _rpc(c, payload(n, i)))
                # Address change: the connection moves to a new socket (127.0.0.2, a new port) and a
                # fresh connection ID; the server must validate the path and answer there. aioquic's
                # client socket is dual-stack IPv6, so the new one is too.
                loop = asyncio.get_running_loop()
                old = c._transport
                await loop.create_datagram_endpoint(
                    lambda: c, local_addr=("::ffff:127.0.0.2", 0), family=socket.AF_INET6
                )
                c.change_connection_id()
                old.set_protocol(asyncio.DatagramProtocol())  # its close must not end the connection
                old.close()
                for i, n in enumerate(SIZES):
                    got.append(await _rpc(c, payload(n, 100 + i)))
                c.close()
                await c.wait_closed()
            return got, c

        got, client = asyncio.run(asyncio.wait_for(run(), 60))
        want = [answer(payload(n, i)) for i, n in enumerate(SIZES)]
        want += [answer(payload(n, 100 + i)) for i, n in enumerate(SIZES)]
        assert got == want
        done = [e for e in client.seen if isinstance(e, HandshakeCompleted)]
        assert done and done[0].alpn_protocol == ALPN
        stats = server.stats()
        assert stats["requests"] == 2 * len(SIZES)
        assert stats["foreign_datagrams"] == 0


def test_an_aioquic_client_passes_a_dcquic_servers_retry(tmp_path: Path) -> None:
    """A server that validates every address answers aioquic's first Initial with a Retry; aioquic
    comes back with the token, checks the Retry's integrity tag and the server's
    retry_source_connection_id, and its RPCs are byte-exact."""
    with net.Server(scheme="dcquic", handler=answer, address_validation="always") as server:
        ca = tmp_path / "ca.pem"
        ca.write_text(server.ca_pem)
        host, port = server.address.rsplit(":", 1)

        async def run() -> list[bytes]:
            cfg = QuicConfiguration(is_client=True, alpn_protocols=[ALPN], server_name="localhost")
            cfg.verify_mode = ssl.CERT_REQUIRED
            cfg.load_verify_locations(cafile=str(ca))
            async with connect(host, int(port), configuration=cfg) as c:
                got = [await _rpc(c, payload(n, i)) for i, n in enumerate(SIZES)]
                c.close()
                await c.wait_closed()
            return got

        got = asyncio.run(asyncio.wait_for(run(), 60))
        assert got == [answer(payload(n, i)) for i, n in enumerate(SIZES)]
        stats = server.stats()
        assert stats["address_checks"] >= 1
        assert stats["addresses_validated"] == 1
        assert stats["associations_opened"] == 1
        assert stats["requests"] == len(SIZES)


class _Server:
    """An aioquic echo-and-check server ([`answer`]) on its own event loop thread."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.cfg = QuicConfiguration(is_client=False, alpn_protocols=[ALPN])
        self.cfg.load_cert_chain(str(cert), str(key))
        self.port = 0
        self.closed: list[ConnectionTerminated] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(60)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        outer = self

        class Proto(QuicConnectionProtocol):
            def quic_event_received(self, event) -> None:
                if isinstance(event, ConnectionTerminated):
                    outer.closed.append(event)
                super().quic_event_received(event)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            req = await reader.read()
            writer.write(answer(req))
            writer.write_eof()

        def on_stream(reader, writer) -> None:
            self.loop.create_task(handle(reader, writer))

        async def start() -> None:
            self.server = await serve(
                "127.0.0.1", 0, configuration=self.cfg, stream_handler=on_stream, create_protocol=Proto
            )
            self.port = self.server._transport.get_extra_info("sockname")[1]
            self.ready.set()

        self.loop.run_until_complete(start())
        self.loop.run_forever()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def test_a_dcquic_client_calls_an_aioquic_server(tmp_path: Path) -> None:
    ca, cert, key = net.generate_cert(["localhost"])
    (tmp_path / "cert.pem").write_text(cert)
    (tmp_path / "key.pem").write_text(key)
    peer = _Server(tmp_path / "cert.pem", tmp_path / "key.pem")
    try:
        addr = f"127.0.0.1:{peer.port}"
        with net.Client(addr, scheme="dcquic", ca_pem=ca, call_timeout_ms=20_000) as c:
            for i, n in enumerate(SIZES):
                req = payload(n, i)
                assert c.call(req) == answer(req), f"size {n}"
            st = c.stats()
            assert st["dcquic_handshakes"] == 1
            assert st["calls_completed"] == len(SIZES)
        # Closing the client closes its connection: the server hears it (CONNECTION_CLOSE). The bound
        # is for a failure only (the close arrives in milliseconds), generous for a loaded machine.
        for _ in range(3000):
            if peer.closed:
                break
            threading.Event().wait(0.02)
        assert peer.closed, "aioquic saw no connection close"
    finally:
        peer.close()


def test_aioquic_is_refused_by_a_dcquic_server_without_a_common_alpn() -> None:
    with net.Server(scheme="dcquic") as server:
        host, port = server.address.rsplit(":", 1)

        async def run() -> None:
            cfg = QuicConfiguration(is_client=True, alpn_protocols=["h3"], server_name="localhost")
            cfg.verify_mode = ssl.CERT_NONE
            async with connect(host, int(port), configuration=cfg):
                pass

        with pytest.raises(ConnectionError):
            asyncio.run(asyncio.wait_for(run(), 30))
        assert server.stats()["requests"] == 0
