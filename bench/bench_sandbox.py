"""What `[sandbox] kind = "bwrap"` adds to one shell call: wall time per
round of N `shell` calls `true`, confined minus unconfined, in a small
workspace and in a large repository (where the walk for git repositories
before the command and the sweep after it have a tree to cover); and what
`allow_hosts` adds on top (the proxy and the bridge started per call).
Used by bench.py."""

from __future__ import annotations

import shutil
import statistics
import subprocess
from pathlib import Path

from bench_common import BenchError, call_turn, text_turn


# The large workspace: a git repository of DIRS directories of FILES files
# each, two levels deep, like a mid-sized project with its dependencies.
DIRS = 2000
FILES = 10


def large_workspace(h) -> Path:
    """A git repository of DIRS * FILES files, made once per harness."""
    ws = h.workspace()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    for d in range(DIRS):
        sub = ws / f"pkg{d // 100}" / f"mod{d}"
        sub.mkdir(parents=True)
        for f in range(FILES):
            (sub / f"f{f}.txt").write_text("x\n")
    return ws


def shell_round_s(h, api: str, rounds: int, ws: Path | None = None) -> float:
    """Wall seconds per round of a run of `rounds` `shell` calls `true`."""
    turns = [call_turn(("shell", {"command": "true"}))] * rounds + [text_turn("done")]
    with h.mock(turns) as mock:
        r = h.run(api, mock, ws or h.workspace(), ["--max-turns", str(rounds + 5), "run true"])
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
    allowed = statistics.median(
        shell_round_s(h, "anthropic-allow", rounds) for _ in range(repeat))
    tree = large_workspace(h)
    plain_tree = statistics.median(
        shell_round_s(h, "anthropic", rounds, tree) for _ in range(repeat))
    boxed_tree = statistics.median(
        shell_round_s(h, "anthropic-bwrap", rounds, tree) for _ in range(repeat))
    return {
        "added_ms": (boxed - plain) * 1e3,
        "plain_ms": plain * 1e3,
        "confined_ms": boxed * 1e3,
        "allow_added_ms": (allowed - boxed) * 1e3,
        "tree_added_ms": (boxed_tree - plain_tree) * 1e3,
        "tree_files": DIRS * FILES,
    }


