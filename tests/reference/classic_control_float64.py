"""Golden float64 states of Gymnasium's classic-control envs, for the bit-for-bit check of the double
envs in the C++ tests (tests/envs/cartpole_test.cpp, tests/envs/classic_control_test.cpp).

The other golden files (cartpole_gymnasium.py, classic_control_gymnasium.py) record the float32
observation of each step, which hides a last-bit difference of the float64 state. This script
records, for short trajectories chosen to reach every branch of each env's step, the full
``env.unwrapped.state`` before and after every ``env.step`` of ``gymnasium.make(id)``, losslessly.

Writes one CSV per env next to this script (cartpole_v1_float64.csv, mountain_car_v0_float64.csv,
mountain_car_continuous_v0_float64.csv, pendulum_v1_float64.csv, acrobot_v1_float64.csv): a header
line, then one row per step. Columns:

    episode,t,s0..s{k-1},action[,action_dtype],n0..n{k-1},reward,terminated

* episode   index of the trajectory in this file; t: step index within it.
* s0..      ``env.unwrapped.state`` BEFORE the step, each component as ``float(v).hex()``.
* action    discrete: the integer. Continuous: ``float(a).hex()`` of the single component (may be
            beyond the bounds, or +-inf), and action_dtype 32 or 64: the dtype of the NumPy array
            passed to ``step`` (under NumPy 2's promotion rules a float32 action makes Pendulum and
            MountainCarContinuous compute some terms in float32).
* n0..      ``env.unwrapped.state`` AFTER the step, as ``float(v).hex()``. (MountainCarContinuous
            stores its state as float32 after a step; the float32 value is written exactly.)
* reward    ``float(r).hex()``; terminated: 0/1.

A trajectory starts either from ``env.reset(seed=...)`` or from a state written into
``env.unwrapped.state`` right after a reset (to reach the walls, bounds and terminations within a
few steps); it ends when terminated or after its step budget (always below the time limit).
The script asserts that the data reaches every branch it is meant to (both directions of every
force and clip, every way to terminate, Acrobot's angle wrapping in both directions and both
velocity bounds, Pendulum's angle normalisation far from [-pi, pi) and its clips).

Regenerate (from the repository root; deterministic: fixed seeds, no other randomness):

    pip install gymnasium==1.4.0 numpy==2.4.6
    python3 tests/reference/classic_control_float64.py

Generated with Python 3.11.7, gymnasium 1.4.0, numpy 2.4.6 on x86-64 (glibc 2.36), AVX-512 kernels
disabled as below.
"""

import math
import os

# NumPy on AVX-512 machines may compute float64 sin/cos with SVML, which can differ from glibc by an
# ulp; the C++ side uses the C library's, so the golden data is generated with those kernels off.
# (NumPy >= 2.4 names the AVX-512 baseline X86_V4; older releases use the AVX512_* names.)
os.environ.setdefault(
    "NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
)

import gymnasium  # noqa: E402  (after the environment variable above)
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PI = math.pi


def hexf(v):
    return float(v).hex()


def state_of(env):
    return [float(v) for v in np.asarray(env.unwrapped.state, dtype=object).ravel()]


def c(value, dtype=np.float64):
    return np.array([value], dtype=dtype)


def record(env_id, filename, state_size, episodes, is_continuous):
    """episodes: list of (start, policy, max_steps); start is ("seed", s) for env.reset(seed=s) or
    ("state", s, [values]) for env.reset(seed=s) then env.unwrapped.state = values; a policy maps
    (t, float64 state before the step) to the action passed to env.step."""
    env = gymnasium.make(env_id)
    header = ["episode", "t"] + [f"s{k}" for k in range(state_size)] + ["action"]
    if is_continuous:
        header.append("action_dtype")
    header += [f"n{k}" for k in range(state_size)] + ["reward", "terminated"]
    rows = []
    for episode, (start, policy, max_steps) in enumerate(episodes):
        env.reset(seed=start[1])
        if start[0] == "state":
            env.unwrapped.state = np.array(start[2], dtype=np.float64)
        for t in range(max_steps):
            before = state_of(env)
            action = policy(t, np.array(before))
            _, reward, terminated, truncated, _ = env.step(action)
            assert not truncated, "keep the step budgets below the time limit"
            after = state_of(env)
            row = [str(episode), str(t)] + [hexf(v) for v in before]
            if is_continuous:
                row += [hexf(action[0]), "32" if action.dtype == np.float32 else "64"]
            else:
                row.append(str(int(action)))
            row += [hexf(v) for v in after] + [hexf(reward), str(int(terminated))]
            rows.append(row)
            if terminated:
                break
    env.close()
    with open(os.path.join(HERE, filename), "w") as f:
        f.write(",".join(header) + "\n")
        f.writelines(",".join(r) + "\n" for r in rows)
    table = {name: [r[k] for r in rows] for k, name in enumerate(header)}
    print(f"{env_id}: {len(rows)} steps, {sum(int(v) for v in table['terminated'])} terminated, "
          f"{os.path.getsize(os.path.join(HERE, filename))} bytes")
    return table


