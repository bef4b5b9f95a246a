#!/usr/bin/env python3
"""mecha's benchmark: the release binary against the mock model server.

Run through bench/run.sh, which builds both binaries first:

    bash bench/run.sh [--runs 30] [--rounds 100] [--repeat 3]

Every figure comes from `mecha run` talking to `mecha-mock-model` on
127.0.0.1, in a temporary MECHA_HOME and workspace, with a clean
environment and stdin from /dev/null. Nothing leaves the machine.

  start-up     spawn of `mecha run` -> the mock has the whole first request
               (the mock stamps arrival with the realtime clock; this script
               stamps the spawn with the same clock).
  peak memory  max RSS of `mecha run` over a run of several tool rounds, as
               GNU time (/usr/bin/time -f %M) reports it. Not wait4 from here:
               posix_spawn shares this Python's memory until exec, and the
               kernel carries that peak (~17 MB) into the child's maxrss.
               time forks mecha from a small process. The figure is the
               larger of mecha's own peak and that of any child it waited
               for (the `shell` tool's bash), so an upper bound on mecha's.
  1st request  the raw HTTP body of the first request, in bytes, per API.
  CPU / round  user+sys CPU (wait4) of a run of N `fs_read` rounds, minus a
               1-round run, divided by N-1.
  late round   tool rounds 480-500 of a 500-round run against rounds 10-30,
               each from the end of the mock's answer to the next request:
               flat as a session grows. The median of every such round of
               at least five runs, pooled: one run's ten-round median swung
               0.75-1.77x between runs on an idle 2-core VM while the
               pooled blocks of 50 stayed flat (1.35 ms at the start, 1.44
               at the end, the fastest round 0.88 and 0.87 ms).
  echo round   a tool round of one `shell` call `echo hi`, from the end of
               the mock's answer to the next request (median of rounds
               2-10 of three runs: the first takes the prompt's
               checkpoint); beside it, what `bash -c 'echo hi'` alone
               takes to start and exit on this machine.
  4 x sleep 1  one turn with four `shell` calls `sleep 1` (--yes): the time
               between the mock receiving request 1 and request 2. It
               includes the mock streaming its answer to request 1 (1 ms
               between SSE events, about 25 ms for that turn).
  skills       start-up and the first request's growth with 10, 100 and
               1,000 skills in the store (bench_skills.py).
  confinement  wall time per round of N `shell` calls `true`, with
               `[sandbox] kind = "bwrap"` minus without: what confining one
               shell call adds (skipped, and said, without bwrap); and
               with `allow_hosts` minus plain bwrap: what starting the
               proxy and the bridge adds to one confined call.
  sessions     over a session of 10,000 messages: the wall time of
               `mecha sessions show ID > /dev/null`, and spawn of
               `mecha run --resume ID "next"` -> the mock has its first
               request (bench_sessions.py).
  hooks        wall time per fs_read round with a no-op `pre_tool` hook
               minus without: what a hook adds to one call (bench_hooks.py).
  tui          `mecha tui` at a pseudo-terminal: its CPU while 10,000
               tokens stream, minus what `mecha run` spends on the same
               stream, and its peak memory after 500 turns (bench_tui.py).

Units are decimal: 1 KB = 1000 bytes, 1 MB = 1000 KB. Targets are checked
against the median (start-up also shows p90). A missed target is reported,
not an error: the exit status is non-zero only when something could not be
measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_common import BenchError, call_turn, percentile, text_turn
from bench_sandbox import measure_confined
from bench_sessions import measure_sessions
from bench_hooks import measure_hooks
from bench_skills import measure_skills
from bench_tui import measure_tui

ROOT = Path(__file__).resolve().parent.parent
GNU_TIME = "/usr/bin/time"

TARGETS = {
    "startup_ms": 30.0,
    "peak_mem_mb": 20.0,
    "first_request_kb": 12.0,
    "cpu_per_round_ms": 5.0,
    "sleep4_s": 1.1,
    "confined_added_ms": 5.0,
    "late_round_ratio": 1.2,
    "echo_round_ms": 2.0,
    "startup_1000_skills_ms": 25.0,
    "resume_10k_ms": 200.0,
    "tui_stream_cpu_pct": 5.0,
    "tui_500_turns_mb": 40.0,
}


# ---------------------------------------------------------------- the mock


class Mock:
    """`mecha-mock-model` as a child process, serving one script."""

    def __init__(self, binary: Path, workdir: Path, turns: list[dict]):
        self.dir = Path(tempfile.mkdtemp(prefix="mock-", dir=workdir))
        self.script = self.dir / "script.json"
        self.log = self.dir / "requests.jsonl"
        self.script.write_text(json.dumps({"turns": turns}))
        self.proc = subprocess.Popen(
            [str(binary), "--script", str(self.script), "--log", str(self.log)],
            stdin=subprocess.PIPE,  # the mock exits when this pipe closes
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("http://127.0.0.1:"):
            err = self.proc.stderr.read().decode() if self.proc.stderr else ""
            self.close()
            raise BenchError(f"mecha-mock-model did not start: {line!r} {err}")
        self.url = line

    def requests(self, expected: int = 0) -> list[dict]:
        """The logged requests; waits up to a second for `expected` of them
        (the mock writes a line just after it has the request, so one can
        trail the client's exit by a moment)."""
        deadline = time.monotonic() + 1.0
        while True:
            text = self.log.read_text() if self.log.exists() else ""
            logged = [json.loads(l) for l in text.splitlines() if l]
            logged = [l for l in logged if "n" in l]
            if len(logged) >= expected or time.monotonic() > deadline:
                return logged
            time.sleep(0.002)

    def answered(self) -> list[int]:
        """When each answer's last byte went out (ns), in order."""
        text = self.log.read_text() if self.log.exists() else ""
        logged = [json.loads(l) for l in text.splitlines() if l]
        return [l["t_ns"] for l in logged if "answered" in l]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()

    def __enter__(self) -> "Mock":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---------------------------------------------------------------- mecha


@dataclass
class RunResult:
    spawned_ns: int
    ended_ns: int
    status: int
    cpu_s: float  # user + sys
    maxrss_kb: int  # KiB, from GNU time; 0 unless asked for
    stderr: str
    # With capture: each stdout line and when this process read it.
    lines: list[tuple[int, str]]


class Harness:
    def __init__(self, mecha: Path, mock_bin: Path, workdir: Path):
        self.mecha = mecha
        self.mock_bin = mock_bin
        self.workdir = workdir
        self.devnull = os.open(os.devnull, os.O_RDWR)
        self.homes: dict[str, Path] = {}
        for api in ("anthropic", "openai", "anthropic-bwrap", "anthropic-allow"):
            home = workdir / f"home-{api}"
            home.mkdir()
            config = '[provider]\nkind = "anthropic"\n'
            if api == "openai":
                config = '[provider]\nkind = "openai"\nmodel = "m"\n'
            if api.endswith("-bwrap"):
                config += '[sandbox]\nkind = "bwrap"\n'
            if api.endswith("-allow"):
                config += '[sandbox]\nkind = "bwrap"\nallow_hosts = ["127.0.0.1:9"]\n'
            (home / "config.toml").write_text(config)
            self.homes[api] = home

    def mock(self, turns: list[dict]) -> Mock:
        return Mock(self.mock_bin, self.workdir, turns)

    def workspace(self) -> Path:
        ws = Path(tempfile.mkdtemp(prefix="ws-", dir=self.workdir))
        (ws / "a.txt").write_text("hello\n")
        return ws

    def env(self, api: str, url: str) -> dict[str, str]:
        home = str(self.homes[api])
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "MECHA_HOME": home,
        }
        if api.startswith("anthropic"):
            env |= {"ANTHROPIC_API_KEY": "x", "ANTHROPIC_BASE_URL": url}
        else:
            env |= {"OPENAI_API_KEY": "x", "OPENAI_BASE_URL": url + "/v1"}
        return env

    def run(
        self,
        api: str,
        mock: Mock,
        ws: Path,
        args: list[str],
        capture: bool = False,
        rss: bool = False,
    ) -> RunResult:
        """Runs `mecha run --yes ARGS` and waits for it with wait4; with
        `capture`, reads its stdout and stamps each line as it arrives; with
        `rss`, runs it under GNU time for its max RSS."""
        argv = [str(self.mecha), "-C", str(ws), "run", "--yes", *args]
        rss_path = ws.parent / f"rss-{ws.name}.txt"
        if rss:
            if not os.access(GNU_TIME, os.X_OK):
                raise BenchError(f"peak memory needs GNU time at {GNU_TIME} (apt-get install time)")
            argv = [GNU_TIME, "-f", "%M", "-o", str(rss_path), *argv]
        err_path = ws.parent / f"stderr-{ws.name}.txt"
        err_fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        # Both ends are close-on-exec; DUP2 gives the child its own stdout.
        read_fd, write_fd = os.pipe() if capture else (-1, self.devnull)
        lines: list[tuple[int, str]] = []
        try:
            actions = [
                (os.POSIX_SPAWN_DUP2, self.devnull, 0),
                (os.POSIX_SPAWN_DUP2, write_fd, 1),
                (os.POSIX_SPAWN_DUP2, err_fd, 2),
            ]
            env = self.env(api, mock.url)
            spawned = time.time_ns()
            pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
            if capture:
                os.close(write_fd)
                with os.fdopen(read_fd, "rb", buffering=0) as out:
                    pending = b""
                    while chunk := out.read(65536):
                        now = time.time_ns()
                        pending += chunk
                        *complete, pending = pending.split(b"\n")
                        lines += [(now, line.decode(errors="replace")) for line in complete]
            _, wstatus, usage = os.wait4(pid, 0)
            ended = time.time_ns()
        finally:
            os.close(err_fd)
        status = os.waitstatus_to_exitcode(wstatus)
        stderr = err_path.read_text(errors="replace")
        maxrss_kb = 0
        if rss and status == 0:
            # GNU time's last line is the figure (earlier ones may note a status).
            maxrss_kb = int(rss_path.read_text().split()[-1])
        result = RunResult(
            spawned,
            ended,
            status,
            usage.ru_utime + usage.ru_stime,
            maxrss_kb,
            stderr,
            lines,
        )
        if status != 0:
            raise BenchError(
                f"mecha run {' '.join(args)!r} ({api}) exited with {status}:\n{stderr}"
            )
        return result

    def close(self) -> None:
        os.close(self.devnull)


