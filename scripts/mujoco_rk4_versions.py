#!/usr/bin/env python3
"""How MuJoCo 4.0's RK4 differs from 3.12's (the engine's reference) on models with free joints,
with Euler as the control; docs/physics.md ("MuJoCo 4.0's RK4") quotes its output.

Usage (each 'run' in a virtual environment with the MuJoCo version to test; MJ_ASSETS is a folder
with gymnasium 1.4.0's ant.xml, humanoid.xml and hopper.xml, by default the installed gymnasium's):
  python3 -m venv /tmp/mj312 && /tmp/mj312/bin/pip install mujoco==3.12.0 gymnasium==1.4.0
  python3 -m venv /tmp/mj4 && /tmp/mj4/bin/pip install mujoco==4.0.0 gymnasium==1.4.0
  /tmp/mj312/bin/python scripts/mujoco_rk4_versions.py run     /tmp/mj_traj/3.12.0
  /tmp/mj4/bin/python   scripts/mujoco_rk4_versions.py run     /tmp/mj_traj/4.0.0
  /tmp/mj4/bin/python   scripts/mujoco_rk4_versions.py compare /tmp/mj_traj/3.12.0 /tmp/mj_traj/4.0.0
  /tmp/mj4/bin/python   scripts/mujoco_rk4_versions.py order   # RK4's order of convergence, free body

'run' writes, per model and integrator, <name>_<integ>_qpos.npy and _qvel.npy of shape (N+1, nq/nv)
(row 0 = initial state, row k = state after k mj_step calls), plus the initial state and controls.
The initial state and controls are generated with numpy's default_rng (PCG64), which is
version-stable; 'compare' checks that row 0 and the controls are bit-identical across the two runs.
"""
import os
import sys

import mujoco
import numpy as np


def default_assets():
    try:
        import gymnasium
        return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
    except ImportError:
        return "."


ASSETS = os.environ.get("MJ_ASSETS") or default_assets()
NSTEPS = 1000
CHECK = (1, 10, 100, 1000)

# One free-floating asymmetric box (principal inertias all different), spinning, no contacts.
FREE_VACUUM = """
<mujoco model="free_vacuum">
  <option timestep="0.005"/>
  <worldbody>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.05 0.1 0.2" density="1000" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""

# Same kind of body (capsule) falling and spinning onto a ground plane (contacts).
FREE_CONTACT = """
<mujoco model="free_contact">
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="capsule" pos="0 0 0.3">
      <freejoint/>
      <geom type="capsule" size="0.05 0.15" euler="0 60 0" density="1000"/>
      <geom type="box" size="0.03 0.03 0.03" pos="0.05 0 0.1" density="1000"/>
    </body>
  </worldbody>
