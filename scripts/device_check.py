#!/usr/bin/env python3
"""scripts/device_check.py: the checks that need an NVIDIA GPU, split in two so that a short GPU
window only runs them.

    scripts/device_check.py prepare [DIR]          # here, no GPU needed (CUDA Toolkit, CMake, the build deps)
    scripts/device_check.py run [DIR] [OUT]        # there: needs only DIR, python3 and the driver
    scripts/device_check.py --summarize FILE.csv   # the env-steps/s table of any *_bench_* CSV
    scripts/device_check.py --help

scripts/device_check.sh is a thin entry point to this program (CI, the docs and CTest call it).
Python 3.8 or newer, standard library only; it calls the usual system tools (tar, ldd, strip, nice)
and, in prepare, CMake, the CUDA Toolkit and git.

prepare builds, for sm_90 only, every test's CUDA variant (rlk_cuda_variants, with
random_policy_cuda), the CUDA benchmarks (rlk_cuda_benchmarks) and the train_*_cuda examples in its
own build folder, and copies them, stripped, into DIR (default build/device-bundle):

    binaries.tar.gz   tests/, benchmarks/, examples/ and lib/ (Google Benchmark's shared library and
                      libgomp; the binaries' run path starts with $ORIGIN/../lib) in one archive: the
                      binaries compress about 3:1, and run unpacks them into a temporary folder
    reference.tar.gz  the tests' golden data (run unpacks it and points the tests at it with
                      RLK_REFERENCE_DIR)
    eigen3.tar.gz, wheels/   Eigen's headers and Gymnasium's wheels, for the Python stages
    manifest.json     commit, date, nvcc, architectures, compile_only, binaries, libraries
    ldd.txt           every binary's ldd
    device_check.sh, device_check.py   copies of this program: `DIR/device_check.sh run` runs DIR

It fails if a binary needs a library outside the bundle, the CUDA toolkit's runtime, cuBLAS and NCCL
and the C/C++ runtime (glibc, libstdc++, libgcc_s, libgomp), or if DIR is over 60 MiB (the device
tool carries 64 MiB with the working tree). NCCL (libnccl.so.2, 218 MB; only tests/nccl_test_cuda
links it) is never bundled.

run runs, each stage under its own time limit and all within RUN_BUDGET_S (later stages are skipped
when it is spent), never stopping at a failure: the CUDA test binaries (TEST_JOBS at a time;
nccl_test_cuda only where ldd finds libnccl.so.2 on that machine, else recorded as skipped), the env
benchmarks at N = 2^16 .. 2^24 with CartPole's limit kernel and a device-to-device copy of the bytes a
CartPole step moves (the MuJoCo envs in float and double at 2^14 .. 2^22), PPO on CartPole-v1 to 475
(3 seeds), PPO on HalfCheetah-v5 and Ant-v5 for 1M env steps, the SAC, TD3 and DQN presets,
compute-sanitizer memcheck and racecheck on the smallest test binaries (when compute-sanitizer is on
PATH or in /usr/local/cuda/bin) and the other CUDA benchmarks. Beside the tests it builds the Python
package's module with its CUDA backend for that machine's python3 (from the source tree around this
program, with the bundle's eigen3.tar.gz; niced, in the background), then runs its pytest suite and
benchmarks/python_throughput.py on CUDA after the env benchmarks. It writes every stage's log to
OUT/logs/ (one archive, OUT/logs.tar.gz, when OUT is the device tool's $OUT), OUT/summary.json (per
stage: name, status pass/fail/timeout/skipped, seconds, key numbers) and OUT/summary.txt, the table
it prints last. OUT defaults to $OUT when set, else DIR/results.

Environment variables (unset or empty: the default):
  prepare:
    BUNDLE_BUILD_DIR        its build folder (build/device-bundle-build; compile only:
                            build/device-bundle-check-build)
    PREPARE_JOBS            build jobs (all cores)
    CUDA_ARCH               CMAKE_CUDA_ARCHITECTURES (90; compile only: 90-virtual; 90-real would leave
                            out the PTX)
    PREPARE_COMPILE_ONLY=1  as CI does: PTX only, NVVM at -O0, a bundle that compiles and links
                            everything but that run refuses (exit 2)
    BUNDLE_PACK=0           leave tests/, benchmarks/, examples/ and lib/ unpacked
    BUNDLE_OVERSIZE_OK=1    a bundle over 60 MiB is a warning, not a failure (CI's compile check)
    CXX                     the host compiler named in the manifest (c++)
  ccache is used when it is on PATH, ninja when it is (for a new build folder).
  run:
    OUT                     the results folder when no OUT argument is given (the device tool's $OUT)
    RUN_BUDGET_S            the whole run's time budget in seconds (450)
    TEST_JOBS               CUDA test binaries at a time (4)
    TEST_TIMEOUT_S          each test binary's time limit (180)
    BENCH_MIN_TIME          the env benchmarks' --rlk_min_time (0.1)
    DEVICE_CHECK_PYTHON=0   leave out the Python stages
    DEVICE_CHECK_PYTHON_CUDA=0   build the module without its CUDA backend (to try the Python stages
                            without a GPU)
    PYTHON_BUILD_TIMEOUT_S  the Python module's build time limit (330)
    PYTHON_BUILD_JOBS       its build jobs (8)
    DEVICE_CHECK_FORCE=1    run the stages without looking for a GPU (to try run on a machine without
                            one: the CUDA stages then fail)
    DEVICE_CHECK_PACK       1: pack OUT/logs into OUT/logs.tar.gz, 0: do not (default: pack when OUT
                            comes from $OUT)
    TMPDIR                  where the binaries, the golden data and the Python build are unpacked
  LD_LIBRARY_PATH gains the folders of CUDA toolkit libraries the binaries' run path misses.

Exit status: 0 all passed; 1 a stage failed or was skipped for want of time (status "fail" or
"incomplete"), or prepare failed; 2 bad use (DIR is not a bundle, or a compile-only one for run);
3 no GPU (nothing run; summary.json written with status "no_gpu", its first stage the GPU probe with
status no_gpu).
"""

import csv
import glob
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(SCRIPT_DIR)
SCRIPTS = ("device_check.sh", "device_check.py")  # what a bundle carries of this program
BUNDLE_LIMIT_MIB = 60
MIB = 1048576

# The libraries a bundled binary may take from the machine it runs on (ldd's left-hand names): the C
# and C++ runtimes (glibc with its libm, libdl, libpthread and librt; libstdc++, libgcc_s; libgomp
# for the OpenMP host code) and the CUDA toolkit's own runtime and cuBLAS (libcuda, the driver, is
# opened by the runtime), and NCCL: it ships with the CUDA Toolkit here (/usr/local/cuda/lib), and at
# 218 MB it could not go into the 60 MiB bundle anyway. Only nccl_test_cuda needs it, and run skips
# that test on a machine where it is not found (OPTIONAL_LIB_RE: not found there is no error).
SYSTEM_LIB_RE = re.compile(r"^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|ld-linux-x86-64\.so\.2|libc\.so\.6"
                           r"|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libstdc\+\+\.so\.6"
                           r"|libgcc_s\.so\.1|libgomp\.so\.1)$")
TOOLKIT_LIB_RE = re.compile(r"^(libcudart\.so\.[0-9]+|libcublas\.so\.[0-9]+|libcublasLt\.so\.[0-9]+|libnccl\.so\.2)$")
OPTIONAL_LIB_RE = re.compile(r"^libnccl\.so\.2$")
NCCL_SKIP_REASON = "libnccl.so.2 not found on this machine (NCCL is not in the bundle: 218 MB)"


class Failure(Exception):
    """A step that ends prepare or run early, with its exit status (the message goes to stderr)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


# ---- small helpers -------------------------------------------------------------------------------

def getenv(name, default=""):
    """An environment variable, its default when unset or empty (the shell's ${NAME:-default})."""
    value = os.environ.get(name, "")
    return value if value != "" else default


def error(message):
    print(message, file=sys.stderr, flush=True)


def absolute(path):
    return path if path.startswith("/") else os.path.join(os.getcwd(), path)


def python3():
    """That machine's python3 (the one the Python stages build for and run), else this one."""
    return shutil.which("python3") or sys.executable


def find_nvcc():
    nvcc = shutil.which("nvcc")
    if not nvcc and os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        nvcc = "/usr/local/cuda/bin/nvcc"
    return nvcc


def output_of(argv, **kwargs):
    """The standard output of a command, "" when it fails or cannot start."""
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                           **kwargs)
    except (OSError, subprocess.SubprocessError):
        return ""
    return r.stdout if r.returncode == 0 else ""


def ldd(path):
    """ldd's output (stdout and stderr) and its exit status."""
    try:
        r = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, errors="replace")
    except OSError as e:
        return f"ldd: {e}\n", 127
    return r.stdout, r.returncode


def check_call(argv, what, **kwargs):
    """Runs a command that must succeed (its output goes where ours goes), else Failure."""
    sys.stdout.flush()
    try:
        rc = subprocess.call(argv, **kwargs)
    except OSError as e:
        raise Failure(f"error: {what}: {e}")
    if rc != 0:
        raise Failure(f"error: {what} failed (exit status {rc}): {shlex.join(argv)}")


def tar_create(archive, directory, *names):
    check_call(["tar", "-czf", archive, "-C", directory, *names], f"packing {archive}")


def du_bytes(*paths):
    """Apparent size in bytes of files and folders, each file counted once (du -sbc)."""
    seen, total = set(), 0
    for top in paths:
        stack = [top]
        while stack:
            p = stack.pop()
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
            if os.path.isdir(p) and not os.path.islink(p):
                try:
                    stack.extend(os.path.join(p, n) for n in os.listdir(p))
                except OSError:
                    pass
    return total