# ---------------------------------------------------------------- metrics


def measure_startup(h: Harness, api: str, runs: int, warmup: int = 3) -> dict:
    """Spawn -> first request, over `runs` runs (after `warmup` unscored)."""
    total = runs + warmup
    delays_ms = []
    body_bytes = None
    with h.mock([text_turn("ok")] * total) as mock:
        ws = h.workspace()
        for i in range(total):
            r = h.run(api, mock, ws, ["say ok"])
            requests = mock.requests(i + 1)
            if len(requests) != i + 1:
                raise BenchError(f"expected {i + 1} requests, the mock logged {len(requests)}")
            if i >= warmup:
                delays_ms.append((requests[i]["t_ns"] - r.spawned_ns) / 1e6)
            body_bytes = requests[i]["body_bytes"]
    return {
        "median_ms": statistics.median(delays_ms),
        "p90_ms": percentile(delays_ms, 90),
        "min_ms": min(delays_ms),
        "max_ms": max(delays_ms),
        "runs": runs,
        "first_request_bytes": body_bytes,
    }


def several_rounds() -> list[dict]:
    return [
        call_turn(("fs_write", {"path": "notes/plan.md", "content": "# Plan\n\n- one\n- two\n" * 20})),
        call_turn(("fs_read", {"path": "notes/plan.md"}), ("fs_list", {"path": "."})),
        call_turn(("fs_edit", {"path": "notes/plan.md", "old": "# Plan", "new": "# The plan"})),
        call_turn(("todo", {"items": [{"content": "read the plan", "status": "done"}]})),
        call_turn(("shell", {"command": "ls -la; echo done"})),
        call_turn(("fs_read", {"path": "a.txt"})),
        text_turn("All done."),
    ]


