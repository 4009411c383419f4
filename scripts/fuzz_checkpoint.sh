#!/usr/bin/env bash
# scripts/fuzz_checkpoint.sh [SECONDS]: fuzzes the checkpoints with libFuzzer under
# AddressSanitizer and UndefinedBehaviorSanitizer for SECONDS in all (default 60), half each:
# - the loader (tests/fuzz/checkpoint_fuzz.cpp): damaged and hostile files;
# - the rotating directory (tests/fuzz/checkpoint_directory_fuzz.cpp): programs of saves, resumes
#   (from latest() or any file, told or not), runs from scratch, and saves cut short by a crash
#   at each stage (a forked child that ends itself there, leaving a half-written temporary file
#   when it dies before the rename), checked against the true history of the runs.
#
# It installs clang and libFuzzer if missing (Debian/Ubuntu: clang and libclang-rt-dev, which holds
# libclang_rt.fuzzer; llvm for symbolized reports), builds the fuzz targets and a seed-corpus generator (valid checkpoint files
# written by the library, and near misses), and runs libFuzzer with -max_total_time. It exits
# non-zero on any finding (crash, leak, sanitizer report, timeout); the reproducer is left in the
# work directory (crash-*, leak-*, timeout-*; replay with `$WORK/checkpoint_fuzz FILE` or
# `$WORK/checkpoint_directory_fuzz FILE`).
#
# Environment overrides: FUZZ_DIR (work directory, default build/fuzz-checkpoint), CXX_FUZZ
# (clang++), FUZZ_JOBS (parallel fuzzing processes, default 1), FUZZ_ARGS (extra libFuzzer flags),
# RLK_FUZZ_TMP (where the directory fuzzer makes its directories; default /dev/shm, else the
# system's temporary directory).
set -euo pipefail
seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${FUZZ_DIR:-$root/build/fuzz-checkpoint}"
cxx="${CXX_FUZZ:-clang++}"
jobs="${FUZZ_JOBS:-1}"

# A compiler that links -fsanitize=fuzzer; otherwise install Debian's clang and libFuzzer.
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n' >"$probe/p.cpp"
if ! command -v "$cxx" >/dev/null 2>&1 || ! "$cxx" -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
  echo "== installing clang and libFuzzer (clang, libclang-rt-dev; llvm for llvm-symbolizer)"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends clang libclang-rt-dev llvm
  cxx=clang++
  "$cxx" -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p"
fi

mkdir -p "$work/corpus" "$work/seeds"
flags=(-std=c++17 -g -O1 -fno-omit-frame-pointer -I"$root/include")
echo "== building ($("$cxx" --version | head -1))"
"$cxx" "${flags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  "$root/tests/fuzz/checkpoint_fuzz.cpp" -o "$work/checkpoint_fuzz"
"$cxx" "${flags[@]}" -fsanitize=address,undefined -fno-sanitize-recover=undefined -DRLK_CHECKPOINT_FUZZ_SEEDS \
  "$root/tests/fuzz/checkpoint_fuzz.cpp" -o "$work/checkpoint_fuzz_seeds"
"$cxx" "${flags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  "$root/tests/fuzz/checkpoint_directory_fuzz.cpp" -o "$work/checkpoint_directory_fuzz"
"$work/checkpoint_fuzz_seeds" "$work/seeds"

loader_seconds=$(( (seconds + 1) / 2 ))
directory_seconds=$(( seconds - loader_seconds ))
(( directory_seconds >= 1 )) || directory_seconds=1
cd "$work"
mkdir -p corpus-directory
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
parallel=()
[ "$jobs" -le 1 ] || parallel=(-jobs="$jobs" -workers="$jobs")
status=0
echo "== fuzzing the loader for ${loader_seconds} s"
# The corpus directory keeps what earlier runs found; the seeds are read alongside it.
# -malloc_limit_mb: inputs are at most 4 KiB, so any single allocation over 64 MiB is a finding
# (the loader must never allocate more than its input justifies).
./checkpoint_fuzz corpus seeds -max_total_time="$loader_seconds" -max_len=4096 -rss_limit_mb=2048 -malloc_limit_mb=64 \
  -timeout=10 -print_final_stats=1 "${parallel[@]}" ${FUZZ_ARGS:-} || status=$?
if [ "$status" -eq 0 ]; then
  echo "== fuzzing the rotating directory for ${directory_seconds} s"
  # Inputs are programs of up to 23 steps (two bytes each after the first); -len_control=0 tries
  # long programs from the start.
  ./checkpoint_directory_fuzz corpus-directory -max_total_time="$directory_seconds" -max_len=48 -len_control=0 \
    -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 "${parallel[@]}" ${FUZZ_ARGS:-} || status=$?
fi
if [ "$status" -ne 0 ]; then
  echo "== FINDING: libFuzzer exited with $status; reproducers in $work:" >&2
  ls "$work" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' >&2 || true
  exit 1
fi
echo "== no findings in ${seconds} s ($(ls corpus | wc -l) loader and $(ls corpus-directory | wc -l) directory corpus files)"
