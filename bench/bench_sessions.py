"""Sessions: `mecha sessions show ID > /dev/null` and `mecha run --resume ID
"next"` (spawn -> the mock has the resumed run's first request) over a
session of 10,000 messages that compacted on its way (as one that long
must have). The session file is written here, in the exact
format mecha writes (a header line, then one `{"seq":N,"type":...}` record
per line), and copied afresh before each resume so every run resumes the
same 10,000 messages. Used by bench.py."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from bench_common import BenchError, percentile, text_turn

SESSION_ID = "20261201-120000-bench0"
USAGE = {"input_tokens": 1200, "output_tokens": 40, "cache_read_tokens": 0, "cache_write_tokens": 0}
RESULT = "fn step() {\n    // one line of a source file the model read\n}\n" * 6


def line(value: dict) -> str:
    # serde_json's layout: no spaces, fields in declaration order.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


def message(seq: int, role: str, content: list[dict]) -> str:
    return line({"seq": seq, "type": "message", "message": {"role": role, "content": content}})


def write_session(home: Path, ws: Path, messages: int) -> Path:
    """A session of `messages` messages: the prompt, then turns of a
    `fs_read` call and its result, then an answer. Returns the file."""
    sessions = home / "sessions"
    sessions.mkdir(mode=0o700, exist_ok=True)
    path = sessions / f"{SESSION_ID}.jsonl"
    header = {"type": "header", "schema": 1, "mecha": "0.1.0", "id": SESSION_ID,
              "workspace": str(ws), "model": "claude-sonnet-4-5", "started": "2026-12-01T12:00:00.000Z",
              "command": "run"}
    out = [line(header)]
    seq = 1
    out.append(message(seq, "user", [{"type": "text", "text": "Read every file and summarise the project."}]))
    pairs = (messages - 2) // 2
    for i in range(pairs):
        call_id = f"toolu_{i:06d}"
        seq += 1
        out.append(message(seq, "assistant", [{"type": "tool_use", "id": call_id, "name": "fs_read",
                                               "input": {"path": f"src/file{i}.rs"}}]))
        seq += 1
        out.append(message(seq, "user", [{"type": "tool_result", "tool_use_id": call_id,
                                          "content": RESULT, "is_error": False}]))
        seq += 1
        out.append(line({"seq": seq, "type": "turn", "turn": i + 1, "usage": USAGE}))
    seq += 1
    answer = {"role": "assistant", "content": [{"type": "text", "text": "The project reads files."}]}
    out.append(line({"seq": seq, "type": "message", "message": answer}))
    # A session that long has compacted on its way (its history would not
    # fit any window otherwise): the latest state is the first message, a
    # summary and the recent turns, while every message stays on file.
    first = {"role": "user", "content": [{"type": "text", "text": "Read every file and summarise the project."}]}
    summary_text = "[summary of the earlier conversation]\n\nEvery file was read."
    recent = [json.loads(l)["message"] for l in out[-31:] if '"type":"message"' in l]
    seq += 1
    out.append(line({"seq": seq, "type": "compaction", "messages": [first, {"role": "user", "content": [
        {"type": "text", "text": summary_text}]}] + recent, "tokens_before": 150000, "tokens_after": 4000}))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("".join(out))
    return path


def summary(ms: list[float]) -> dict:
    return {"median_ms": statistics.median(ms), "p90_ms": percentile(ms, 90), "runs": len(ms)}


def measure_sessions(h, runs: int, messages: int = 10_000, warmup: int = 2) -> dict:
    """`sessions show` wall time and `run --resume` start-up, over `runs`."""
    api = "anthropic-sessions"
    home = h.workdir / f"home-{api}"
    home.mkdir()
    (home / "config.toml").write_text('[provider]\nkind = "anthropic"\n')
    h.homes[api] = home
    ws = Path(os.path.realpath(h.workspace()))
    pristine = write_session(home, ws, messages)
    backup = h.workdir / "session-pristine.jsonl"
    shutil.copyfile(pristine, backup)
    size = pristine.stat().st_size

    show_ms = []
    env = h.env(api, "http://127.0.0.1:9")
    for i in range(runs + warmup):
        started = time.perf_counter_ns()
        done = subprocess.run([str(h.mecha), "-C", str(ws), "sessions", "show", SESSION_ID],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        took = (time.perf_counter_ns() - started) / 1e6
        if done.returncode != 0:
            raise BenchError(f"mecha sessions show exited with {done.returncode}:\n{done.stderr.decode()}")
        if i >= warmup:
            show_ms.append(took)

    resume_ms = []
    with h.mock([text_turn("ok")] * (runs + warmup)) as mock:
        for i in range(runs + warmup):
            shutil.copyfile(backup, pristine)
            r = h.run(api, mock, ws, ["--resume", SESSION_ID, "next"])
            requests = mock.requests(i + 1)
            if len(requests) != i + 1:
                raise BenchError(f"resume: expected {i + 1} requests, the mock logged {len(requests)}:\n{r.stderr}")
            if i >= warmup:
                resume_ms.append((requests[i]["t_ns"] - r.spawned_ns) / 1e6)
    return {"messages": messages, "file_bytes": size, "show": summary(show_ms), "resume": summary(resume_ms)}
