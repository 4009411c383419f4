#!/usr/bin/env python3
"""Env-steps/s of rlkernels' Python package on one backend: a Python loop over ``step``.

    python3 benchmarks/python_throughput.py --backend cuda --envs CartPole-v1,Hopper-v5 --sizes 65536,1048576

The loop is the one a training script runs: actions made once per batch size (on the GPU with torch
for ``--backend cuda``, so that the step reads them in place; NumPy on the host backends), then
``envs.step(actions)`` over and over; on CUDA the clock is read after a device synchronisation. One
JSON line per (env, N) with the median of ``--repeats`` timed stretches, then a table. The
scripts/device_check.sh run stage ``python.throughput`` runs it on a GPU machine; compare.py holds
the host rows beside Gymnasium and EnvPool.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np


def actions_for(envs, n: int, backend: str, torch):
    rng = np.random.default_rng(12345 + n)
    space = envs.single_action_space
    if hasattr(space, "n"):
        a = rng.integers(0, int(space.n), size=n).astype(np.int32)
    else:
        a = rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(envs.dtype)
    if backend == "cuda":
        return torch.from_numpy(a).cuda()
    return a


def measure(env_id: str, n: int, backend: str, dtype: str, repeats: int, min_time: float, torch) -> dict:
    import rlkernels

    envs = rlkernels.make_vec(env_id, n, seed=1, backend=backend, dtype=dtype, final_obs="array")
    envs.reset(seed=1)
    actions = [actions_for(envs, n, backend, torch) for _ in range(2)]
    sync = torch.cuda.synchronize if backend == "cuda" else (lambda: None)
    for k in range(5):  # warm-up: first launches, page faults
        envs.step(actions[k % 2])
    sync()
    rates = []
    k = 0
    for _ in range(repeats):
        steps = 0
        start = time.perf_counter()
        while True:
            envs.step(actions[k % 2])
            k += 1
            steps += 1
            if steps % 8 == 0 or steps == 1:
                sync()
                elapsed = time.perf_counter() - start
                if elapsed >= min_time:
                    break
        rates.append(steps * n / elapsed)
    envs.close()
    return {"env": env_id, "num_envs": n, "backend": backend, "dtype": dtype,
            "env_steps_per_s": statistics.median(rates), "repeats": rates}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="cuda", choices=["cuda", "openmp", "serial"])
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--envs", default="CartPole-v1,MinAtar/Breakout-v1,Hopper-v5,HalfCheetah-v5")
    p.add_argument("--sizes", default="4096,65536,1048576")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--min-time", type=float, default=0.2)
    args = p.parse_args()
    torch = None
    if args.backend == "cuda":
        import torch  # noqa: F811  (device actions, synchronisation)
        if not torch.cuda.is_available():
            print("python_throughput: --backend cuda needs a GPU that torch sees", file=sys.stderr)
            return 3
    rows = []
    for env_id in args.envs.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            try:
                row = measure(env_id, n, args.backend, args.dtype, args.repeats, args.min_time, torch)
            except Exception as e:  # noqa: BLE001  (a row that fails, e.g. out of memory, is reported)
                row = {"env": env_id, "num_envs": n, "backend": args.backend, "dtype": args.dtype,
                       "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(f"\nrlkernels from Python, backend={args.backend}, {args.dtype}: env-steps/s (median of {args.repeats})")
    for row in rows:
        value = f"{row['env_steps_per_s'] / 1e6:10.2f} M" if "env_steps_per_s" in row else row["error"]
        print(f"  {row['env']:<22} N={row['num_envs']:<9} {value}")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
