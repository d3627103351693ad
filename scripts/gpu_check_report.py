#!/usr/bin/env python3
# File: gpu_check_report.py
# The arithmetic and the report of scripts/gpu-check.sh. `bench` reads whale-run's --metrics of
# a benchmark and whale-sim's JSON of its plan and prints "key value" lines (tokens/s, MFU, peak
# memory, measured step); `predict` prints whale-sim's predicted step and peak; `report` writes
# gpu-check.md and gpu-check.json from the phases' results and the benchmarks' values; `curve`
# holds a bf16 loss curve to the fp32 one; `tokens` writes random benchmark data; `kernels`
# sums Nsight Compute's kernel durations of a benchmark's last step by kernel and by op class.
# Usage: gpu_check_report.py bench METRICS_JSONL SIM_JSON PEAK_BF16_TFLOPS
#        gpu_check_report.py kernels KERNEL_TIMES_CSV MODEL OUT_CSV
#        gpu_check_report.py curve FP32_METRICS BF16_METRICS STEPS
#        gpu_check_report.py tokens OUT_FILE VOCABULARY COUNT SEED
#        gpu_check_report.py predict SIM_JSON
#        gpu_check_report.py report RESULTS_TSV VALUES_TSV OUT_DIR TITLE
import array
import csv
import json
import random
import re
import statistics
import struct
import sys

# The benchmark rows of gpu-check.json, each with these keys (null where not measured).
BENCH_KEYS = ["tokens_per_s", "mfu", "peak_memory_gib", "measured_step_s", "predicted_step_s",
              "predicted_peak_gib", "pytorch_tokens_per_s", "pytorch_peak_memory_gib"]
# The goals a GPU run is held to: (name, benchmark, test on its values, what it says).
MFU_GOAL, STEP_BOUND, PEAK_BOUND, CURVE_BOUND = 0.40, 0.15, 0.10, 0.02


