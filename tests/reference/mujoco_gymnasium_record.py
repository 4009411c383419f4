"""Golden data of Gymnasium's MuJoCo envs (Hopper-v5, Walker2d-v5, HalfCheetah-v5, Ant-v5, Humanoid-v5,
HumanoidStandup-v5, InvertedPendulum-v5, InvertedDoublePendulum-v5, Swimmer-v5, Reacher-v5, Pusher-v5) for
tests/envs/mujoco_envs_test.cpp, recorded from Gymnasium itself (gymnasium 1.4 on mujoco 3.12.0).

Actions are not stored: both sides compute them from a counter hash (splitmix64, below; the C++
test has the same function). Component k of the action at step t of episode e of the env with code
c (Hopper 1, Walker2d 2, HalfCheetah 3, Ant 4, Humanoid 5, HumanoidStandup 6, InvertedPendulum 7,
InvertedDoublePendulum 8, Swimmer 9, Reacher 10, Pusher 11) is

    h = splitmix64((c << 56) | (e << 32) | (t << 8) | k)        (e, t < 2^24, k < 256)
    a = 2 * ((h >> 11) * 2^-53) - 1                            (exact in float64: in [-1, 1))

passed to ``env.step`` as a float64 NumPy array (Gymnasium's control cost is then float64 too; a
float32 action would make NumPy compute it in float32). Episode e starts from
``env.reset(seed=e)`` of ``gymnasium.make(id)`` (TimeLimit included).

Files (per env, <env> = hopper_v5, walker2d_v5, half_cheetah_v5, ant_v5, humanoid_v5,
humanoid_standup_v5, inverted_pendulum_v5, inverted_double_pendulum_v5, swimmer_v5, reacher_v5, pusher_v5), all raw
little-endian float64:
two values ``rows, cols``, then ``rows x cols`` values row-major. Flags are 0.0 / 1.0.

* mujoco_<env>_episodes.f64: one row per episode e = 0..E-1:
      e, length, return, terminated, qpos[nq], qvel[nv]
  length: steps until terminated or truncated (time limit 1000); return: the sum of the rewards
  (float64, in step order); terminated: 1 if the episode ended by termination; qpos/qvel: the state
  right after ``env.reset(seed=e)`` (qacc_warmstart is 0 there: mj_resetData).
* mujoco_<env>_steps.f64: the first 100 steps (fewer where the episode ended) of episodes 0..39
  (Hopper, Walker2d, the inverted pendulums, Reacher and Pusher: their episodes are short), 0..9 (HalfCheetah, Ant, Humanoid, Swimmer) or
  0..3 (HumanoidStandup, 1000-step episodes):
      e, t, reward, terminated, truncated, obs[obs_size]
  t = -1 is the reset (reward 0 and flags 0, obs = the reset observation); t >= 0 is the step whose
  action is action(c, e, t).
* mujoco_<env>_one_step.f64: 100 single env steps from states along the episodes, each taken on a
  second env: ``set_state(qpos, qvel)``, ``data.qacc_warmstart[:] = ws``, then ``step(a)``:
      e, t, scale, qpos[nq], qvel[nv], ws[nv], reward, terminated,
      qpos'[nq], qvel'[nv], ws'[nv], obs'[obs_size]
  The state is the one before step t of episode e; the action is scale * action(c, e, t) with
  scale cycling over 1, 1, 1, 1, 1, 1, 3, 30, 1e5, 1e12 (beyond ctrlrange: MuJoCo 3.12 clamps ctrl
  before its bad-control check, so these act as +-1; the control cost always uses the raw action).
  Rows: steps with t % 10 == e % 10, at most 10 per episode, in episode order.

Regenerate from the repository root (deterministic; about a minute), all envs or the ids given:

    pip install "gymnasium[mujoco]==1.4.0" mujoco==3.12.0
    python3 tests/reference/mujoco_gymnasium_record.py [InvertedPendulum-v5 ...]

Deterministic but for the last bits of Reacher's and Pusher's rewards (and so returns): Gymnasium
computes their distances with ``np.linalg.norm``, sqrt(dot(v, v)) through NumPy's BLAS, whose order
of operations depends on the kernel the BLAS picks for the CPU. The stored files were recorded
with numpy 2.4.6's OpenBLAS 0.3.31 and its SkylakeX kernel (a chain of fused multiply-adds:
``OPENBLAS_CORETYPE=SkylakeX`` reproduces them byte for byte); its Haswell kernel (in order, as our
envs) changes only reward and return cells, by at most 2 ulp (docs/physics.md, "Fidelity against
Gymnasium"). The tests compare rewards to 1e-7 or 1e-9, so their outcome does not depend on it.
The script prints the BLAS and its kernel.
"""

import os
import struct
import sys

import gymnasium as gym
import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MASK = (1 << 64) - 1

