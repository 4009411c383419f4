#!/usr/bin/env python3
"""Episode lengths and returns of Gymnasium's MuJoCo v5 envs under the uniform random policy, for
the statistical comparison in tests/envs/mujoco_envs_test.cpp (two-sample tests: rlkernels' envs,
with their own random streams, must be indistinguishable from these).

    pip install mujoco==3.12.0 gymnasium==1.4.0
    python3 tests/reference/mujoco_random_policy_stats.py   # writes tests/reference/mujoco_random_policy_stats.csv
    python3 tests/reference/mujoco_random_policy_stats.py InvertedPendulum-v5   # rewrites that env's rows only

Episode k resets with seed k and samples actions with action_space.seed(100000 + k): uniform on
the action space ([-1, 1]^nu; Pusher [-2, 2]^7), as action_space.sample() draws them.
"""
import os
import sys

import gymnasium as gym
import mujoco
import numpy as np

assert mujoco.__version__ == "3.12.0", f"the reference is mujoco 3.12.0, found {mujoco.__version__}"
assert gym.__version__ == "1.4.0", f"the reference is gymnasium 1.4.0, found {gym.__version__}"

# Enough episodes for the two-sample tests to see a small change, few enough that each env costs the
# C++ test a minute at most: random Hopper, Walker2d and Humanoid episodes end after a few dozen
# steps, Ant's after ~160 on average (most by jumping above the healthy z range), HalfCheetah's and
# HumanoidStandup's all run 1000 steps.
EPISODES = {"Hopper-v5": 2000, "Walker2d-v5": 2000, "HalfCheetah-v5": 800,
            "Ant-v5": 4000, "Humanoid-v5": 2000, "HumanoidStandup-v5": 400,
            "InvertedPendulum-v5": 2000, "InvertedDoublePendulum-v5": 2000, "Swimmer-v5": 800,
            "Reacher-v5": 2000, "Pusher-v5": 2000}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mujoco_random_policy_stats.csv")
only = sys.argv[1:]
for env_id in only:
    assert env_id in EPISODES, f"unknown env {env_id}; choose from {', '.join(EPISODES)}"
kept = []  # with env ids given, the other envs' rows stay as they are
if only and os.path.exists(out):
    with open(out) as f:
        kept = [line for line in f.readlines()[1:] if line.split(",", 1)[0] not in only]
with open(out, "w") as f:
    f.write("env,episode,length,return,terminated\n")
    for line in kept:
        f.write(line)
    for env_id, episodes in EPISODES.items():
        if only and env_id not in only:
            continue
        env = gym.make(env_id)
        for k in range(episodes):
            env.reset(seed=k)
            env.action_space.seed(100000 + k)
            total, length = 0.0, 0
            while True:
                _, r, terminated, truncated, _ = env.step(env.action_space.sample())
                total += float(r)
                length += 1
                if terminated or truncated:
                    break
            f.write(f"{env_id},{k},{length},{total!r},{int(terminated)}\n")
        env.close()
        print(env_id, "done")
print("wrote", out)
