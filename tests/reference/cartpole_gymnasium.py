"""Golden reference data for Gymnasium's CartPole-v1, for step-by-step replay in C++ tests.

Writes ``cartpole_v1.csv`` next to this script: a header line, then one row per
``env.step`` call of ``gymnasium.make("CartPole-v1")`` (so the 500-step TimeLimit
wrapper is included). Columns:

    seed,episode,t,x,x_dot,theta,theta_dot,action,obs0,obs1,obs2,obs3,reward,terminated,truncated

* seed      seed given to the first ``env.reset(seed=...)`` of the run; later
            resets of the same run pass no seed (the env's RNG continues).
* episode   episode index within the run; t: step index within the episode.
* x..theta_dot  float64 ``env.unwrapped.state`` BEFORE the step, as ``float.hex()``.
            For t=0 this is the state right after reset.
* action    0 or 1.
* obs0..3   float32 observation returned by the step, as ``float(np.float32(v)).hex()``.
* reward    ``float.hex()`` of the reward; terminated, truncated: 0/1.

Episodes of each run, in order:
  0           stabilising controller; survives until truncated at 500 steps.
  1           velocity-tracking controller (cart pushed to +/-1 m/s with the pole
              balanced); ends with |x| > 2.4.
  2           constant action (always push one way); ends by angle.
  3 .. 3+N-1  uniformly random actions from ``np.random.default_rng(seed)``.

Regenerate (from the repository root):

    pip install gymnasium==1.4.0 numpy==2.4.6
    python3 tests/reference/cartpole_gymnasium.py

Generated with Python 3.11.7, gymnasium 1.4.0, numpy 2.4.6 (x86-64, AVX-512 kernels disabled
as below; with them on, this machine gives the same file for CartPole).
"""

import os

# NumPy on AVX-512 machines computes float64 sin/cos with SVML, which can differ from glibc by an
# ulp; the C++ side uses the C library's, so the golden data is generated with those kernels off.
# (NumPy >= 2.4 names the AVX-512 baseline X86_V4; older releases use the AVX512_* names.)
os.environ.setdefault(
    "NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
)

import gymnasium  # noqa: E402  (after the environment variable above)
import numpy as np  # noqa: E402

SEEDS = (0, 1, 42, 12345)
N_RANDOM = 6  # random-action episodes per seed
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cartpole_v1.csv")
HEADER = "seed,episode,t,x,x_dot,theta,theta_dot,action,obs0,obs1,obs2,obs3,reward,terminated,truncated"


def stabilise(s):
    x, x_dot, theta, theta_dot = s
    return int(theta + 0.5 * theta_dot + 0.05 * x + 0.2 * x_dot > 0)


def track_velocity(v):
    return lambda s: int(s[2] + 0.5 * s[3] + 0.1 * (s[1] - v) > 0)


def run_episode(env, rows, seed, episode, policy, reset_seed=None):
    env.reset(seed=reset_seed)
    t = 0
    while True:
        state = [float(v) for v in env.unwrapped.state]
        action = policy(state)
        obs, reward, terminated, truncated, _ = env.step(action)
        rows.append(
            [str(seed), str(episode), str(t)]
            + [v.hex() for v in state]
            + [str(action)]
            + [float(np.float32(v)).hex() for v in obs]
            + [float(reward).hex(), str(int(terminated)), str(int(truncated))]
        )
        if terminated or truncated:
            return
        t += 1


def main():
    env = gymnasium.make("CartPole-v1")
    rows = []
    for i, seed in enumerate(SEEDS):
        rng = np.random.default_rng(seed)
        run_episode(env, rows, seed, 0, stabilise, reset_seed=seed)
        run_episode(env, rows, seed, 1, track_velocity(1.0 if i % 2 == 0 else -1.0))
        run_episode(env, rows, seed, 2, lambda s, a=i % 2: a)
        for e in range(N_RANDOM):
            run_episode(env, rows, seed, 3 + e, lambda s: int(rng.integers(2)))
    env.close()
    with open(OUT, "w") as f:
        f.write(HEADER + "\n")
        f.writelines(",".join(r) + "\n" for r in rows)
    print(f"wrote {len(rows)} rows to {OUT}")


if __name__ == "__main__":
    main()
