"""What `[sandbox] kind = "bwrap"` adds to one shell call: wall time per
round of N `shell` calls `true`, confined minus unconfined. Used by
bench.py."""

from __future__ import annotations

import shutil
import statistics

from bench_common import BenchError, call_turn, text_turn


def shell_round_s(h, api: str, rounds: int) -> float:
    """Wall seconds per round of a run of `rounds` `shell` calls `true`."""
    turns = [call_turn(("shell", {"command": "true"}))] * rounds + [text_turn("done")]
    with h.mock(turns) as mock:
        r = h.run(api, mock, h.workspace(), ["--max-turns", str(rounds + 5), "run true"])
        reqs = mock.requests(rounds + 1)
    if len(reqs) != rounds + 1:
        raise BenchError(f"shell run: expected {rounds + 1} requests, got {len(reqs)}:\n{r.stderr}")
    return (reqs[-1]["t_ns"] - reqs[0]["t_ns"]) / 1e9 / rounds


def measure_confined(h, rounds: int, repeat: int) -> dict | None:
    """What `[sandbox] kind = "bwrap"` adds to one shell call; None without bwrap."""
    if shutil.which("bwrap", path=h.env("anthropic", "")["PATH"]) is None:
        return None
    plain = statistics.median(shell_round_s(h, "anthropic", rounds) for _ in range(repeat))
    boxed = statistics.median(shell_round_s(h, "anthropic-bwrap", rounds) for _ in range(repeat))
    return {"added_ms": (boxed - plain) * 1e3, "plain_ms": plain * 1e3, "confined_ms": boxed * 1e3}