def col(table, name):
    return np.array([float.fromhex(v) if "x" in v or v in ("inf", "-inf") else float(v) for v in table[name]])


def cartpole():
    rng = np.random.default_rng(1)

    def stabilise(t, s):
        return int(s[2] + 0.5 * s[3] + 0.05 * s[0] + 0.2 * s[1] > 0)

    episodes = [
        (("seed", 0), stabilise, 60),  # both actions, balanced
        (("seed", 1), lambda t, s: 1, 100),  # pushed right: falls left, theta < -12 deg
        (("seed", 2), lambda t, s: 0, 100),  # theta > 12 deg
        (("state", 3, [2.3, 1.2, 0.0, 0.0]), stabilise, 100),  # x > 2.4
        (("state", 4, [-2.3, -1.2, 0.01, -0.02]), stabilise, 100),  # x < -2.4
        (("state", 5, [0.1, -0.4, 0.15, -1.5]), lambda t, s: int(rng.integers(2)), 100),
        (("seed", 6), lambda t, s: int(rng.integers(2)), 100),
    ]
    tab = record("CartPole-v1", "cartpole_v1_float64.csv", 4, episodes, False)
    x, th, term = col(tab, "n0"), col(tab, "n2"), col(tab, "terminated") == 1
    a = col(tab, "action")
    lim = 12 * 2 * PI / 360
    assert (a == 0).any() and (a == 1).any()
    assert (term & (x > 2.4)).any() and (term & (x < -2.4)).any()
    assert (term & (th > lim)).any() and (term & (th < -lim)).any()


def mountain_car():
    rng = np.random.default_rng(2)

    def pump(t, s):
        return 2 if s[1] >= 0 else 0

    episodes = [
        (("seed", 0), pump, 199),  # reaches the goal
        (("state", 1, [-1.15, -0.05]), lambda t, s: 0 if t < 3 else (1 if t < 6 else pump(t, s)), 40),  # left wall
        (("state", 2, [-0.5, 0.0699]), lambda t, s: 2, 6),  # speed clip at +0.07
        (("state", 3, [0.0, -0.0699]), lambda t, s: 0, 6),  # speed clip at -0.07
        (("state", 4, [0.55, 0.07]), lambda t, s: 2, 5),  # position clip at 0.6, terminated
        (("state", 5, [0.52, -0.01]), lambda t, s: 0, 8),  # beyond the goal but moving left: not terminated
        (("seed", 6), lambda t, s: int(rng.integers(3)), 30),
    ]
    tab = record("MountainCar-v0", "mountain_car_v0_float64.csv", 2, episodes, False)
    p, v, term = col(tab, "n0"), col(tab, "n1"), col(tab, "terminated") == 1
    assert set(col(tab, "action")) == {0.0, 1.0, 2.0}
    assert ((p == -1.2) & (v == 0)).any() and (v == 0.07).any() and (v == -0.07).any() and (p == 0.6).any()
    assert term.sum() >= 2 and ((p >= 0.5) & (v < 0) & ~term).any()


def mountain_car_continuous():
    rng = np.random.default_rng(3)

    def pump(mag, dtype):
        return lambda t, s: c(mag if s[1] >= 0 else -mag, dtype)

    episodes = [
        (("seed", 0), pump(1.5, np.float64), 150),  # clipped force, unclipped cost; reaches the goal
        (("seed", 1), pump(0.7, np.float32), 150),
        (("state", 2, [-1.15, -0.05]), lambda t, s: c(-1.0 if t < 4 else 1.0), 10),  # the left wall
        (("state", 3, [-0.5, 0.0699]), lambda t, s: c(math.inf), 4),  # speed clip at +0.07, infinite cost
        (("state", 4, [0.0, -0.0699]), lambda t, s: c(-math.inf), 4),  # speed clip at -0.07
        (("state", 5, [0.55, 0.07]), lambda t, s: c(1.0), 4),  # position clip at 0.6, terminated
        (("state", 6, [0.5, -0.01]), lambda t, s: c(-0.3), 6),  # beyond the goal, moving left
        (("seed", 7), lambda t, s: c(rng.uniform(-1.3, 1.3), np.float64), 20),
        (("seed", 8), lambda t, s: c(rng.uniform(-1.3, 1.3), np.float32), 20),
    ]
    tab = record("MountainCarContinuous-v0", "mountain_car_continuous_v0_float64.csv", 2, episodes, True)
    p, v, a = col(tab, "n0"), col(tab, "n1"), col(tab, "action")
    assert (a > 1).any() and (a < -1).any() and (p == np.float32(-1.2)).any() and (p == np.float32(0.6)).any()
    assert (v == np.float32(0.07)).any() and (v == np.float32(-0.07)).any()
    assert (col(tab, "terminated") == 1).sum() >= 3


