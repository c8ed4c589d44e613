"""A pcap of traced packets (``trace.pcap``): synthesized Ethernet/IPv4/TCP or UDP headers on each packet
as it enters its sending host's NIC queue, stamped with the simulated time (nanosecond pcap).

The simulator carries headers, not bytes, so the payload is zeros and is not stored: each record holds
the headers only (``incl_len``) while ``orig_len`` and the IPv4 total length are the real ones, as a
capture with a small snaplen would be. Sequence and ACK numbers are the engines' own (absolute, with the
connection's initial sequence numbers); SACK blocks and timestamps become TCP options. Checksums are
correct for the zero payload. Host address ``n`` is shown as IPv4 ``10.0.0.0 + n + 1`` and MAC
``02:00:`` + the same four bytes.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

# Nanosecond-resolution pcap (the libpcap variant tshark and Wireshark read).
MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
SNAPLEN = 128

_ECN = {"not_ect": 0, "ect0": 2, "ce": 3}
_SYN = 0x02
_MSS_OPTION = 1460


def ipv4(addr: int) -> bytes:
    """The IPv4 address shown for simulator address ``addr``."""
    return struct.pack("!I", (10 << 24) + (addr + 1) % (1 << 24))


def _mac(addr: int) -> bytes:
    return b"\x02\x00" + ipv4(addr)


def _int(value: Any) -> int:
    """A nullable column's value as an int (null: 0)."""
    import pandas as pd

    return 0 if pd.isna(value) else int(value)


def _flag(value: Any) -> bool:
    import pandas as pd

    return not pd.isna(value) and bool(value)


def _missing(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _tcp_options(row: Any) -> bytes:
    opts = b""
    flags = _int(row.flags)
    if flags & _SYN:
        opts += struct.pack("!BBH", 2, 4, _MSS_OPTION) + b"\x01\x01\x04\x02"  # MSS; NOP NOP SACK-permitted
    ts_val, ts_ecr = _int(row.ts_val), _int(row.ts_ecr)
    if ts_val or ts_ecr:
        opts += b"\x01\x01" + struct.pack("!BBII", 8, 10, ts_val, ts_ecr)
    sack = row.sack if isinstance(row.sack, str) else ""
    blocks = [b.split("-") for b in sack.split(",")] if sack else []
    if blocks:
        # RFC 2018: the option space (40 bytes) holds 4 blocks, 3 beside timestamps.
        room = (40 - len(opts) - 4) // 8
        blocks = blocks[:room]
        opts += b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(blocks))
        opts += b"".join(struct.pack("!II", int(left), int(right)) for left, right in blocks)
    return opts + b"\x00" * (-len(opts) % 4)


def _transport(row: Any, src: bytes, dst: bytes, payload: int) -> tuple[bytes, int]:
    """The TCP or UDP header (checksum over the zero payload) and the IP protocol number."""
    if row.proto == "udp" or _flag(row.datagram):
        length = 8 + payload
        header = struct.pack("!HHHH", int(row.src_port), int(row.dst_port), length, 0)
        pseudo = src + dst + struct.pack("!BBH", 0, 17, length)
        checksum = _checksum(pseudo + header) or 0xFFFF
        return header[:6] + struct.pack("!H", checksum), 17
    opts = _tcp_options(row)
    offset = (20 + len(opts)) // 4
    window = min(_int(row.window), 0xFFFF)
    header = struct.pack(
        "!HHIIBBHHH",
        int(row.src_port),
        int(row.dst_port),
        _int(row.seq),
        _int(row.ack),
        offset << 4,
        _int(row.flags),
        window,
        0,
        0,
    )
    header += opts
    pseudo = src + dst + struct.pack("!BBH", 0, 6, len(header) + payload)
    checksum = _checksum(pseudo + header)
    return header[:16] + struct.pack("!H", checksum) + header[18:], 6


def frames(events: pd.DataFrame) -> list[tuple[int, bytes, int]]:
    """``(time_ns, captured bytes, original length)`` of every packet sent (``kind == "send"``)."""
    sent = events[events["kind"] == "send"]
    out = []
    for ident, row in enumerate(sent.itertuples(index=False)):
        if _missing(row.seq) and not _flag(row.datagram):
            continue  # a packet with no transport header: nothing to show
        src, dst = ipv4(int(row.src_addr)), ipv4(int(row.dst_addr))
        payload = _int(row.payload_bytes)
        l4, proto = _transport(row, src, dst, payload)
        total = 20 + len(l4) + payload
        ip = struct.pack(
            "!BBHHHBBH4s4s", 0x45, _ECN.get(row.ecn, 0), total, ident & 0xFFFF, 0x4000, 64, proto, 0, src, dst
        )
        ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
        eth = _mac(int(row.dst_addr)) + _mac(int(row.src_addr)) + b"\x08\x00"
        out.append((int(row.time_ns), eth + ip + l4, 14 + total))
    return out


def write_pcap(events: pd.DataFrame, path: str | Path) -> int:
    """Write the sent packets of ``events`` to ``path``; returns the number of records."""
    records = frames(events)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", MAGIC_NS, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET))
        for time_ns, data, orig in records:
            data = data[:SNAPLEN]
            f.write(struct.pack("<IIII", time_ns // 1_000_000_000, time_ns % 1_000_000_000, len(data), orig))
            f.write(data)
    return len(records)
