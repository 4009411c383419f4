#!/usr/bin/env bash
# Runs tests/envs/mujoco_envs_test.cpp (serial) with physics::step replaced by MuJoCo's mj_step
# (forward.hpp here), so that any difference from Gymnasium is the envs' and not the engine's:
# every comparison must then show 0 error. Needs g++, Catch2 and `pip install mujoco==3.12.0
# gymnasium==1.4.0`. Usage (from the repository root): tests/envs/mujoco_shadow/check.sh [catch args]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
mj=$(python3 -c "import mujoco, os; print(os.path.dirname(mujoco.__file__))")
assets=$(python3 -c "import gymnasium, os; print(os.path.dirname(gymnasium.__file__))")/envs/mujoco/assets
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/include/rlkernels" "$work/"
cp "$root/tests/envs/mujoco_shadow/forward.hpp" "$work/rlkernels/physics/forward.hpp"
printf '#define CATCH_CONFIG_MAIN\n#include <catch2/catch.hpp>\n' > "$work/main.cpp"
g++ -std=c++17 -O2 -ffp-contract=off -DRLK_BACKEND_SERIAL -DRLK_REFERENCE_DIR="\"$root/tests/reference\"" \
  -DASSETS="\"$assets\"" -I"$work" -I"$mj/include" "$root/tests/envs/mujoco_envs_test.cpp" "$work/main.cpp" \
  -o "$work/shadow_test" "$mj/libmujoco.so.3.12.0" -Wl,-rpath,"$mj"
"$work/shadow_test" "$@"
