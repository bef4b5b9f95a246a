"""What a no-op `pre_tool` hook adds to a tool call: runs of `rounds`
fs_read rounds with a hook that reads its input and exits 0, against the
same runs without one (wall time per round, from the mock's request
times). The hook is a process start per call. Used by bench.py."""

from __future__ import annotations

import os
import statistics
from pathlib import Path

NOOP = "#!/bin/sh\ncat > /dev/null\nexit 0\n"


def measure_hooks(h, cpu_run, rounds: int, repeat: int) -> dict:
    api = "anthropic-hook"
    home = h.workdir / f"home-{api}"
    home.mkdir()
    hook = home / "noop.sh"
    hook.write_text(NOOP)
    os.chmod(hook, 0o755)
    (home / "config.toml").write_text(
        '[provider]\nkind = "anthropic"\n'
        '[[hook]]\nevent = "pre_tool"\ncommand = "./noop.sh"\n'
    )
    h.homes[api] = home
    hooked = [cpu_run(h, api, rounds)[1] for _ in range(repeat)]
    plain = [cpu_run(h, "anthropic", rounds)[1] for _ in range(repeat)]
    with_ms = statistics.median(hooked) * 1e3
    without_ms = statistics.median(plain) * 1e3
    return {"added_ms": with_ms - without_ms, "with_ms": with_ms, "without_ms": without_ms, "rounds": rounds}
