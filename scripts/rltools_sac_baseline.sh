#!/usr/bin/env bash
# scripts/rltools_sac_baseline.sh: the external baseline for off-policy training speed. Builds RLtools'
# own SAC Pendulum-v1 benchmark program from a local RLtools checkout and times it the way RLtools does.
#
# Usage:
#   scripts/rltools_sac_baseline.sh RLTOOLS_CHECKOUT [BUILD_DIR]
#     RLTOOLS_CHECKOUT  a checkout (or `git archive` export) of https://github.com/rl-tools/rl-tools
#     BUILD_DIR         where to configure/build (default /tmp/rltools-baseline-build); never inside this repo
#
# Needs: g++ (C++17), CMake >= 3.19, OpenBLAS (Debian: apt-get install libopenblas-dev), taskset (util-linux).
# Needs no network: RLtools' optional dependencies (JSON, HDF5, zlib, TensorBoard, CLI11, CUDA, MKL) are
# switched off so that CMake never tries FetchContent.
#
# Measured with RLtools commit 9acdf5c83cf2e7f2871cc4c37d002d5e3666d723 (2026-02-08, "fixing windows CI
# issues", branch main); other commits may move the files named below.
#
# What it does (as RLtools' own scripts do):
#   1. configures RLtools with CMAKE_BUILD_TYPE=Release; CMake's FindBLAS finds OpenBLAS and RLtools then
#      defines RL_TOOLS_BACKEND_ENABLE_OPENBLAS + RL_TOOLS_BACKEND_ENABLE_BLAS (cmake/autodetect/tier1-blas.cmake);
#   2. builds their target rl_environments_pendulum_sac_benchmark
#      (src/rl/environments/pendulum/sac/cpu/CMakeLists.txt), i.e. training.cpp compiled with -DBENCHMARK and
#      -O3 -DNDEBUG -Ofast -march=native -O3 -ffast-math, linked against libopenblas:
#      SAC, Pendulum-v1, STEP_LIMIT = 10000 environment steps, seed 0, no evaluation, no logging;
#   3. runs it RUNS times (default 5) with OPENBLAS_NUM_THREADS=1 (and MKL_NUM_THREADS=1), pinned with
#      taskset to CPU $CPU (default 1). The program itself prints "Time: X s": the steady_clock time from
#      just after network initialisation until the 10000th step returns
#      (include/rl_tools/rl/loop/steps/timing/operations_cpu.h). The script collects these and prints min/median;
#   4. (EVAL=1, default) builds their target rl_environments_pendulum_sac_blas (the same training, plus an
#      evaluation of 10 deterministic episodes every 1000 steps) and runs it once to show the returns.
#
# Environment overrides: RUNS (5), CPU (1, the core for taskset; empty = no pinning), EVAL (1), JOBS (1).
set -euo pipefail

SRC="${1:?usage: $0 RLTOOLS_CHECKOUT [BUILD_DIR]}"
BUILD="${2:-/tmp/rltools-baseline-build}"
RUNS="${RUNS:-5}"
CPU="${CPU-1}"
EVAL="${EVAL:-1}"
JOBS="${JOBS:-1}"

SRC="$(cd "$SRC" && pwd)"
[[ -f "$SRC/src/rl/environments/pendulum/sac/cpu/training.cpp" ]] || {
  echo "error: $SRC does not look like an RLtools checkout (no src/rl/environments/pendulum/sac/cpu/training.cpp)" >&2
  exit 1
}
if git -C "$SRC" rev-parse HEAD >/dev/null 2>&1; then
  echo "RLtools commit: $(git -C "$SRC" rev-parse HEAD)"
else
  echo "RLtools commit: unknown (not a git work tree; measured reference: 9acdf5c83cf2e7f2871cc4c37d002d5e3666d723)"
fi
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores visible"
echo "compiler: $(c++ --version | head -1)"

mkdir -p "$BUILD"
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
  -DRL_TOOLS_DISABLE_JSON=ON -DRL_TOOLS_DISABLE_HDF5=ON -DRL_TOOLS_DISABLE_ZLIB=ON \
  -DRL_TOOLS_DISABLE_TENSORBOARD=ON -DRL_TOOLS_DISABLE_CLI11=ON -DRL_TOOLS_BACKEND_DISABLE_CUDA=ON \
  -DMKL_ROOT=/nonexistent >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 1; }
grep -q 'Found BLAS library' "$BUILD/configure.log" || {
  echo "error: CMake found no BLAS (install libopenblas-dev); see $BUILD/configure.log" >&2
  exit 1
}
grep 'Found BLAS library' "$BUILD/configure.log"

cmake --build "$BUILD" -j "$JOBS" --target rl_environments_pendulum_sac_benchmark -- VERBOSE=1 >"$BUILD/build.log" 2>&1 \
  || { tail -50 "$BUILD/build.log"; exit 1; }
echo "compile command:"
grep -E 'c\+\+ .*-DBENCHMARK.*-c ' "$BUILD/build.log" | sed -E 's/ -M[DTF] [^ ]*//g; s/^/  /' \
  || echo "  (up to date; see the flags in $BUILD/src/rl/environments/pendulum/sac/cpu/CMakeFiles/rl_environments_pendulum_sac_benchmark.dir/flags.make)"
BIN="$BUILD/src/rl/environments/pendulum/sac/cpu/rl_environments_pendulum_sac_benchmark"
echo "linked BLAS: $(ldd "$BIN" | grep -Eo '(libopenblas|libblas|libmkl)[^ ]*' | head -1 || true)"

PIN=()
[[ -n "$CPU" ]] && PIN=(taskset -c "$CPU")
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1

times=()
for ((i = 1; i <= RUNS; i++)); do
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  out="$(cd "$BUILD" && "${PIN[@]}" "$BIN" 2>&1)"
  t="$(sed -nE 's/^Time: ([0-9.]+)s$/\1/p' <<<"$out" | tail -1)"
  [[ -n "$t" ]] || { echo "error: no 'Time:' line in the output:"; echo "$out"; exit 1; }
  times+=("$t")
  echo "run $i: ${t} s   (loadavg before: $load)"
done
printf '%s\n' "${times[@]}" | sort -g | awk '
  { v[NR] = $1 }
  END { med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
        printf "SAC Pendulum-v1, 10000 env steps, OpenBLAS 1 thread: min %.3f s, median %.3f s, max %.3f s (n=%d)\n",
               v[1], med, v[NR], NR }'

if [[ "$EVAL" == "1" ]]; then
  cmake --build "$BUILD" -j "$JOBS" --target rl_environments_pendulum_sac_blas >>"$BUILD/build.log" 2>&1 \
    || { tail -50 "$BUILD/build.log"; exit 1; }
  echo "evaluation run (rl_environments_pendulum_sac_blas, seed 0, 10 deterministic episodes / 1000 steps):"
  (cd "$BUILD" && "${PIN[@]}" "$BUILD/src/rl/environments/pendulum/sac/cpu/rl_environments_pendulum_sac_blas" 2>&1) \
    | grep -E '^(Step|Time)' | sed 's/^/  /'
fi