def pendulum():
    rng = np.random.default_rng(4)

    def balance(t, s):
        th = ((s[0] + PI) % (2 * PI)) - PI
        return c(float(np.clip(-10.0 * th - 2.0 * s[1], -3, 3)) if math.cos(s[0]) > 0.8 else (2.0 if s[1] >= 0 else -2.0))

    episodes = [
        (("seed", 0), lambda t, s: c(rng.uniform(-3.0, 3.0)), 60),  # torques beyond +-2 both ways
        (("state", 1, [0.3, 7.9]), lambda t, s: c(2.0), 25),  # speed clip at +8
        (("state", 2, [-0.3, -7.9]), lambda t, s: c(-2.0), 25),  # speed clip at -8
        (("state", 3, [73.0, 0.5]), lambda t, s: c(math.inf if t % 2 else 2.5), 20),  # far positive angles
        (("state", 4, [-60.5, -0.5]), lambda t, s: c(-math.inf if t % 2 else -2.0), 20),  # far negative angles
        (("state", 5, [PI, 0.0]), lambda t, s: c(0.0), 3),  # angle_normalize(pi) = -pi
        (("state", 6, [-PI, 1e-3]), lambda t, s: c(0.0), 3),
        (("seed", 7), balance, 80),  # swings up and balances, wrapping the unnormalised angle
    ]
    tab = record("Pendulum-v1", "pendulum_v1_float64.csv", 2, episodes, True)
    a, th, thd = col(tab, "action"), col(tab, "s0"), col(tab, "n1")
    assert (a > 2).any() and (a < -2).any() and (thd == 8).any() and (thd == -8).any()
    assert th.max() > 70 and th.min() < -60


def acrobot():
    rng = np.random.default_rng(5)
    episodes = [
        (("seed", 0), lambda t, s: 2 if s[3] > 0 else 0, 150),  # pumps energy
        (("state", 1, [2.4, 0.3, 1.0, 0.5]), lambda t, s: 1, 40),  # link up: terminated
        (("state", 2, [0.1, 3.1, 0.0, 3.0]), lambda t, s: 2, 6),  # theta2 wraps past +pi
        (("state", 3, [-0.1, -3.1, 0.0, -3.0]), lambda t, s: 0, 6),  # theta2 wraps past -pi
        (("state", 4, [3.1, -3.1, 2.0, -2.0]), lambda t, s: 1, 6),  # theta1 wraps past +pi
        (("state", 5, [-3.1, 3.1, -2.0, 2.0]), lambda t, s: 1, 6),  # theta1 wraps past -pi
        (("state", 6, [0.0, 0.0, 13.0, 29.0]), lambda t, s: 2, 3),  # both velocity bounds, +
        (("state", 7, [0.0, 0.0, -13.0, -29.0]), lambda t, s: 0, 3),  # both velocity bounds, -
        (("seed", 8), lambda t, s: int(rng.integers(3)), 50),
    ]
    tab = record("Acrobot-v1", "acrobot_v1_float64.csv", 4, episodes, False)
    s0, s1, n0, n1 = col(tab, "s0"), col(tab, "s1"), col(tab, "n0"), col(tab, "n1")
    n2, n3 = col(tab, "n2"), col(tab, "n3")
    assert set(col(tab, "action")) == {0.0, 1.0, 2.0}
    assert ((s0 > 3) & (n0 < 0)).any() and ((s0 < -3) & (n0 > 0)).any()
    assert ((s1 > 3) & (n1 < 0)).any() and ((s1 < -3) & (n1 > 0)).any()
    assert (n2 == 4 * PI).any() and (n2 == -4 * PI).any() and (n3 == 9 * PI).any() and (n3 == -9 * PI).any()
    assert (col(tab, "terminated") == 1).sum() >= 2


def main():
    cartpole()
    mountain_car()
    mountain_car_continuous()
    pendulum()
    acrobot()


if __name__ == "__main__":
    main()