def sorted_by_size(paths, reverse=False):
    """ls -S (largest first, equal sizes by name); reverse: ls -S -r."""
    order = sorted(paths, key=lambda p: (-os.stat(p).st_size, p))
    return order[::-1] if reverse else order


def bundle_binaries(directory):
    """Every bundled program: DIR/{tests,benchmarks,examples}/*_cuda, sorted by path."""
    found = []
    for sub in ("tests", "benchmarks", "examples"):
        try:
            entries = list(os.scandir(os.path.join(directory, sub)))
        except OSError:
            continue
        found += [e.path for e in entries if e.name.endswith("_cuda") and e.is_file(follow_symlinks=False)]
    return sorted(found)


# ---- --summarize ---------------------------------------------------------------------------------

BENCH_NAME_NOISE = re.compile(r"/(min_time:[^/]*|real_time|repeats:\d+|threads:\d+)")


def csv_rows(text):
    """The rows of a Google Benchmark CSV (its console preamble skipped), or None without a header."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("name,")), None)
    return None if start is None else list(csv.DictReader(lines[start:]))


def summarize(path, out=sys.stdout):
    """Prints a table of items_per_second (env-steps/s) from a Google Benchmark CSV file."""
    with open(path, newline="") as f:
        rows = csv_rows(f.read())
    if rows is None:
        raise Failure("summary: no Google Benchmark CSV header in " + path)

    values, skipped, sizes = {}, {}, set()
    for row in rows:
        name = BENCH_NAME_NOISE.sub("", row["name"])
        if re.search(r"_(mean|median|stddev|cv)$", name):
            continue  # repetition aggregates: the per-run rows are used instead
        m = re.fullmatch(r"(.+)/(\d+)", name)
        if not m:
            continue
        family, n = m.group(1), int(m.group(2))
        sizes.add(n)
        if row.get("error_occurred") == "true":
            skipped[(family, n)] = row.get("error_message", "error")
            continue
        if row.get("items_per_second"):
            values.setdefault((family, n), []).append(float(row["items_per_second"]))

    sizes = sorted(sizes)
    families = list(dict.fromkeys(family for family, _ in list(values) + list(skipped)))

    def rate(family, n):  # median over repetitions, in env-steps/s
        v = values.get((family, n))
        return statistics.median(v) if v else None

    def cell(x):
        return f"{x / 1e6:12.2f}" if x is not None else f"{'-':>12}"

    width = max([len(f) for f in families] + [44])
    print("env-steps/s in millions (items_per_second; median over repetitions)", file=out)
    print(f"{'row':<{width}} " + " ".join(f"{'N=' + str(n):>12}" for n in sizes), file=out)
    for family in families:
        print(f"{family:<{width}} " + " ".join(
            f"{'skipped':>12}" if (family, n) in skipped else cell(rate(family, n)) for n in sizes), file=out)

    def group_of(family):  # "BM_row/<env id>/<backend>" -> env id; "BM_row/<backend>" -> ""
        parts = family.split("/")
        return parts[1] if len(parts) == 3 else ""

    def ratio_row(label, num, den, fmt):
        if not num or not den:
            return
        cells = []
        for n in sizes:
            a, b = rate(num, n), rate(den, n)
            cells.append(f"{fmt(a, b):>12}" if a and b else f"{'-':>12}")
        print(f"{label:<{width}} " + " ".join(cells), file=out)

    for group in dict.fromkeys(group_of(f) for f in families):
        members = [f for f in families if group_of(f) == group]

        def find(prefix):
            return next((f for f in members if f.startswith(prefix + "/")), None)

        checked, unchecked = find("BM_vec_env_step"), find("BM_vec_env_step_unchecked")
        limit, virtual = find("BM_limit_loop"), find("BM_virtual_gym_style")
        tag = f"{group}: " if group else ""
        print(file=out)
        ratio_row(tag + "vec_env unchecked / limit", unchecked, limit, lambda a, b: f"{a / b:.2f}")
        ratio_row(tag + "vec_env unchecked / virtual", unchecked, virtual, lambda a, b: f"{a / b:.2f}x")
        ratio_row(tag + "checking cost (1 - chk/unchk)", checked, unchecked, lambda a, b: f"{100 * (1 - a / b):.1f}%")


# ---- the library check (prepare and run) ---------------------------------------------------------

def parse_ldd(text):
    """ldd output ("== binary" headers between) -> {library: (where it resolved, binaries using it)}."""
    where, count = {}, {}
    for line in text.splitlines():
        if line.startswith("== ") or not line.strip():
            continue
        line = line.lstrip()
        name = line.split(" ", 1)[0]
        if "=> not found" in line:
            target = "NOT FOUND"
        elif " => " in line:
            target = os.path.realpath(line.split(" => ", 1)[1].split(" (", 1)[0])
        else:
            target = name
        where[name] = target
        count[name] = count.get(name, 0) + 1
    return {name: (where[name], count[name]) for name in where}


def library_kind(name, target, bundle):
    """Where a library comes from, and whether that is allowed: (description, ok)."""
    if target == "NOT FOUND" and OPTIONAL_LIB_RE.match(name):
        return "not found here (optional: only nccl_test_cuda needs it; run skips that test)", True
    if target == "NOT FOUND":
        return "ERROR: not found", False
    if target.startswith(bundle + "/lib/"):
        return "bundle", True
    if TOOLKIT_LIB_RE.match(name):
        return "CUDA toolkit", True
    if SYSTEM_LIB_RE.match(name):
        return "system (C/C++ runtime)", True
    return "ERROR: not allowed (neither in the bundle, the CUDA toolkit nor the C/C++ runtime)", False


def check_bundle_libraries(bundle, ldd_out=None, out=None, err=None):
    """Checks ldd of every binary of a bundle: each library resolves inside the bundle, or is one of
    the system or toolkit libraries above. Writes the full ldd output to ldd_out (BUNDLE/ldd.txt),
    prints a summary (library, where it resolved, how many binaries use it); False on anything else."""
    ldd_out = ldd_out or os.path.join(bundle, "ldd.txt")
    out, err = out or sys.stdout, err or sys.stderr
    ok = True
    binaries = bundle_binaries(bundle)
    with open(ldd_out, "w") as f:
        for binary in binaries:
            f.write("== " + os.path.relpath(binary, bundle) + "\n")
            text, rc = ldd(binary)
            f.write(text)
            if rc != 0:
                print(f"error: ldd failed on {binary}", file=err)
                ok = False
    with open(ldd_out, errors="replace") as f:
        text = f.read()
    print(f"libraries of the {len(binaries)} bundled binaries (full ldd output: {ldd_out}):", file=out)
    for name, (target, n) in sorted(parse_ldd(text).items()):
        kind, allowed = library_kind(name, target, bundle)
        ok = ok and allowed
        print(f"  {name:<28} {n:3d} binaries  {target:<60} {kind}", file=out)
    versions = sorted({line for line in text.splitlines() if re.search(r"version .* not found", line)})
    if versions:
        print("ERROR: missing symbol versions:", file=err)
        print("\n".join(versions), file=err)
        ok = False
    out.flush()
    return ok


# ---- prepare -------------------------------------------------------------------------------------

def configure_build(build, nvcc, arch, compile_only):
    """Configures the bundle's build folder (CUDA variants for ARCH only, the shared CUDA runtime, a
    run path that finds the bundle's lib/ and the toolkit)."""
    configure = ["-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                 "-DRLK_ENABLE_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={arch}", "-DRLK_RUN_CUDA_TESTS=OFF",
                 "-DRLK_NATIVE_ARCH=OFF", "-DRLK_HEADER_CHECK=OFF",
                 # The bundle's own libraries (Google Benchmark, libgomp) are found next to the binaries
                 # (DIR/{tests,benchmarks,examples}/x finds DIR/lib/), the toolkit's (cudart, cuBLAS) where
                 # they were linked from or where the toolkit usually is. The shared CUDA runtime: the
                 # static one would add 0.7 MB to each of the 31 binaries, and cuBLAS comes from the
                 # toolkit anyway.
                 "-DCMAKE_CUDA_RUNTIME_LIBRARY=Shared",
                 "-DCMAKE_BUILD_RPATH=$ORIGIN/../lib;/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib"]
    cache = os.path.join(build, "CMakeCache.txt")
    try:
        with open(cache, errors="replace") as f:
            cache_text = f.read()
    except OSError:
        cache_text = None
    if compile_only:
        configure.append("-DCMAKE_CUDA_FLAGS=-Xcicc -O0")
    elif cache_text and re.search(r"^CMAKE_CUDA_FLAGS:.*-Xcicc -O0", cache_text, re.M):
        configure.append("-DCMAKE_CUDA_FLAGS=")  # a build folder a compile-only prepare used before
    # A generator chosen before cannot change: keep the build folder's own.
    if shutil.which("ninja") and cache_text is None:
        configure += ["-G", "Ninja"]
    if shutil.which("ccache"):
        configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
    os.makedirs(build, exist_ok=True)
    nvcc_version = (output_of([nvcc, "--version"]).splitlines() or [""])[-1]
    print(f"== prepare: configure {build} ({nvcc_version}; CUDA architectures {arch}"
          + (", compile only: PTX from NVVM -O0, not for running" if compile_only else "") + ")", flush=True)
    log = os.path.join(build, "configure.log")
    with open(log, "w") as f:
        rc = subprocess.call(["cmake", *configure], stdout=f, stderr=subprocess.STDOUT)
    with open(log, errors="replace") as f:
        text = f.read()
    if rc != 0:
        sys.stderr.write(text)
        raise Failure(f"error: configuring {build} failed")
    for line in text.splitlines():
        if "rlkernels:" in line:
            print(line)


