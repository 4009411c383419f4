#!/usr/bin/env python3
"""Stable-Baselines3's own PPO with rl-baselines3-zoo's InvertedDoublePendulum-v3 settings on Gymnasium's
InvertedDoublePendulum-v5: one seed, then 100 deterministic episodes with the normaliser frozen, as
train_ppo evaluates (docs/training.md compares the two). Needs stable-baselines3, torch and
gymnasium[mujoco] (pip); about 13 minutes per seed on one CPU thread.

    python3 scripts/sb3_inverted_double_pendulum.py SEED [STEPS]
"""
import sys, time, numpy as np, gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize
torch.set_num_threads(1)
seed = int(sys.argv[1]); steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
env = VecNormalize(make_vec_env("InvertedDoublePendulum-v5", n_envs=1, seed=seed), gamma=0.98)
model = PPO("MlpPolicy", env, n_steps=128, batch_size=512, gamma=0.98, learning_rate=0.000155454,
            ent_coef=1.05057e-06, clip_range=0.4, n_epochs=10, gae_lambda=0.8, max_grad_norm=0.5,
            vf_coef=0.695929, seed=seed, device="cpu", verbose=0)
t = time.time()
model.learn(total_timesteps=steps)
train_s = time.time() - t
env.training = False; env.norm_reward = False
rets = []
e = gym.make("InvertedDoublePendulum-v5")
for k in range(100):
    o, _ = e.reset(seed=10_000 + k); done = False; R = 0.0
    while not done:
        a, _ = model.predict(env.normalize_obs(o[None]), deterministic=True)
        o, r, term, trunc, _ = e.step(a[0]); R += r; done = term or trunc
    rets.append(R)
print(f"seed {seed}: {steps} steps in {train_s:.0f} s; deterministic eval over 100 episodes: "
      f"mean {np.mean(rets):.1f} +- {np.std(rets):.1f} (min {np.min(rets):.1f}, max {np.max(rets):.1f})", flush=True)