def measure_memory(h: Harness, api: str, repeat: int) -> dict:
    peaks_kb = []
    for _ in range(repeat):
        turns = several_rounds()
        with h.mock(turns) as mock:
            r = h.run(api, mock, h.workspace(), ["do the plan"], rss=True)
            got = len(mock.requests(len(turns)))
            if got != len(turns):
                raise BenchError(f"memory run: expected {len(turns)} requests, got {got}:\n{r.stderr}")
        peaks_kb.append(r.maxrss_kb)
    mb = [kb * 1024 / 1e6 for kb in peaks_kb]
    return {"median_mb": statistics.median(mb), "max_mb": max(mb), "rounds": len(several_rounds()) - 1}


def cpu_run(h: Harness, api: str, rounds: int, rss: bool = False) -> tuple[float, float, int]:
    """CPU seconds of a run of `rounds` fs_read rounds, wall s/round, and
    (with `rss`, which runs it under GNU time) its max RSS in KiB."""
    turns = [call_turn(("fs_read", {"path": "a.txt"}))] * rounds + [text_turn("done")]
    with h.mock(turns) as mock:
        r = h.run(api, mock, h.workspace(), ["--max-turns", str(rounds + 5), "read a.txt"], rss=rss)
        reqs = mock.requests(rounds + 1)
    if len(reqs) != rounds + 1:
        raise BenchError(f"cpu run: expected {rounds + 1} requests, got {len(reqs)}:\n{r.stderr}")
    wall_per_round = (reqs[-1]["t_ns"] - reqs[0]["t_ns"]) / 1e9 / rounds
    return r.cpu_s, wall_per_round, r.maxrss_kb


