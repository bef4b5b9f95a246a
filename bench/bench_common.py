"""What bench.py and its measurement modules share: the error that stops
a measurement, the shapes of the mock's scripted turns, and percentiles."""

from __future__ import annotations


class BenchError(Exception):
    pass


def text_turn(text: str) -> dict:
    return {"text": text}


def call_turn(*calls: tuple[str, dict]) -> dict:
    return {"tool_calls": [{"name": n, "input": i} for n, i in calls]}


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil
    return ordered[int(rank) - 1]
