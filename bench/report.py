"""Prints the bench table from scripts/bench.sh's JSON files and merges them.

Usage: report.py OUT_DIR [--json_out=PATH]
Reads OUT_DIR/core-NAME.json, OUT_DIR/pytorch-NAME.json, their BF16 runs
OUT_DIR/core_bf16-NAME.json and OUT_DIR/pytorch_bf16-NAME.json, and
OUT_DIR/grpc-NAME-bN[-wK].json (K: --batch_workers, each with one OpenBLAS
thread).
"""
import datetime
import glob
import json
import os
import platform
import re
import subprocess
import sys


def machine():
    model = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def load(out):
    result = {"machine": machine(), "models": {}}
    for path in sorted(glob.glob(os.path.join(out, "core-*.json"))):
        name = os.path.basename(path)[5:-5]
        result["models"].setdefault(name, {})["core"] = json.load(open(path))
    for path in sorted(glob.glob(os.path.join(out, "pytorch-*.json"))):
        name = os.path.basename(path)[8:-5]
        result["models"].setdefault(name, {})["pytorch_loop"] = json.load(open(path))
    for kind in ("core_bf16", "pytorch_bf16"):
        for path in sorted(glob.glob(os.path.join(out, kind + "-*.json"))):
            name = os.path.basename(path)[len(kind) + 1:-5]
            result["models"].setdefault(name, {})[kind] = json.load(open(path))
    for path in sorted(glob.glob(os.path.join(out, "grpc-*.json"))):
        m = re.match(r"grpc-(.*?)-b(\d+)(?:-w(\d+))?\.json$", os.path.basename(path))
        entry = result["models"].setdefault(m.group(1), {})
        config = "max_batch_size=" + m.group(2)
        if m.group(3):
            config += f" batch_workers={m.group(3)} blas_threads=1"
        entry.setdefault("grpc", {})[config] = json.load(open(path))
    bf16 = os.path.join(out, "bf16.json")
    if os.path.exists(bf16):
        result["bf16"] = json.load(open(bf16))
    return result