def measure_cpu(h: Harness, api: str, rounds: int, repeat: int) -> dict:
    base = [cpu_run(h, api, 1)[0] for _ in range(repeat)]
    many = [cpu_run(h, api, rounds) for _ in range(repeat)]
    base_s = statistics.median(base)
    many_s = statistics.median(c for c, _, _ in many)
    return {
        "per_round_ms": (many_s - base_s) / (rounds - 1) * 1e3,
        "base_cpu_ms": base_s * 1e3,
        "many_cpu_ms": many_s * 1e3,
        "rounds": rounds,
        "wall_per_round_ms": statistics.median(w for _, w, _ in many) * 1e3,
        # One more long run, under GNU time (kept out of the CPU figures).
        "long_run_rss_mb": cpu_run(h, api, rounds, rss=True)[2] * 1024 / 1e6,
    }


def round_gaps(h: Harness, api: str, call: tuple[str, dict], rounds: int) -> list[float]:
    """One run of `rounds` one-call rounds: for each, the ms from the end of
    the mock's answer to the next request (the issue's measure, so the
    mock's reading of a growing request and the pauses between its events
    are not counted as mecha's)."""
    turns = [call_turn(call)] * rounds + [text_turn("done")]
    with h.mock(turns) as mock:
        r = h.run(api, mock, h.workspace(), ["--max-turns", str(rounds + 5), "go"])
        reqs = mock.requests(rounds + 1)
        answered = mock.answered()
    if len(reqs) != rounds + 1 or len(answered) < rounds:
        raise BenchError(f"{call[0]} run: expected {rounds + 1} requests, got {len(reqs)}:\n{r.stderr}")
    return [(reqs[i + 1]["t_ns"] - answered[i]) / 1e6 for i in range(rounds)]


def measure_late_rounds(h: Harness, api: str, repeat: int, rounds: int = 500) -> dict:
    """Wall time per fs_read round around round 10 and around round
    `rounds` of several long runs, pooled: whether a round costs more as
    the session grows."""
    early, late = [], []
    for _ in range(max(repeat, 5)):
        gaps = round_gaps(h, api, ("fs_read", {"path": "a.txt"}), rounds)
        early += gaps[10:30]
        late += gaps[rounds - 20:]
    e, l = statistics.median(early), statistics.median(late)
    return {"rounds": rounds, "early_ms": e, "late_ms": l, "ratio": l / e}