def build_targets(build, jobs):
    """Every test's CUDA variant (and random_policy_cuda), the CUDA benchmarks and the trainers'
    examples; then the slowest steps of this build from ninja's log."""
    targets = ["rlk_cuda_variants", "rlk_cuda_benchmarks", "train_ppo_cuda", "train_sac_cuda", "train_td3_cuda",
               "train_dqn_cuda"]
    print(f"== prepare: build {' '.join(targets)} (-j {jobs})", flush=True)
    started = time.monotonic()
    if subprocess.call(["cmake", "--build", build, "--target", *targets, "--parallel", str(jobs)]) != 0:
        raise Failure("error: building the CUDA targets failed")
    print(f"built in {int(time.monotonic() - started)} s")
    ninja_log = os.path.join(build, ".ninja_log")
    if os.path.isfile(ninja_log):
        # Compile time per translation unit (the newest entry of each output; ccache hits are fast).
        seconds = {}
        with open(ninja_log, errors="replace") as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split("\t")
                if len(fields) >= 4:
                    try:
                        seconds[fields[3]] = (int(fields[1]) - int(fields[0])) / 1000
                    except ValueError:
                        pass
        lines = [f"{t:8.1f}  {o}" for o, t in seconds.items()]
        lines.sort(key=lambda line: (float(line.split()[0]), line), reverse=True)
        print("slowest steps of this build (ninja log, seconds):")
        for line in lines[:12]:
            print(line)


def copy_binaries(build, bundle):
    """The built *_cuda programs, stripped, into BUNDLE/{tests,benchmarks,examples}; the libraries
    ldd resolves outside the allowed set (Google Benchmark: Debian ships it only as a shared library)
    into BUNDLE/lib under their soname; libgomp too, so that a machine without GCC's OpenMP runtime
    still runs the bundle."""
    print(f"== prepare: bundle {bundle}", flush=True)
    shutil.rmtree(bundle, ignore_errors=True)
    for sub in ("tests", "benchmarks", "examples", "lib"):
        os.makedirs(os.path.join(bundle, sub))
    for sub in ("tests", "benchmarks", "examples"):
        for binary in sorted(glob.glob(os.path.join(build, sub, "*_cuda"))):
            if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
                continue
            copy = os.path.join(bundle, sub, os.path.basename(binary))
            shutil.copy(binary, copy)
            check_call(["strip", "--strip-all", copy], f"stripping {copy}")
    resolved = set()
    for binary in bundle_binaries(bundle):
        resolved.update(line for line in ldd(binary)[0].splitlines() if " => /" in line)
    for line in sorted(resolved):
        fields = line.split()
        name, path = fields[0], fields[2]
        if not os.path.isfile(path):
            continue
        if name == "libgomp.so.1" or not (SYSTEM_LIB_RE.match(name) or TOOLKIT_LIB_RE.match(name)):
            copy = os.path.join(bundle, "lib", name)
            if not os.path.isfile(copy):
                shutil.copy(path, copy)
    for lib in sorted(glob.glob(os.path.join(bundle, "lib", "*"))):
        if os.path.isfile(lib):
            check_call(["strip", "--strip-unneeded", lib], f"stripping {lib}")


def prepare_python_extras(bundle, build):
    """What the Python package's check on the GPU machine needs and its image lacks: Eigen's headers
    (the rlkernels target's dependency; packed in their installed layout, which Eigen3Config.cmake
    finds relative to itself) and wheels of the pure-Python packages the tests import (Gymnasium and
    its Farama-Notifications). run builds the module there, for that machine's Python (3.12 there, so
    a module built here could not load). Missing pieces are warnings: the Python stages then skip."""
    eigen_dir = ""
    try:
        with open(os.path.join(build, "CMakeCache.txt"), errors="replace") as f:
            eigen_dir = next((line[len("Eigen3_DIR:PATH="):] for line in f.read().splitlines()
                              if line.startswith("Eigen3_DIR:PATH=")), "")
    except OSError:
        pass
    if eigen_dir and os.path.isfile(os.path.join(eigen_dir, "Eigen3Config.cmake")):
        prefix = os.path.normpath(os.path.join(eigen_dir, "..", "..", ".."))
        if os.path.isdir(os.path.join(prefix, "include", "eigen3")):
            relative = eigen_dir[len(prefix) + 1:] if eigen_dir.startswith(prefix + "/") else eigen_dir
            tar_create(os.path.join(bundle, "eigen3.tar.gz"), prefix, relative, "include/eigen3")
        else:
            error(f"warning: no {prefix}/include/eigen3 beside {eigen_dir}: the bundle has no Eigen "
                  "(python stages will skip)")
    else:
        error(f"warning: Eigen3_DIR not found in {build}/CMakeCache.txt: the bundle has no Eigen "
              "(python stages will skip)")
    gym_version = output_of([python3(), "-c", "import gymnasium; print(gymnasium.__version__)"]).strip() or "1.4.0"
    wheels = os.path.join(bundle, "wheels")
    os.makedirs(wheels, exist_ok=True)
    wheels_log = os.path.join(build, "wheels.log")
    with open(wheels_log, "w") as f:
        try:
            rc = subprocess.call([python3(), "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                                  "--only-binary=:all:", "-d", wheels, f"gymnasium=={gym_version}",
                                  "farama-notifications"], stdout=f, stderr=subprocess.STDOUT, timeout=180)
        except subprocess.TimeoutExpired:
            rc = 124
    if rc != 0:
        with open(wheels_log, errors="replace") as f:
            last = (f.read().splitlines() or [""])[-1]
        error(f"warning: pip download of gymnasium=={gym_version} failed (python stages will skip): {last}")
        shutil.rmtree(wheels, ignore_errors=True)
    extras = [p for p in [os.path.join(bundle, "eigen3.tar.gz")] + sorted(glob.glob(os.path.join(wheels, "*.whl")))
              if os.path.exists(p)]
    print("== prepare: for the Python stages: " + " ".join(os.path.basename(p) for p in extras), flush=True)


