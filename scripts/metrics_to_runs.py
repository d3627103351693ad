#!/usr/bin/env python3
# File: metrics_to_runs.py
# Turns whale-run --metrics output into a row of whale-calibrate's RUNS.csv
# (plan,step_time_s,peak_memory_gib,failed; docs/calibrate.md).
#
# Usage: metrics_to_runs.py [--header] [--relative-to DIR] [--failed] PLAN [METRICS.jsonl ...]
#   PLAN            the plan the metrics measured; written relative to DIR (the CSV's folder)
#   METRICS.jsonl   whale-run --metrics files of that plan (several runs: their steps pool)
#   --header        print the CSV header line first
#   --relative-to   the folder the CSV will be in (default: the current folder)
#   --failed        the run ran out of memory: a row with failed=true and no step time
# The step time is the median over every step after the first of each file (warm-up), the peak
# memory the largest peak_memory_bytes any record reports (the writing rank's backend memory).
import argparse
import json
import os
import statistics
import sys

HEADER = "plan,step_time_s,peak_memory_gib,failed"
BYTES_PER_GIB = 1024 ** 3


def fail(message):
    print(f"metrics_to_runs.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def read_records(path):
    records = []
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        fail(f"{path}: line {number}: expected one JSON object per line ({e.msg}) "
                             "(hint: give whale-run --metrics output)")
    except OSError as e:
        fail(f"{path}: {e.strerror} (hint: check the path)")
    return records


def main():
    parser = argparse.ArgumentParser(description="whale-run --metrics to RUNS.csv rows")
    parser.add_argument("--header", action="store_true")
    parser.add_argument("--relative-to", default=".")
    parser.add_argument("--failed", action="store_true")
    parser.add_argument("plan")
    parser.add_argument("metrics", nargs="*")
    args = parser.parse_args()
    if "," in args.plan:
        fail(f"{args.plan}: a plan path without commas (hint: RUNS.csv fields are comma-separated)")
    plan = os.path.relpath(os.path.abspath(args.plan), os.path.abspath(args.relative_to))
    if args.header:
        print(HEADER)
    if args.failed:
        print(f"{plan},,,true")
        return
    if not args.metrics:
        fail("no METRICS.jsonl given (hint: pass whale-run --metrics files, or --failed)")
    times, peak = [], 0
    for path in args.metrics:
        records = read_records(path)
        times += [r["step_time_s"] for r in records if r.get("step", 0) > 1]
        peak = max([peak] + [r.get("peak_memory_bytes", 0) for r in records])
    if not times:
        fail(f"{', '.join(args.metrics)}: no step after the first (hint: run whale-run with --steps 2 or more)")
    memory = f"{peak / BYTES_PER_GIB:.9g}" if peak > 0 else ""
    print(f"{plan},{statistics.median(times):.9g},{memory},false")


if __name__ == "__main__":
    main()