def measure_echo_round(h: Harness, api: str, repeat: int, rounds: int = 10) -> dict:
    """A one-call `shell` round (`echo hi`), pooled over `repeat` runs (the
    first round of each takes the prompt's checkpoint, so is left out);
    and bash alone, back to back and 20 ms apart (as in a round, where the
    machine idles while the model answers; on a VM a CPU woken from idle
    runs a fresh bash slower)."""
    gaps = []
    for _ in range(repeat):
        gaps += round_gaps(h, api, ("shell", {"command": "echo hi"}), rounds)[1:]
    alone, apart = [], []
    for pause in [0.0] * 30 + [0.02] * 30:
        time.sleep(pause)
        started = time.perf_counter()
        subprocess.run(["bash", "-c", "echo hi"], stdout=subprocess.DEVNULL, check=True)
        (apart if pause else alone).append((time.perf_counter() - started) * 1e3)
    return {"median_ms": statistics.median(gaps), "min_ms": min(gaps),
            "bash_ms": statistics.median(alone), "bash_apart_ms": statistics.median(apart)}


def measure_sleep4(h: Harness, api: str, repeat: int) -> dict:
    """Request 1 -> request 2 around a turn of four `sleep 1` calls; and,
    from `--output-format stream-json`, the part of it after mecha had the
    whole answer (its `usage` event), which leaves out the mock's streaming."""
    turns_s, rounds_s = [], []
    for _ in range(repeat):
        turns = [
            call_turn(*[("shell", {"command": "sleep 1"})] * 4),
            text_turn("slept"),
        ]
        with h.mock(turns) as mock:
            r = h.run(
                api, mock, h.workspace(), ["--output-format", "stream-json", "sleep four times"],
                capture=True,
            )
            reqs = mock.requests(2)
        if len(reqs) != 2:
            raise BenchError(f"sleep run: expected 2 requests, got {len(reqs)}:\n{r.stderr}")
        answered = [t for t, line in r.lines if '"usage"' in line]
        if not answered:
            raise BenchError(f"sleep run: no usage event in mecha's stream-json:\n{r.lines}")
        turns_s.append((reqs[1]["t_ns"] - reqs[0]["t_ns"]) / 1e9)
        rounds_s.append((reqs[1]["t_ns"] - answered[0]) / 1e9)
    return {
        "median_s": statistics.median(turns_s),
        "max_s": max(turns_s),
        "round_median_s": statistics.median(rounds_s),
    }


def tools_schema_bytes(h: Harness) -> int:
    home = str(h.homes["anthropic"])
    out = subprocess.run(
        [str(h.mecha), "tools", "--schema"],
        env={"PATH": "/usr/bin:/bin", "HOME": home, "MECHA_HOME": home},
        cwd=h.workdir,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    )
    return len(out.stdout)


# ---------------------------------------------------------------- report


