#!/usr/bin/env python3
"""GPU resources of the env step kernels, measured without a GPU: registers, stack and spills.

Compiles tests/gpu_resources/step_kernels.cu (one translation unit, device code only, one
architecture: sm_90 by default) with `nvcc -cubin -Xptxas -v`, reads what ptxas reports for each
step kernel, prints a table and checks it against a budget file (tests/gpu_resource_budget.txt):
it fails when a kernel's registers, stack or spill bytes exceed its budget by more than 10 %, or
when a kernel of the budget is missing, or a kernel has no budget line.

    scripts/gpu_resources.py                       # measure and check (what the CTest gpu_resources runs)
    scripts/gpu_resources.py --write-doc           # also rewrite the table in docs/gpu-resources.md
    scripts/gpu_resources.py --write-budget        # set the budget to the measured figures
    scripts/gpu_resources.py --more --write-doc    # with the kernels of RLK_RESOURCE_MORE_ENVS (unchecked)
    scripts/gpu_resources.py --ptxas-log FILE      # parse a saved `nvcc -Xptxas -v` log instead of compiling

Kernels are named by the lines of RLK_RESOURCE_ENVS in step_kernels.cu (one line per env; those of
RLK_RESOURCE_MORE_ENVS only with --more, and never checked). The
spill bytes are the kernel's own plus those of the non-inlined functions (the engine's
forward_pass and solve_constraint) that ptxas compiles with it.
"""

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = "tests/gpu_resources/step_kernels.cu"
BUDGET = "tests/gpu_resource_budget.txt"
DOC = "docs/gpu-resources.md"
TOLERANCE = 0.10
PROBE = re.compile(r"for_each_index_kernelIN18rlk_resource_probe(\d+)(\w+?)EEEvmT_")


def find_nvcc(given):
    if given:
        return given
    found = shutil.which("nvcc")
    if found:
        return found
    if os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        return "/usr/local/cuda/bin/nvcc"
    sys.exit("gpu_resources: nvcc not found (pass --nvcc)")


def compile_command(nvcc, arch, out, more):
    return [nvcc, "-std=c++17", f"-arch=sm_{arch}", "-cubin", "-o", out, "--expt-relaxed-constexpr",
            "--extended-lambda", "-Xptxas", "-v"] + (["-DRLK_RESOURCE_MORE=1"] if more else []) + ["-I", "include", SOURCE]


def nvcc_version(nvcc):
    text = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release ([\d.]+), (V[\d.]+)", text)
    return f"{m.group(1)} ({m.group(2)})" if m else text.strip().splitlines()[-1]


def kernel_name(mangled):
    """The probe name of a step kernel's mangled name, or None for other functions."""
    m = PROBE.search(mangled)
    if not m:
        return None
    length, rest = int(m.group(1)), m.group(1) + m.group(2)
    return rest[len(m.group(1)):len(m.group(1)) + length]


def parse_ptxas(log):
    """{kernel: dict(registers, stack, spill_stores, spill_loads)} from `ptxas -v` output. The
    functions listed after an entry's own lines and before the next entry are its callees."""
    kernels, current, pending = {}, None, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = kernel_name(m.group(1))
            if current:
                kernels[current] = dict(registers=0, stack=0, spill_stores=0, spill_loads=0)
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            pending = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current and pending:
            k = kernels[current]
            k["spill_stores"] += int(m.group(2))
            k["spill_loads"] += int(m.group(3))
            if kernel_name(pending) == current:
                k["stack"] = int(m.group(1))
            pending = None
            continue
        m = re.search(r"Used (\d+) registers.*?(?:(\d+) bytes cumulative stack size)?$", line)
        if m and current:
            kernels[current]["registers"] = int(m.group(1))
            if m.group(2):
                kernels[current]["stack"] = int(m.group(2))
    return kernels


def read_budget(path):
    budget = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, *values = line.split()
            if len(values) != 4:
                sys.exit(f"gpu_resources: {path}: '{line}': expected name registers stack spill_stores spill_loads")
            budget[name] = dict(zip(("registers", "stack", "spill_stores", "spill_loads"), map(int, values)))
    return budget


def write_budget(path, kernels):
    with open(path, "w") as f:
        f.write("# GPU resource budget of the env step kernels (scripts/gpu_resources.py; CTest gpu_resources):\n"
                "# the check fails when a kernel exceeds a figure by more than 10 %, or a kernel is missing.\n"
                "# kernel                registers  stack_bytes  spill_store_bytes  spill_load_bytes\n")
        for name, k in kernels.items():
            f.write(f"{name:<24} {k['registers']:>9}  {k['stack']:>11}  {k['spill_stores']:>17}  {k['spill_loads']:>16}\n")


