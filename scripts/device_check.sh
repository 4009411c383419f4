#!/usr/bin/env bash
# scripts/device_check.sh: the checks that need an NVIDIA GPU, split in two so that a short GPU
# window only runs them.
#
#   scripts/device_check.sh prepare [DIR]        # here, no GPU needed (CUDA Toolkit, CMake, the build deps)
#   scripts/device_check.sh run [DIR] [OUT]      # there: needs only DIR, bash, python3 and the driver
#   scripts/device_check.sh --summarize FILE.csv # the env-steps/s table of any *_bench_* CSV
#
# prepare builds, for sm_90 only, every test's CUDA variant (rlk_cuda_variants, with
# random_policy_cuda), the CUDA benchmarks (rlk_cuda_benchmarks) and the train_*_cuda examples in
# its own build folder (BUNDLE_BUILD_DIR, default build/device-bundle-build; PREPARE_JOBS jobs, all
# cores by default; ccache when present; CUDA_ARCH, default 90: 90-real would leave out the PTX;
# PREPARE_COMPILE_ONLY=1, as CI does: PTX only, NVVM at -O0, build/device-bundle-check-build, a
# bundle that compiles and links everything but that run refuses),
# and copies them, stripped, into DIR (default build/device-bundle) as binaries.tar.gz, one
# archive of tests/, benchmarks/, examples/ and lib/ (Google Benchmark's shared library and
# libgomp; the binaries' run path starts with $ORIGIN/../lib): the binaries compress about 3:1,
# and run unpacks them into a temporary folder. Also reference.tar.gz (the tests' golden data: run unpacks it and points the
# tests at it with RLK_REFERENCE_DIR), eigen3.tar.gz and wheels/ (Gymnasium: for the Python stages), manifest.json (commit, date, nvcc, binaries), ldd.txt and a copy of this script. It fails
# if a binary needs a library outside the bundle, the CUDA toolkit's runtime, cuBLAS and NCCL and the
# C/C++ runtime (glibc, libstdc++, libgcc_s, libgomp), or if DIR is over 60 MiB (the device
# tool carries 64 MiB with the working tree). BUNDLE_PACK=0 leaves the four folders unpacked.
# NCCL (libnccl.so.2, 218 MB; only tests/nccl_test_cuda links it) is never bundled.
#
# run runs, each stage under its own time limit and all within RUN_BUDGET_S (450 s; later stages are
# skipped when it is spent), never stopping at a failure: the CUDA test binaries (TEST_JOBS = 4 at a
# time; nccl_test_cuda only where ldd finds libnccl.so.2 on that machine, else recorded as skipped),
# the env benchmarks at N = 2^16 .. 2^24 with CartPole's limit kernel and a device-to-device
# copy of the bytes a CartPole step moves (the MuJoCo envs Hopper-v5, Walker2d-v5, HalfCheetah-v5 in
# float and double at 2^16 .. 2^22), PPO on CartPole-v1 to 475 (3 seeds), PPO on HalfCheetah-v5 for 1M
# env steps, the SAC, TD3 and DQN presets, compute-sanitizer memcheck and racecheck on the smallest test binaries (when
# compute-sanitizer is on PATH or in /usr/local/cuda/bin) and the other CUDA benchmarks. Beside the
# tests it builds the Python package's module with its CUDA backend for that machine's python3 (from
# the source tree around the script, with the bundle's eigen3.tar.gz; niced, in the background),
# then runs its pytest suite and benchmarks/python_throughput.py on CUDA after the env benchmarks
# (DEVICE_CHECK_PYTHON=0 leaves them out). It writes
# every stage's log to OUT/logs/ (one archive, OUT/logs.tar.gz, when OUT is the device tool's $OUT),
# OUT/summary.json (per stage: name, status pass/fail/timeout/skipped, seconds, key numbers) and
# OUT/summary.txt, the table it prints last. OUT defaults to $OUT when set, else DIR/results.
# Exit status: 0 all passed, 1 a stage failed or was skipped for want of time (status "fail" or
# "incomplete"), 2 bad use (DIR is not a bundle), 3 no GPU (nothing run; status "no_gpu"). DEVICE_CHECK_FORCE=1 runs the stages without looking for a GPU
# (to try this script on a machine without one: the CUDA stages then fail).
set -uo pipefail

# Prints a table of items_per_second (env-steps/s) from a Google Benchmark CSV file.
summarize() {
  local csv="$1"
  if ! command -v python3 >/dev/null 2>&1; then
    echo "(python3 not found: plain listing)"
    awk -F, '/^name,/ {h = 1; next} h && $7 != "" {gsub(/"/, "", $1); printf "%-75s %12.3f M env-steps/s\n", $1, $7 / 1e6}' "$csv"
    return
  fi
  python3 - "$csv" <<'PY'
import csv, re, statistics, sys

lines = open(sys.argv[1], newline="").read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith("name,")), None)
if start is None:
    sys.exit("summary: no Google Benchmark CSV header in " + sys.argv[1])

values, skipped, sizes = {}, {}, set()
for row in csv.DictReader(lines[start:]):
    name = re.sub(r"/(min_time:[^/]*|real_time|repeats:\d+|threads:\d+)", "", row["name"])
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
families = []
for family, _ in list(values) + list(skipped):
    if family not in families:
        families.append(family)

def rate(family, n):  # median over repetitions, in env-steps/s
    v = values.get((family, n))
    return statistics.median(v) if v else None

def cell(x):
    return f"{x / 1e6:12.2f}" if x is not None else f"{'-':>12}"

width = max([len(f) for f in families] + [44])
print("env-steps/s in millions (items_per_second; median over repetitions)")
print(f"{'row':<{width}} " + " ".join(f"{'N=' + str(n):>12}" for n in sizes))
for family in families:
    print(f"{family:<{width}} " + " ".join(
        f"{'skipped':>12}" if (family, n) in skipped else cell(rate(family, n)) for n in sizes))

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
    print(f"{label:<{width}} " + " ".join(cells))

for group in dict.fromkeys(group_of(f) for f in families):
    members = [f for f in families if group_of(f) == group]

    def find(prefix):
        return next((f for f in members if f.startswith(prefix + "/")), None)

    checked, unchecked = find("BM_vec_env_step"), find("BM_vec_env_step_unchecked")
    limit, virtual = find("BM_limit_loop"), find("BM_virtual_gym_style")
    tag = f"{group}: " if group else ""
    print()
    ratio_row(tag + "vec_env unchecked / limit", unchecked, limit, lambda a, b: f"{a / b:.2f}")
    ratio_row(tag + "vec_env unchecked / virtual", unchecked, virtual, lambda a, b: f"{a / b:.2f}x")
    ratio_row(tag + "checking cost (1 - chk/unchk)", checked, unchecked, lambda a, b: f"{100 * (1 - a / b):.1f}%")