</mujoco>
"""


def models():
    return {
            "ant": mujoco.MjModel.from_xml_path(os.path.join(ASSETS, "ant.xml")),
            "humanoid": mujoco.MjModel.from_xml_path(os.path.join(ASSETS, "humanoid.xml")),
            "free_vacuum": mujoco.MjModel.from_xml_string(FREE_VACUUM),
            "free_contact": mujoco.MjModel.from_xml_string(FREE_CONTACT),
            # control: RK4 model with only hinge/slide joints (no free/ball joint)
            "hopper": mujoco.MjModel.from_xml_path(os.path.join(ASSETS, "hopper.xml")),
    }


def initial_state(m, seed):
    """qpos0 + seeded perturbation; quaternions of free/ball joints renormalised."""
    rng = np.random.default_rng(seed)
    qpos = m.qpos0.copy() + rng.uniform(-0.1, 0.1, size=m.nq)
    qvel = 0.1 * rng.standard_normal(m.nv)
    for j in range(m.njnt):
        adr = m.jnt_qposadr[j]
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            q = qpos[adr + 3:adr + 7]
            qpos[adr + 3:adr + 7] = q / np.linalg.norm(q)
            # give free bodies a substantial spin so orientation integration matters
            dadr = m.jnt_dofadr[j]
            qvel[dadr + 3:dadr + 6] += np.array([2.0, 5.0, -3.0])
        elif m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            q = qpos[adr:adr + 4]
            qpos[adr:adr + 4] = q / np.linalg.norm(q)
    return qpos, qvel


def controls(m, seed):
    rng = np.random.default_rng(seed + 1000)
    return rng.uniform(-0.4, 0.4, size=(NSTEPS, m.nu))


def rollout(m, integrator, qpos0, qvel0, ctrl, nsteps=NSTEPS):
    m.opt.integrator = integrator
    d = mujoco.MjData(m)
    d.qpos[:] = qpos0
    d.qvel[:] = qvel0
    mujoco.mj_forward(m, d)
    qp = np.empty((nsteps + 1, m.nq))
    qv = np.empty((nsteps + 1, m.nv))
    qp[0], qv[0] = d.qpos, d.qvel
    warnings = 0
    for k in range(nsteps):
        if m.nu:
            d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
        qp[k + 1], qv[k + 1] = d.qpos, d.qvel
    warnings = int(sum(w.number for w in d.warning))
    return qp, qv, warnings


INTEGRATORS = {"rk4": mujoco.mjtIntegrator.mjINT_RK4, "euler": mujoco.mjtIntegrator.mjINT_EULER}


def cmd_run(outdir):
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "version.txt"), "w") as f:
        f.write(f"mujoco {mujoco.__version__} numpy {np.__version__}\n")
    for seed, (name, m) in enumerate(models().items()):
        orig = mujoco.mjtIntegrator(m.opt.integrator).name
        qpos0, qvel0 = initial_state(m, seed)
        ctrl = controls(m, seed)
        np.save(os.path.join(outdir, f"{name}_init_qpos.npy"), qpos0)
        np.save(os.path.join(outdir, f"{name}_init_qvel.npy"), qvel0)
        np.save(os.path.join(outdir, f"{name}_ctrl.npy"), ctrl)
        for iname, integ in INTEGRATORS.items():
            qp, qv, nwarn = rollout(m, integ, qpos0, qvel0, ctrl)
            np.save(os.path.join(outdir, f"{name}_{iname}_qpos.npy"), qp)
            np.save(os.path.join(outdir, f"{name}_{iname}_qvel.npy"), qv)
            print(f"{mujoco.__version__} {name:12s} xml-integrator={orig:10s} nq={m.nq:2d} nv={m.nv:2d} "
                        f"nu={m.nu:2d} dt={m.opt.timestep} {iname}: warnings={nwarn} finite={np.isfinite(qp).all()}")


def cmd_compare(a, b):
    va = open(os.path.join(a, "version.txt")).read().strip()
    vb = open(os.path.join(b, "version.txt")).read().strip()
    print(f"A = {va}\nB = {vb}\n")
    names = ["ant", "humanoid", "free_vacuum", "free_contact", "hopper"]
    print("| model | integrator | quantity | " + " | ".join(f"after {k}" for k in CHECK) + " | first step with diff | first step diff > 1e-9 |")
    print("|---|---|---|" + "---|" * len(CHECK) + "---|---|")
    for name in names:
        for f in ("init_qpos", "init_qvel", "ctrl"):
            xa, xb = np.load(os.path.join(a, f"{name}_{f}.npy")), np.load(os.path.join(b, f"{name}_{f}.npy"))
            assert np.array_equal(xa, xb), f"{name} {f} differs between runs"
        for iname in INTEGRATORS:
            for q in ("qpos", "qvel"):
                xa = np.load(os.path.join(a, f"{name}_{iname}_{q}.npy"))
                xb = np.load(os.path.join(b, f"{name}_{iname}_{q}.npy"))
                diff = np.abs(xa - xb).max(axis=1)
                first = np.flatnonzero(diff > 0)
                first = str(first[0]) if first.size else "none (bit-identical)"
                big = np.flatnonzero(diff > 1e-9)
                big = str(big[0]) if big.size else "never"
                cells = " | ".join(f"{diff[k]:.3e}" for k in CHECK)
                print(f"| {name} | {iname} | {q} | {cells} | {first} | {big} |")
    # where the one-step difference sits: root free joint position / quaternion / other qpos
    print("\nAfter 1 step, max abs qpos diff split: root free-joint position | root quaternion | other qpos")
    for name in names[:4]:
        for iname in INTEGRATORS:
            xa = np.load(os.path.join(a, f"{name}_{iname}_qpos.npy"))[1]
            xb = np.load(os.path.join(b, f"{name}_{iname}_qpos.npy"))[1]
            d = np.abs(xa - xb)
            other = d[7:].max() if d.size > 7 else 0.0
            print(f"  {name:12s} {iname:5s} pos={d[:3].max():.3e} quat={d[3:7].max():.3e} other={other:.3e}")
    # scale reference: size of the one-step state change, to judge relative magnitude
    print("\nOne-step state change (A), max abs, for scale:")
    for name in names:
        for iname in INTEGRATORS:
            qp = np.load(os.path.join(a, f"{name}_{iname}_qpos.npy"))
            qv = np.load(os.path.join(a, f"{name}_{iname}_qvel.npy"))
            print(f"  {name:12s} {iname:5s} |dqpos|={np.abs(qp[1]-qp[0]).max():.3e} |dqvel|={np.abs(qv[1]-qv[0]).max():.3e}")


def cmd_order():
    """Orientation error of RK4 for the free body in vacuum vs. a fine reference (same version)."""
    m = models()["free_vacuum"]
    m.opt.gravity[:] = 0
    qpos0, qvel0 = initial_state(m, 2)
    T = 1.0

    def final(h):
        m.opt.timestep = h
        n = int(round(T / h))
        qp, qv, _ = rollout(m, INTEGRATORS["rk4"], qpos0, qvel0, np.zeros((n, 0)), nsteps=n)
        return qp[-1], qv[-1]

    ref_p, ref_v = final(0.01 / 256)
    print(f"mujoco {mujoco.__version__}: RK4, torque-free asymmetric box, T={T}, ref h=0.01/256")
    prev = None
    for h in (0.04, 0.02, 0.01, 0.005):
        p, v = final(h)
        # rotation angle of q_ref^-1 * q, via asin of the vector part (arccos loses precision near 0)
        r = np.empty(4)
        mujoco.mju_negQuat(r, ref_p[3:7])
        e = np.empty(4)
        mujoco.mju_mulQuat(e, r, p[3:7])
        ang = 2 * np.arcsin(min(1.0, np.linalg.norm(e[1:])))
        verr = np.abs(v - ref_v).max()
        rate = "" if prev is None else (f"  observed order: orientation {np.log2(prev[0] / ang):.2f},"
                                                                        f" qvel {np.log2(prev[1] / verr):.2f}")
        print(f"  h={h:<6} orientation err={ang:.3e} rad, |qvel err|={verr:.3e}{rate}")
        prev = (ang, verr)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        cmd_run(sys.argv[2])
    elif sys.argv[1] == "compare":
        cmd_compare(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "order":
        cmd_order()
    else:
        sys.exit(__doc__)
