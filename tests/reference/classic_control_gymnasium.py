"""Golden reference data for Gymnasium's Pendulum-v1, MountainCar-v0, MountainCarContinuous-v0 and
Acrobot-v1, for step-by-step replay in the C++ tests (CartPole-v1 has its own script,
cartpole_gymnasium.py).

Writes one CSV per env next to this script (pendulum_v1.csv, mountain_car_v0.csv,
mountain_car_continuous_v0.csv, acrobot_v1.csv): a header line, then one row per ``env.step`` call
of ``gymnasium.make(id)`` (so the TimeLimit wrapper is included). Columns:

    seed,episode,t,s0..s{k-1},action[,action_dtype],obs0..obs{m-1},reward,terminated,truncated

* seed      seed given to the first ``env.reset(seed=...)`` of the run; later resets of the same run
            pass no seed (the env's RNG continues).
* episode   episode index within the run; t: step index within the episode.
* s0..      ``env.unwrapped.state`` BEFORE the step, each component as ``float(v).hex()`` (the
            reference keeps float64 state, except MountainCarContinuous, which stores float32
            after its first step; the values are exact either way).
* action    discrete: the integer. Continuous: ``float(a).hex()`` of the single component, and
            action_dtype 32 or 64: the dtype of the NumPy array passed to ``step`` (it matters:
            under NumPy 2's promotion rules a float32 action makes Pendulum and
            MountainCarContinuous round some terms to float32).
* obs0..    float32 observation returned by the step, as ``float(np.float32(v)).hex()``.
* reward    ``float(r).hex()``; terminated, truncated: 0/1.

Regenerate (from the repository root):

    pip install gymnasium==1.4.0 numpy==2.4.6
    python3 tests/reference/classic_control_gymnasium.py

Generated with Python 3.11.7, gymnasium 1.4.0, numpy 2.4.6 on x86-64 (glibc 2.36), AVX-512 kernels
disabled as below. The script prints what the data covers (episode ends, clipping, walls).
"""

import os

# NumPy on AVX-512 machines may compute float64 sin/cos with SVML, which can differ from glibc by an
# ulp; the C++ side uses the C library's, so the golden data is generated with those kernels off.
# (NumPy >= 2.4 names the AVX-512 baseline X86_V4; older releases use the AVX512_* names.)
os.environ.setdefault(
    "NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
)

import gymnasium  # noqa: E402  (after the environment variable above)
import numpy as np  # noqa: E402

SEEDS = (0, 1, 42, 12345)
HERE = os.path.dirname(os.path.abspath(__file__))


def hexf(v):
    return float(v).hex()


def obs_hex(obs):
    return [float(np.float32(v)).hex() for v in np.asarray(obs).ravel()]


def continuous(value, dtype):
    return np.array([value], dtype=dtype)


def record(env_id, filename, state_size, obs_size, episodes_for_seed, is_continuous):
    """episodes_for_seed(seed_index, seed) -> list of policies; a policy maps the float64 state
    before the step to the action passed to env.step."""
    env = gymnasium.make(env_id)
    header = ["seed", "episode", "t"] + [f"s{k}" for k in range(state_size)] + ["action"]
    if is_continuous:
        header.append("action_dtype")
    header += [f"obs{k}" for k in range(obs_size)] + ["reward", "terminated", "truncated"]
    rows = []
    for i, seed in enumerate(SEEDS):
        for episode, policy in enumerate(episodes_for_seed(i, seed)):
            env.reset(seed=seed if episode == 0 else None)
            t = 0
            while True:
                state = [float(v) for v in np.asarray(env.unwrapped.state).ravel()]
                action = policy(np.array(state))
                obs, reward, terminated, truncated, _ = env.step(action)
                row = [str(seed), str(episode), str(t)] + [hexf(v) for v in state]
                if is_continuous:
                    row += [hexf(action[0]), "32" if action.dtype == np.float32 else "64"]
                else:
                    row.append(str(int(action)))
                row += obs_hex(obs) + [hexf(reward), str(int(terminated)), str(int(truncated))]
                rows.append(row)
                if terminated or truncated:
                    break
                t += 1
    env.close()
    with open(os.path.join(HERE, filename), "w") as f:
        f.write(",".join(header) + "\n")
        f.writelines(",".join(r) + "\n" for r in rows)
    return rows, header


def column(rows, header, name, convert=float.fromhex):
    k = header.index(name)
    return np.array([convert(r[k]) for r in rows])


def summary(env_id, rows, header):
    term = column(rows, header, "terminated", int)
    trunc = column(rows, header, "truncated", int)
    print(f"{env_id}: {len(rows)} steps, {term.sum()} terminated, {trunc.sum()} truncated episodes", end="")


