#!/usr/bin/env bash
# Records the golden data of L2F-Crazyflie-v0 from the published `l2f` simulator (PyPI l2f 2.0.18,
# the configuration `l2f.Environment()` builds). `pip install l2f` compiles for about half an hour;
# the environment is header-only, so this script downloads the source package and compiles the
# small driver l2f_record.cpp against its headers instead, strictly (-O2 -ffp-contract=off; the
# wheel itself is built with -Ofast -march=native, which changes the last bits of most steps).
#
#   bash tests/reference/l2f_record.sh [output directory, default tests/reference]
#
# Needs g++ (C++17) and pip. Writes l2f_{resets,steps,initial,observations,steps_float,dr_samples,dr_episodes,dr_steps}.f64.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(cd "${1:-$here}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$work" "l2f==2.0.18"
tar -xzf "$work"/l2f-2.0.18.tar.gz -C "$work"
src="$work/l2f-2.0.18"

g++ -std=c++17 -O2 -ffp-contract=off -fno-fast-math \
  -I "$src/l2f" -I "$src/external/rl-tools/include" \
  "$here/l2f_record.cpp" -o "$work/l2f_record"
"$work/l2f_record" "$out"
