#!/usr/bin/env bash
# scripts/device_check.sh: the checks that need an NVIDIA GPU, in one go.
#
# Usage (on a machine with an NVIDIA GPU, the CUDA Toolkit, CMake >= 3.24 and libbenchmark-dev):
#   scripts/device_check.sh                         # from anywhere inside the repository
#   scripts/device_check.sh --summarize FILE.csv    # only print the summary table of a benchmark CSV
#                                                   # (any *_bench_* binary's --benchmark_format=csv)
#
# It
#   1. prints the GPUs (nvidia-smi -L);
#   2. configures build-device/ with -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
#      -DRLK_RUN_CUDA_TESTS=ON and builds everything with all cores;
#   3. runs the CUDA tests: ctest -L cuda --output-on-failure (fails if no test carries the label);
#   4. runs build-device/benchmarks/{cartpole,classic_control,grid,gae,replay,losses,mlp}_bench_cuda, writing
#      build-device/<name>_cuda.csv;
#   5. prints env-steps/s per row and N, and per env the vec_env/limit, vec_env/virtual and
#      checked/unchecked ratios;
#   6. trains PPO on CartPole-v1 with train_ppo_cuda for 5 seeds and prints each seed's time to a
#      mean return of 475, env steps/s, updates/s and its 100-episode evaluation;
#   7. trains SAC (10k steps), TD3 and DQN (their presets) once each on CUDA and prints time and evaluation;
#   8. runs benchmarks/compare.py --quick with the CUDA rows (COMPARE=0 leaves it out) and prints its tables.
# Expected time on a 16-core H200 box: about 3-5 minutes, most of it compiling.
#
# Environment overrides: BUILD_DIR (build-device), CUDA_ARCH (90), CTEST_JOBS (4), COMPARE (1),
# BENCH_ARGS (extra arguments for the benchmark binary, e.g. "--benchmark_min_time=0.5").
set -euo pipefail

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

if [[ "${1:-}" == "--summarize" ]]; then
  [[ $# -eq 2 ]] || { echo "usage: $0 --summarize FILE.csv" >&2; exit 2; }
  summarize "$2"
  exit 0
fi
[[ $# -eq 0 ]] || { echo "usage: $0 [--summarize FILE.csv]" >&2; exit 2; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-build-device}"
[[ "$build" = /* ]] || build="$repo/$build"
jobs="$(nproc 2>/dev/null || echo 4)"

echo "== GPUs"
nvidia-smi -L

echo "== configure ($build)"
cuda_compiler=()
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_compiler=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)  # nvcc installed but not on PATH
fi
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
  -DRLK_RUN_CUDA_TESTS=ON "${cuda_compiler[@]}"

echo "== build (-j $jobs)"
cmake --build "$build" --parallel "$jobs"

echo "== CUDA tests"
ctest --test-dir "$build" -L cuda --output-on-failure --no-tests=error --timeout 300 --parallel "${CTEST_JOBS:-4}"

for name in cartpole_bench classic_control_bench grid_bench gae_bench replay_bench losses_bench mlp_bench; do
  bench="$build/benchmarks/${name}_cuda"
  csv="$build/${name}_cuda.csv"
  if [[ ! -x "$bench" ]]; then
    echo "error: $bench was not built (was nvcc found? see the configure output above)" >&2
    exit 1
  fi
  echo "== CUDA benchmark ($bench)"
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of arguments on purpose
  timeout 600 "$bench" --benchmark_out="$csv" --benchmark_out_format=csv ${BENCH_ARGS:-}
done

for name in cartpole_bench classic_control_bench grid_bench gae_bench replay_bench losses_bench mlp_bench; do
  echo "== summary ($build/${name}_cuda.csv)"
  summarize "$build/${name}_cuda.csv"
done

echo "== PPO on CUDA: wall-clock time for CartPole-v1 to reach a mean return of 475 (5 seeds)"
# Same measurement as benchmarks/algorithms/ppo_bench.cpp on the host (the preset of train_ppo).
for seed in 1 2 3 4 5; do
  timeout 300 "$build/examples/train_ppo_cuda" --backend cuda --env CartPole-v1 --seed "$seed" --stop-at 475 \
    --no-plot --quiet --out "$build" | grep -E "^(trained|reached|evaluation)" | sed "s/^/seed $seed: /"
done

echo "== SAC, TD3 and DQN on CUDA (seed 1): the presets, trained and evaluated"
# Small networks and batches are launch-bound on a GPU; these show the CUDA path trains and how
# long it takes, beside the host numbers in docs/training.md.
timeout 300 "$build/examples/train_sac_cuda" --backend cuda --total-steps 10000 --seed 1 --no-plot --quiet --out "$build" |
  grep -E "^(trained|evaluation)" | sed "s/^/sac 10k: /"
timeout 300 "$build/examples/train_td3_cuda" --backend cuda --seed 1 --no-plot --quiet --out "$build" |
  grep -E "^(trained|evaluation)" | sed "s/^/td3 20k: /"
timeout 300 "$build/examples/train_dqn_cuda" --backend cuda --seed 1 --no-plot --quiet --out "$build" |
  grep -E "^(trained|evaluation)" | sed "s/^/dqn 50k: /"

if [[ "${COMPARE:-1}" == "1" ]] && command -v python3 >/dev/null 2>&1; then
  echo "== benchmarks/compare.py --quick (ours on serial, OpenMP and CUDA, plus the Python baselines installed here)"
  # The comparison of issue 9 with the CUDA rows; results.json, results.md and plots in $build/compare.
  timeout 900 python3 "$repo/benchmarks/compare.py" --quick --no-build --skip-training --build-dir "$build" \
    --cuda-build-dir "$build" --out-dir "$build/compare" | sed -n '/^### Summary/,$p' || echo "compare.py failed"
fi
