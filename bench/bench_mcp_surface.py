"""The first request's size with five real MCP servers (see
mcp_surface.sh): mecha run against the mock model, once per API and
threshold, the body's bytes as the mock logged them. Also prints how many
tools the servers gave and what `mecha tools` says is deferred."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Mock  # noqa: E402
from bench_common import BenchError, text_turn  # noqa: E402

TARGET_KB = 12.0


def servers(root: Path, ws: Path) -> list[tuple[str, list[str]]]:
    """Each server's name and command line, when it is installed."""
    bin_dir = root / "npm" / "node_modules" / ".bin"
    wanted = [
        ("everything", [str(bin_dir / "mcp-server-everything")]),
        ("filesystem", [str(bin_dir / "mcp-server-filesystem"), str(ws)]),
        ("desktop", [str(bin_dir / "desktop-commander")]),
        ("playwright", [str(bin_dir / "playwright-mcp"), "--headless"]),
        ("excel", [str(root / "venv" / "bin" / "excel-mcp-server"), "stdio"]),
    ]
    present = []
    for name, argv in wanted:
        if os.access(argv[0], os.X_OK):
            present.append((name, argv))
        else:
            print(f"  {name}: not installed ({argv[0]}), left out", file=sys.stderr)
    return present


def config(api: str, entries: list[tuple[str, list[str]]], defer: str) -> str:
    text = '[provider]\nkind = "anthropic"\n'
    if api == "openai":
        text = '[provider]\nkind = "openai"\nmodel = "m"\n'
    text += f"[tools]\ndefer_schemas_over_bytes = {defer}\n"
    for name, argv in entries:
        text += f'\n[[mcp]]\nname = "{name}"\ncommand = {json.dumps(argv[0])}\n'
        text += f"args = {json.dumps(argv[1:])}\n"
    return text


def env(home: Path, api: str, url: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "MECHA_HOME": str(home)}
    if api == "anthropic":
        return env | {"ANTHROPIC_API_KEY": "x", "ANTHROPIC_BASE_URL": url}
    return env | {"OPENAI_API_KEY": "x", "OPENAI_BASE_URL": url + "/v1"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mecha", type=Path, required=True)
    parser.add_argument("--mock", type=Path, required=True)
    parser.add_argument("--servers", type=Path, required=True)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mecha-mcp-surface-"))
    ws = work / "ws"
    ws.mkdir()
    entries = servers(args.servers, ws)
    if not entries:
        raise BenchError("no server is installed")
    figures = {}
    for api in ("anthropic", "openai"):
        for defer in ("default", '"never"'):
            home = work / f"home-{api}-{len(figures)}"
            home.mkdir()
            setting = "" if defer == "default" else defer
            text = config(api, entries, setting or "0")
            if not setting:
                text = text.replace("defer_schemas_over_bytes = 0\n", "")
            (home / "config.toml").write_text(text)
            with Mock(args.mock, work, [text_turn("ok")]) as mock:
                run = subprocess.run(
                    [str(args.mecha), "-C", str(ws), "run", "say ok"],
                    env=env(home, api, mock.url),
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                if run.returncode != 0:
                    raise BenchError(f"mecha run ({api}, {defer}) failed:\n{run.stderr}")
                for line in run.stderr.splitlines():
                    if "unavailable" in line:
                        print(f"  {line}", file=sys.stderr)
                requests = mock.requests(1)
                figures[(api, defer)] = requests[0]["body_bytes"]
            if api == "anthropic" and defer == "default":
                listing = subprocess.run(
                    [str(args.mecha), "-C", str(ws), "tools", "--json"],
                    env=env(home, api, "http://127.0.0.1:9"),
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                tools = json.loads(listing.stdout)["tools"]
                mcp = [t for t in tools if t["source"].startswith("mcp:")]
                print(f"servers: {', '.join(n for n, _ in entries)}; {len(mcp)} MCP tools, "
                      f"{len(tools) - len(mcp)} others")
    for api in ("anthropic", "openai"):
        whole = figures[(api, '"never"')] / 1000
        deferred = figures[(api, "default")] / 1000
        met = "met" if deferred <= TARGET_KB else "MISSED"
        print(f"first request, {api}: {whole:.1f} KB with every schema, {deferred:.1f} KB "
              f"deferred (target <= {TARGET_KB:.0f} KB: {met})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"mcp_surface: {e}", file=sys.stderr)
        sys.exit(1)