PY
}


usage() {
  echo "usage: $0 prepare [DIR] | run [DIR] [OUT] | --summarize FILE.csv" >&2
  exit 2
}
# ---- prepare -------------------------------------------------------------------------------------

# The libraries a bundled binary may take from the machine it runs on (ldd's left-hand names): the C
# and C++ runtimes (glibc with its libm, libdl, libpthread and librt; libstdc++, libgcc_s; libgomp
# for the OpenMP host code) and the CUDA toolkit's own runtime and cuBLAS (libcuda, the driver, is
# opened by the runtime), and NCCL: it ships with the CUDA Toolkit here (/usr/local/cuda/lib), and at
# 218 MB it could not go into the 60 MiB bundle anyway. Only nccl_test_cuda needs it, and run skips
# that test on a machine where it is not found (optional_lib_re: not found there is no error).
system_lib_re='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libgomp\.so\.1)$'
toolkit_lib_re='^(libcudart\.so\.[0-9]+|libcublas\.so\.[0-9]+|libcublasLt\.so\.[0-9]+|libnccl\.so\.2)$'
optional_lib_re='^libnccl\.so\.2$'
nccl_skip_reason="libnccl.so.2 not found on this machine (NCCL is not in the bundle: 218 MB)"

# Every bundled program: DIR/{tests,benchmarks,examples}/*_cuda.
bundle_binaries() {
  find "$1/tests" "$1/benchmarks" "$1/examples" -maxdepth 1 -type f -name '*_cuda' 2>/dev/null | sort
}

