"""Start-up to the first model request, and the first request's size, with
10, 100 and 1,000 skills in the store (each a SKILL.md with a two-line
description, cue words and a 2 KB body, beside a bundled file). The
level-1 block is the first request's growth over a run with no skills.
Used by bench.py."""

from __future__ import annotations

from pathlib import Path

BODY = "1. Do the step exactly as written.\n" * 60


def write_store(home: Path, count: int) -> None:
    for i in range(count):
        folder = home / "skills" / f"skill-{i:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\n"
            f"description: How to handle request kind {i}. Use whenever someone asks\n"
            f"  for kind {i}, or mentions it by name.\n"
            f"triggers: [kind{i}, request]\n---\n\n{BODY}"
        )
        (folder / "TEMPLATE.md").write_text("Dear ...\n")


def measure_skills(h, measure_startup, counts: list[int], runs: int) -> list[dict]:
    """One row per count: start-up median and p90, and the block's bytes."""
    base = measure_startup(h, "anthropic", runs)["first_request_bytes"]
    rows = []
    for count in counts:
        api = f"anthropic-skills-{count}"
        home = h.workdir / f"home-{api}"
        home.mkdir()
        (home / "config.toml").write_text('[provider]\nkind = "anthropic"\n')
        write_store(home, count)
        h.homes[api] = home
        startup = measure_startup(h, api, runs)
        rows.append({
            "skills": count,
            "median_ms": startup["median_ms"],
            "p90_ms": startup["p90_ms"],
            "block_bytes": startup["first_request_bytes"] - base,
        })
    return rows