def verdict(value: float, target: float) -> str:
    return "pass" if value <= target else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mecha", type=Path, default=ROOT / "target/release/mecha")
    parser.add_argument("--mock", type=Path, default=ROOT / "target/release/mecha-mock-model")
    parser.add_argument("--runs", type=int, default=30, help="start-up runs (default 30)")
    parser.add_argument("--rounds", type=int, default=100, help="tool rounds for CPU (default 100)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats of the other runs (default 3)")
    args = parser.parse_args()
    for binary in (args.mecha, args.mock):
        if not os.access(binary, os.X_OK):
            raise BenchError(f"{binary} is missing; build it with bash bench/run.sh")
    if args.rounds < 2:
        raise BenchError("--rounds must be at least 2")

    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="mecha-bench-"))
    h = Harness(args.mecha, args.mock, workdir)
    try:
        print(f"measuring (load average {load_before[0]:.2f}, {os.cpu_count()} CPUs) ...", file=sys.stderr)
        startup = measure_startup(h, "anthropic", args.runs)
        startup_openai = measure_startup(h, "openai", max(5, args.runs // 3))
        memory = measure_memory(h, "anthropic", args.repeat)
        memory_openai = measure_memory(h, "openai", args.repeat)
        cpu = measure_cpu(h, "anthropic", args.rounds, args.repeat)
        late = measure_late_rounds(h, "anthropic", args.repeat)
        echo = measure_echo_round(h, "anthropic", args.repeat)
        sleep4 = measure_sleep4(h, "anthropic", args.repeat)
        confined = measure_confined(h, max(10, args.rounds // 5), args.repeat)
        skills = measure_skills(h, measure_startup, [10, 100, 1000], max(5, args.runs // 3))
        sessions = measure_sessions(h, max(5, args.runs // 3))
        hooks = measure_hooks(h, cpu_run, max(10, args.rounds // 5), args.repeat)
        tui = measure_tui(h)
        schema = tools_schema_bytes(h)
    finally:
        h.close()
        shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()

    req_a = startup["first_request_bytes"] / 1000
    req_o = startup_openai["first_request_bytes"] / 1000
    rows = [
        ("start-up to 1st request (median)", f"{startup['median_ms']:.1f} ms", f"{TARGETS['startup_ms']:.0f} ms",
         verdict(startup["median_ms"], TARGETS["startup_ms"])),
        ("start-up to 1st request (p90)", f"{startup['p90_ms']:.1f} ms", f"{TARGETS['startup_ms']:.0f} ms",
         verdict(startup["p90_ms"], TARGETS["startup_ms"])),
        ("peak memory (max RSS)", f"{memory['median_mb']:.1f} MB", f"{TARGETS['peak_mem_mb']:.0f} MB",
         verdict(memory["median_mb"], TARGETS["peak_mem_mb"])),
        ("1st request body, Anthropic", f"{req_a:.1f} KB", f"{TARGETS['first_request_kb']:.0f} KB",
         verdict(req_a, TARGETS["first_request_kb"])),
        ("1st request body, OpenAI", f"{req_o:.1f} KB", f"{TARGETS['first_request_kb']:.0f} KB",
         verdict(req_o, TARGETS["first_request_kb"])),
        ("harness CPU per tool round", f"{cpu['per_round_ms']:.2f} ms", f"{TARGETS['cpu_per_round_ms']:.0f} ms",
         verdict(cpu["per_round_ms"], TARGETS["cpu_per_round_ms"])),
        (f"round {late['rounds']} against round 10 (wall)", f"{late['ratio']:.2f}x",
         f"{TARGETS['late_round_ratio']}x", verdict(late["ratio"], TARGETS["late_round_ratio"])),
        ("one `echo` shell round (wall)", f"{echo['median_ms']:.2f} ms",
         f"{TARGETS['echo_round_ms']:.0f} ms", verdict(echo["median_ms"], TARGETS["echo_round_ms"])),
        ("4 x `sleep 1` in one turn", f"{sleep4['median_s']:.3f} s", f"{TARGETS['sleep4_s']} s",
         verdict(sleep4["median_s"], TARGETS["sleep4_s"])),
        ("bwrap added per shell call", f"{confined['added_ms']:.2f} ms" if confined else "no bwrap",
         f"{TARGETS['confined_added_ms']:.0f} ms",
         verdict(confined["added_ms"], TARGETS["confined_added_ms"]) if confined else "skipped"),
    ]
    thousand = skills[-1]
    rows.append(("start-up with 1,000 skills (median)", f"{thousand['median_ms']:.1f} ms",
                 f"{TARGETS['startup_1000_skills_ms']:.0f} ms",
                 verdict(thousand["median_ms"], TARGETS["startup_1000_skills_ms"])))
    resume = sessions["resume"]
    rows.append(("resume a 10,000-message session (median)", f"{resume['median_ms']:.1f} ms",
                 f"{TARGETS['resume_10k_ms']:.0f} ms", verdict(resume["median_ms"], TARGETS["resume_10k_ms"])))
    rows.append(("TUI's own CPU streaming 10,000 tokens", f"{tui['screen_cpu_pct']:.1f} % of a core",
                 f"{TARGETS['tui_stream_cpu_pct']:.0f} %", verdict(tui["screen_cpu_pct"], TARGETS["tui_stream_cpu_pct"])))
    rows.append(("TUI memory after 500 turns (VmHWM)", f"{tui['peak_mb']:.1f} MB",
                 f"{TARGETS['tui_500_turns_mb']:.0f} MB", verdict(tui["peak_mb"], TARGETS["tui_500_turns_mb"])))
    widths = [max(len(r[i]) for r in rows + [("metric", "mecha", "target", "")]) for i in range(4)]
    line = "  ".join("{:<%d}" % w for w in widths)
    print(line.format("metric", "mecha", "target", "result"))
    print(line.format(*("-" * w for w in widths)))
    for row in rows:
        print(line.format(*row))
    print()
    print("details:")
    print(f"  start-up (Anthropic, {startup['runs']} runs): median {startup['median_ms']:.1f} ms, "
          f"p90 {startup['p90_ms']:.1f} ms, min {startup['min_ms']:.1f} ms, max {startup['max_ms']:.1f} ms")
    print(f"  start-up (OpenAI, {startup_openai['runs']} runs): median {startup_openai['median_ms']:.1f} ms, "
          f"p90 {startup_openai['p90_ms']:.1f} ms")
    print(f"  peak memory over {memory['rounds']} tool rounds: Anthropic median {memory['median_mb']:.1f} MB "
          f"(max {memory['max_mb']:.1f}), OpenAI median {memory_openai['median_mb']:.1f} MB "
          f"(max {memory_openai['max_mb']:.1f}), {args.repeat} runs each")
    print(f"  1st request: Anthropic {startup['first_request_bytes']} B, OpenAI "
          f"{startup_openai['first_request_bytes']} B; `mecha tools --schema` is {schema} B")
    print(f"  CPU: {cpu['rounds']} fs_read rounds {cpu['many_cpu_ms']:.1f} ms, 1 round {cpu['base_cpu_ms']:.1f} ms "
          f"(medians of {args.repeat}); wall {cpu['wall_per_round_ms']:.2f} ms per round incl. the mock's streaming; "
          f"peak memory of a {cpu['rounds']}-round run {cpu['long_run_rss_mb']:.1f} MB")
    print(f"  echo round: median {echo['median_ms']:.2f} ms, fastest {echo['min_ms']:.2f} ms; "
          f"`bash -c 'echo hi'` alone {echo['bash_ms']:.2f} ms back to back, "
          f"{echo['bash_apart_ms']:.2f} ms 20 ms apart")
    print(f"  4 x sleep 1: request 1 -> 2 median {sleep4['median_s']:.3f} s, max {sleep4['max_s']:.3f} s "
          f"over {args.repeat} runs; answer complete -> request 2 (tool round alone) "
          f"median {sleep4['round_median_s']:.3f} s")
    for row in skills:
        print(f"  {row['skills']} skills: start-up median {row['median_ms']:.1f} ms, p90 {row['p90_ms']:.1f} ms; "
              f"level-1 block {row['block_bytes']} B")
    show = sessions["show"]
    print(f"  sessions ({sessions['messages']} messages, {sessions['file_bytes'] / 1e6:.1f} MB, "
          f"{show['runs']} runs): `sessions show` median {show['median_ms']:.1f} ms, p90 {show['p90_ms']:.1f} ms; "
          f"`run --resume` to the first request median {resume['median_ms']:.1f} ms, p90 {resume['p90_ms']:.1f} ms")
    print(f"  a no-op pre_tool hook: {hooks['with_ms']:.2f} ms per fs_read round with it, "
          f"{hooks['without_ms']:.2f} ms without ({hooks['rounds']} rounds, medians of {args.repeat})")
    if confined:
        print(f"  shell `true` per round: {confined['plain_ms']:.2f} ms unconfined, "
              f"{confined['confined_ms']:.2f} ms under bwrap (medians of {args.repeat}); "
              f"in a {confined['tree_files']:,}-file repository bwrap adds "
              f"{confined['tree_added_ms']:.2f} ms; allow_hosts adds "
              f"{confined['allow_added_ms']:.2f} ms to a confined call")
    print(f"  TUI: {tui['tokens']} tokens streamed in {tui['stream_s']:.2f} s took {tui['stream_cpu_s']:.2f} s "
          f"of CPU ({tui['stream_cpu_pct']:.1f} %), `mecha run` {tui['headless_cpu_s']:.2f} s of it; after "
          f"{tui['turns']} turns RSS {tui['rss_mb']:.1f} MB, peak {tui['peak_mb']:.1f} MB, "
          f"{tui['cpu_total_s']:.1f} s of CPU in all, {tui['screen_mb']:.1f} MB written to the terminal")
    print(f"  load average {load_before[0]:.2f} before, {load_after[0]:.2f} after, on {os.cpu_count()} CPUs")
    print()
    print("for the README:")
    print()
    print("| metric | mecha | target |")
    print("|---|---|---|")
    print(f"| start-up to the first model request (median / p90) | {startup['median_ms']:.1f} / "
          f"{startup['p90_ms']:.1f} ms | ≤ 30 ms |")
    print(f"| peak memory (max RSS, {memory['rounds']} tool rounds) | {memory['median_mb']:.1f} MB | ≤ 20 MB |")
    print(f"| first request (system prompt + tools), Anthropic / OpenAI | {req_a:.1f} / {req_o:.1f} KB | ≤ 12 KB |")
    print(f"| harness CPU per tool round | {cpu['per_round_ms']:.2f} ms | ≤ 5 ms |")
    print(f"| a tool round at round {late['rounds']} against round 10 (wall) | "
          f"{late['late_ms']:.2f} / {late['early_ms']:.2f} ms ({late['ratio']:.2f}x) | ≤ 1.2x |")
    print(f"| one `echo` shell round, end of answer to next request (bash alone, 20 ms apart) | "
          f"{echo['median_ms']:.2f} ms ({echo['bash_apart_ms']:.2f} ms) | ≤ 2 ms |")
    print(f"| four `sleep 1` calls in one turn | {sleep4['median_s']:.2f} s | ≤ 1.1 s |")
    sizes = " / ".join(f"{r['median_ms']:.1f}" for r in skills)
    blocks = " / ".join(f"{r['block_bytes'] / 1000:.1f}" for r in skills)
    print(f"| start-up with 10 / 100 / 1,000 skills | {sizes} ms | ≤ 25 ms (1,000) |")
    print(f"| level-1 block with 10 / 100 / 1,000 skills | {blocks} KB | |")
    print(f"| resume a 10,000-message session, to the first request (median / p90) | "
          f"{resume['median_ms']:.1f} / {resume['p90_ms']:.1f} ms | ≤ 200 ms |")
    print(f"| `mecha sessions show` of it (median / p90) | {show['median_ms']:.1f} / {show['p90_ms']:.1f} ms | |")
    print(f"| time a no-op pre_tool hook adds to one tool call | {hooks['added_ms']:.2f} ms | |")
    print(f"| the TUI's own CPU while 10,000 tokens stream (2,000 a second) | "
          f"{tui['screen_cpu_pct']:.1f} % of a core | ≤ 5 % |")
    print(f"| the TUI's memory after a 500-turn session (peak RSS) | {tui['peak_mb']:.1f} MB | ≤ 40 MB |")
    if confined:
        print(f"| time bwrap adds to one shell call | {confined['added_ms']:.2f} ms | ≤ 5 ms |")
        print(f"| the same in a {confined['tree_files']:,}-file git repository | "
              f"{confined['tree_added_ms']:.2f} ms | |")
        print(f"| time `allow_hosts` (proxy and bridge) adds to a confined call | "
              f"{confined['allow_added_ms']:.2f} ms | |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        sys.exit(1)
