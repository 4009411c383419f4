#!/usr/bin/env python3
"""Episode lengths and returns of Gymnasium's Walker2d-v5, Hopper-v5, Ant-v5, Reacher-v5, Pusher-v5
and Humanoid-v5 (and the Humanoid's mean x velocity) under a trained deterministic policy, for the
statistical comparison in tests/envs/mujoco_envs_test.cpp ("under a trained policy ..."):
rlkernels' envs, with their own reset streams, must be indistinguishable from these.

The policies are rlkernels policy files (rlkernels/algorithms/policy_file.hpp; docs/training.md,
"Exporting a policy") written by `train_ppo --export-policy` and committed next to this script:

    build/default/examples/train_ppo --env Walker2d-v5 --seed 1 --backend serial \
        --export-policy tests/reference/mujoco_walker2d_v5_policy.txt
    build/default/examples/train_ppo --env Hopper-v5 --seed 1 --backend serial \
        --export-policy tests/reference/mujoco_hopper_v5_policy.txt
    build/default/examples/train_ppo --env Ant-v5 --seed 3 --backend serial \
        --export-policy tests/reference/mujoco_ant_v5_policy.txt
    build/default/examples/train_ppo --env Reacher-v5 --seed 1 --backend serial \
        --export-policy tests/reference/mujoco_reacher_v5_policy.txt
    build/default/examples/train_ppo --env Pusher-v5 --seed 1 --backend serial \
        --export-policy tests/reference/mujoco_pusher_v5_policy.txt

(the presets, 1M steps: for the walkers CleanRL's ppo_continuous_action settings, 64-64 tanh
networks; for Ant the zoo's tuned Ant settings, 256-256 ReLU. The evaluation printed 2612 +- 906 for
Walker2d, 3607 +- 364 for Hopper and 3154 +- 932 for Ant over 100 episodes; Ant's seed 1 reached
only 1220, seed 3 is the best of docs/training.md's five; Reacher, the zoo's Reacher settings, 64-64
tanh, evaluated at -4.12 +- 1.87; Pusher, the zoo's MuJoCo defaults, 64-64 tanh, at -28.53 +- 5.49: its
wrist pushes the object, so these episodes have the capsule-cylinder contacts that random ones lack).

The action is computed here from the file in float64 as policy_file::act does (normalise and clip
the observation, the MLP, clip to the action bounds); the C++ test evaluates the same file. Episode
k resets with seed k; the policy is deterministic, so the reset noise is the only randomness.

    pip install mujoco==3.12.0 gymnasium==1.4.0
    python3 tests/reference/mujoco_trained_policy_stats.py   # writes tests/reference/mujoco_trained_policy_stats.csv
    python3 tests/reference/mujoco_trained_policy_stats.py Reacher-v5   # rewrites that env's rows only
"""
import os
import sys

import gymnasium as gym
import mujoco
import numpy as np

assert mujoco.__version__ == "3.12.0", f"the reference is mujoco 3.12.0, found {mujoco.__version__}"
assert gym.__version__ == "1.4.0", f"the reference is gymnasium 1.4.0, found {gym.__version__}"

HERE = os.path.dirname(os.path.abspath(__file__))
EPISODES = {"Walker2d-v5": 2000, "Hopper-v5": 2000, "Ant-v5": 2000, "Reacher-v5": 2000, "Pusher-v5": 2000,
            "Humanoid-v5": 1000}
POLICIES = {"Walker2d-v5": "mujoco_walker2d_v5_policy.txt", "Hopper-v5": "mujoco_hopper_v5_policy.txt",
            "Ant-v5": "mujoco_ant_v5_policy.txt", "Reacher-v5": "mujoco_reacher_v5_policy.txt",
            "Pusher-v5": "mujoco_pusher_v5_policy.txt", "Humanoid-v5": "mujoco_humanoid_v5_policy.txt"}
# Envs whose rows also record the episode's mean x velocity (the mean of info["x_velocity"] over its
# steps): the Humanoid's walking speed is part of what its policy is judged by (docs/training.md).
X_VELOCITY = ("Humanoid-v5",)