def pendulum():
    def episodes(i, seed):
        rng = np.random.default_rng(seed)
        return [
            # Random torques beyond the Box (clipped to +-2), as float32 like action_space.sample().
            lambda s: continuous(rng.uniform(-2.5, 2.5), np.float32),
            # The same with float64 actions: then the reference computes in float64 throughout.
            lambda s: continuous(rng.uniform(-2.5, 2.5), np.float64),
            # Energy pumping: spins the pendulum up to the speed limit (|thdot| clipped at 8).
            lambda s: continuous(2.0 if s[1] >= 0 else -2.0, np.float64),
            # Swing up and balance: th wraps many times around, unnormalised in the state.
            lambda s, d=np.float32 if i % 2 else np.float64: continuous(
                float(np.clip(-10.0 * (((s[0] + np.pi) % (2 * np.pi)) - np.pi) - 2.0 * s[1], -3, 3))
                if np.cos(s[0]) > 0.8
                else (2.0 if s[1] >= 0 else -2.0),
                d,
            ),
        ]

    rows, header = record("Pendulum-v1", "pendulum_v1.csv", 2, 3, episodes, True)
    summary("Pendulum-v1", rows, header)
    a = column(rows, header, "action")
    speed = np.abs(column(rows, header, "obs2"))
    th = np.abs(column(rows, header, "s0"))
    print(f", {np.sum(np.abs(a) > 2)} clipped actions, {np.sum(speed == 8)} speed clips, max |th| {th.max():.1f}")


def mountain_car():
    def episodes(i, seed):
        rng = np.random.default_rng(seed)
        return [
            lambda s: 2 if s[1] >= 0 else 0,  # energy pumping: reaches the goal (terminated)
            lambda s: int(rng.integers(3)),  # random: truncated at 200
            lambda s: 0 if s[1] <= 0 or s[0] < -0.9 else 2,  # pumping that overshoots into the left wall
            lambda s: int(rng.integers(3)),
        ]

    rows, header = record("MountainCar-v0", "mountain_car_v0.csv", 2, 2, episodes, False)
    summary("MountainCar-v0", rows, header)
    p = column(rows, header, "obs0")
    v = column(rows, header, "obs1")
    print(f", {np.sum(p == np.float32(-1.2))} wall hits (v set to 0: {np.sum((p == np.float32(-1.2)) & (v == 0))}),"
          f" {np.sum(np.abs(v) == np.float32(0.07))} speed clips")


def mountain_car_continuous():
    def episodes(i, seed):
        rng = np.random.default_rng(seed)
        return [
            # Pumping with actions beyond [-1, 1]: clipped force, reward from the unclipped action.
            lambda s: continuous(1.5 if s[1] >= 0 else -1.5, np.float32),
            # Gentler pumping in float64.
            lambda s: continuous(0.6 if s[1] >= 0 else -0.6, np.float64),
            # Random actions: truncated at 999 steps.
            lambda s: continuous(rng.uniform(-1.2, 1.2), np.float32),
            # Pumping that runs into the left wall first.
            lambda s: continuous(-1.0 if s[1] <= 0 or s[0] < -0.9 else 1.0, np.float32),
        ]

    rows, header = record("MountainCarContinuous-v0", "mountain_car_continuous_v0.csv", 2, 2, episodes, True)
    summary("MountainCarContinuous-v0", rows, header)
    a = column(rows, header, "action")
    p = column(rows, header, "obs0")
    print(f", {np.sum(np.abs(a) > 1)} clipped actions, {np.sum(p == np.float32(-1.2))} wall hits")


def acrobot():
    def episodes(i, seed):
        rng = np.random.default_rng(seed)
        return [
            lambda s: 2 if s[3] > 0 else 0,  # pumps energy through the second joint: terminates
            lambda s: int(rng.integers(3)),  # random: truncated at 500
            lambda s: 2 if s[3] > 0 else 0,
            lambda s: 0 if s[2] > 0 else 2,  # works against the first joint: large angles, slow
        ]

    rows, header = record("Acrobot-v1", "acrobot_v1.csv", 4, 6, episodes, False)
    summary("Acrobot-v1", rows, header)
    wraps = sum(
        1
        for r, nxt in zip(rows, rows[1:])
        if r[1] == nxt[1] and abs(float.fromhex(nxt[4]) - float.fromhex(r[4])) > np.pi
    )
    print(f", {wraps} angle wraps of theta2")


def main():
    pendulum()
    mountain_car()
    mountain_car_continuous()
    acrobot()


if __name__ == "__main__":
    main()
