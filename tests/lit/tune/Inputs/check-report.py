"""Checks the JSON report of mhac tune against the schema docs/schedules.md documents.

usage: check-report.py REPORT.json [--status ID=STATUS ...] [--max-elapsed SECONDS]
Prints "report ok" or the first problem, and exits 1 on a problem.
"""
import argparse
import json
import sys

TOP = {
    "format": int, "layer": str, "fingerprint": str, "sizes": str, "cpu": str, "target": str,
    "threads": int, "compiler": str, "seed": int, "budget_s": (int, float),
    "elapsed_s": (int, float), "default_id": int, "winner_id": int, "adopted": bool,
    "speedup": (int, float), "noise": (int, float), "candidates_per_minute": (int, float),
    "mean_compile_s": (int, float), "best_over_time": list, "candidates": list,
}
CANDIDATE = {
    "id": int, "origin": str, "status": str, "predicted": (int, float),
    "compile_s": (int, float), "samples_ms": list, "final_samples_ms": list, "ratios": list,
    "final_ratios": list, "rounds": int,
    "knobs": dict,
}
STATUSES = {"proposed", "built", "compile_failed", "crashed", "timed_out", "wrong", "measured"}


def fail(message):
    print(f"report problem: {message}")
    sys.exit(1)


def check_fields(obj, fields, where):
    for key, kind in fields.items():
        if key not in obj:
            fail(f"{where} has no '{key}'")
        if not isinstance(obj[key], kind) or (kind is int and isinstance(obj[key], bool)):
            fail(f"{where}: '{key}' is {type(obj[key]).__name__}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("--status", action="append", default=[])
    parser.add_argument("--max-elapsed", type=float)
    args = parser.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    check_fields(report, TOP, "the report")
    if report["format"] != 1:
        fail("format is not 1")
    candidates = report["candidates"]
    for i, c in enumerate(candidates):
        check_fields(c, CANDIDATE, f"candidate {i}")
        if c["id"] != i:
            fail(f"candidate {i} has id {c['id']}")
        if c["status"] not in STATUSES:
            fail(f"candidate {i} has status {c['status']}")
        if c["status"] == "measured" and not isinstance(c.get("median_ms"), (int, float)):
            fail(f"measured candidate {i} has no median_ms")
        if c["status"] in {"compile_failed", "crashed", "timed_out", "wrong"} and not c.get("reason"):
            fail(f"failed candidate {i} has no reason")
    if candidates[report["default_id"]]["origin"] != "default":
        fail("default_id is not the default")
    if candidates[report["default_id"]]["status"] != "measured":
        fail("the default was not measured")
    ratios = [r for _, r in report["best_over_time"]]
    if any(b > a for a, b in zip(ratios, ratios[1:])):
        fail("best_over_time is not the best so far")
    failures = [c for c in candidates if c["status"] in {"crashed", "timed_out"}]
    for expected in args.status:
        status, count = expected.split("=")
        found = sum(1 for c in candidates if c["status"] == status)
        if found != int(count):
            fail(f"{found} candidates {status}, expected {count}")
    if args.max_elapsed is not None and report["elapsed_s"] > args.max_elapsed:
        fail(f"elapsed {report['elapsed_s']:.1f} s > {args.max_elapsed}")
    print("report ok")


if __name__ == "__main__":
    main()