ENVS = [
    # id, file stem, env code, episodes in the length/return file, episodes in the steps file
    ("Hopper-v5", "hopper_v5", 1, 1000, 40),
    ("Walker2d-v5", "walker2d_v5", 2, 1000, 40),
    ("HalfCheetah-v5", "half_cheetah_v5", 3, 40, 10),
    ("Ant-v5", "ant_v5", 4, 200, 10),
    ("Humanoid-v5", "humanoid_v5", 5, 400, 10),
    ("HumanoidStandup-v5", "humanoid_standup_v5", 6, 40, 4),
    ("InvertedPendulum-v5", "inverted_pendulum_v5", 7, 1000, 40),
    ("InvertedDoublePendulum-v5", "inverted_double_pendulum_v5", 8, 1000, 40),
    ("Swimmer-v5", "swimmer_v5", 9, 40, 10),
    ("Reacher-v5", "reacher_v5", 10, 400, 40),
    ("Pusher-v5", "pusher_v5", 11, 400, 40),
]
TRAJECTORY_STEPS = 100
ONE_STEP_ROWS = 100
ONE_STEP_PER_EPISODE = 10
SCALES = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 30.0, 1e5, 1e12]


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def action(code, episode, t, nu):
    out = np.empty(nu, dtype=np.float64)
    for k in range(nu):
        h = splitmix64((code << 56) | (episode << 32) | (t << 8) | k)
        out[k] = 2.0 * ((h >> 11) * 2.0**-53) - 1.0
    return out


def write(path, rows):
    rows = np.asarray(rows, dtype="<f8")
    assert rows.ndim == 2
    with open(path, "wb") as f:
        f.write(struct.pack("<dd", float(rows.shape[0]), float(rows.shape[1])))
        f.write(rows.tobytes())
    print(f"  {os.path.basename(path)}: {rows.shape[0]} x {rows.shape[1]} ({os.path.getsize(path)} bytes)")


def record(env_id, stem, code, n_episodes, trajectory_episodes):
    env = gym.make(env_id)
    probe = gym.make(env_id)  # the one-step rows: set_state on a second env, so the episodes go on
    probe.reset(seed=0)
    u = env.unwrapped
    nq, nv, nu = u.model.nq, u.model.nv, u.model.nu
    episodes, steps, one_step = [], [], []
    for e in range(n_episodes):
        obs, _ = env.reset(seed=e)
        qpos0 = u.data.qpos.copy()
        qvel0 = u.data.qvel.copy()
        assert not np.any(u.data.qacc_warmstart)
        keep = e < trajectory_episodes
        if keep:
            steps.append([e, -1, 0.0, 0.0, 0.0, *obs])
        ret, t, taken = 0.0, 0, 0
        while True:
            a = action(code, e, t, nu)
            if len(one_step) < ONE_STEP_ROWS and taken < ONE_STEP_PER_EPISODE and t % 10 == e % 10:
                scale = SCALES[len(one_step) % len(SCALES)]
                pu = probe.unwrapped
                qpos, qvel, ws = u.data.qpos.copy(), u.data.qvel.copy(), u.data.qacc_warmstart.copy()
                pu.set_state(qpos, qvel)
                pu.data.qacc_warmstart[:] = ws
                o2, r2, term2, _, _ = pu.step(scale * a)
                one_step.append([e, t, scale, *qpos, *qvel, *ws, r2, float(term2), *pu.data.qpos, *pu.data.qvel,
                                 *pu.data.qacc_warmstart, *o2])
                taken += 1
            obs, r, term, trunc, _ = env.step(a)
            ret += float(r)
            if keep and t < TRAJECTORY_STEPS:
                steps.append([e, t, float(r), float(term), float(trunc), *obs])
            t += 1
            if term or trunc:
                break
        episodes.append([e, t, ret, float(term), *qpos0, *qvel0])
    lengths = np.array([row[1] for row in episodes])
    print(f"{env_id}: nq={nq} nv={nv} nu={nu} dt={u.dt}; {n_episodes} episodes, length mean {lengths.mean():.1f} "
          f"min {lengths.min():.0f} max {lengths.max():.0f}")
    write(os.path.join(HERE, f"mujoco_{stem}_episodes.f64"), episodes)
    write(os.path.join(HERE, f"mujoco_{stem}_steps.f64"), steps)
    write(os.path.join(HERE, f"mujoco_{stem}_one_step.f64"), one_step)


def blas():
    """NumPy's BLAS and, for OpenBLAS, the kernel it picked (the last bits of np.linalg.norm)."""
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name = f"{info.get('name', '?')} {info.get('version', '')}".strip()
    except Exception:  # an older NumPy: no mode="dicts"
        return "unknown"
    try:
        import glob
        import ctypes
        libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*"))
        lib = ctypes.CDLL(libs[0])
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
            if hasattr(lib, symbol):
                f = getattr(lib, symbol)
                f.restype = ctypes.c_char_p
                return f"{name}, kernel {f().decode()}"
    except Exception:  # not NumPy's bundled OpenBLAS
        pass
    return name


def main():
    assert mujoco.__version__ == "3.12.0", f"mujoco {mujoco.__version__}: the reference is 3.12.0"
    assert gym.__version__.startswith("1.4"), f"gymnasium {gym.__version__}: the reference is 1.4"
    print(f"python {sys.version.split()[0]}, gymnasium {gym.__version__}, mujoco {mujoco.__version__}, "
          f"numpy {np.__version__}, BLAS {blas()}")
    only = sys.argv[1:]
    for env_id, stem, code, n, trajectories in ENVS:
        if not only or env_id in only:
            record(env_id, stem, code, n, trajectories)


if __name__ == "__main__":
    main()
