"""The terminal UI under load: `mecha tui` at a pseudo-terminal of 120x40,
talking to a model server in this process (stdlib HTTP, on 127.0.0.1) that
speaks Anthropic's streaming format.

- streaming: one answer of 10,000 one-word deltas, paced at 2,000 a second
  (faster than real models, so the figure is conservative); the CPU mecha
  used while it streamed (utime + stime from /proc) over the wall time of
  the stream, in per cent of one core. The same stream to `mecha run`
  (which prints it as it comes) is the agent's share; the difference is
  the screen's own.
- long session: 500 prompts typed one after another, each answered with a
  short paragraph; mecha's resident and peak memory after the last
  (VmRSS, VmHWM).

The screen's output is read and thrown away as fast as it comes, as a
terminal would. Used by bench.py."""

from __future__ import annotations

import fcntl
import http.server
import json
import os
import subprocess
import termios
import threading
import time
from pathlib import Path

from bench_common import BenchError

ROWS, COLS = 40, 120
STREAM_TOKENS = 10_000
TOKENS_PER_SECOND = 2_000
TURNS = 500
WORDS = ["the", "harness", "streams", "tokens", "to", "a", "screen", "while", "it", "waits"]


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class Model(http.server.BaseHTTPRequestHandler):
    """Answers every request with the next reply: a long paced stream for
    the first when `long` is set, a short paragraph otherwise."""

    protocol_version = "HTTP/1.1"
    server: "ModelServer"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        long = self.server.take_long()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

        def send(chunk: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()

        send(sse("message_start", {"type": "message_start", "message": {
            "id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": None,
            "usage": {"input_tokens": 100, "output_tokens": 1}}}))
        send(sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}))
        count = STREAM_TOKENS if long else 60
        started = time.monotonic()
        batch = b""
        for i in range(count):
            word = WORDS[i % len(WORDS)]
            text = word + ("\n\n" if i % 80 == 79 else " ")
            batch += sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                 "delta": {"type": "text_delta", "text": text}})
            if long and i % 20 == 19:
                send(batch)
                batch = b""
                due = started + (i + 1) / TOKENS_PER_SECOND
                time.sleep(max(0.0, due - time.monotonic()))
        if long:
            self.server.stream_ended = time.monotonic()
        send(batch + sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        send(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                   "usage": {"output_tokens": count}}))
        send(sse("message_stop", {"type": "message_stop"}))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.server.answered += 1


class ModelServer(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Model)
        self.long = False
        self.answered = 0
        self.stream_ended = 0.0
        self.lock = threading.Lock()

    def take_long(self) -> bool:
        with self.lock:
            long, self.long = self.long, False
            return long


class Tui:
    """`mecha tui` as the session leader of a fresh pseudo-terminal."""

    def __init__(self, mecha: Path, home: Path, ws: Path, url: str) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, bytes([ROWS, 0, COLS, 0, 0, 0, 0, 0]))
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "MECHA_HOME": str(home),
               "TERM": "xterm-256color", "ANTHROPIC_API_KEY": "x", "ANTHROPIC_BASE_URL": url}

        def controlling() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen([str(mecha), "-C", str(ws), "tui"], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, preexec_fn=controlling, close_fds=True)
        os.close(slave)
        self.master = master
        self.written = 0
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.written += len(chunk)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def memory_mb(self) -> tuple[float, float]:
        status = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            status[key] = value.strip()
        kb = lambda key: int(status[key].split()[0])  # noqa: E731
        return kb("VmRSS") / 1000, kb("VmHWM") / 1000

    def quit(self) -> None:
        self.type(b"\x03")
        time.sleep(0.1)
        self.type(b"\x03")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def wait(condition, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise BenchError(f"the TUI bench timed out waiting for {what}")
        time.sleep(0.005)


def settle(tui: Tui) -> None:
    """Waits until the screen has been still for longer than a frame takes
    to come (frames are at least 33 ms apart while a turn runs)."""
    last = -1
    while tui.written != last:
        last = tui.written
        time.sleep(0.08)


def headless(h, home: Path, url: str, server: ModelServer) -> float:
    """The CPU `mecha run` spends on the same long stream."""
    server.long = True
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "MECHA_HOME": str(home),
           "ANTHROPIC_API_KEY": "x", "ANTHROPIC_BASE_URL": url}
    argv = [str(h.mecha), "-C", str(h.workspace()), "run", "--yes", "stream please"]
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise BenchError(f"mecha run on the long stream exited with {proc.returncode}")
    return usage.ru_utime + usage.ru_stime


def measure_tui(h) -> dict:
    home = h.workdir / "home-tui"
    home.mkdir()
    (home / "config.toml").write_text('[provider]\nkind = "anthropic"\n')
    server = ModelServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    tui = Tui(h.mecha, home, h.workspace(), url)
    try:
        wait(lambda: tui.written > 0, "the first frame")
        time.sleep(0.3)
        # The long stream first, on a screen that has drawn nothing else.
        server.long = True
        cpu_before = tui.cpu_s()
        began = time.monotonic()
        tui.type(b"stream please\r")
        wait(lambda: server.answered >= 1, "the long answer", 120)
        time.sleep(0.3)
        stream_s = server.stream_ended - began
        stream_cpu = tui.cpu_s() - cpu_before
        headless_cpu = headless(h, home, url, server)
        for n in range(3, TURNS + 2):
            tui.type(f"prompt {n}\r".encode())
            wait(lambda: server.answered >= n, f"answer {n}")
            # The turn ends once the answer is drawn; the next prompt must
            # not arrive while it is still running.
            settle(tui)
        time.sleep(0.5)
        rss_mb, peak_mb = tui.memory_mb()
        cpu_total = tui.cpu_s()
    finally:
        tui.quit()
        server.shutdown()
    # Ctrl-C twice at an empty prompt leaves with 130, as chat does.
    if tui.proc.returncode != 130:
        raise BenchError(f"mecha tui exited with {tui.proc.returncode}")
    return {
        "tokens": STREAM_TOKENS,
        "stream_s": stream_s,
        "stream_cpu_s": stream_cpu,
        "stream_cpu_pct": 100 * stream_cpu / stream_s,
        "headless_cpu_s": headless_cpu,
        "screen_cpu_pct": 100 * (stream_cpu - headless_cpu) / stream_s,
        "turns": TURNS,
        "rss_mb": rss_mb,
        "peak_mb": peak_mb,
        "cpu_total_s": cpu_total,
        "screen_mb": tui.written / 1e6,
    }

