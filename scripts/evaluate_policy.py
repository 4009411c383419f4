#!/usr/bin/env python3
"""Evaluate a MuJoCo env's policy file in Gymnasium's own env (MuJoCo's C library) and in ours.

The policy (a file from ``train_ppo --export-policy``, ``train_td3 --export-policy`` or
``save_policy``: rlkernels/algorithms/policy_file.hpp) acts deterministically, in float64, for
``--episodes`` episodes; episode k resets with seed ``--seed + k`` in both engines (the engines
draw their reset noise differently, so the figures agree as statistics, not episode by episode).

Gymnasium's figures: the mean and standard deviation of the return, the mean length, and, where
the env's info has ``x_velocity`` (the locomotion envs), the mean x velocity: per episode the mean
of ``info["x_velocity"]`` over its steps, then the mean over the episodes (for Humanoid-v5, the
mass centre's; for the others, the torso's or root's; Gymnasium's definitions). rlkernels': the
return and length of the same number of episodes on its Python package (``--engine`` picks one).

    scripts/evaluate_policy.py tests/reference/mujoco_humanoid_v5_policy.txt --episodes 100

Needs the rlkernels package (``pip install .``, or PYTHONPATH=build/<preset>/python) and
gymnasium with mujoco. Prints one line per engine.
"""

from __future__ import annotations

import argparse
import math
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("policy", help="a policy file of a MuJoCo env (its first lines name the env)")
    p.add_argument("--episodes", type=int, default=100, help="episodes per engine (default 100)")
    p.add_argument("--seed", type=int, default=0, help="episode k resets with seed SEED + k (default 0)")
    p.add_argument("--engine", choices=("both", "gymnasium", "rlkernels"), default="both",
                   help="which engine to fly the policy in (default both)")
    args = p.parse_args(argv)
    if args.episodes < 1:
        p.error(f"--episodes must be >= 1, got {args.episodes}")
    return args


def _summary(returns, lengths, x_velocities=None) -> dict:
    n = len(returns)
    mean = sum(returns) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in returns) / n)
    out = {"episodes": n, "mean_return": mean, "std_return": std, "min_return": min(returns),
           "mean_length": sum(lengths) / n}
    if x_velocities:
        out["mean_x_velocity"] = sum(x_velocities) / len(x_velocities)
    return out


def evaluate_gymnasium(policy, episodes: int, seed: int) -> dict:
    """The policy in Gymnasium's env of its id: returns, lengths and mean x velocities."""
    import gymnasium as gym
    import numpy as np

    env = gym.make(policy.env)
    returns, lengths, xvels = [], [], []
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        total, length, xv, done = 0.0, 0, [], False
        while not done:
            action = policy(np.asarray(obs, dtype=np.float64)[None, :])[0]
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            length += 1
            if "x_velocity" in info:
                xv.append(float(info["x_velocity"]))
            done = terminated or truncated
        returns.append(total)
        lengths.append(length)
        if xv:
            xvels.append(sum(xv) / len(xv))
    env.close()
    return _summary(returns, lengths, xvels)


def evaluate_rlkernels(policy, episodes: int, seed: int) -> dict:
    """The policy in rlkernels' env of its id (float64, serial): `episodes` envs, the first episode of each."""
    import numpy as np

    import rlkernels

    returns, lengths = [], []
    for k in range(episodes):  # one env per seed, as Gymnasium's episodes above
        envs = rlkernels.make_vec(policy.env, num_envs=1, seed=seed + k, backend="serial", dtype="float64")
        obs, _ = envs.reset(seed=seed + k)
        total, length, done = 0.0, 0, False
        while not done:
            obs, reward, terminated, truncated, _ = envs.step(policy(np.asarray(obs)))
            total += float(reward[0])
            length += 1
            done = bool(terminated[0] or truncated[0])
        envs.close()
        returns.append(total)
        lengths.append(length)
    return _summary(returns, lengths)


def _line(name: str, r: dict, seconds: float) -> str:
    text = (f"{name}: {r['episodes']} episodes, return {r['mean_return']:.1f} +- {r['std_return']:.1f} "
            f"(min {r['min_return']:.1f}), length {r['mean_length']:.1f}")
    if "mean_x_velocity" in r:
        text += f", x velocity {r['mean_x_velocity']:.3f} m/s"
    return text + f" ({seconds:.1f} s)"


def main(argv=None) -> int:
    args = parse_args(argv)
    import rlkernels

    policy = rlkernels.load_policy(args.policy)
    if args.engine in ("both", "gymnasium"):
        t = time.perf_counter()
        r = evaluate_gymnasium(policy, args.episodes, args.seed)
        print(_line(f"gymnasium {policy.env}", r, time.perf_counter() - t), flush=True)
    if args.engine in ("both", "rlkernels"):
        t = time.perf_counter()
        r = evaluate_rlkernels(policy, args.episodes, args.seed)
        print(_line(f"rlkernels {policy.env}", r, time.perf_counter() - t), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