def bench(metrics_path, sim_path, peak_tflops):
    rows = [json.loads(line) for line in open(metrics_path) if line.strip()]
    sim = json.load(open(sim_path))
    on_gpu = [r for r in rows if str(r.get("device", "")).startswith("cuda")]
    print(f"steps {len(rows)}")
    print(f"on_gpu {1 if on_gpu else 0}")
    # The first quarter of the steps (at least one) is warm-up: allocator, cuBLASLt heuristics.
    timed = rows[max(1, len(rows) // 4):]
    if timed:
        step = statistics.median(r["step_time_s"] for r in timed)
        print(f"measured_step_s {step:.6g}")
        print(f"tokens_per_s {statistics.median(r['tokens_per_s'] for r in timed):.6g}")
        print(f"mfu {sim['model_flops_per_step'] / step / (peak_tflops * 1e12):.4f}")
    peaks = [r["peak_memory_bytes"] for r in rows if "peak_memory_bytes" in r]
    if peaks:
        print(f"peak_memory_gib {max(peaks) / 2**30:.4f}")


def predict(sim_path):
    """whale-sim's step time and peak tensor memory: the bytes an allocator hands out at the peak
    (whale-run's arena, PyTorch's max_memory_allocated), without the framework's reserve for the
    CUDA context and libraries, which neither measured figure counts."""
    sim = json.load(open(sim_path))
    print(f"predicted_step_s {sim['step_time_s']:.6g}")
    print(f"predicted_peak_gib {sim['devices'][0]['tensor_memory_bytes'] / 2**30:.4f}")


def curve(fp32_path, bf16_path, steps):
    """PASS when bf16's loss stays within 2% of fp32's: 10-step means, the largest gap."""
    losses = lambda path: [json.loads(line)["loss"] for line in open(path) if line.strip()]
    a, b = losses(fp32_path), losses(bf16_path)
    if len(a) != steps or len(b) != steps:
        print(f"FAIL {len(a)} (fp32) and {len(b)} (bf16) of {steps} steps")
        return
    mean = lambda v, i: sum(v[i:i + 10]) / len(v[i:i + 10])
    gap = max(abs(mean(b, i) - mean(a, i)) / abs(mean(a, i)) for i in range(0, steps, 10))
    print(("PASS" if gap <= CURVE_BOUND else "FAIL") + f" {steps} steps, largest gap of 10-step mean "
          f"losses {gap:.4f} (bound {CURVE_BOUND}); final loss fp32 {a[-1]:.4f}, bf16 {b[-1]:.4f}")


def tokens(path, vocabulary, count, seed):
    """A whale token file (data_file.h: "WHALETOK", version 1, vocabulary, count, uint16
    tokens) of `count` uniform random tokens below `vocabulary`: benchmark data for models
    whose vocabulary is not the byte-level text tokenizer's 256."""
    rng = random.Random(seed)
    data = array.array("H", (rng.randrange(vocabulary) for _ in range(count)))
    if sys.byteorder != "little":
        data.byteswap()
    with open(path, "wb") as f:
        f.write(b"WHALETOK" + struct.pack("<IIQ", 1, vocabulary, count) + data.tobytes())


def goals(benches):
    """PASS/FAIL/unmeasured of each goal over the benchmarks' values."""
    out = []

    def add(name, bench_name, value, ok):
        out.append({"goal": name, "benchmark": bench_name, "value": value,
                    "status": "unmeasured" if value is None else ("PASS" if ok(value) else "FAIL")})

    for name, v in benches.items():
        if name == "gpt3-1.3b":
            add(f"MFU >= {MFU_GOAL:.0%}", name, v["mfu"], lambda m: m >= MFU_GOAL)
        pair = None if None in (v["tokens_per_s"], v["pytorch_tokens_per_s"]) else \
            v["tokens_per_s"] / v["pytorch_tokens_per_s"]
        add("tokens/s >= PyTorch eager (ratio)", name, pair, lambda r: r >= 1.0)
        err = None if None in (v["predicted_step_s"], v["measured_step_s"]) else \
            v["predicted_step_s"] / v["measured_step_s"] - 1
        add(f"predicted step within {STEP_BOUND:.0%} (error)", name, err, lambda e: abs(e) <= STEP_BOUND)
        err = None if None in (v["predicted_peak_gib"], v["peak_memory_gib"]) else \
            v["predicted_peak_gib"] / v["peak_memory_gib"] - 1
        add(f"predicted peak within {PEAK_BOUND:.0%} (error)", name, err, lambda e: abs(e) <= PEAK_BOUND)
    return out


# Op classes of a kernel, by the first pattern its name holds: the kernels' own names (whale's
# CUDA backend) and cuBLAS's GEMM kernels (nvjet, sm90_xmma, cutlass).
KERNEL_CLASSES = [("flash_", "attention"), ("attention", "attention"),
                  ("nvjet", "gemm"), ("gemm", "gemm"), ("xmma", "gemm"), ("cutlass", "gemm"),
                  ("layernorm", "norm"), ("rmsnorm", "norm"), ("bias_add_backward", "column sums"),
                  ("column_", "column sums"),
                  ("adamw", "optimizer"), ("cross_entropy", "loss"), ("embedding", "embedding"),
                  ("gelu", "pointwise"), ("swiglu", "pointwise"), ("residual", "pointwise"),
                  ("elementwise", "pointwise"), ("map_kernel", "pointwise"), ("nccl", "collective")]


def kernel_class(name):
    lower = name.lower()
    return next((c for pattern, c in KERNEL_CLASSES if pattern in lower), "other")


def kernels(kernel_times_csv, model, out_csv):
    """whale-run --kernel-times of a benchmark (per timed step): appends its rows with the model
    and each kernel's op class to OUT_CSV (model, class, kernel, launches_per_step, ms_per_step,
    share) and prints one line: the step's kernel time and its classes by share."""
    try:
        rows = list(csv.DictReader(open(kernel_times_csv)))
    except OSError as e:
        print(f"FAIL {model}: {e.strerror}: {kernel_times_csv}")
        return
    if not rows:
        print(f"FAIL {model}: no kernel in {kernel_times_csv}")
        return
    total_ms = sum(float(r["ms_per_step"]) for r in rows)
    by_class = {}
    with open(out_csv, "a", newline="") as f:
        w = csv.writer(f)
        if f.tell() == 0:
            w.writerow(["model", "class", "kernel", "launches_per_step", "ms_per_step", "share"])
        for r in rows:
            name = re.sub(r"^void |whale::(exec::)?(cuda::)?(<unnamed>::|\(anonymous namespace\)::)?", "", r["kernel"])
            w.writerow([model, kernel_class(name), name, r["launches_per_step"], r["ms_per_step"], r["share"]])
            by_class[kernel_class(name)] = by_class.get(kernel_class(name), 0.0) + float(r["ms_per_step"])
    shares = " ".join(f"{c} {ms / total_ms:.1%}" for c, ms in sorted(by_class.items(), key=lambda kv: -kv[1]))
    print(f"PASS {model}: {len(rows)} kernels, {total_ms:.2f} ms a step; {shares}")


def report(results_path, values_path, out_dir, title):
    phases = []
    for line in open(results_path):
        if line.strip():
            name, status, seconds, budget, numbers = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
            phases.append({"phase": name, "status": status, "seconds": float(seconds or 0),
                           "budget_s": int(budget or 0), "numbers": numbers})
    benches = {}
    for line in open(values_path):
        if line.strip():
            name, key, value = line.split()
            benches.setdefault(name, dict.fromkeys(BENCH_KEYS))[key] = float(value)
    for v in benches.values():
        for key in BENCH_KEYS:
            v.setdefault(key, None)
    counts = {s: sum(p["status"] == s for p in phases) for s in ("PASS", "FAIL", "SKIP")}
    reached = goals(benches)
    top_mfu = benches.get("gpt3-1.3b", {}).get("mfu")
    doc = {"title": title, "mfu": top_mfu, "mfu_benchmark": "gpt3-1.3b", "counts": counts,
           "seconds": round(sum(p["seconds"] for p in phases), 1), "phases": phases,
           "benchmarks": benches, "goals": reached}
    json.dump(doc, open(f"{out_dir}/gpu-check.json", "w"), indent=1)
    fmt = lambda x: "-" if x is None else (f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}")
    with open(f"{out_dir}/gpu-check.md", "w") as md:
        md.write(f"# gpu-check: {title}\n\n{counts['PASS']} PASS, {counts['FAIL']} FAIL, "
                 f"{counts['SKIP']} SKIP in {doc['seconds']:.0f} s; MFU (GPT-3 1.3B) {fmt(top_mfu)}\n\n")
        md.write("| phase | status | s (budget) | numbers |\n|---|---|---|---|\n")
        for p in phases:
            md.write(f"| {p['phase']} | {p['status']} | {p['seconds']:.1f} ({p['budget_s']}) | "
                     f"{p['numbers'].replace('|', '/')} |\n")
        if benches:
            md.write("\n| benchmark | " + " | ".join(BENCH_KEYS) + " |\n" + "|---" * (len(BENCH_KEYS) + 1) + "|\n")
            for name, v in benches.items():
                md.write(f"| {name} | " + " | ".join(fmt(v[k]) for k in BENCH_KEYS) + " |\n")
        if reached:
            md.write("\n| goal | benchmark | value | status |\n|---|---|---|---|\n")
            for g in reached:
                md.write(f"| {g['goal']} | {g['benchmark']} | {fmt(g['value'])} | {g['status']} |\n")


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "bench":
        bench(args[0], args[1], float(args[2]))
    elif command == "tokens":
        tokens(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif command == "curve":
        curve(args[0], args[1], int(args[2]))
    elif command == "predict":
        predict(args[0])
    elif command == "kernels":
        kernels(*args)
    elif command == "report":
        report(*args)
    else:
        sys.exit(f"gpu_check_report: unknown command {command}")