class Policy:
    """An rlkernels policy file (format version 1, or 2 with a clipped action)."""

    def __init__(self, path):
        with open(path) as f:
            lines = [l.split() for l in f]
        it = iter(lines)

        def numbers(t):
            return np.array([float.fromhex(x) for x in t], dtype=np.float64)

        header = next(it)
        assert header[0] == "rlkernels-policy" and header[1] in ("1", "2"), f"{path}: not an rlkernels policy file"
        self.env = next(it)[1]
        self.observation_size = int(next(it)[1])
        action = next(it)
        assert action[1] == "continuous", "only continuous policies here"
        # version 2 names the output map: PPO's Gaussian mean is clipped (version 1 always was)
        assert len(action) == 5 or action[5] == "clip", "only clipped (PPO) actions here"
        self.action_size = int(action[2])
        self.low, self.high = float.fromhex(action[3]), float.fromhex(action[4])
        norm = next(it)
        self.normalize = norm[1] == "1"
        self.clip, self.epsilon = float.fromhex(norm[2]), float.fromhex(norm[3])
        if self.normalize:
            self.mean, self.var = numbers(next(it)), numbers(next(it))
        mlp = next(it)
        layers, self.hidden, self.output = int(mlp[1]), mlp[2], mlp[3]
        self.layers = []
        for _ in range(layers):
            _, n_in, n_out = next(it)
            w = np.stack([numbers(next(it)) for _ in range(int(n_out))])
            b = numbers(next(it))
            assert w.shape == (int(n_out), int(n_in)) and b.shape == (int(n_out),)
            self.layers.append((w, b))

    @staticmethod
    def activate(name, z):
        return np.tanh(z) if name == "tanh" else np.maximum(z, 0.0) if name == "relu" else np.where(z > 0.0, z, np.expm1(np.minimum(z, 0.0))) if name == "elu" else z

    def __call__(self, obs):
        x = np.asarray(obs, dtype=np.float64)
        if self.normalize:
            x = np.clip((x - self.mean) / np.sqrt(self.var + self.epsilon), -self.clip, self.clip)
        for i, (w, b) in enumerate(self.layers):
            x = self.activate(self.output if i + 1 == len(self.layers) else self.hidden, w @ x + b)
        return np.clip(x, self.low, self.high)


def main():
    out = os.path.join(HERE, "mujoco_trained_policy_stats.csv")
    only = sys.argv[1:]
    for env_id in only:
        assert env_id in EPISODES, f"unknown env {env_id}; choose from {', '.join(EPISODES)}"
    kept = []  # with env ids given, the other envs' rows stay as they are
    if only and os.path.exists(out):
        with open(out) as f:
            kept = [line for line in f.readlines()[1:] if line.split(",", 1)[0] not in only]
    with open(out, "w") as f:
        f.write("env,episode,length,return,terminated,x_velocity\n")
        for line in kept:
            f.write(line if line.count(",") == 5 else line.rstrip("\n") + ",\n")
        for env_id, episodes in EPISODES.items():
            if only and env_id not in only:
                continue
            policy = Policy(os.path.join(HERE, POLICIES[env_id]))
            assert policy.env == env_id, f"{POLICIES[env_id]} was trained on {policy.env}"
            env = gym.make(env_id)
            lengths, returns, xvels = [], [], []
            for k in range(episodes):
                obs, _ = env.reset(seed=k)
                total, length, xsum = 0.0, 0, 0.0
                while True:
                    obs, r, terminated, truncated, info = env.step(policy(obs))
                    total += float(r)
                    length += 1
                    xsum += float(info.get("x_velocity", 0.0))
                    if terminated or truncated:
                        break
                xv = repr(xsum / length) if env_id in X_VELOCITY else ""
                f.write(f"{env_id},{k},{length},{total!r},{int(terminated)},{xv}\n")
                lengths.append(length)
                returns.append(total)
                xvels.append(xsum / length)
            env.close()
            print(f"{env_id}: {episodes} episodes, mean length {np.mean(lengths):.1f}, "
                  f"mean return {np.mean(returns):.1f} +- {np.std(returns):.1f}"
                  + (f", mean x velocity {np.mean(xvels):.3f}" if env_id in X_VELOCITY else ""))
    print("wrote", out)


if __name__ == "__main__":
    main()