def check(kernels, budget, checked):
    problems = []
    for name, b in budget.items():
        if name not in kernels:
            problems.append(f"{name}: in the budget but not compiled (missing from {SOURCE}?)")
            continue
        for field, value in kernels[name].items():
            limit = b[field] * (1 + TOLERANCE)
            if value > limit:
                problems.append(f"{name}: {field} {value} > budget {b[field]} + 10 %")
    for name in kernels:
        if name in checked and name not in budget:
            problems.append(f"{name}: no line in {BUDGET} (run with --write-budget and commit it)")
    return problems


def table(kernels, budget):
    rows = ["| kernel | registers | stack (bytes) | spill stores / loads (bytes) | budget: registers, stack |",
            "|---|---:|---:|---:|---|"]
    for name, k in kernels.items():
        b = budget.get(name)
        rows.append(f"| {name} | {k['registers']} | {k['stack']:,} | {k['spill_stores']} / {k['spill_loads']} | "
                    + (f"{b['registers']}, {b['stack']:,}" if b else "none") + " |")
    return "\n".join(rows)


def write_doc(path, kernels, budget, header):
    begin, end = "<!-- gpu_resources:begin -->", "<!-- gpu_resources:end -->"
    text = open(path).read()
    if begin not in text or end not in text:
        sys.exit(f"gpu_resources: {path} has no {begin} ... {end} markers")
    block = f"{begin}\n{header}\n\n{table(kernels, budget)}\n{end}"
    text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nvcc", help="the nvcc to use (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc)")
    ap.add_argument("--arch", default="90", help="the one architecture to compile for (default 90)")
    ap.add_argument("--budget", default=os.path.join(ROOT, BUDGET))
    ap.add_argument("--ptxas-log", help="parse this saved `nvcc -Xptxas -v` output instead of compiling")
    ap.add_argument("--save-log", help="write nvcc's output here")
    ap.add_argument("--write-doc", nargs="?", const=os.path.join(ROOT, DOC), help=f"rewrite the table in {DOC}")
    ap.add_argument("--write-budget", action="store_true", help="write the measured figures as the budget")
    ap.add_argument("--more", action="store_true", help="also the kernels of RLK_RESOURCE_MORE_ENVS (reported, not checked)")
    args = ap.parse_args()

    nvcc = None if args.ptxas_log else find_nvcc(args.nvcc)
    command = " ".join(compile_command("nvcc", args.arch, "step_kernels.cubin", args.more))
    start = time.monotonic()
    if args.ptxas_log:
        log = open(args.ptxas_log).read()
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run = subprocess.run(compile_command(nvcc, args.arch, os.path.join(tmp, "step_kernels.cubin"), args.more), cwd=ROOT,
                                 capture_output=True, text=True)
        log = run.stdout + run.stderr
        if run.returncode != 0:
            print(log)
            sys.exit(f"gpu_resources: nvcc failed with status {run.returncode}")
    seconds = time.monotonic() - start
    if args.save_log:
        with open(args.save_log, "w") as f:
            f.write(log)

    kernels = parse_ptxas(log)
    # In the order of RLK_RESOURCE_ENVS (ptxas reports them in reverse).
    source = open(os.path.join(ROOT, SOURCE)).read()
    listed = re.findall(r"^\s*X\((\w+),", source, re.M)
    checked = re.findall(r"^\s*X\((\w+),", source[source.index("#define RLK_RESOURCE_ENVS"):source.index("#if RLK_RESOURCE_MORE")], re.M)
    kernels = dict(sorted(kernels.items(), key=lambda kv: listed.index(kv[0]) if kv[0] in listed else len(listed)))
    if not kernels:
        print(log)
        sys.exit("gpu_resources: no step kernel in ptxas's output")
    if args.write_budget:
        write_budget(args.budget, {name: k for name, k in kernels.items() if name in checked})
    budget = read_budget(args.budget) if os.path.exists(args.budget) else {}

    version = nvcc_version(nvcc) if nvcc else "(from a log)"
    header = (f"Measured {datetime.date.today().isoformat()} with nvcc {version} for sm_{args.arch} (no GPU "
              f"needed), from the repository root:\n`{command}`; spills include the non-inlined engine "
              f"functions compiled with each kernel.")
    print(header)
    print()
    print(table(kernels, budget))
    if not args.ptxas_log:
        print(f"\nnvcc: {seconds:.1f} s")
    if args.write_doc:
        write_doc(args.write_doc, kernels, budget, header)
    problems = check(kernels, budget, checked)
    if problems:
        print("\nFAILED: over the budget in " + args.budget + ":\n  " + "\n  ".join(problems))
        return 1
    print(f"\nwithin the budget ({args.budget}, +10 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