# Checks ldd of every binary of bundle $1: each library resolves inside the bundle, or is one of the
# system or toolkit libraries above. Writes the full ldd output to $1/ldd.txt, prints a summary
# (library, where it resolved, how many binaries use it) and returns 1 on anything else.
check_bundle_libraries() {
  local dir="$1" ldd_out="${2:-$1/ldd.txt}" bad=0 bin line name target
  : >"$ldd_out"
  declare -A where=() count=()
  while IFS= read -r bin; do
    echo "== ${bin#"$dir"/}" >>"$ldd_out"
    ldd "$bin" >>"$ldd_out" 2>&1 || { echo "error: ldd failed on $bin" >&2; bad=1; }
  done < <(bundle_binaries "$dir")
  while IFS= read -r line; do
    [[ "$line" == "== "* || -z "${line// /}" ]] && continue
    line="${line#"${line%%[![:space:]]*}"}"
    name="${line%% *}"
    if [[ "$line" == *"=> not found"* ]]; then
      target="NOT FOUND"
    elif [[ "$line" == *" => "* ]]; then
      target="${line#* => }"
      target="$(readlink -f "${target%% (*}")"
    else
      target="${name}"
      target="${target%% (*}"
    fi
    where[$name]="$target"
    count[$name]=$((${count[$name]:-0} + 1))
  done <"$ldd_out"
  local nbin
  nbin="$(bundle_binaries "$dir" | wc -l)"
  echo "libraries of the $nbin bundled binaries (full ldd output: $ldd_out):"
  for name in $(printf '%s\n' "${!where[@]}" | sort); do
    local kind
    target="${where[$name]}"
    if [[ "$target" == "NOT FOUND" && "$name" =~ $optional_lib_re ]]; then
      kind="not found here (optional: only nccl_test_cuda needs it; run skips that test)"
    elif [[ "$target" == "NOT FOUND" ]]; then
      kind="ERROR: not found"
      bad=1
    elif [[ "$target" == "$dir/lib/"* ]]; then
      kind="bundle"
    elif [[ "$name" =~ $toolkit_lib_re ]]; then
      kind="CUDA toolkit"
    elif [[ "$name" =~ $system_lib_re ]]; then
      kind="system (C/C++ runtime)"
    else
      kind="ERROR: not allowed (neither in the bundle, the CUDA toolkit nor the C/C++ runtime)"
      bad=1
    fi
    printf '  %-28s %3d binaries  %-60s %s\n' "$name" "${count[$name]}" "$target" "$kind"
  done
  if grep -q "version .* not found" "$ldd_out"; then
    echo "ERROR: missing symbol versions:" >&2
    grep "version .* not found" "$ldd_out" | sort -u >&2
    bad=1
  fi
  return "$bad"
}

# The Python package's check on the GPU machine needs what its image lacks: Eigen's headers (the
# rlkernels target's dependency; packed in their installed layout, which Eigen3Config.cmake finds
# relative to itself) and wheels of the pure-Python packages the tests import (Gymnasium and its
# Farama-Notifications). run builds the module there, for that machine's Python (3.12 there, so a
# module built here could not load). Missing pieces are warnings: the python stages then skip.
prepare_python_extras() {
  local dir="$1" build="$2" eigen_dir prefix
  eigen_dir="$(sed -n 's/^Eigen3_DIR:PATH=//p' "$build/CMakeCache.txt" | head -1)"
  if [[ -f "$eigen_dir/Eigen3Config.cmake" ]]; then
    prefix="$(cd "$eigen_dir/../../.." && pwd)"
    if [[ -d "$prefix/include/eigen3" ]]; then
      tar -czf "$dir/eigen3.tar.gz" -C "$prefix" "${eigen_dir#"$prefix"/}" include/eigen3
    else
      echo "warning: no $prefix/include/eigen3 beside $eigen_dir: the bundle has no Eigen (python stages will skip)" >&2
    fi
  else
    echo "warning: Eigen3_DIR not found in $build/CMakeCache.txt: the bundle has no Eigen (python stages will skip)" >&2
  fi
  local gym_version
  gym_version="$(python3 -c 'import gymnasium; print(gymnasium.__version__)' 2>/dev/null || echo 1.4.0)"
  mkdir -p "$dir/wheels"
  if ! timeout 180 python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$dir/wheels" "gymnasium==$gym_version" farama-notifications >"$build/wheels.log" 2>&1; then
    echo "warning: pip download of gymnasium==$gym_version failed (python stages will skip): $(tail -1 "$build/wheels.log")" >&2
    rm -rf "$dir/wheels"
  fi
  echo "== prepare: for the Python stages: $(ls "$dir"/eigen3.tar.gz "$dir"/wheels/*.whl 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')"
}

prepare_main() {
  local started=$SECONDS
  local dir="${1:-$repo/build/device-bundle}"
  [[ "$dir" = /* ]] || dir="$PWD/$dir"
  # PREPARE_COMPILE_ONLY=1 (CI): the same targets, checked to compile and link, in a quarter of the
  # time: PTX only (no ptxas) from NVVM at -O0 (cicc: about 13 s instead of 160 s for random_policy.cu,
  # and no ptxas at all, which takes 120 s more at -O3). The register and stack figures come from the
  # gpu_resources test, at full optimisation. Such a bundle is marked compile_only in its manifest,
  # and `run` refuses it: its kernels would be JIT-compiled unoptimised on the GPU.
  local compile_only="${PREPARE_COMPILE_ONLY:-0}"
  local arch="${CUDA_ARCH:-90}"
  local default_build="$repo/build/device-bundle-build"
  if [[ "$compile_only" == 1 ]]; then
    arch="${CUDA_ARCH:-90-virtual}"
    default_build="$repo/build/device-bundle-check-build"
  fi
  local build="${BUNDLE_BUILD_DIR:-$default_build}"
  [[ "$build" = /* ]] || build="$PWD/$build"
  local jobs="${PREPARE_JOBS:-$(nproc 2>/dev/null || echo 2)}"
  local limit_mib=60
  if [[ -e "$dir" && ! -f "$dir/manifest.json" && -n "$(ls -A "$dir" 2>/dev/null)" ]]; then
    echo "error: $dir exists and is not a bundle (no manifest.json): not replacing it" >&2
    return 2
  fi

  local nvcc
  nvcc="$(command -v nvcc || true)"
  [[ -n "$nvcc" || ! -x /usr/local/cuda/bin/nvcc ]] || nvcc=/usr/local/cuda/bin/nvcc
  if [[ -z "$nvcc" ]]; then
    echo "error: prepare needs nvcc (the CUDA Toolkit; not on PATH nor in /usr/local/cuda/bin)" >&2
    return 1
  fi
  local configure=(-S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc"
    -DRLK_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" -DRLK_RUN_CUDA_TESTS=OFF
    -DRLK_NATIVE_ARCH=OFF -DRLK_HEADER_CHECK=OFF
    # The bundle's own libraries (Google Benchmark, libgomp) are found next to the binaries
    # (DIR/{tests,benchmarks,examples}/x finds DIR/lib/), the toolkit's (cudart, cuBLAS) where
    # they were linked from or where the toolkit usually is. The shared CUDA runtime: the static
    # one would add 0.7 MB to each of the 31 binaries, and cuBLAS comes from the toolkit anyway.
    -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared
    '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib;/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib')
  if [[ "$compile_only" == 1 ]]; then
    configure+=("-DCMAKE_CUDA_FLAGS=-Xcicc -O0")
  elif grep -q '^CMAKE_CUDA_FLAGS:.*-Xcicc -O0' "$build/CMakeCache.txt" 2>/dev/null; then
    configure+=("-DCMAKE_CUDA_FLAGS=")  # a build folder a compile-only prepare used before
  fi
  command -v ninja >/dev/null 2>&1 && configure+=(-G Ninja)
  if command -v ccache >/dev/null 2>&1; then
    configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  # A generator chosen before cannot change: keep the build directory's own.
  if [[ -f "$build/CMakeCache.txt" ]]; then
    local kept=() a
    for a in "${configure[@]}"; do [[ "$a" == -G || "$a" == Ninja ]] || kept+=("$a"); done
    configure=("${kept[@]}")
  fi
  mkdir -p "$build"
  echo "== prepare: configure $build ($("$nvcc" --version | tail -1); CUDA architectures $arch$([[ "$compile_only" == 1 ]] && echo ', compile only: PTX from NVVM -O0, not for running'))"
  cmake "${configure[@]}" >"$build/configure.log" 2>&1 || {
    cat "$build/configure.log" >&2
    echo "error: configuring $build failed" >&2
    return 1
  }
  grep -E "rlkernels:" "$build/configure.log" || true

  # Every test's CUDA variant (and random_policy_cuda), the CUDA benchmarks and the trainers' examples.
  local targets=(rlk_cuda_variants rlk_cuda_benchmarks train_ppo_cuda train_sac_cuda train_td3_cuda train_dqn_cuda)
  echo "== prepare: build ${targets[*]} (-j $jobs)"
  local build_started=$SECONDS
  cmake --build "$build" --target "${targets[@]}" --parallel "$jobs" || {
    echo "error: building the CUDA targets failed" >&2
    return 1
  }
  echo "built in $((SECONDS - build_started)) s"
  if [[ -f "$build/.ninja_log" ]]; then
    # Compile time per translation unit of this build (ninja's log; ccache hits are fast).
    echo "slowest steps of this build (ninja log, seconds):"
    awk -F'\t' 'NR > 1 {t[$4] = ($2 - $1) / 1000} END {for (o in t) printf "%8.1f  %s\n", t[o], o}' \
      "$build/.ninja_log" | sort -rn | awk 'NR <= 12'  # awk reads to the end: head would SIGPIPE sort (pipefail)
  fi

  echo "== prepare: bundle $dir"
  rm -rf "$dir"
  mkdir -p "$dir/tests" "$dir/benchmarks" "$dir/examples" "$dir/lib"
  local sub bin
  for sub in tests benchmarks examples; do
    for bin in "$build/$sub"/*_cuda; do
      [[ -f "$bin" && -x "$bin" ]] || continue
      cp "$bin" "$dir/$sub/"
      strip --strip-all "$dir/$sub/$(basename "$bin")"
    done
  done
  # The libraries ldd resolves outside the allowed set (Google Benchmark: Debian ships it only as a
  # shared library) go into DIR/lib under their soname; libgomp too, so that a machine without
  # GCC's OpenMP runtime still runs the bundle.
  local lib name path
  while IFS= read -r line; do
    name="$(awk '{print $1}' <<<"$line")"
    path="$(awk '{print $3}' <<<"$line")"
    [[ -f "$path" ]] || continue
    if [[ "$name" == libgomp.so.1 ]] || { ! [[ "$name" =~ $system_lib_re ]] && ! [[ "$name" =~ $toolkit_lib_re ]]; }; then
      [[ -f "$dir/lib/$name" ]] || cp -L "$path" "$dir/lib/$name"
    fi
  done < <(for bin in $(bundle_binaries "$dir"); do ldd "$bin"; done | grep ' => /' | sort -u)
  for lib in "$dir"/lib/*; do
    if [[ -f "$lib" ]]; then strip --strip-unneeded "$lib"; fi
  done
  # The golden data, compressed (5.4 MB of text in 1.5 MB): run unpacks it.
  tar -czf "$dir/reference.tar.gz" -C "$repo/tests" reference
  cp "$repo/scripts/device_check.sh" "$dir/device_check.sh"
  prepare_python_extras "$dir" "$build"

  # The manifest: what was built, from which commit, with which compiler.
  local commit dirty
  commit="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
  dirty="$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null | head -1 || true)"
  python3 - "$dir" "$commit" "${dirty:+yes}" "$("$nvcc" --version | tail -2 | tr '\n' ' ')" \
    "$(cmake --version | head -1)" "$(${CXX:-c++} --version 2>/dev/null | head -1)" "$arch" "$compile_only" <<'PY'
import datetime, json, os, sys
d, commit, dirty, nvcc, cmake, cxx, arch, compile_only = sys.argv[1:9]
binaries = {}
for sub in ("tests", "benchmarks", "examples"):
    binaries[sub] = sorted(f for f in os.listdir(os.path.join(d, sub)) if f.endswith("_cuda"))
manifest = {
    "what": "rlkernels device-check bundle (scripts/device_check.sh prepare; run it with scripts/device_check.sh run DIR)",
    "git_commit": commit, "git_dirty": dirty == "yes",
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "nvcc": nvcc.strip(), "cmake": cmake, "host_compiler": cxx, "cuda_architectures": arch,
    "compile_only": compile_only == "1",
    "binaries": binaries, "libraries": sorted(os.listdir(os.path.join(d, "lib"))),
}
json.dump(manifest, open(os.path.join(d, "manifest.json"), "w"), indent=2)
print(f"manifest: commit {commit[:12]}{' (with uncommitted changes)' if dirty == 'yes' else ''}, "
      f"{sum(len(v) for v in binaries.values())} binaries ({', '.join(f'{len(v)} {k}' for k, v in binaries.items())})")
PY

  local status=0
  echo "== prepare: ldd of the bundle"
  echo "-- ldd $(bundle_binaries "$dir" | grep /benchmarks/ | head -1)"
  ldd "$(bundle_binaries "$dir" | grep /benchmarks/ | head -1)" | sed 's/^/   /'
  check_bundle_libraries "$dir" || {
    echo "error: a bundled binary needs a library outside the bundle, the CUDA toolkit and the C/C++ runtime" >&2
    status=1
  }
  # The binaries as one archive: stripped ELF files with SASS and PTX compress about 3:1 (75 MiB
  # in about 27 since the MuJoCo envs), which keeps the bundle inside the device tool's carry.
  if [[ "${BUNDLE_PACK:-1}" == 1 ]]; then
    local unpacked_bytes
    unpacked_bytes="$(du -sbc "$dir"/{tests,benchmarks,examples,lib} | tail -1 | cut -f1)"
    tar -czf "$dir/binaries.tar.gz" -C "$dir" tests benchmarks examples lib &&
      rm -rf "$dir"/{tests,benchmarks,examples,lib} || {
      echo "error: packing the binaries into $dir/binaries.tar.gz failed" >&2
      return 1
    }
    echo "== prepare: binaries packed: $(awk -v b="$unpacked_bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB in $(du -sb "$dir/binaries.tar.gz" | awk '{printf "%.1f", $1 / 1048576}') MiB (binaries.tar.gz; run unpacks it)"
  fi
  local bytes
  bytes="$(du -sb "$dir" | cut -f1)"
  echo "== prepare: bundle size $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB ($bytes bytes; limit $limit_mib MiB): $dir"
  du -sb "$dir"/* | sort -rn | awk '{printf "   %7.1f MiB  %s\n", $1 / 1048576, $2}'
  if ((bytes > limit_mib * 1048576)); then
    if [[ "${BUNDLE_OVERSIZE_OK:-0}" == 1 ]]; then
      # CI's compile check (BUNDLE_OVERSIZE_OK=1 in .ci/run): every CUDA target compiled and
      # linked; a bundle too big to carry in one piece is reported, not a failure of the check.
      echo "warning: the bundle is over $limit_mib MiB: too big for the device tool's 64 MiB carry (shrink it, e.g. CUDA_ARCH=90-real)" >&2
    else
      echo "error: the bundle is over $limit_mib MiB" >&2
      status=1
    fi
  fi
  echo "== prepare finished in $((SECONDS - started)) s"
  return "$status"
}
# ---- run ---------------------------------------------------------------------------------------

# stage NAME KIND LIMIT_S COMMAND...: runs COMMAND under `timeout` (never past the run's deadline),
# its output in $logs/NAME.log; appends name, status (pass, fail, timeout or skipped), seconds, exit
# status and KIND to $records and prints one line. Never fails itself.
stage() {
  local name="$1" kind="$2" limit="$3"
  shift 3
  local log="$logs/$name.log" left=$((deadline - SECONDS))
  if ((left < 10)); then
    echo "skipped: the run's time budget (${budget} s) is spent" >"$log"
    printf '%s\tskipped\t0\t\t%s\n' "$name" "$kind" >>"$records"
    printf '  %-44s %s\n' "$name" "skipped (time budget spent)"
    return 0
  fi
  ((limit <= left)) || limit=$left
  { printf '$'; printf ' %q' "$@"; printf '\n(time limit %s s)\n' "$limit"; } >"$log"
  local t0 t1 rc status secs
  t0="$(date +%s.%N)"
  timeout -k 10 "$limit" "$@" >>"$log" 2>&1 </dev/null
  rc=$?
  t1="$(date +%s.%N)"
  case "$rc" in
    0) status=pass ;;
    124 | 137) status=timeout ;;
    *) status=fail ;;
  esac
  secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$secs" "$rc" "$kind" >>"$records"
  printf '  %-44s %-8s %7s s\n' "$name" "$status" "$secs"
}

# skip NAME KIND REASON: records a stage that does not apply here.
skip() {
  echo "skipped: $3" >"$logs/$1.log"
  printf '%s\tskipped\t0\t\t%s\n' "$1" "$2" >>"$records"
  printf '  %-44s %s\n' "$1" "skipped ($3)"
}

# Why this machine cannot run the bundle's CUDA code (empty when it can): nvidia-smi must list a
# GPU and the driver (libcuda.so.1) must initialise and count at least one device.
gpu_problem() {
  local smi
  smi="$(command -v nvidia-smi || true)"
  [[ -n "$smi" || ! -x /usr/local/nvidia/bin/nvidia-smi ]] || smi=/usr/local/nvidia/bin/nvidia-smi
  if [[ -z "$smi" ]]; then
    echo "nvidia-smi not found"
    return
  fi
  if ! "$smi" -L >"$logs/nvidia-smi.txt" 2>&1 || ! grep -q '^GPU ' "$logs/nvidia-smi.txt"; then
    echo "nvidia-smi -L lists no GPU ($(head -1 "$logs/nvidia-smi.txt"))"
    return
  fi
  "$smi" --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv \
    >>"$logs/nvidia-smi.txt" 2>&1 || true
  if command -v python3 >/dev/null 2>&1; then
    python3 - <<'PY' 2>&1 || true
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
PY
  fi
}

# Makes the CUDA toolkit's libraries (cudart, cuBLAS, NCCL) findable when a binary's run path misses
# them: the first folder among the usual places that holds each missing library joins
# LD_LIBRARY_PATH.
find_toolkit_libraries() {
  local missing name d
  missing="$(for b in $(bundle_binaries "$dir"); do ldd "$b" 2>/dev/null; done | awk '/=> not found/ {print $1}' | sort -u)"
  [[ -n "$missing" ]] || return 0
  local places=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64
    /usr/local/cuda-*/targets/x86_64-linux/lib /usr/local/cuda/lib /usr/local/cuda-*/lib /usr/lib/x86_64-linux-gnu
    /usr/local/lib)
  local module pip_dir  # pip's nvidia-cuda-runtime, nvidia-cublas and nvidia-nccl (e.g. next to PyTorch)
  for module in cuda_runtime cublas cu13 nccl; do
    pip_dir="$(python3 -c "import os, nvidia.$module as m; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null)"
    [[ -z "$pip_dir" ]] || places+=("$pip_dir")
  done
  for name in $missing; do
    for d in "${places[@]}"; do
      if [[ -e "$d/$name" ]]; then
        echo "found $name in $d: added to LD_LIBRARY_PATH"
        export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        break
      fi
    done
  done
}

# The CUDA test binaries, every one with Catch2's durations, a few at a time (one GPU, many cores);
# memory_test alone first, as its cases are about how much memory there is.
run_tests() {
  local jobs="${TEST_JOBS:-4}" bin pids=()
  test_stage() {
    # nccl_test_cuda needs NCCL from this machine (not bundled): run only where ldd resolves it.
    if [[ "$(basename "$1")" == nccl_test_cuda ]] && ! ldd "$1" 2>/dev/null | grep -E '^[[:space:]]*libnccl\.so\.2 => /' >/dev/null; then
      skip "test.$(basename "$1")" test "$nccl_skip_reason"
      return 0
    fi
    stage "test.$(basename "$1")" test "${TEST_TIMEOUT_S:-180}" \
      env RLK_REFERENCE_DIR="$refdir" "$1" --durations yes --use-colour no
  }
  if [[ -x "$dir/tests/memory_test_cuda" ]]; then test_stage "$dir/tests/memory_test_cuda"; fi
  # Then the trainers' tests, the longest, so that the others fill the time beside them.
  # shellcheck disable=SC2010  # the bundle's own file names
  for bin in $(ls -S "$dir"/tests/*_cuda | grep -E '/(ppo|dqn|actor_critic)_test_cuda$') \
    $(ls -S "$dir"/tests/*_cuda | grep -v -E '/(ppo|dqn|actor_critic|memory)_test_cuda$'); do
    # (the Python module's build, when it runs in the background, is not one of the test jobs)
    while (($(jobs -rp | grep -v -x -F "${py_build_pid:-none}" | wc -l) >= jobs)); do wait -n; done
    test_stage "$bin" &
    pids+=($!)
  done
  ((${#pids[@]} == 0)) || wait "${pids[@]}"
}

# The env benchmarks at N = 2^16 .. 2^24 (MinAtar and the grid envs to 2^22: at 2^24 their
# observations alone would take 50-130 GB), vec_env and, for CartPole, the limit kernel and a
# device-to-device copy of the same bytes; short timings (--rlk_min_time).
run_env_benchmarks() {
  local b="$dir/benchmarks" sizes="65536,1048576,4194304,16777216" t="${BENCH_MIN_TIME:-0.1}" id
  stage bench.cartpole bench 90 "$b/cartpole_bench_cuda" --rlk_batch_sizes="$sizes" --rlk_min_time="$t" \
    '--benchmark_filter=^BM_(vec_env_step|vec_env_step_unchecked|vec_env_step_to_host|limit_loop|device_copy)/' \
    --benchmark_out="$logs/bench.cartpole.csv" --benchmark_out_format=csv
  stage bench.classic_control bench 110 "$b/classic_control_bench_cuda" --rlk_batch_sizes="$sizes" --rlk_min_time="$t" \
    '--benchmark_filter=^BM_vec_env_step' --benchmark_out="$logs/bench.classic_control.csv" --benchmark_out_format=csv
  # One run per grid env: a failure (memory, a fault) loses that env's rows only.
  for id in MinAtar-Breakout-v0 MinAtar-Asterix-v0 MinAtar-Freeway-v0 MinAtar-Seaquest-v0 MinAtar-SpaceInvaders-v0 \
    Snake-v1 Maze-v0; do
    stage "bench.grid.$id" bench 45 "$b/grid_bench_cuda" --rlk_batch_sizes=65536,1048576,4194304 --rlk_min_time="$t" \
      "--benchmark_filter=^BM_vec_env_step(_unchecked)?/$id/" --benchmark_out="$logs/bench.grid.$id.csv" \
      --benchmark_out_format=csv
  done
  # The MuJoCo locomotion envs (the physics engine, one env per thread) at N = 2^16 .. 2^22, the
  # unchecked step in float (<id>) and double (<id>:double); one run per env, smallest N first, so
  # that a slow or out-of-memory size loses only itself and the bigger ones (an error row, or the
  # stage's time limit).
  for id in Hopper-v5 Walker2d-v5 HalfCheetah-v5 Ant-v5 Humanoid-v5; do
    if [[ ! -x "$b/mujoco_bench_cuda" ]]; then
      skip "bench.mujoco.$id" bench "mujoco_bench_cuda is not in this bundle"
      continue
    fi
    # the 3D robots at 2^14 .. 2^20 (a Humanoid env step is 20 forward passes with PGS)
    local msizes=65536,262144,1048576,4194304
    [[ $id == Ant-v5 || $id == Humanoid-v5 ]] && msizes=16384,65536,262144,1048576
    stage "bench.mujoco.$id" bench 50 "$b/mujoco_bench_cuda" --rlk_batch_sizes=$msizes \
      --rlk_min_time="$t" "--benchmark_filter=^BM_vec_env_step_unchecked/$id(:double)?/" \
      --benchmark_out="$logs/bench.mujoco.$id.csv" --benchmark_out_format=csv
  done
}

# The other CUDA benchmarks (GAE, replay sampling, losses, MLP), their CUDA rows only.
run_kernel_benchmarks() {
  local name
  for name in gae_bench replay_bench losses_bench mlp_bench; do
    stage "bench.${name%_bench}" bench 60 "$dir/benchmarks/${name}_cuda" '--benchmark_filter=/cuda/' \
      --benchmark_out="$logs/bench.${name%_bench}.csv" --benchmark_out_format=csv
  done
}

# The trainers on CUDA: PPO on CartPole-v1 to a mean return of 475 (3 seeds; the time of
# benchmarks/algorithms/ppo_bench.cpp on the host), SAC, TD3 and DQN presets (seed 1).
run_trainers() {
  local e="$dir/examples" train="$logs/train" seed
  mkdir -p "$train"
  for seed in 1 2 3; do
    stage "train.ppo_cartpole.seed$seed" train_ppo 100 "$e/train_ppo_cuda" --backend cuda --env CartPole-v1 \
      --seed "$seed" --stop-at 475 --no-plot --quiet --out "$train"
  done
  # PPO on HalfCheetah-v5 (its preset) for a short budget of 1M env steps: env steps/s and the
  # deterministic evaluation (20 episodes); the learning target (docs/training.md) needs 5 seeds on a host.
  stage train.ppo_halfcheetah_1m train 150 "$e/train_ppo_cuda" --backend cuda --env HalfCheetah-v5 \
    --total-steps 1000000 --eval-episodes 20 --seed 1 --no-plot --quiet --out "$train"
  # PPO on Ant-v5 (its preset), 1M env steps, the same way
  stage train.ppo_ant_1m train 150 "$e/train_ppo_cuda" --backend cuda --env Ant-v5 \
    --total-steps 1000000 --eval-episodes 20 --seed 1 --no-plot --quiet --out "$train"
  stage train.sac_pendulum_10k train 120 "$e/train_sac_cuda" --backend cuda --total-steps 10000 --seed 1 --no-plot \
    --quiet --out "$train"
  stage train.td3_pendulum train 120 "$e/train_td3_cuda" --backend cuda --seed 1 --no-plot --quiet --out "$train"
  # TD3 on the quadrotor (its preset on docs/quadrotor.md's training reward) for 50k env steps: that
  # it trains on CUDA, and how fast; whether it flies is measured on a host (docs/quadrotor.md)
  stage train.td3_l2f_50k train 90 "$e/train_td3_cuda" --backend cuda --env L2F-Crazyflie-v0 \
    --env-param reward_angular_acceleration=0 --env-param reward_linear_velocity=1 --total-steps 50000 --seed 1 \
    --no-plot --quiet --out "$train"
  stage train.dqn_cartpole train 120 "$e/train_dqn_cuda" --backend cuda --seed 1 --no-plot --quiet --out "$train"
}

# compute-sanitizer memcheck on the three smallest test binaries and racecheck on the two smallest
# (not nccl_test_cuda: it starts a second process and needs NCCL, which may be missing).
run_sanitizers() {
  local cs bin
  cs="$(command -v compute-sanitizer || true)"
  for bin in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer; do
    [[ -n "$cs" || ! -x "$bin" ]] || cs="$bin"
  done
  if [[ -z "$cs" ]]; then
    skip sanitizer sanitizer "compute-sanitizer not found"
    return
  fi
  local smallest
  # shellcheck disable=SC2010  # the bundle's own file names
  smallest="$(ls -S -r "$dir"/tests/*_cuda | grep -v '/nccl_test_cuda$' | awk 'NR <= 3')"
  for bin in $smallest; do
    stage "memcheck.$(basename "$bin")" sanitizer 75 env RLK_REFERENCE_DIR="$refdir" "$cs" --tool memcheck \
      --error-exitcode 99 --print-limit 20 "$bin" --use-colour no
  done
  for bin in $(head -2 <<<"$smallest"); do
    stage "racecheck.$(basename "$bin")" sanitizer 75 env RLK_REFERENCE_DIR="$refdir" "$cs" --tool racecheck \
      --error-exitcode 99 --print-limit 20 "$bin" --use-colour no
  done
}

# Writes summary.json and summary.txt from the stage records and logs, and prints the table.
write_summary() {
  local overall="$1" reason="${2:-}"
  if ! command -v python3 >/dev/null 2>&1; then
    printf '{"status": "%s", "reason": "%s", "note": "python3 not found: stages in logs/stages.tsv"}\n' \
      "$overall" "${reason//\"/\'}" >"$out/summary.json"
    echo "status: $overall $reason" | tee "$out/summary.txt"
    [[ "$overall" == pass ]]
    return
  fi
  RLK_OPTIONAL_LIB_RE="$optional_lib_re" \
    python3 - "$out" "$dir" "$overall" "$reason" "$budget" "$((SECONDS - run_started))" <<'PY'
import csv, json, os, re, statistics, sys

out, bundle, overall, reason, budget, seconds = sys.argv[1:7]
logs = os.path.join(out, "logs")


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
    lines = read(path).splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("name,")), None)
    rows = {}
    if start is None:
        return rows
    for row in csv.DictReader(lines[start:]):
        name = re.sub(r"/(min_time:[^/]*|real_time|repeats:\d+|threads:\d+)", "", row["name"])
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

env_rates = {}  # row -> env -> N -> items/s
env_errors = set()  # (row, env, N) that reported an error
bandwidth = {}
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
        m = re.search(r"trained (\d+) env steps and (\d+) gradient steps in ([\d.]+) s \(([\d.]+) env steps/s, ([\d.]+) updates/s\)", text)
        if m:
            s.update(env_steps=int(m.group(1)), gradient_steps=int(m.group(2)), train_seconds=float(m.group(3)),
                     env_steps_per_s=float(m.group(4)), updates_per_s=float(m.group(5)))
        m = re.search(r"reached a mean return of ([\d.]+) over the last 100 episodes after ([\d.]+) s and (\d+) env steps", text)
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
            counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", text.splitlines()[-1] if text else "")}
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
        optional_re = os.environ.get("RLK_OPTIONAL_LIB_RE", r"^libnccl\.so\.2$")
        optional = [m for m in missing if re.fullmatch(optional_re, m)]  # NCCL: its test is skipped
        missing = [m for m in missing if m not in optional]
        if missing:
            s["missing"] = missing
        if optional:
            s["optional_missing"] = optional

for s in stages:
    if s["status"] == "skipped" and "time budget" in read(os.path.join(logs, s["name"] + ".log")):
        s["budget_spent"] = True
if overall != "no_gpu":
    # skipped for want of a tool (compute-sanitizer) is fine; skipped for want of time is not.
    if any(s["status"] in ("fail", "timeout") for s in stages):
        overall = "fail"
    elif any(s.get("budget_spent") for s in stages):
        overall = "incomplete"
    else:
        overall = "pass"

gpu = [l for l in read(os.path.join(logs, "nvidia-smi.txt")).splitlines() if l.strip()]
try:
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
except (OSError, ValueError):
    manifest = {}

fractions = {}
copy = bandwidth.get("BM_device_copy", {})
for row in ("BM_vec_env_step_unchecked", "BM_limit_loop"):
    for n, b in bandwidth.get(row, {}).items():
        if copy.get(n):
            fractions.setdefault(row, {})[n] = b / copy[n]

summary = {
    "status": overall,
    "seconds": float(seconds),
    "time_budget_s": int(budget),
    "gpu": gpu,
    "bundle": {k: manifest.get(k) for k in ("git_commit", "git_dirty", "date", "nvcc", "cuda_architectures")},
    "stages": stages,
    "env_steps_per_s": {row: {env: {str(n): v for n, v in sorted(d.items())} for env, d in e.items()}
                        for row, e in env_rates.items()},
    "cartpole_bytes_per_s": {row: {str(n): v for n, v in sorted(d.items())} for row, d in bandwidth.items()},
    "cartpole_fraction_of_copy": {row: {str(n): v for n, v in sorted(d.items())} for row, d in fractions.items()},
}
if reason:
    summary["reason"] = reason
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")

# ---- the table ------------------------------------------------------------------------------
t = []
t.append(f"== device check: {overall.upper()}" + (f" ({reason})" if reason else "")
         + f"; {float(seconds):.0f} s of a {budget} s budget")
if gpu:
    t.append("GPU: " + "; ".join(gpu[1:] or gpu))
if manifest.get("git_commit"):
    t.append(f"bundle: commit {str(manifest.get('git_commit'))[:12]}{' (+ changes)' if manifest.get('git_dirty') else ''}, "
             f"built {manifest.get('date')}, nvcc "
             + (re.search(r"release [\d.]+, V[\d.]+", manifest.get("nvcc") or "") or re.match(".*", "?")).group(0))


def detail(s):
    k = s["kind"]
    if s["status"] == "skipped":
        return read(os.path.join(logs, s["name"] + ".log")).strip().removeprefix("skipped: ")
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
        return "; ".join(f"{r['env']} N={r['num_envs']}: " + (f"{r['env_steps_per_s'] / 1e6:.1f}M/s" if "env_steps_per_s" in r
                         else "error") for r in s["rows"])
    if k == "libraries" and (s.get("missing") or s.get("optional_missing")):
        return "; ".join(p for p in ("missing: " + ", ".join(s["missing"]) if s.get("missing") else "",
                                     "optional, not found: " + ", ".join(s["optional_missing"]) + " (its test skipped)"
                                     if s.get("optional_missing") else "") if p)
    return s.get("note", "")


t.append("")
t.append(f"{'stage':<46} {'status':<8} {'s':>6}  numbers")
for s in stages:
    t.append(f"{s['name']:<46} {s['status']:<8} {s['seconds']:>6.1f}  {detail(s)}")

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

    envs = list(dict.fromkeys(env for row in env_rates.values() for env in row))
    for env in envs:
        t.append(line(env, "BM_vec_env_step_unchecked", env))
        if env in env_rates.get("BM_limit_loop", {}):
            t.append(line("  limit kernel", "BM_limit_loop", env))
        if env in env_rates.get("BM_vec_env_step", {}):
            t.append(line("  checked step", "BM_vec_env_step", env))
if copy:
    t.append("")
    sizes = sorted(copy)
    t.append(f"CartPole step, {98} bytes/env moved: GB/s and fraction of a device-to-device copy of the same bytes")
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
    t.append(f"PPO CartPole-v1 on CUDA, time to 475: " + ", ".join(
        f"{s['time_to_target_s']:.2f} s" if s.get("reached") else "not reached" for s in ppo) +
        (f" (median {statistics.median(times):.2f} s)" if times else ""))
t.append("")
t.append(f"summary: {os.path.join(out, 'summary.json')}; logs: {logs}")
text = "\n".join(t) + "\n"
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write(text)
print(text, end="")
sys.exit(0 if overall == "pass" else 3 if overall == "no_gpu" else 1)
PY
}

# The Python package with its CUDA backend, on that machine's Python: configured and built from
# the source tree this script sits in (scripts/..; a bundle's own copy has none, and skips), with
# the bundle's Eigen, in the background and niced while the CUDA tests run (PYTHON_BUILD_JOBS, 8).
python_build_start() {
  py_build_pid="" py_root=""
  local why="" nvcc eigen_cfg
  nvcc="$(command -v nvcc || true)"
  [[ -n "$nvcc" || ! -x /usr/local/cuda/bin/nvcc ]] || nvcc=/usr/local/cuda/bin/nvcc
  if [[ "${DEVICE_CHECK_PYTHON:-1}" != 1 ]]; then why="DEVICE_CHECK_PYTHON=0"
  elif [[ ! -f "$repo/python/CMakeLists.txt" ]]; then why="no source tree beside this script ($repo/python)"
  elif [[ ! -f "$dir/eigen3.tar.gz" ]]; then why="the bundle has no eigen3.tar.gz"
  elif ! command -v cmake >/dev/null 2>&1; then why="no cmake"
  elif [[ -z "$nvcc" ]]; then why="no nvcc"
  elif ! python3 -c "import nanobind" >/dev/null 2>&1; then why="python3 has no nanobind"
  fi
  if [[ -n "$why" ]]; then
    skip python.build python "$why"
    return 0
  fi
  py_root="$(mktemp -d "${TMPDIR:-/tmp}/rlk-python.XXXXXX")"
  mkdir -p "$py_root/eigen" "$py_root/site"
  tar -xzf "$dir/eigen3.tar.gz" -C "$py_root/eigen"
  eigen_cfg="$(dirname "$(find "$py_root/eigen" -name Eigen3Config.cmake | head -1)")"
  local generator=() py_cuda=ON
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  # DEVICE_CHECK_PYTHON_CUDA=0: the module without its CUDA backend (to try these stages without a GPU)
  [[ "${DEVICE_CHECK_PYTHON_CUDA:-1}" == 1 ]] || py_cuda=OFF
  stage python.build python "${PYTHON_BUILD_TIMEOUT_S:-330}" nice -n 19 bash -c '
    cmake -S "$1" -B "$2" "${@:7}" -DCMAKE_BUILD_TYPE=Release -DRLK_BUILD_TESTS=OFF -DRLK_BUILD_EXAMPLES=OFF \
      -DRLK_BUILD_BENCHMARKS=OFF -DRLK_HEADER_CHECK=OFF -DRLK_NATIVE_ARCH=OFF -DRLK_ENABLE_CUDA=ON \
      -DRLK_PYTHON_CUDA="$6" -DCMAKE_CUDA_COMPILER="$3" -DCMAKE_CUDA_ARCHITECTURES=90 -DEigen3_DIR="$4" \
      -DPython_EXECUTABLE="$(command -v python3)" &&
    cmake --build "$2" --target _rlkernels --parallel "$5" &&
    PYTHONPATH="$2/python" python3 -c "import rlkernels; print(\"rlkernels imports; has_cuda =\", rlkernels.has_cuda)"
  ' _ "$repo" "$py_root/build" "$nvcc" "$eigen_cfg" "${PYTHON_BUILD_JOBS:-8}" "$py_cuda" "${generator[@]}" &
  py_build_pid=$!
}

# After the env benchmarks: the package's pytest suite (the GPU tests among it) and the env-steps/s
# of a Python loop on CUDA (benchmarks/python_throughput.py), once the module has built.
run_python() {
  [[ -n "$py_build_pid" ]] || return 0
  wait "$py_build_pid"
  if ! grep -q $'^python.build\tpass' "$records"; then
    skip python.tests python "the module did not build (logs/python.build.log)"
    skip python.throughput python "the module did not build (logs/python.build.log)"
    return 0
  fi
  local wheels=("$dir"/wheels/*.whl)
  if [[ -f "${wheels[0]}" ]]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$py_root/site" \
      "${wheels[@]}" >"$logs/python.wheels.log" 2>&1 || echo "  (installing the bundle's wheels failed: logs/python.wheels.log)"
  fi
  local path="$py_root/build/python:$py_root/site"
  stage python.tests python 180 env PYTHONPATH="$path" OMP_NUM_THREADS=4 \
    python3 -m pytest -q -rs -p no:cacheprovider "$repo/python/tests"
  stage python.throughput python 90 env PYTHONPATH="$path" python3 "$repo/benchmarks/python_throughput.py" \
    --backend cuda --envs CartPole-v1,MinAtar/Breakout-v1,Hopper-v5 --sizes 65536,1048576 --min-time 0.2
}

run_main() {
  run_started=$SECONDS
  local script_dir
  script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  dir="${1:-}"
  if [[ -z "$dir" ]]; then
    # The copy of this script inside a bundle runs that bundle.
    if [[ -f "$script_dir/manifest.json" ]]; then dir="$script_dir"; else dir="$repo/build/device-bundle"; fi
  fi
  [[ "$dir" = /* ]] || dir="$PWD/$dir"
  if [[ ! -f "$dir/manifest.json" ]]; then
    echo "error: $dir is not a device-check bundle (no manifest.json); make one with: scripts/device_check.sh prepare" >&2
    return 2
  fi
  if grep -q '"compile_only": true' "$dir/manifest.json"; then
    echo "error: $dir was prepared with PREPARE_COMPILE_ONLY=1 (unoptimised PTX, a compile check): prepare a bundle to run without it" >&2
    return 2
  fi
  out="${2:-${OUT:-$dir/results}}"
  [[ "$out" = /* ]] || out="$PWD/$out"
  local binaries_dir=""
  # Into the device tool's $OUT, which brings back a few files only: the logs as one archive.
  local pack="${DEVICE_CHECK_PACK:-}"
  if [[ -z "$pack" ]]; then
    if [[ -z "${2:-}" && -n "${OUT:-}" ]]; then pack=1; else pack=0; fi
  fi
  logs="$out/logs"
  rm -rf "$logs" "$out/summary.json" "$out/summary.txt" "$out/logs.tar.gz"
  mkdir -p "$logs" || return 2
  records="$logs/stages.tsv"
  : >"$records"
  budget="${RUN_BUDGET_S:-450}"
  deadline=$((SECONDS + budget))
  echo "== device check: bundle $dir, results in $out (time budget $budget s)"

  local problem=""
  if [[ "${DEVICE_CHECK_FORCE:-0}" == 1 ]]; then
    echo "DEVICE_CHECK_FORCE=1: running every stage without looking for a GPU"
  else
    problem="$(gpu_problem)"
  fi
  if [[ -n "$problem" ]]; then
    printf 'gpu_probe\tno_gpu\t0\t\tprobe\n' >>"$records"
    echo "$problem" >"$logs/gpu_probe.log"
    write_summary no_gpu "$problem" || true
    echo "no GPU: $problem. Nothing was run; summary: $out/summary.json"
    return 3
  fi
  printf 'gpu_probe\tpass\t0\t0\tprobe\n' >>"$records"
  if [[ -f "$logs/nvidia-smi.txt" ]]; then sed -n '2,$p' "$logs/nvidia-smi.txt" | head -3; fi

  # A packed bundle (prepare's default): the binaries unpacked into a temporary folder (not under
  # OUT, whose files come back), next to links to the bundle's other files; DIR becomes that folder.
  if [[ ! -d "$dir/tests" && -f "$dir/binaries.tar.gz" ]]; then
    binaries_dir="$(mktemp -d "${TMPDIR:-/tmp}/rlk-device-bundle.XXXXXX")"
    if ! tar -xzf "$dir/binaries.tar.gz" -C "$binaries_dir"; then
      echo "error: unpacking $dir/binaries.tar.gz into $binaries_dir failed" >&2
      rm -rf "$binaries_dir"
      return 2
    fi
    local f
    for f in "$dir"/*; do
      [[ -e "$binaries_dir/$(basename "$f")" ]] || ln -s "$f" "$binaries_dir/$(basename "$f")"
    done
    echo "== unpacked $dir/binaries.tar.gz into $binaries_dir"
    dir="$binaries_dir"
  fi
  # The tests' golden data: DIR/reference.tar.gz unpacked into a temporary folder (not under OUT,
  # whose files come back), or DIR/reference.
  refdir="$dir/reference"
  local unpacked=""
  if [[ ! -d "$refdir" && -f "$dir/reference.tar.gz" ]]; then
    unpacked="$(mktemp -d "${TMPDIR:-/tmp}/rlk-device-check.XXXXXX")"
    tar -xzf "$dir/reference.tar.gz" -C "$unpacked" && refdir="$unpacked/reference"
  fi
  echo "== libraries"
  find_toolkit_libraries
  local t0=$SECONDS lib_status=pass
  check_bundle_libraries "$dir" "$logs/ldd.txt" >"$logs/libraries.log" 2>&1 || lib_status=fail
  sed 's/^/  /' "$logs/libraries.log"
  printf 'libraries\t%s\t%s\t\tlibraries\n' "$lib_status" "$((SECONDS - t0))" >>"$records"
  echo "== Python package: building the module with its CUDA backend (background, niced)"
  python_build_start
  echo "== CUDA tests (${TEST_JOBS:-4} at a time)"
  run_tests
  echo "== env benchmarks"
  run_env_benchmarks
  echo "== Python package: pytest and a Python loop on CUDA"
  run_python
  echo "== trainers"
  run_trainers
  echo "== compute-sanitizer"
  run_sanitizers
  echo "== other CUDA benchmarks"
  run_kernel_benchmarks

  echo
  local status=0
  write_summary pass || status=1  # the summary decides: every stage passed or was skipped
  if ((pack)); then
    tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$logs"
  fi
  [[ -z "$unpacked" ]] || rm -rf "$unpacked"
  [[ -z "$binaries_dir" ]] || rm -rf "$binaries_dir"
  [[ -z "${py_root:-}" ]] || rm -rf "$py_root"
  return "$status"
}

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${1:-}" in
  prepare)
    shift
    (($# <= 1)) || usage
    (set -e; prepare_main "$@")
    ;;
  run)
    shift
    (($# <= 2)) || usage
    run_main "$@"
    ;;
  --summarize)
    [[ $# -eq 2 ]] || usage
    summarize "$2"
    ;;
  *) usage ;;
esac