def write_manifest(bundle, nvcc, arch, compile_only):
    """manifest.json: what was built, from which commit, with which compiler."""
    commit = output_of(["git", "-C", REPO, "rev-parse", "HEAD"]).strip() or "unknown"
    dirty = bool(output_of(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"]).strip())
    cxx = (output_of(shlex.split(getenv("CXX", "c++")) + ["--version"]).splitlines() or [""])[0]
    binaries = {sub: sorted(f for f in os.listdir(os.path.join(bundle, sub)) if f.endswith("_cuda"))
                for sub in ("tests", "benchmarks", "examples")}
    manifest = {
        "what": "rlkernels device-check bundle (scripts/device_check.sh prepare; run it with scripts/device_check.sh run DIR)",
        "git_commit": commit, "git_dirty": dirty,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nvcc": " ".join(output_of([nvcc, "--version"]).splitlines()[-2:]).strip(),
        "cmake": (output_of(["cmake", "--version"]).splitlines() or [""])[0],
        "host_compiler": cxx, "cuda_architectures": arch,
        "compile_only": compile_only,
        "binaries": binaries, "libraries": sorted(os.listdir(os.path.join(bundle, "lib"))),
    }
    with open(os.path.join(bundle, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"manifest: commit {commit[:12]}{' (with uncommitted changes)' if dirty else ''}, "
          f"{sum(len(v) for v in binaries.values())} binaries ({', '.join(f'{len(v)} {k}' for k, v in binaries.items())})")


def check_libraries_and_size(bundle):
    """ldd of the bundle (one benchmark's in full), the binaries packed into one archive (stripped ELF
    files with SASS and PTX compress about 3:1, which keeps the bundle inside the device tool's
    carry), and the size limit. Returns prepare's exit status."""
    status = 0
    print("== prepare: ldd of the bundle")
    benchmark = next((b for b in bundle_binaries(bundle) if "/benchmarks/" in b), None)
    if benchmark is None:
        raise Failure("error: the bundle has no benchmark binary")
    print(f"-- ldd {benchmark}")
    print("\n".join("   " + line for line in ldd(benchmark)[0].splitlines()), flush=True)
    if not check_bundle_libraries(bundle):
        error("error: a bundled binary needs a library outside the bundle, the CUDA toolkit and the C/C++ runtime")
        status = 1
    folders = [os.path.join(bundle, sub) for sub in ("tests", "benchmarks", "examples", "lib")]
    if getenv("BUNDLE_PACK", "1") == "1":
        unpacked_bytes = du_bytes(*folders)
        archive = os.path.join(bundle, "binaries.tar.gz")
        try:
            tar_create(archive, bundle, "tests", "benchmarks", "examples", "lib")
        except Failure:
            raise Failure(f"error: packing the binaries into {archive} failed")
        for folder in folders:
            shutil.rmtree(folder)
        print(f"== prepare: binaries packed: {unpacked_bytes / MIB:.1f} MiB in {du_bytes(archive) / MIB:.1f} MiB "
              "(binaries.tar.gz; run unpacks it)")
    size = du_bytes(bundle)
    print(f"== prepare: bundle size {size / MIB:.1f} MiB ({size} bytes; limit {BUNDLE_LIMIT_MIB} MiB): {bundle}")
    entries = [(du_bytes(p), p) for p in sorted(glob.glob(os.path.join(bundle, "*")))]
    for n, p in sorted(entries, key=lambda e: (e[0], f"{e[0]}\t{e[1]}"), reverse=True):
        print(f"   {n / MIB:7.1f} MiB  {p}")
    sys.stdout.flush()
    if size > BUNDLE_LIMIT_MIB * MIB:
        if getenv("BUNDLE_OVERSIZE_OK", "0") == "1":
            # CI's compile check (BUNDLE_OVERSIZE_OK=1 in .ci/run): every CUDA target compiled and
            # linked; a bundle too big to carry in one piece is reported, not a failure of the check.
            error(f"warning: the bundle is over {BUNDLE_LIMIT_MIB} MiB: too big for the device tool's 64 MiB carry "
                  "(shrink it, e.g. CUDA_ARCH=90-real)")
        else:
            error(f"error: the bundle is over {BUNDLE_LIMIT_MIB} MiB")
            status = 1
    return status


def prepare_main(args):
    """prepare [DIR]: builds the CUDA targets and packs the bundle. Returns the exit status."""
    started = time.monotonic()
    bundle = absolute(args[0] if args and args[0] else os.path.join(REPO, "build", "device-bundle"))
    # PREPARE_COMPILE_ONLY=1 (CI): the same targets, checked to compile and link, in a quarter of the
    # time: PTX only (no ptxas) from NVVM at -O0 (cicc: about 13 s instead of 160 s for random_policy.cu,
    # and no ptxas at all, which takes 120 s more at -O3). The register and stack figures come from the
    # gpu_resources test, at full optimisation. Such a bundle is marked compile_only in its manifest,
    # and `run` refuses it: its kernels would be JIT-compiled unoptimised on the GPU.
    compile_only = getenv("PREPARE_COMPILE_ONLY", "0") == "1"
    arch = getenv("CUDA_ARCH", "90-virtual" if compile_only else "90")
    default_build = os.path.join(REPO, "build", "device-bundle-check-build" if compile_only else "device-bundle-build")
    build = absolute(getenv("BUNDLE_BUILD_DIR", default_build))
    jobs = getenv("PREPARE_JOBS", str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                      else os.cpu_count() or 2))
    if os.path.exists(bundle) and not os.path.isfile(os.path.join(bundle, "manifest.json")) and \
            (not os.path.isdir(bundle) or os.listdir(bundle)):
        error(f"error: {bundle} exists and is not a bundle (no manifest.json): not replacing it")
        return 2
    nvcc = find_nvcc()
    if not nvcc:
        error("error: prepare needs nvcc (the CUDA Toolkit; not on PATH nor in /usr/local/cuda/bin)")
        return 1
    try:
        configure_build(build, nvcc, arch, compile_only)
        build_targets(build, jobs)
        copy_binaries(build, bundle)
        # The golden data, compressed (5.4 MB of text in 1.5 MB): run unpacks it.
        tar_create(os.path.join(bundle, "reference.tar.gz"), os.path.join(REPO, "tests"), "reference")
        for script in SCRIPTS:
            shutil.copy(os.path.join(SCRIPT_DIR, script), os.path.join(bundle, script))
        prepare_python_extras(bundle, build)
        write_manifest(bundle, nvcc, arch, compile_only)
        status = check_libraries_and_size(bundle)
    except Failure as e:
        error(str(e))
        return e.status
    except OSError as e:
        error(f"error: {e}")
        return 1
    print(f"== prepare finished in {int(time.monotonic() - started)} s")
    return status


# ---- run: stages ---------------------------------------------------------------------------------

def command(*argv, **env):
    """One command of a stage: its arguments and the environment variables it adds."""
    return ([str(a) for a in argv], {k: str(v) for k, v in env.items()})


def shown(cmd):
    argv, env = cmd
    return " ".join([f"{k}={shlex.quote(v)}" for k, v in env.items()] + [shlex.quote(a) for a in argv])


def run_limited(commands, log, limit):
    """Runs the commands one after the other (the first failure ends them), their output appended to
    the open file LOG, all within LIMIT seconds: at the limit the command's process group gets
    SIGTERM, and SIGKILL 10 s later (timeout -k 10). Returns (exit status, timed out), the exit status
    as a shell reports it: 128 + the signal for a command a signal ended, 124 (137 after SIGKILL) at
    the limit, 127 or 126 for a command that cannot start."""
    end = time.monotonic() + limit
    for argv, env in commands:
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 env=dict(os.environ, **env), start_new_session=True)
        except OSError as e:
            log.write(f"device_check: cannot run {argv[0]}: {e.strerror}\n")
            log.flush()
            return (127 if isinstance(e, FileNotFoundError) else 126), False
        try:
            rc = p.wait(timeout=max(end - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
                try:
                    os.killpg(p.pid, sig)
                except OSError:
                    pass
                try:
                    p.wait(timeout=grace)
                    return (124 if sig == signal.SIGTERM else 137), True
                except subprocess.TimeoutExpired:
                    continue
        if rc != 0:
            return (128 - rc if rc < 0 else rc), False
    return 0, False


class Run:
    """One `run`: the bundle, the results folder, the time budget and the stage records
    (OUT/logs/stages.tsv: name, status, seconds, exit status, kind)."""

    def __init__(self, bundle, out, budget):
        self.bundle = bundle  # the folder with tests/, benchmarks/, ... (the unpacked one when packed)
        self.manifest_dir = bundle  # the bundle as given (its manifest.json)
        self.out = out
        self.logs = os.path.join(out, "logs")
        self.records = os.path.join(self.logs, "stages.tsv")
        self.budget = budget
        self.started = time.monotonic()
        self.deadline = self.started + budget
        self.refdir = os.path.join(bundle, "reference")
        self.lock = threading.Lock()
        self.python_build = None  # the thread that builds the Python module
        self.py_root = None
        self.temporary = []  # folders to remove at the end

    def log_path(self, name):
        return os.path.join(self.logs, name + ".log")

    def say(self, line):
        with self.lock:
            print(line, flush=True)

    def record(self, name, status, seconds, rc, kind):
        with self.lock:
            with open(self.records, "a") as f:
                f.write(f"{name}\t{status}\t{seconds}\t{rc}\t{kind}\n")

    def stage(self, name, kind, limit, *commands):
        """Runs a stage's commands under its time limit (never past the run's deadline), their output
        in logs/NAME.log; records name, status (pass, fail, timeout or skipped), seconds, exit status
        and KIND and prints one line. Never fails itself."""
        left = int(self.deadline - time.monotonic())
        if left < 10:
            with open(self.log_path(name), "w") as f:
                f.write(f"skipped: the run's time budget ({self.budget} s) is spent\n")
            self.record(name, "skipped", 0, "", kind)
            self.say(f"  {name:<44} skipped (time budget spent)")
            return
        limit = min(int(limit), left)
        with open(self.log_path(name), "w") as log:
            log.write("".join(f"$ {shown(c)}\n" for c in commands) + f"(time limit {limit} s)\n")
        with open(self.log_path(name), "a") as log:
            t0 = time.monotonic()
            rc, timed_out = run_limited(commands, log, limit)
            seconds = f"{time.monotonic() - t0:.1f}"
        # 124 and 137 are what `timeout` returns at the limit (and 137 a SIGKILL from elsewhere too)
        status = "pass" if rc == 0 else "timeout" if timed_out or rc in (124, 137) else "fail"
        self.record(name, status, seconds, rc, kind)
        self.say(f"  {name:<44} {status:<8} {seconds:>7} s")

    def skip(self, name, kind, reason):
        """Records a stage that does not apply here."""
        with open(self.log_path(name), "w") as f:
            f.write(f"skipped: {reason}\n")
        self.record(name, "skipped", 0, "", kind)
        self.say(f"  {name:<44} skipped ({reason})")


GPU_PROBE = r"""
import ctypes
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print(f"the CUDA driver library libcuda.so.1 cannot be loaded ({e})")
    raise SystemExit
count = ctypes.c_int(0)
rc = cuda.cuInit(0)
if rc != 0:
    print(f"cuInit failed (CUresult {rc})")
elif cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
    print("the CUDA driver counts no device")
"""


def gpu_problem(logs):
    """Why this machine cannot run the bundle's CUDA code ("" when it can): nvidia-smi must list a
    GPU and the driver (libcuda.so.1) must initialise and count at least one device (asked in a child
    process, so that this one never holds the driver)."""
    smi = shutil.which("nvidia-smi")
    if not smi and os.access("/usr/local/nvidia/bin/nvidia-smi", os.X_OK):
        smi = "/usr/local/nvidia/bin/nvidia-smi"
    if not smi:
        return "nvidia-smi not found"
    listing = os.path.join(logs, "nvidia-smi.txt")
    with open(listing, "w") as f:
        try:
            rc = subprocess.call([smi, "-L"], stdout=f, stderr=subprocess.STDOUT)
        except OSError as e:
            f.write(f"{e}\n")
            rc = 126
    with open(listing, errors="replace") as f:
        lines = f.read().splitlines()
    if rc != 0 or not any(line.startswith("GPU ") for line in lines):
        return f"nvidia-smi -L lists no GPU ({lines[0] if lines else ''})"
    with open(listing, "a") as f:
        subprocess.call([smi, "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem",
                         "--format=csv"], stdout=f, stderr=subprocess.STDOUT)
    r = subprocess.run([sys.executable, "-c", GPU_PROBE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, errors="replace")
    return r.stdout.rstrip("\n")


def find_toolkit_libraries(run):
    """Makes the CUDA toolkit's libraries (cudart, cuBLAS, NCCL) findable when a binary's run path
    misses them: the first folder among the usual places that holds each missing library joins
    LD_LIBRARY_PATH."""
    missing = sorted({line.split()[0] for b in bundle_binaries(run.bundle) for line in ldd(b)[0].splitlines()
                      if "=> not found" in line})
    if not missing:
        return
    places = []
    for pattern in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda-*/lib64",
                    "/usr/local/cuda-*/targets/x86_64-linux/lib", "/usr/local/cuda/lib", "/usr/local/cuda-*/lib",
                    "/usr/lib/x86_64-linux-gnu", "/usr/local/lib"):
        places += sorted(glob.glob(pattern)) if "*" in pattern else [pattern]
    # pip's nvidia-cuda-runtime, nvidia-cublas and nvidia-nccl (e.g. next to PyTorch)
    for module in ("cuda_runtime", "cublas", "cu13", "nccl"):
        pip_dir = output_of([python3(), "-c", f"import os, nvidia.{module} as m; "
                             "print(os.path.join(list(m.__path__)[0], 'lib'))"]).strip()
        if pip_dir:
            places.append(pip_dir)
    for name in missing:
        for d in places:
            if os.path.exists(os.path.join(d, name)):
                print(f"found {name} in {d}: added to LD_LIBRARY_PATH")
                old = os.environ.get("LD_LIBRARY_PATH", "")
                os.environ["LD_LIBRARY_PATH"] = d + (":" + old if old else "")
                break
    sys.stdout.flush()


def check_libraries(run):
    """The libraries stage: the library check of prepare, on this machine."""
    t0 = time.monotonic()
    with open(os.path.join(run.logs, "libraries.log"), "w") as f:
        ok = check_bundle_libraries(run.bundle, os.path.join(run.logs, "ldd.txt"), f, f)
    with open(os.path.join(run.logs, "libraries.log"), errors="replace") as f:
        print("".join("  " + line for line in f), end="", flush=True)
    run.record("libraries", "pass" if ok else "fail", int(time.monotonic() - t0), "", "libraries")


def run_tests(run):
    """The CUDA test binaries, every one with Catch2's durations, TEST_JOBS at a time (one GPU, many
    cores): memory_test alone first, as its cases are about how much memory there is; then the
    trainers' tests, the longest, so that the others fill the time beside them; then the rest, largest
    first. (The Python module's build, running in the background, is not one of the test jobs.)"""
    jobs = int(getenv("TEST_JOBS", "4"))
    limit = int(getenv("TEST_TIMEOUT_S", "180"))

    def test_stage(binary):
        name = os.path.basename(binary)
        # nccl_test_cuda needs NCCL from this machine (not bundled): run only where ldd resolves it.
        if name == "nccl_test_cuda" and not re.search(r"^\s*libnccl\.so\.2 => /", ldd(binary)[0], re.M):
            run.skip(f"test.{name}", "test", NCCL_SKIP_REASON)
            return
        run.stage(f"test.{name}", "test", limit,
                  command(binary, "--durations", "yes", "--use-colour", "no", RLK_REFERENCE_DIR=run.refdir))

    tests = sorted_by_size(glob.glob(os.path.join(run.bundle, "tests", "*_cuda")))
    trainers = re.compile(r"/(ppo|dqn|actor_critic)_test_cuda$")
    memory = os.path.join(run.bundle, "tests", "memory_test_cuda")
    if os.access(memory, os.X_OK):
        test_stage(memory)
    rest = [t for t in tests if trainers.search(t)] + \
        [t for t in tests if not re.search(r"/(ppo|dqn|actor_critic|memory)_test_cuda$", t)]
    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        list(pool.map(test_stage, rest))


def run_env_benchmarks(run):
    """The env benchmarks at N = 2^16 .. 2^24 (MinAtar and the grid envs to 2^22: at 2^24 their
    observations alone would take 50-130 GB), vec_env and, for CartPole, the limit kernel and a
    device-to-device copy of the same bytes; short timings (--rlk_min_time)."""
    b, logs = os.path.join(run.bundle, "benchmarks"), run.logs
    sizes, t = "65536,1048576,4194304,16777216", getenv("BENCH_MIN_TIME", "0.1")

    def csv_out(name):
        return [f"--benchmark_out={logs}/{name}.csv", "--benchmark_out_format=csv"]

    run.stage("bench.cartpole", "bench", 90, command(
        f"{b}/cartpole_bench_cuda", f"--rlk_batch_sizes={sizes}", f"--rlk_min_time={t}",
        "--benchmark_filter=^BM_(vec_env_step|vec_env_step_unchecked|vec_env_step_to_host|limit_loop|device_copy)/",
        *csv_out("bench.cartpole")))
    run.stage("bench.classic_control", "bench", 110, command(
        f"{b}/classic_control_bench_cuda", f"--rlk_batch_sizes={sizes}", f"--rlk_min_time={t}",
        "--benchmark_filter=^BM_vec_env_step", *csv_out("bench.classic_control")))
    # One run per grid env: a failure (memory, a fault) loses that env's rows only.
    for env in ("MinAtar-Breakout-v0", "MinAtar-Asterix-v0", "MinAtar-Freeway-v0", "MinAtar-Seaquest-v0",
                "MinAtar-SpaceInvaders-v0", "Snake-v1", "Maze-v0"):
        run.stage(f"bench.grid.{env}", "bench", 45, command(
            f"{b}/grid_bench_cuda", "--rlk_batch_sizes=65536,1048576,4194304", f"--rlk_min_time={t}",
            f"--benchmark_filter=^BM_vec_env_step(_unchecked)?/{env}/", *csv_out(f"bench.grid.{env}")))
    # The MuJoCo locomotion envs (the physics engine, one env per thread), the unchecked step in float
    # (<id>) and double (<id>:double); one run per env, smallest N first, so that a slow or
    # out-of-memory size loses only itself and the bigger ones (an error row, or the stage's limit).
    for env in ("Hopper-v5", "Walker2d-v5", "HalfCheetah-v5", "Ant-v5", "Humanoid-v5"):
        if not os.access(f"{b}/mujoco_bench_cuda", os.X_OK):
            run.skip(f"bench.mujoco.{env}", "bench", "mujoco_bench_cuda is not in this bundle")
            continue
        # the 2D robots at 2^16 .. 2^22, the 3D ones at 2^14 .. 2^20 (a Humanoid env step is 20
        # forward passes with PGS)
        msizes = "16384,65536,262144,1048576" if env in ("Ant-v5", "Humanoid-v5") else "65536,262144,1048576,4194304"
        run.stage(f"bench.mujoco.{env}", "bench", 50, command(
            f"{b}/mujoco_bench_cuda", f"--rlk_batch_sizes={msizes}", f"--rlk_min_time={t}",
            f"--benchmark_filter=^BM_vec_env_step_unchecked/{env}(:double)?/", *csv_out(f"bench.mujoco.{env}")))


def run_kernel_benchmarks(run):
    """The other CUDA benchmarks (GAE, replay sampling, losses, MLP), their CUDA rows only."""
    for name in ("gae", "replay", "losses", "mlp"):
        run.stage(f"bench.{name}", "bench", 60, command(
            os.path.join(run.bundle, "benchmarks", f"{name}_bench_cuda"), "--benchmark_filter=/cuda/",
            f"--benchmark_out={run.logs}/bench.{name}.csv", "--benchmark_out_format=csv"))


def run_trainers(run):
    """The trainers on CUDA: PPO on CartPole-v1 to a mean return of 475 (3 seeds; the time of
    benchmarks/algorithms/ppo_bench.cpp on the host), PPO on HalfCheetah-v5 and Ant-v5 for 1M env
    steps, the SAC, TD3 and DQN presets (seed 1)."""
    e, train = os.path.join(run.bundle, "examples"), os.path.join(run.logs, "train")
    os.makedirs(train, exist_ok=True)
    common = ("--no-plot", "--quiet", "--out", train)
    for seed in (1, 2, 3):
        run.stage(f"train.ppo_cartpole.seed{seed}", "train_ppo", 100, command(
            f"{e}/train_ppo_cuda", "--backend", "cuda", "--env", "CartPole-v1", "--seed", seed, "--stop-at", 475,
            *common))
    # PPO on HalfCheetah-v5 and Ant-v5 (their presets) for a short budget of 1M env steps: env steps/s
    # and the deterministic evaluation (20 episodes); the learning target (docs/training.md) needs 5
    # seeds on a host.
    for env, name in (("HalfCheetah-v5", "ppo_halfcheetah_1m"), ("Ant-v5", "ppo_ant_1m")):
        run.stage(f"train.{name}", "train", 150, command(
            f"{e}/train_ppo_cuda", "--backend", "cuda", "--env", env, "--total-steps", 1000000,
            "--eval-episodes", 20, "--seed", 1, *common))
    run.stage("train.sac_pendulum_10k", "train", 120, command(
        f"{e}/train_sac_cuda", "--backend", "cuda", "--total-steps", 10000, "--seed", 1, *common))
    run.stage("train.td3_pendulum", "train", 120, command(
        f"{e}/train_td3_cuda", "--backend", "cuda", "--seed", 1, *common))
    # TD3 on the quadrotor (its preset on docs/quadrotor.md's training reward) for 50k env steps: that
    # it trains on CUDA, and how fast; whether it flies is measured on a host (docs/quadrotor.md)
    run.stage("train.td3_l2f_50k", "train", 90, command(
        f"{e}/train_td3_cuda", "--backend", "cuda", "--env", "L2F-Crazyflie-v0",
        "--env-param", "reward_angular_acceleration=0", "--env-param", "reward_linear_velocity=1",
        "--total-steps", 50000, "--seed", 1, *common))
    run.stage("train.dqn_cartpole", "train", 120, command(
        f"{e}/train_dqn_cuda", "--backend", "cuda", "--seed", 1, *common))


def run_sanitizers(run):
    """compute-sanitizer memcheck on the three smallest test binaries and racecheck on the two
    smallest (not nccl_test_cuda: it starts a second process and needs NCCL, which may be missing)."""
    cs = shutil.which("compute-sanitizer") or next(
        (p for p in ["/usr/local/cuda/bin/compute-sanitizer"] + sorted(glob.glob("/usr/local/cuda-*/bin/compute-sanitizer"))
         if os.access(p, os.X_OK)), None)
    if not cs:
        run.skip("sanitizer", "sanitizer", "compute-sanitizer not found")
        return
    smallest = [t for t in sorted_by_size(glob.glob(os.path.join(run.bundle, "tests", "*_cuda")), reverse=True)
                if not t.endswith("/nccl_test_cuda")][:3]
    for tool, binaries in (("memcheck", smallest), ("racecheck", smallest[:2])):
        for binary in binaries:
            run.stage(f"{tool}.{os.path.basename(binary)}", "sanitizer", 75, command(
                cs, "--tool", tool, "--error-exitcode", 99, "--print-limit", 20, binary, "--use-colour", "no",
                RLK_REFERENCE_DIR=run.refdir))


def python_build_start(run):
    """The Python package with its CUDA backend, on that machine's Python: configured and built from
    the source tree this program sits in (scripts/..; a bundle's own copy has none, and skips), with
    the bundle's Eigen, in the background and niced while the CUDA tests run (PYTHON_BUILD_JOBS)."""
    nvcc = find_nvcc()
    why = ""
    if getenv("DEVICE_CHECK_PYTHON", "1") != "1":
        why = "DEVICE_CHECK_PYTHON=0"
    elif not os.path.isfile(os.path.join(REPO, "python", "CMakeLists.txt")):
        why = f"no source tree beside this script ({REPO}/python)"
    elif not os.path.isfile(os.path.join(run.bundle, "eigen3.tar.gz")):
        why = "the bundle has no eigen3.tar.gz"
    elif not shutil.which("cmake"):
        why = "no cmake"
    elif not nvcc:
        why = "no nvcc"
    elif subprocess.call([python3(), "-c", "import nanobind"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL) != 0:
        why = "python3 has no nanobind"
    if why:
        run.skip("python.build", "python", why)
        return
    run.py_root = tempfile.mkdtemp(prefix="rlk-python.")
    run.temporary.append(run.py_root)
    eigen, build = os.path.join(run.py_root, "eigen"), os.path.join(run.py_root, "build")
    os.makedirs(eigen)
    os.makedirs(os.path.join(run.py_root, "site"))
    subprocess.call(["tar", "-xzf", os.path.join(run.bundle, "eigen3.tar.gz"), "-C", eigen])
    configs = sorted(os.path.join(d, "Eigen3Config.cmake") for d, _, files in os.walk(eigen)
                     if "Eigen3Config.cmake" in files)
    eigen_cfg = os.path.dirname(configs[0]) if configs else "."
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    # DEVICE_CHECK_PYTHON_CUDA=0: the module without its CUDA backend (to try these stages without a GPU)
    py_cuda = "ON" if getenv("DEVICE_CHECK_PYTHON_CUDA", "1") == "1" else "OFF"
    nice = ["nice", "-n", "19"] if shutil.which("nice") else []
    steps = (
        command(*nice, "cmake", "-S", REPO, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
                "-DRLK_BUILD_TESTS=OFF", "-DRLK_BUILD_EXAMPLES=OFF", "-DRLK_BUILD_BENCHMARKS=OFF",
                "-DRLK_HEADER_CHECK=OFF", "-DRLK_NATIVE_ARCH=OFF", "-DRLK_ENABLE_CUDA=ON", f"-DRLK_PYTHON_CUDA={py_cuda}",
                f"-DCMAKE_CUDA_COMPILER={nvcc}", "-DCMAKE_CUDA_ARCHITECTURES=90", f"-DEigen3_DIR={eigen_cfg}",
                f"-DPython_EXECUTABLE={python3()}"),
        command(*nice, "cmake", "--build", build, "--target", "_rlkernels", "--parallel",
                getenv("PYTHON_BUILD_JOBS", "8")),
        command(*nice, python3(), "-c", "import rlkernels; print('rlkernels imports; has_cuda =', rlkernels.has_cuda)",
                PYTHONPATH=os.path.join(build, "python")))
    run.python_build = threading.Thread(target=run.stage, args=(
        "python.build", "python", int(getenv("PYTHON_BUILD_TIMEOUT_S", "330"))) + steps, daemon=True)
    run.python_build.start()


def run_python(run):
    """After the env benchmarks: the package's pytest suite (the GPU tests among it) and the
    env-steps/s of a Python loop on CUDA (benchmarks/python_throughput.py), once the module has built."""
    if run.python_build is None:
        return
    run.python_build.join()
    with open(run.records, errors="replace") as f:
        built = any(line.startswith("python.build\tpass") for line in f)
    if not built:
        run.skip("python.tests", "python", "the module did not build (logs/python.build.log)")
        run.skip("python.throughput", "python", "the module did not build (logs/python.build.log)")
        return
    wheels = sorted(glob.glob(os.path.join(run.bundle, "wheels", "*.whl")))
    site = os.path.join(run.py_root, "site")
    if wheels:
        with open(os.path.join(run.logs, "python.wheels.log"), "w") as f:
            rc = subprocess.call([python3(), "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                                  "--no-cache-dir", "--target", site, *wheels], stdout=f, stderr=subprocess.STDOUT)
        if rc != 0:
            run.say("  (installing the bundle's wheels failed: logs/python.wheels.log)")
    path = os.path.join(run.py_root, "build", "python") + ":" + site
    run.stage("python.tests", "python", 180, command(
        python3(), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", os.path.join(REPO, "python", "tests"),
        PYTHONPATH=path, OMP_NUM_THREADS=4))
    run.stage("python.throughput", "python", 90, command(
        python3(), os.path.join(REPO, "benchmarks", "python_throughput.py"), "--backend", "cuda",
        "--envs", "CartPole-v1,MinAtar/Breakout-v1,Hopper-v5", "--sizes", "65536,1048576", "--min-time", "0.2",
        PYTHONPATH=path))


# ---- run: the summary ----------------------------------------------------------------------------

def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def catch2_counts(text):
    """Catch2 v2's closing lines: 'All tests passed (A assertions in N test cases)' or
    'test cases: N | P passed | F failed' (with an assertions line alike)."""
    m = re.search(r"All tests passed \((\d+) assertions? in (\d+) test cases?\)", text)
    if m:
        n = int(m.group(2))
        return {"test_cases": n, "passed": n, "failed": 0, "assertions": int(m.group(1))}
    m = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed", text)
    if m:
        r = {"test_cases": int(m.group(1)), "passed": int(m.group(2)), "failed": int(m.group(3))}
        a = re.search(r"assertions:\s*(\d+)", text)
        if a:
            r["assertions"] = int(a.group(1))
        return r
    m = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) failed", text)  # all failed
    if m:
        return {"test_cases": int(m.group(1)), "passed": 0, "failed": int(m.group(2))}
    return {}


def benchmark_rows(path):
    """Google Benchmark CSV rows: {(family, N): {items_per_second, bytes_per_second, error}}."""
    rows = {}
    for row in csv_rows(read(path)) or []:
        name = BENCH_NAME_NOISE.sub("", row["name"])
        m = re.fullmatch(r"(.+)/(\d+)", name)
        if not m:
            continue
        r = {}
        if row.get("error_occurred") == "true":
            r["error"] = row.get("error_message", "error")
        for key in ("items_per_second", "bytes_per_second"):
            if row.get(key):
                r[key] = float(row[key])
        rows[(m.group(1), int(m.group(2)))] = r
    return rows


def env_of(family):
    """'BM_row/<env id>/cuda' -> env id; CartPole's own rows ('BM_row/cuda') -> CartPole-v1."""
    parts = family.split("/")
    return parts[1] if len(parts) == 3 else "CartPole-v1"


def read_stages(logs):
    """The stage records of logs/stages.tsv, as summary.json lists them."""
    stages = []
    for line in read(os.path.join(logs, "stages.tsv")).splitlines():
        f = line.split("\t")
        if len(f) < 5:
            continue
        name, status, secs, rc, kind = f[:5]
        s = {"name": name, "status": status, "seconds": float(secs or 0), "kind": kind}
        if rc != "":
            s["exit_status"] = int(rc)
        s["log"] = f"logs/{name}.log"
        stages.append(s)
    return stages


def stage_numbers(stages, logs):
    """Adds each stage's key numbers from its log (and CSV) to it; returns the env-steps/s
    (row -> env -> N -> items/s), the (row, env, N) that reported an error and CartPole's bytes/s
    (row -> N -> bytes/s)."""
    env_rates, env_errors, bandwidth = {}, set(), {}
    for s in stages:
        text = read(os.path.join(logs, s["name"] + ".log"))
        kind = s["kind"]
        if kind == "test":
            c = catch2_counts(text)
            s.update(c)
            if not c and s["status"] == "fail":
                s["note"] = "no Catch2 summary (crashed?)"
        elif kind == "sanitizer":
            m = re.search(r"ERROR SUMMARY: (\d+) errors?", text)
            if m:
                s["sanitizer_errors"] = int(m.group(1))
            m = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
            if m:
                s["race_hazards"], s["sanitizer_errors"], s["race_warnings"] = map(int, m.groups())
            c = catch2_counts(text)
            if c:
                s["test_cases"], s["failed"] = c["test_cases"], c["failed"]
        elif kind == "bench":
            rows = benchmark_rows(os.path.join(logs, s["name"] + ".csv"))
            s["csv"] = f"logs/{s['name']}.csv"
            s["rows"] = len(rows)
            errors = {f"{fam}/{n}": r["error"] for (fam, n), r in rows.items() if "error" in r}
            if errors:
                s["errors"] = errors
            for (fam, n), r in rows.items():
                if "error" in r:
                    env_errors.add((fam.split("/")[0], env_of(fam), n))
                if "items_per_second" in r and fam.endswith("/cuda"):
                    row = fam.split("/")[0]
                    env_rates.setdefault(row, {}).setdefault(env_of(fam), {})[n] = r["items_per_second"]
                if s["name"] == "bench.cartpole" and "bytes_per_second" in r:
                    bandwidth.setdefault(fam.split("/")[0], {})[n] = r["bytes_per_second"]
        elif kind in ("train", "train_ppo"):
            m = re.search(r"trained (\d+) env steps and (\d+) gradient steps in ([\d.]+) s "
                          r"\(([\d.]+) env steps/s, ([\d.]+) updates/s\)", text)
            if m:
                s.update(env_steps=int(m.group(1)), gradient_steps=int(m.group(2)), train_seconds=float(m.group(3)),
                         env_steps_per_s=float(m.group(4)), updates_per_s=float(m.group(5)))
            m = re.search(r"reached a mean return of ([\d.]+) over the last 100 episodes after ([\d.]+) s "
                          r"and (\d+) env steps", text)
            if m:
                s.update(reached=True, time_to_target_s=float(m.group(2)), steps_to_target=int(m.group(3)))
            elif kind == "train_ppo":
                s["reached"] = False
                if s["status"] == "pass":
                    s["status"] = "fail"
                    s["note"] = "did not reach a mean return of 475"
            m = re.search(r"evaluation \(deterministic policy, (\d+) episodes\): mean return ([-\d.]+) \+- ([\d.]+)", text)
            if m:
                s.update(eval_episodes=int(m.group(1)), eval_mean_return=float(m.group(2)), eval_std=float(m.group(3)))
        elif kind == "python":
            if s["name"] == "python.tests":
                last = text.splitlines()[-1] if text.splitlines() else ""
                counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", last)}
                s.update({f"pytest_{k}": v for k, v in counts.items()})
                s["skip_reasons"] = re.findall(r"^SKIPPED \[\d+\] (.+)$", text, re.M)
            elif s["name"] == "python.throughput":
                rows = []
                for line in text.splitlines():
                    if line.startswith("{"):
                        try:
                            rows.append(json.loads(line))
                        except ValueError:
                            pass
                s["rows"] = rows
        elif kind == "libraries":
            missing = sorted(set(re.findall(r"^\s*(\S+) => not found", read(os.path.join(logs, "ldd.txt")), re.M)))
            optional = [m for m in missing if OPTIONAL_LIB_RE.fullmatch(m)]  # NCCL: its test is skipped
            missing = [m for m in missing if m not in optional]
            if missing:
                s["missing"] = missing
            if optional:
                s["optional_missing"] = optional
    return env_rates, env_errors, bandwidth


def stage_detail(s, logs):
    """The 'numbers' column of a stage's line in the table."""
    k = s["kind"]
    if s["status"] == "skipped":
        text = read(os.path.join(logs, s["name"] + ".log")).strip()
        return text[len("skipped: "):] if text.startswith("skipped: ") else text
    if k == "test" or (k == "sanitizer" and "sanitizer_errors" not in s and "test_cases" in s):
        if "test_cases" in s:
            return f"{s['passed'] if 'passed' in s else s['test_cases'] - s['failed']}/{s['test_cases']} test cases passed" + \
                (f", {s['failed']} FAILED" if s.get("failed") else "") + \
                (f" ({s['assertions']} assertions)" if "assertions" in s else "")
        return s.get("note", "")
    if k == "sanitizer":
        r = f"{s.get('sanitizer_errors', '?')} errors"
        if "race_hazards" in s:
            r += f", {s['race_hazards']} hazards ({s['race_warnings']} warnings)"
        return r
    if k == "bench":
        return f"{s.get('rows', 0)} rows" + (f", {len(s['errors'])} with errors" if s.get("errors") else "")
    if k in ("train", "train_ppo"):
        parts = []
        if s.get("reached"):
            parts.append(f"475 after {s['time_to_target_s']:.2f} s / {s['steps_to_target']} steps")
        elif k == "train_ppo":
            parts.append("475 NOT reached")
        if "env_steps" in s:
            parts.append(f"{s['env_steps']} steps in {s['train_seconds']:.1f} s ({s['env_steps_per_s']:.0f}/s, "
                         f"{s['updates_per_s']:.0f} updates/s)")
        if "eval_mean_return" in s:
            parts.append(f"eval {s['eval_mean_return']:.1f} +- {s['eval_std']:.1f}")
        return "; ".join(parts)
    if k == "python" and s["name"] == "python.tests":
        return ", ".join(f"{s[key]} {key[7:]}" for key in ("pytest_passed", "pytest_failed", "pytest_skipped",
                                                            "pytest_errors", "pytest_error") if key in s)
    if k == "python" and s.get("rows"):
        return "; ".join(f"{r['env']} N={r['num_envs']}: " + (f"{r['env_steps_per_s'] / 1e6:.1f}M/s"
                                                               if "env_steps_per_s" in r else "error") for r in s["rows"])
    if k == "libraries" and (s.get("missing") or s.get("optional_missing")):
        return "; ".join(p for p in ("missing: " + ", ".join(s["missing"]) if s.get("missing") else "",
                                     "optional, not found: " + ", ".join(s["optional_missing"]) + " (its test skipped)"
                                     if s.get("optional_missing") else "") if p)
    return s.get("note", "")


def summary_table(summary, stages, manifest, env_rates, env_errors, bandwidth, fractions, out, logs):
    """summary.txt: the status line, the GPU, the bundle, a line per stage and the measured tables."""
    overall, reason, seconds, budget = summary["status"], summary.get("reason", ""), summary["seconds"], \
        summary["time_budget_s"]
    gpu = summary["gpu"]
    t = [f"== device check: {overall.upper()}" + (f" ({reason})" if reason else "")
         + f"; {seconds:.0f} s of a {budget} s budget"]
    if gpu:
        t.append("GPU: " + "; ".join(gpu[1:] or gpu))
    if manifest.get("git_commit"):
        m = re.search(r"release [\d.]+, V[\d.]+", manifest.get("nvcc") or "")
        t.append(f"bundle: commit {str(manifest.get('git_commit'))[:12]}{' (+ changes)' if manifest.get('git_dirty') else ''}, "
                 f"built {manifest.get('date')}, nvcc " + (m.group(0) if m else "?"))
    t.append("")
    t.append(f"{'stage':<46} {'status':<8} {'s':>6}  numbers")
    for s in stages:
        t.append(f"{s['name']:<46} {s['status']:<8} {s['seconds']:>6.1f}  {stage_detail(s, logs)}")

    tests = [s for s in stages if s["kind"] == "test"]
    if tests:
        n = sum(s.get("test_cases", 0) for s in tests)
        skipped = sum(1 for s in tests if s["status"] == "skipped" and not s.get("budget_spent"))
        bad = sum(1 for s in tests if s["status"] != "pass") - skipped
        t.append(f"CUDA tests: {len(tests) - skipped - bad}/{len(tests) - skipped} binaries passed, "
                 + (f"{skipped} skipped (see the table), " if skipped else "") + f"{n} test cases run")

    if env_rates:
        sizes = sorted({n for e in env_rates.values() for d in e.values() for n in d})
        t.append("")
        t.append("env-steps/s in millions on CUDA (vec_env step_unchecked; 'limit' = CartPole's hand-written kernel)")
        t.append(f"{'env':<28}" + "".join(f"{'N=2^' + str(n.bit_length() - 1):>12}" for n in sizes))

        def line(label, row, env):
            d = env_rates.get(row, {}).get(env, {})
            return f"{label:<28}" + "".join(
                f"{d[n] / 1e6:>12.1f}" if n in d else f"{'error':>12}" if (row, env, n) in env_errors else f"{'-':>12}"
                for n in sizes)

        for env in dict.fromkeys(env for row in env_rates.values() for env in row):
            t.append(line(env, "BM_vec_env_step_unchecked", env))
            if env in env_rates.get("BM_limit_loop", {}):
                t.append(line("  limit kernel", "BM_limit_loop", env))
            if env in env_rates.get("BM_vec_env_step", {}):
                t.append(line("  checked step", "BM_vec_env_step", env))
    copy = bandwidth.get("BM_device_copy", {})
    if copy:
        t.append("")
        sizes = sorted(copy)
        t.append("CartPole step, 98 bytes/env moved: GB/s and fraction of a device-to-device copy of the same bytes")
        t.append(f"{'row':<28}" + "".join(f"{'N=2^' + str(n.bit_length() - 1):>12}" for n in sizes))
        t.append(f"{'device copy GB/s':<28}" + "".join(f"{copy[n] / 1e9:>12.0f}" for n in sizes))
        for row, label in (("BM_vec_env_step_unchecked", "vec_env unchecked"), ("BM_limit_loop", "limit kernel")):
            b, fr = bandwidth.get(row, {}), fractions.get(row, {})
            t.append(f"{label + ' GB/s':<28}" + "".join(f"{b[n] / 1e9:>12.0f}" if n in b else f"{'-':>12}" for n in sizes))
            t.append(f"{label + ' / copy':<28}" + "".join(f"{fr[n]:>12.2f}" if n in fr else f"{'-':>12}" for n in sizes))
    ppo = [s for s in stages if s["kind"] == "train_ppo"]
    times = [s["time_to_target_s"] for s in ppo if s.get("reached")]
    if ppo:
        t.append("")
        t.append("PPO CartPole-v1 on CUDA, time to 475: " + ", ".join(
            f"{s['time_to_target_s']:.2f} s" if s.get("reached") else "not reached" for s in ppo) +
            (f" (median {statistics.median(times):.2f} s)" if times else ""))
    t.append("")
    t.append(f"summary: {os.path.join(out, 'summary.json')}; logs: {logs}")
    return "\n".join(t) + "\n"


def write_summary(out, bundle, overall, reason, budget, seconds):
    """Writes OUT/summary.json and OUT/summary.txt from the stage records and logs, and prints the
    table. OVERALL is "no_gpu", or "pass" for the stages to decide: "fail" when one failed or timed
    out, "incomplete" when one was skipped for want of time (skipped for want of a tool, such as
    compute-sanitizer, is fine). Returns the exit status: 0 pass, 3 no_gpu, else 1."""
    logs = os.path.join(out, "logs")
    stages = read_stages(logs)
    env_rates, env_errors, bandwidth = stage_numbers(stages, logs)
    for s in stages:
        if s["status"] == "skipped" and "time budget" in read(os.path.join(logs, s["name"] + ".log")):
            s["budget_spent"] = True
    if overall != "no_gpu":
        if any(s["status"] in ("fail", "timeout") for s in stages):
            overall = "fail"
        elif any(s.get("budget_spent") for s in stages):
            overall = "incomplete"
        else:
            overall = "pass"

    gpu = [line for line in read(os.path.join(logs, "nvidia-smi.txt")).splitlines() if line.strip()]
    try:
        with open(os.path.join(bundle, "manifest.json")) as f:
            manifest = json.load(f)
        if not isinstance(manifest, dict):
            manifest = {}
    except (OSError, ValueError):
        manifest = {}
    fractions = {}
    copy = bandwidth.get("BM_device_copy", {})
    for row in ("BM_vec_env_step_unchecked", "BM_limit_loop"):
        for n, b in bandwidth.get(row, {}).items():
            if copy.get(n):
                fractions.setdefault(row, {})[n] = b / copy[n]

    def by_size(d):
        return {str(n): v for n, v in sorted(d.items())}

    summary = {
        "status": overall,
        "seconds": float(seconds),
        "time_budget_s": int(budget),
        "gpu": gpu,
        "bundle": {k: manifest.get(k) for k in ("git_commit", "git_dirty", "date", "nvcc", "cuda_architectures")},
        "stages": stages,
        "env_steps_per_s": {row: {env: by_size(d) for env, d in e.items()} for row, e in env_rates.items()},
        "cartpole_bytes_per_s": {row: by_size(d) for row, d in bandwidth.items()},
        "cartpole_fraction_of_copy": {row: by_size(d) for row, d in fractions.items()},
    }
    if reason:
        summary["reason"] = reason
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    text = summary_table(summary, stages, manifest, env_rates, env_errors, bandwidth, fractions, out, logs)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text)
    print(text, end="", flush=True)
    return 0 if overall == "pass" else 3 if overall == "no_gpu" else 1


# ---- run -----------------------------------------------------------------------------------------

def is_compile_only(manifest_path):
    text = read(manifest_path)
    try:
        manifest = json.loads(text)
        return isinstance(manifest, dict) and manifest.get("compile_only") is True
    except ValueError:
        return '"compile_only": true' in text


def unpack(archive, prefix):
    """A bundle's archive unpacked into a new temporary folder (not under OUT, whose files come
    back): (the folder, whether tar succeeded; the folder is removed when it did not)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    if subprocess.call(["tar", "-xzf", archive, "-C", folder]) != 0:
        shutil.rmtree(folder, ignore_errors=True)
        return folder, False
    return folder, True


def run_main(args):
    """run [DIR] [OUT]: every stage on this machine's GPU. Returns the exit status."""
    started = time.monotonic()
    bundle = args[0] if args and args[0] else ""
    if not bundle:
        # The copy of this program inside a bundle runs that bundle.
        bundle = SCRIPT_DIR if os.path.isfile(os.path.join(SCRIPT_DIR, "manifest.json")) else \
            os.path.join(REPO, "build", "device-bundle")
    bundle = absolute(bundle)
    if not os.path.isfile(os.path.join(bundle, "manifest.json")):
        error(f"error: {bundle} is not a device-check bundle (no manifest.json); make one with: "
              "scripts/device_check.sh prepare")
        return 2
    if is_compile_only(os.path.join(bundle, "manifest.json")):
        error(f"error: {bundle} was prepared with PREPARE_COMPILE_ONLY=1 (unoptimised PTX, a compile check): "
              "prepare a bundle to run without it")
        return 2
    out_given = args[1] if len(args) > 1 and args[1] else ""
    out = absolute(out_given or getenv("OUT", os.path.join(bundle, "results")))
    # Into the device tool's $OUT, which brings back a few files only: the logs as one archive.
    pack = getenv("DEVICE_CHECK_PACK", "1" if not out_given and getenv("OUT") else "0")
    logs = os.path.join(out, "logs")
    shutil.rmtree(logs, ignore_errors=True)
    for name in ("summary.json", "summary.txt", "logs.tar.gz"):
        try:
            os.remove(os.path.join(out, name))
        except OSError:
            pass
    try:
        os.makedirs(logs)
    except OSError as e:
        error(f"error: cannot make {logs}: {e}")
        return 2
    run = Run(bundle, out, int(getenv("RUN_BUDGET_S", "450")))
    run.started = started
    open(run.records, "w").close()
    print(f"== device check: bundle {bundle}, results in {out} (time budget {run.budget} s)", flush=True)

    problem = ""
    if getenv("DEVICE_CHECK_FORCE", "0") == "1":
        print("DEVICE_CHECK_FORCE=1: running every stage without looking for a GPU")
    else:
        problem = gpu_problem(logs)
    if problem:
        run.record("gpu_probe", "no_gpu", 0, "", "probe")
        with open(os.path.join(logs, "gpu_probe.log"), "w") as f:
            f.write(problem + "\n")
        write_summary(out, bundle, "no_gpu", problem, run.budget, int(time.monotonic() - started))
        print(f"no GPU: {problem}. Nothing was run; summary: {out}/summary.json")
        return 3
    run.record("gpu_probe", "pass", 0, 0, "probe")
    smi = read(os.path.join(logs, "nvidia-smi.txt")).splitlines()
    if smi[1:]:
        print("\n".join(smi[1:4]), flush=True)

    try:
        status = run_stages(run)
        if status != 0:
            return status
        print(flush=True)
        status = 0 if write_summary(out, run.manifest_dir, "pass", "", run.budget,
                                    int(time.monotonic() - started)) == 0 else 1
        try:
            if int(pack):
                tar_create(os.path.join(out, "logs.tar.gz"), out, "logs")
                shutil.rmtree(logs)
        except ValueError:
            pass
        except Failure as e:
            error(str(e))
        return status
    finally:
        for folder in run.temporary:
            shutil.rmtree(folder, ignore_errors=True)


def run_stages(run):
    """Every stage after the GPU probe, in order; 2 when the bundle cannot be unpacked, else 0."""
    # A packed bundle (prepare's default): the binaries unpacked into a temporary folder, next to
    # links to the bundle's other files; that folder is the bundle from here on.
    bundle = run.bundle
    if not os.path.isdir(os.path.join(bundle, "tests")) and os.path.isfile(os.path.join(bundle, "binaries.tar.gz")):
        folder, ok = unpack(os.path.join(bundle, "binaries.tar.gz"), "rlk-device-bundle.")
        if not ok:
            error(f"error: unpacking {bundle}/binaries.tar.gz into {folder} failed")
            return 2
        run.temporary.append(folder)
        for f in sorted(glob.glob(os.path.join(bundle, "*"))):
            if not os.path.lexists(os.path.join(folder, os.path.basename(f))):
                os.symlink(f, os.path.join(folder, os.path.basename(f)))
        print(f"== unpacked {bundle}/binaries.tar.gz into {folder}", flush=True)
        run.bundle = folder
    # The tests' golden data: BUNDLE/reference.tar.gz unpacked into a temporary folder, or BUNDLE/reference.
    run.refdir = os.path.join(run.bundle, "reference")
    if not os.path.isdir(run.refdir) and os.path.isfile(os.path.join(run.bundle, "reference.tar.gz")):
        folder, ok = unpack(os.path.join(run.bundle, "reference.tar.gz"), "rlk-device-check.")
        if ok:
            run.temporary.append(folder)
            run.refdir = os.path.join(folder, "reference")
    print("== libraries", flush=True)
    find_toolkit_libraries(run)
    check_libraries(run)
    print("== Python package: building the module with its CUDA backend (background, niced)", flush=True)
    python_build_start(run)
    print(f"== CUDA tests ({getenv('TEST_JOBS', '4')} at a time)", flush=True)
    run_tests(run)
    print("== env benchmarks", flush=True)
    run_env_benchmarks(run)
    print("== Python package: pytest and a Python loop on CUDA", flush=True)
    run_python(run)
    print("== trainers", flush=True)
    run_trainers(run)
    print("== compute-sanitizer", flush=True)
    run_sanitizers(run)
    print("== other CUDA benchmarks", flush=True)
    run_kernel_benchmarks(run)
    return 0


# ---- main ----------------------------------------------------------------------------------------

def usage():
    error(f"usage: {sys.argv[0]} prepare [DIR] | run [DIR] [OUT] | --summarize FILE.csv  (--help: more)")
    return 2


def main(argv):
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # our lines before the output of the commands we run
    mode, args = (argv[0], argv[1:]) if argv else ("", [])
    if mode in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0
    if mode == "prepare" and len(args) <= 1:
        return prepare_main(args)
    if mode == "run" and len(args) <= 2:
        return run_main(args)
    if mode == "--summarize" and len(args) == 1:
        try:
            summarize(args[0])
        except Failure as e:
            error(str(e))
            return 1
        except OSError as e:
            error(f"summary: {e}")
            return 1
        return 0
    return usage()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