def loop_agreement(s, p, heads):
    """Masks the PyTorch loop and the engine both scored whose correct
    counts differ, and how many they share (same examples only)."""
    if "correct" not in s or p["examples"] != s["examples"]:
        return None, 0
    stride = max(1, s["masks_of"] // s["masks"]) if s["masks"] < s["masks_of"] else 1
    shared = differ = 0
    for i, mask_id in enumerate(p["mask_ids"]):
        if mask_id == "baseline":
            j = 0
        else:
            layer, head = map(int, mask_id[1:].split("H"))
            k = layer * heads + head
            if k % stride:
                continue
            j = k // stride + 1
        if j < len(s["correct"]):
            shared += 1
            differ += s["correct"][j] != p["correct"][i]
    return differ, shared


def table(result):
    rows = []
    for name, entry in result["models"].items():
        core = entry.get("core", {})
        shape = f"{core.get('layers')}x{core.get('heads')} d={core.get('hidden')}"
        s = core.get("sweep")
        e = core.get("encoder")
        p = entry.get("pytorch_loop")
        if s and p:
            differ, shared = loop_agreement(s, p, core.get("heads", 1))
            ok = ("" if differ is None else
                  f"; correct counts agree on {shared - differ} of {shared} shared masks")
            rows.append((name, f"HEADLINE sweep engine / plain PyTorch loop (target >= 4) "
                               f"[HF eager BERT, head_mask, batch {p['batch']} in file order, "
                               f"{p['threads']} threads; {p['examples']} ex x {p['masks'] + 1} masks]",
                         f"{s['engine_rate'] / p['rate']:.2f}x ({p['rate']:.0f} vs {s['engine_rate']:.0f} (mask x ex)/s{ok})"))
        if s:
            rows.append((name, f"sweep naive loop (a) [{s['examples']} ex x {s['masks'] + 1} masks of {s['masks_of'] + 1}, "
                               f"{s['mean_tokens']:.0f} tok, batch {s['batch']}]", f"{s['naive_rate']:.0f} (mask x ex)/s"))
            rows.append((name, f"sweep engine (b) [{s.get('engine_workers', 1)} worker thread(s)]",
                         f"{s['engine_rate']:.0f} (mask x ex)/s"))
            if "engine_one_worker_rate" in s:
                one = s["engine_one_worker_rate"]
                rows.append((name, "  the same engine on 1 worker (parallel workers' share)",
                             f"{one:.0f} (mask x ex)/s; workers give {s['engine_rate'] / one:.2f}x"
                             + (f"; 1 worker / PyTorch loop {one / p['rate']:.2f}x" if p else "")))
            if "engine_wide_rate" in s:
                rows.append((name, f"sweep engine, max_batch_rows={s['engine_batch']}",
                             f"{s['engine_wide_rate']:.0f} (mask x ex)/s = {s['engine_wide_rate'] / s['naive_rate']:.2f}x (a)"))
            rows.append((name, "  bounds: layer work a/b (prefix reuse, [CLS]-only last layer); padding a, b",
                         f"{s['prefix_reuse_bound']:.2f}x; {s['naive_padding']:.2f}, {s['engine_padding']:.2f} padded/real tokens"))
            if "engine_unpacked_rate" in s:
                rows.append((name, "  levers, each off in turn (same workers): token packing; head-output reuse",
                             f"packing {s['engine_rate'] / s['engine_unpacked_rate']:.2f}x "
                             f"({s['engine_unpacked_rate']:.0f} without); reuse "
                             f"{s['engine_rate'] / s['engine_no_head_reuse_rate']:.2f}x "
                             f"({s['engine_no_head_reuse_rate']:.0f} without)"))
            if "engine_gflops" in s and e and p:
                loop_gflops = p["rate"] * s["loop_gflop_per_pair"]
                fewer = s["loop_gflop_per_pair"] * s["examples"] * (s["masks"] + 1) / s["engine_gflop"]
                need = 4 / fewer * loop_gflops
                rows.append((name, "  arithmetic: FLOPs loop/engine; GFLOP/s of engine, loop, sgemm; 4x needs",
                             f"{fewer:.2f}x fewer; {s['engine_gflops']:.0f}, {loop_gflops:.0f}, "
                             f"{e['sgemm_gflops']:.0f}; engine at {need:.0f} GFLOP/s = "
                             f"{100 * need / e['sgemm_gflops']:.0f}% of sgemm"))
            ok = "agree" if s["masks_disagreeing"] == 0 else f"{s['masks_disagreeing']} masks DISAGREE"
            rows.append((name, "sweep ratio b/a (target >= 3)", f"{s['ratio']:.2f}x ({ok})"))
        bf = entry.get("core_bf16", {}).get("sweep")
        if bf and s and p:
            pb = entry.get("pytorch_bf16")
            rows.append((name, "BF16 (opt-in --dtype=BF16) sweep engine / PyTorch loop float32; / loop in bfloat16",
                         f"{bf['engine_rate'] / p['rate']:.2f}x ({bf['engine_rate']:.0f} (mask x ex)/s)"
                         + (f"; {bf['engine_rate'] / pb['rate']:.2f}x (loop {pb['rate']:.0f})" if pb else "")))
            if pb:
                differ, shared = loop_agreement(bf, pb, core.get("heads", 1))
                if differ is not None:
                    rows.append((name, "  BF16 engine and bfloat16 loop: correct counts agree on shared masks",
                                 f"{shared - differ} of {shared}"))
            diffs = [abs(a - b) for a, b in zip(bf["correct"], s["correct"])]
            n = s["examples"]
            rows.append((name, "  BF16's effect: masks whose correct count moves; largest move; baseline accuracy F32, BF16",
                         f"{sum(d > 0 for d in diffs)} of {len(diffs)}; {max(diffs)} of {n} examples; "
                         f"{s['correct'][0] / n:.3f}, {bf['correct'][0] / n:.3f}"))
        if e:
            rows.append((name, f"encoder {e['batch']}x{e['tokens']} tok ({shape})",
                         f"{e['gflops']:.1f} GFLOP/s = {100 * e['fraction']:.0f}% of sgemm {e['sgemm_gflops']:.1f} (target >= 50%)"))
        grpc = entry.get("grpc", {})
        for config in sorted(grpc, key=lambda k: (int(k.split("=")[1].split()[0]), k)):
            for point in grpc[config].get("classify", []):
                rows.append((name, f"Classify {point['clients']:>2} clients, {config}",
                             f"{point['calls_per_s']:.1f} calls/s, p50 {point['p50_ms']:.1f} ms, p99 {point['p99_ms']:.1f} ms"
                             + (f", {point['errors']} errors" if point["errors"] else "")))
        b1 = {p["clients"]: p["calls_per_s"] for p in grpc.get("max_batch_size=1", {}).get("classify", [])}
        for config in sorted(c for c in grpc if c != "max_batch_size=1"):
            bn = {p["clients"]: p["calls_per_s"] for p in grpc[config].get("classify", [])}
            if b1.get(32) and bn.get(32):
                rows.append((name, f"batcher gain at 32 clients, {config} (target >= 2)",
                             f"{bn[32] / b1[32]:.2f}x"))
        for g in grpc.values():
            a = g.get("attention")
            if not a:
                continue
            for enc in ("float32", "float16"):
                if enc in a and "bytes" in a[enc]:
                    rows.append((name, f"GetAttention {a[enc]['maps']} maps, {a['tokens']} tok, {enc.upper()}",
                                 f"{a[enc]['bytes'] / 1e6:.2f} MB, p50 {a[enc]['p50_ms']:.1f} ms"))
    cores = sorted({e["core"].get("openblas_core", "?") for e in result["models"].values() if "core" in e})
    if cores:
        rows.append(("(cpu)", "OpenBLAS kernels in use (every process of the run; blas_core.h)",
                     ", ".join(c or "(not OpenBLAS)" for c in cores)
                     + (f"; OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}"
                        if os.environ.get("OPENBLAS_CORETYPE") else "")))
    b = result.get("bf16")
    if b:
        rows.append(("(cpu)", "BF16 Linear [512,768]x[768,768] vs float32 (bench/bf16_check.py)",
                     f"{b['bf16_gflops']:.1f} vs {b['f32_gflops']:.1f} GFLOP/s; AVX-512: "
                     f"{' '.join(b['avx512_flags']) or 'none'}; oneDNN BF16: {b['onednn_bf16']}"))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    m = result["machine"]
    lines = [f"bertology bench, CPU: {m['cpu']}, {m['cores']} cores, {m['date']}",
             f"{'model':<{w0}}  {'measure':<{w1}}  result", "-" * (w0 + w1 + 60)]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def main():
    out = sys.argv[1]
    json_out = None
    for arg in sys.argv[2:]:
        if arg.startswith("--json_out="):
            json_out = arg.split("=", 1)[1]
    result = load(out)
    print(table(result))
    if json_out:
        with open(json_out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
