"""Text inputs (experiment files, flow-size CDFs) may start with a UTF-8 byte order mark, as spreadsheet
exports and some editors write them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from conftest import TINY


def test_text_inputs_may_start_with_a_byte_order_mark(cli, tmp_path: Path) -> None:
    cdf = tmp_path / "sizes.cdf"
    cdf.write_bytes(b"\xef\xbb\xbf# exported from a spreadsheet\r\n1000 0\r\n50000 0.5\r\n90000 1\r\n")
    text = TINY.read_text().replace('cdf = "websearch"', f'cdf = "{cdf}"')
    experiment = tmp_path / "bom.toml"
    experiment.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert cli("validate", experiment) == 0
    assert cli("run", experiment, "--out", tmp_path / "out") == 0
    sizes = pd.read_parquet(tmp_path / "out" / "flows.parquet")["size_bytes"]
    assert sizes.between(1000, 90000).all()
