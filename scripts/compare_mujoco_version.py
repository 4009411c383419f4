#!/usr/bin/env python3
"""Compare another installed MuJoCo release against the pinned reference (3.12.0), stage by stage.

    python3 scripts/compare_mujoco_version.py --other-python /tmp/venv4/bin/python
    python3 scripts/compare_mujoco_version.py --other-python /tmp/venv4/bin/python \
        --cxx-build build/mj4 --mujoco-dir /tmp/venv4/lib/python3.11/site-packages/mujoco

Two parts:

1. Python (always). The reference interpreter (--ref-python, default python3, with mujoco==3.12.0)
   records random-action rollouts of the three Gymnasium models (Hopper-v5, Walker2d-v5,
   HalfCheetah-v5 settings: XML options, frame_skip, reset noise); then each interpreter evaluates the
   same recorded states stage by stage (kinematics, M, bias, passive, actuator, qacc_smooth with
   constraints disabled; contacts and constraint rows; the Newton solve with tight and with the
   model's own settings; one env step, tight and default) and replays the same episodes (same
   resets, same actions). The other release is run twice: as it compiles the XML, and with every
   mjModel array that differs from the reference's patched to the reference's values ("patched"),
   which separates what comes from the compiled constants from what comes from the algorithms.
   Since our engine equals MuJoCo 3.12.0 bit for bit (tests/physics/mujoco_*_test.cpp), the
   reference-vs-other column is also our engine's error against the other release.

2. Gymnasium (--gymnasium N): N episodes of Gymnasium's own Hopper-v5, Walker2d-v5 and
   HalfCheetah-v5 in both interpreters (reset(seed=episode), the same random actions): episode
   lengths, observations, returns (two-sample Kolmogorov-Smirnov test).

3. Probes (--probes): mju_quat2Mat, mju_mulQuat and mju_eig3 on random inputs, capsule-capsule
   collision (random, exactly parallel and near-parallel axes), RK4's order of accuracy on a
   torque-free free body, and Ant-v5 (free joint, RK4) episodes.

4. C++ (with --cxx-build and --mujoco-dir): configures and builds mujoco_reference_test against the
   other release's C library and runs it, printing each test case's result and the errors the
   cases print (our engine measured directly against the other release).

The other interpreter needs the other mujoco and gymnasium[mujoco]; e.g. for 4.0.0:
    python3 -m venv /tmp/venv4 && /tmp/venv4/bin/pip install mujoco==4.0.0 "gymnasium[mujoco]==1.4.0"

The worker modes (--worker ...) are internal: the script runs itself in each interpreter.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

MODELS = {  # name: (xml, frame_skip, reset noise scale, healthy check)
    "hopper": ("hopper.xml", 4, 5e-3, "hopper"),
    "walker2d": ("walker2d_v5.xml", 4, 5e-3, "walker2d"),
    "half_cheetah": ("half_cheetah.xml", 5, 0.1, None),
}


def gymnasium_assets():
    import gymnasium
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")


def healthy(kind, qpos, qvel):
    """Gymnasium v5's is_healthy with its default ranges."""
    if kind == "hopper":
        state = np.concatenate([qpos, qvel])[2:]
        return bool(np.all(np.abs(state) < 100.0) and qpos[1] > 0.7 and -0.2 < qpos[2] < 0.2)
    if kind == "walker2d":
        return bool(0.8 < qpos[1] < 2.0 and -1.0 < qpos[2] < 1.0)
    return True


# --------------------------------------------------------------------------------------------------
# worker side (runs inside one interpreter with one mujoco)

def model_arrays(m):
    out = {}
    for k in dir(m):
        if k.startswith("_"):
            continue
        try:
            v = getattr(m, k)
        except Exception:
            continue
        if isinstance(v, np.ndarray) and v.dtype.kind in "fiu" and v.size > 0:
            out["model." + k] = np.array(v)
    for k in ("timestep", "tolerance", "ls_tolerance", "impratio", "iterations", "ls_iterations",
              "integrator", "cone", "solver", "disableflags", "enableflags"):
        out["model.opt." + k] = np.array(getattr(m.opt, k))
    return out


def load(mujoco, xml, patch):
    m = mujoco.MjModel.from_xml_path(xml)
    patched = []
    if patch is not None:
        for k in patch.files:
            if not k.startswith("model.") or k.startswith("model.opt."):
                continue
            name = k[len("model."):]
            if not hasattr(m, name):
                continue
            cur = getattr(m, name)
            ref = patch[k]
            if isinstance(cur, np.ndarray) and cur.shape == ref.shape and not np.array_equal(cur, ref):
                cur[...] = ref
                patched.append(name)
    return m, patched


def set_state(m, d, qpos, qvel, ctrl, warm):
    d.time = 0.0
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    d.ctrl[:] = ctrl
    d.qacc_warmstart[:] = warm
    d.act[:] = 0


def record(mujoco, xml, frame_skip, noise, episodes, steps, seed, every=5):
    """Reference rollouts: initial states, actions, and the states visited (with warm starts)."""
    m = mujoco.MjModel.from_xml_path(xml)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    q0 = np.zeros((episodes, m.nq)); v0 = np.zeros((episodes, m.nv))
    acts = rng.uniform(lo, hi, size=(episodes, steps, m.nu))
    sq, sv, sc, sw = [], [], [], []
    for e in range(episodes):
        if noise == 0.1:  # HalfCheetah-v5: uniform qpos, normal qvel
            q0[e] = m.qpos0 + rng.uniform(-noise, noise, m.nq)
            v0[e] = noise * rng.standard_normal(m.nv)
        else:
            q0[e] = m.qpos0 + rng.uniform(-noise, noise, m.nq)
            v0[e] = rng.uniform(-noise, noise, m.nv)
        mujoco.mj_resetData(m, d)
        d.qpos[:] = q0[e]; d.qvel[:] = v0[e]
        mujoco.mj_forward(m, d)
        for t in range(steps):
            if t % every == 0:  # a state every `every` env steps, with the next action and the warm start
                sq.append(d.qpos.copy()); sv.append(d.qvel.copy()); sc.append(acts[e, t].copy())
                sw.append(d.qacc_warmstart.copy())
            d.ctrl[:] = acts[e, t]
            for _ in range(frame_skip):
                mujoco.mj_step(m, d)
    # plus random states (no contacts mostly): qpos0 + N(0, 0.3), qvel N(0, 1), random ctrl
    for _ in range(len(sq)):
        sq.append(m.qpos0 + 0.3 * rng.standard_normal(m.nq)); sv.append(rng.standard_normal(m.nv))
        sc.append(rng.uniform(lo, hi)); sw.append(np.zeros(m.nv))
    return dict(q0=q0, v0=v0, acts=acts, sq=np.array(sq), sv=np.array(sv), sc=np.array(sc), sw=np.array(sw),
                nrec=np.array(len(sq) // 2))


def contacts(d):
    n = d.ncon
    c = d.contact
    return dict(ncon=n, geom=np.array(c.geom[:n]).reshape(n, 2), dist=np.array(c.dist[:n]),
                pos=np.array(c.pos[:n]).reshape(n, 3), frame=np.array(c.frame[:n]).reshape(n, 9))


def evaluate(mujoco, xml, frame_skip, rec, patch, tight_only_steps=True):
    m, patched = load(mujoco, xml, patch)
    d = mujoco.MjData(m)
    nq, nv = m.nq, m.nv
    tol, it, lsit = m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations
    flags = m.opt.disableflags
    S = len(rec["sq"])
    out = {k: [] for k in ("xpos", "xquat", "xipos", "ximat", "geom_xpos", "geom_xmat", "cinert", "cdof",
                           "qM", "qfrc_bias", "qfrc_passive", "qfrc_actuator", "qacc_smooth")}
    cons, rows, solve = [], [], {"tight": [], "default": []}
    step = {"tight": [], "default": []}
    M = np.zeros((nv, nv))
    for s in range(S):
        q, v, c, w = rec["sq"][s], rec["sv"][s], rec["sc"][s], rec["sw"][s]
        # smooth stages, constraints disabled
        m.opt.disableflags = flags | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
        set_state(m, d, q, v, c, w)
        mujoco.mj_forward(m, d)
        for k in ("xpos", "xquat", "xipos", "ximat", "geom_xpos", "geom_xmat", "cinert", "cdof",
                  "qfrc_bias", "qfrc_passive", "qfrc_actuator", "qacc_smooth"):
            out[k].append(np.array(getattr(d, k)).ravel().copy())
        mujoco.mj_fullM(m, d, M)
        out["qM"].append(M.ravel().copy())
        m.opt.disableflags = flags
        # contacts, rows, solver (tight and default)
        for mode in ("tight", "default"):
            m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = (1e-15, 1000, 1000) if mode == "tight" else (tol, it, lsit)
            set_state(m, d, q, v, c, w)
            mujoco.mj_forward(m, d)
            if mode == "tight":
                cons.append(contacts(d))
                n = d.nefc
                rows.append(dict(nefc=n, type=np.array(d.efc_type[:n]), id=np.array(d.efc_id[:n]),
                                 J=np.array(d.efc_J[:n * nv]).reshape(n, nv), aref=np.array(d.efc_aref[:n]),
                                 D=np.array(d.efc_D[:n]), R=np.array(d.efc_R[:n]), pos=np.array(d.efc_pos[:n])))
            nit = int(d.solver_niter[0])
            neval = sum(int(d.solver[i].neval) for i in range(min(nit, len(d.solver))))
            solve[mode].append(dict(qacc=d.qacc.copy(), force=np.array(d.efc_force[:d.nefc]), niter=nit, neval=neval))
            # one env step from the same state
            set_state(m, d, q, v, c, w)
            for _ in range(frame_skip):
                mujoco.mj_step(m, d)
            step[mode].append(np.concatenate([d.qpos, d.qvel]))
        m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = tol, it, lsit
        # default settings with islands disabled (the solver's termination scale then differs by release)
        m.opt.disableflags = flags | int(mujoco.mjtDisableBit.mjDSBL_ISLAND)
        set_state(m, d, q, v, c, w)
        mujoco.mj_forward(m, d)
        solve.setdefault("noisland", []).append(dict(qacc=d.qacc.copy(), niter=int(d.solver_niter[0])))
        m.opt.disableflags = flags
    res = {k: np.array(vs) for k, vs in out.items()}
    res["qacc_noisland"] = np.array([x["qacc"] for x in solve["noisland"]])
    res["niter_noisland"] = np.array([x["niter"] for x in solve["noisland"]])
    res["ncon"] = np.array([x["ncon"] for x in cons])
    res["nefc"] = np.array([x["nefc"] for x in rows])
    for mode in ("tight", "default"):
        res["step_" + mode] = np.array(step[mode])
        res["qacc_" + mode] = np.array([x["qacc"] for x in solve[mode]])
        res["niter_" + mode] = np.array([x["niter"] for x in solve[mode]])
        res["neval_" + mode] = np.array([x["neval"] for x in solve[mode]])
    # ragged: store padded
    maxc = max(1, max(x["ncon"] for x in cons)); maxr = max(1, max(x["nefc"] for x in rows))
    def pad(lst, key, width, shape=()):
        a = np.full((S, width) + shape, np.nan)
        for i, x in enumerate(lst):
            n = len(x[key]); a[i, :n] = x[key]
        return a
    res["con_dist"] = pad(cons, "dist", maxc); res["con_pos"] = pad(cons, "pos", maxc, (3,))
    res["con_frame"] = pad(cons, "frame", maxc, (9,)); res["con_geom"] = pad(cons, "geom", maxc, (2,))
    res["efc_type"] = pad(rows, "type", maxr); res["efc_id"] = pad(rows, "id", maxr)
    res["efc_J"] = pad(rows, "J", maxr, (nv,)); res["efc_aref"] = pad(rows, "aref", maxr)
    res["efc_R"] = pad(rows, "R", maxr); res["efc_pos"] = pad(rows, "pos", maxr)
    for mode in ("tight", "default"):
        res["efc_force_" + mode] = pad(solve[mode], "force", maxr)
    res["patched"] = np.array(",".join(patched))
    return m, res


def rollouts(mujoco, m, frame_skip, rec):
    """Replays the recorded episodes (same resets and actions) with the model's settings."""
    d = mujoco.MjData(m)
    E, T, _ = rec["acts"].shape
    traj = np.zeros((E, T, m.nq + m.nv))
    for e in range(E):
        mujoco.mj_resetData(m, d)
        d.qpos[:] = rec["q0"][e]; d.qvel[:] = rec["v0"][e]
        mujoco.mj_forward(m, d)
        for t in range(T):
            d.ctrl[:] = rec["acts"][e, t]
            for _ in range(frame_skip):
                mujoco.mj_step(m, d)
            traj[e, t, :m.nq] = d.qpos; traj[e, t, m.nq:] = d.qvel
    return traj


GYM_IDS = {"hopper": "Hopper-v5", "walker2d": "Walker2d-v5", "half_cheetah": "HalfCheetah-v5"}


def gym_worker(args):
    """Gymnasium's own env: reset(seed=episode), uniform random actions from a fixed generator."""
    import gymnasium as gym
    env = gym.make(GYM_IDS[args.model])
    rng = np.random.default_rng(args.seed)
    lens, rets, obs = [], [], []
    for ep in range(args.episodes):
        o, _ = env.reset(seed=ep)
        total, seen = 0.0, [o]
        for t in range(1000):
            o, r, term, trunc, _ = env.step(rng.uniform(-1, 1, env.action_space.shape))
            total += r
            if t < 100:
                seen.append(o)
            if term or trunc:
                break
        lens.append(t + 1); rets.append(total)
        pad = np.full((101, len(o)), np.nan); pad[:len(seen)] = seen; obs.append(pad)
    import mujoco
    np.savez(args.out, len=np.array(lens), ret=np.array(rets), obs=np.array(obs), version=np.array(mujoco.__version__))


def gym_compare(a, b):
    e = np.abs(a["obs"] - b["obs"]) / np.maximum(1.0, np.abs(a["obs"]))
    e = np.where(np.isnan(e), 0.0, e)
    per_t = e.max(axis=(0, 2))
    ra, rb = a["ret"], b["ret"]
    # two-sample Kolmogorov-Smirnov statistic of the returns (p-value by the asymptotic formula)
    x = np.sort(np.concatenate([ra, rb]))
    D = np.max(np.abs(np.searchsorted(np.sort(ra), x, side="right") / len(ra) - np.searchsorted(np.sort(rb), x, side="right") / len(rb)))
    n = len(ra) * len(rb) / (len(ra) + len(rb))
    lam = (np.sqrt(n) + 0.12 + 0.11 / np.sqrt(n)) * D
    p = 1.0 if lam < 1e-3 else float(min(1.0, max(0.0, 2 * sum((-1) ** (k - 1) * np.exp(-2 * k * k * lam * lam) for k in range(1, 101)))))
    return [("Gymnasium: same episode length", "%d of %d (mean %.1f vs %.1f)" % (int((a["len"] == b["len"]).sum()), len(ra), a["len"].mean(), b["len"].mean())),
            ("Gymnasium: obs max error, env steps 0-10", float(per_t[:11].max())),
            ("Gymnasium: obs max error, env steps 0-100", float(per_t.max())),
            ("Gymnasium: max |return difference|", float(np.abs(ra - rb).max())),
            ("Gymnasium: returns, KS test", "D %.3g, p %.3g (mean %.1f vs %.1f)" % (D, p, ra.mean(), rb.mean()))]

# --------------------------------------------------------------------------------------------------
# probes of single functions and features (--probes): quaternion/eigen helpers, capsule-capsule
# collision, RK4 for a free body, Ant-v5 (free joint, RK4)

CAPSULES_XML = """<mujoco><worldbody>
<body pos='0 0 0.2'><freejoint/><geom type='capsule' size='0.06 0.2' margin='0.01' gap='0.005' condim='3'/></body>
<body pos='0 0 0.4'><freejoint/><geom type='capsule' size='0.05 0.15' margin='0.002' condim='3'/></body>
</worldbody></mujoco>"""
SPIN_XML = """<mujoco><option gravity='0 0 0' integrator='RK4' timestep='%r'/><worldbody><body><freejoint/>
<inertial pos='0 0 0' mass='1' diaginertia='1 2 3'/></body></worldbody></mujoco>"""
SPIN_STEPS = (0.02, 0.01, 0.005, 0.0025, 0.00125)


def probe_worker(args):
    import mujoco
    out = {}
    rng = np.random.default_rng(args.seed)
    # helpers
    q = rng.standard_normal((20000, 4)); q /= np.linalg.norm(q, axis=1, keepdims=True)
    p = rng.standard_normal((20000, 4)); p /= np.linalg.norm(p, axis=1, keepdims=True)
    mats, prods = np.zeros((20000, 9)), np.zeros((20000, 4))
    for i in range(20000):
        mujoco.mju_quat2Mat(mats[i], q[i]); mujoco.mju_mulQuat(prods[i], q[i], p[i])
    out["quat2Mat"], out["mulQuat"] = mats, prods
    sym = rng.standard_normal((2000, 3, 3)); sym = sym @ np.transpose(sym, (0, 2, 1))
    eig = np.zeros((2000, 7))
    for i in range(2000):
        ev, vec, qq = np.zeros(3), np.zeros(9), np.zeros(4)
        mujoco.mju_eig3(ev, vec, qq, sym[i].ravel().copy())
        eig[i, :3], eig[i, 3:] = ev, qq
        V = vec.reshape(3, 3)  # the eigenvectors (its columns)
        eig_res = np.abs(sym[i] @ V - V * ev).max() / np.abs(ev).max()
        out.setdefault("eig3_residual", []).append(eig_res)
    out["eig3"] = eig
    out["eig3_residual"] = np.array(out["eig3_residual"])
    # capsule-capsule: random, exactly parallel side by side, near-parallel (1e-9..1e-3 rad)
    m = mujoco.MjModel.from_xml_string(CAPSULES_XML); d = mujoco.MjData(m)
    con = np.full((3, 6000, 1 + 2 * 14), np.nan)
    for kind in range(3):
        for t in range(6000):
            q1 = rng.uniform(-1, 1, 4); q1 /= np.linalg.norm(q1)
            mujoco.mj_resetData(m, d)
            d.qpos[0:3] = rng.uniform(-0.15, 0.15, 3); d.qpos[3:7] = q1
            if kind == 0:
                q2 = rng.uniform(-1, 1, 4); q2 /= np.linalg.norm(q2)
                d.qpos[7:10] = rng.uniform(-0.15, 0.15, 3)
            else:
                q2 = q1.copy()
                if kind == 2:
                    ang = 10 ** rng.uniform(-9, -3); ax = rng.standard_normal(3); ax /= np.linalg.norm(ax)
                    q2 = np.zeros(4); mujoco.mju_mulQuat(q2, q1, np.concatenate([[np.cos(ang / 2)], np.sin(ang / 2) * ax]))
                R = np.zeros(9); mujoco.mju_quat2Mat(R, q1); R = R.reshape(3, 3)
                d.qpos[7:10] = d.qpos[0:3] + rng.uniform(-0.3, 0.3) * R[:, 2] + rng.uniform(0.08, 0.13) * R[:, 0]
            d.qpos[10:14] = q2
            mujoco.mj_kinematics(m, d); mujoco.mj_collision(m, d)
            con[kind, t, 0] = d.ncon
            for i in range(min(d.ncon, 2)):
                c = d.contact[i]
                con[kind, t, 1 + 14 * i:15 + 14 * i] = np.concatenate([[c.dist], c.pos, c.frame, [c.exclude]])
    out["capsules"] = con
    # RK4 on a torque-free asymmetric body: orientation at t = 1 for several steps, and a fine reference
    spin = []
    for h in SPIN_STEPS + (1e-5,):
        m = mujoco.MjModel.from_xml_string(SPIN_XML % h); d = mujoco.MjData(m); d.qvel[3:] = [3, 0.2, -1]
        for _ in range(int(round(1 / h))):
            mujoco.mj_step(m, d)
        spin.append(d.qpos[3:7].copy())
    out["spin"] = np.array(spin)
    # Ant-v5: 20 episodes of 100 env steps (frame_skip 5) from Gymnasium-like resets, random actions
    m = mujoco.MjModel.from_xml_path(os.path.join(gymnasium_assets(), "ant.xml")); d = mujoco.MjData(m)
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    ant = np.zeros((20, 100, m.nv + m.nq + m.nv))
    for e in range(20):
        mujoco.mj_resetData(m, d)
        d.qpos[:] = m.qpos0 + rng.uniform(-0.1, 0.1, m.nq); d.qvel[:] = 0.1 * rng.standard_normal(m.nv)
        mujoco.mj_forward(m, d)
        for t in range(100):
            d.ctrl[:] = rng.uniform(lo, hi)
            mujoco.mj_forward(m, d); qacc = d.qacc.copy()
            for _ in range(5):
                mujoco.mj_step(m, d)
            ant[e, t] = np.concatenate([qacc, d.qpos, d.qvel])
    out["ant"] = ant; out["ant_nv"] = np.array(m.nv); out["version"] = np.array(mujoco.__version__)
    np.savez(args.out, **out)


def probe_compare(a, b):
    rows = []
    for k in ("quat2Mat", "mulQuat"):
        dd = np.abs(a[k] - b[k])
        rows.append(("mju_%s on 20,000 random quaternions" % k, "differs in %.0f%%, max %.3g" % (100 * (dd > 0).any(axis=1).mean(), dd.max())))
    dd = np.abs(a["eig3"] - b["eig3"])
    rows.append(("mju_eig3 on 2,000 random SPD matrices", "differs in %.0f%%, max %.3g; relative residual max %.3g (ref) vs %.3g (other)"
                 % (100 * (dd > 0).any(axis=1).mean(), dd.max(), a["eig3_residual"].max(), b["eig3_residual"].max())))
    for kind, name in enumerate(("random", "exactly parallel", "near-parallel")):
        A, B = a["capsules"][kind], b["capsules"][kind]
        ncd = int((A[:, 0] != B[:, 0]).sum()); dist = pos = frame = 0.0; exc = n = 0
        for ra, rb in zip(A, B):
            if ra[0] != rb[0]:
                continue
            ca = [ra[1 + 14 * i:15 + 14 * i] for i in range(int(ra[0]))]
            cb = [rb[1 + 14 * i:15 + 14 * i] for i in range(int(rb[0]))]
            if len(ca) == 2 and np.linalg.norm(ca[0][1:4] - cb[0][1:4]) > np.linalg.norm(ca[0][1:4] - cb[1][1:4]):
                cb = cb[::-1]
            for x, y in zip(ca, cb):
                n += 1
                dist = max(dist, abs(x[0] - y[0])); pos = max(pos, np.abs(x[1:4] - y[1:4]).max())
                frame = max(frame, np.abs(x[4:13] - y[4:13]).max()); exc += int(x[13] != y[13])
        rows.append(("capsule-capsule, %s (%d poses)" % (name, len(A)),
                     "count differs in %d (2 contacts: %d vs %d); dist %.3g pos %.3g frame %.3g; exclude differs in %d of %d"
                     % (ncd, int((A[:, 0] == 2).sum()), int((B[:, 0] == 2).sum()), dist, pos, frame, exc, n)))
    for lab, x in (("reference", a), ("other", b)):
        ref = x["spin"][-1]
        errs = [min(np.linalg.norm(v - ref), np.linalg.norm(v + ref)) for v in x["spin"][:-1]]
        order = np.log2(errs[-2] / errs[-1])
        rows.append(("RK4 free body, orientation error at t=1 (%s)" % lab,
                     "h=%s: %s; order %.2f" % ("..".join(str(h) for h in (SPIN_STEPS[0], SPIN_STEPS[-1])), " ".join("%.2g" % e for e in errs), order)))
    nv = int(a["ant_nv"])
    e = np.abs(a["ant"] - b["ant"]) / np.maximum(1.0, np.abs(a["ant"]))
    rows.append(("Ant-v5: qacc at the reset states", float(e[:, 0, :nv].max())))
    rows.append(("Ant-v5: one env step qpos / qvel", "%.3g / %.3g" % (e[:, 0, nv:2 * nv + 1].max(), e[:, 0, 2 * nv + 1:].max())))
    rows.append(("Ant-v5: episodes after 5 / 10 / 20 / 100 env steps", " / ".join("%.3g" % e[:, :t, nv:].max() for t in (5, 10, 20, 100))))
    return rows



def worker(args):
    if args.worker == "probe":
        probe_worker(args)
        return
    if args.worker == "gym":
        gym_worker(args)
        return
    import mujoco
    name = args.model
    xml, fs, noise, _ = MODELS[name]
    xml = os.path.join(gymnasium_assets(), xml)
    if args.worker == "record":
        rec = record(mujoco, xml, fs, noise, args.episodes, args.steps, args.seed, args.state_every)
        np.savez(args.out, **rec)
        return
    rec = dict(np.load(args.states))
    patch = np.load(args.patch) if args.patch else None
    m, res = evaluate(mujoco, xml, fs, rec, patch)
    res["traj"] = rollouts(mujoco, m, fs, rec)
    res.update(model_arrays(m))
    res["version"] = np.array(mujoco.__version__)
    res["nrec"] = rec["nrec"]
    res["nq"] = np.array(m.nq)
    np.savez(args.out, **res)


# --------------------------------------------------------------------------------------------------
# driver side

def rel(a, b):
    """max |a - b| / max(1, |b|) over entries present in both (NaN padding ignored)."""
    a = np.asarray(a, float); b = np.asarray(b, float)
    if a.shape != b.shape:
        return float("inf")
    d = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    d = d[np.isfinite(d)]
    return float(d.max()) if d.size else 0.0


def compare(ref, oth, name, kind):
    rows = []
    nrec = int(ref["nrec"])
    S = len(ref["qM"])
    same_con = (ref["ncon"] == oth["ncon"]) & (ref["nefc"] == oth["nefc"])
    if ref["con_geom"].shape == oth["con_geom"].shape:
        g = np.nan_to_num(ref["con_geom"], nan=-1) == np.nan_to_num(oth["con_geom"], nan=-1)
        same_con &= g.reshape(S, -1).all(axis=1)
    if ref["efc_type"].shape == oth["efc_type"].shape:
        t = np.nan_to_num(ref["efc_type"], nan=-1) == np.nan_to_num(oth["efc_type"], nan=-1)
        same_con &= t.all(axis=1)
    rows.append(("kinematics: xpos, xquat", max(rel(ref[k], oth[k]) for k in ("xpos", "xquat"))))
    rows.append(("kinematics: xipos, ximat", max(rel(ref[k], oth[k]) for k in ("xipos", "ximat"))))
    rows.append(("kinematics: geom_xpos, geom_xmat", max(rel(ref[k], oth[k]) for k in ("geom_xpos", "geom_xmat"))))
    rows.append(("com (cinert, cdof)", max(rel(ref["cinert"], oth["cinert"]), rel(ref["cdof"], oth["cdof"]))))
    for k in ("qM", "qfrc_bias", "qfrc_passive", "qfrc_actuator", "qacc_smooth"):
        rows.append((k, rel(ref[k], oth[k])))
    sel = same_con
    def sub(k):
        a, b = ref[k][sel], oth[k][sel]
        return rel(a, b) if a.size else 0.0
    rows.append(("contacts: same set (of %d states)" % S, "%d differ" % int((~same_con).sum())))
    rows.append(("contact dist/pos/frame", max(sub("con_dist"), sub("con_pos"), sub("con_frame"))))
    rows.append(("rows efc_J/pos/R/aref", max(sub("efc_J"), sub("efc_pos"), sub("efc_R"), sub("efc_aref"))))
    rows.append(("qacc, tight solve", sub("qacc_tight")))
    rows.append(("efc_force, tight solve", sub("efc_force_tight")))
    rows.append(("qacc, default solve", sub("qacc_default")))
    rows.append(("  niter differs / neval differs", "%d / %d of %d" % (
        int((ref["niter_default"] != oth["niter_default"]).sum()), int((ref["neval_default"] != oth["neval_default"]).sum()), S)))
    rows.append(("qacc, default solve, islands disabled", sub("qacc_noisland")))
    rows.append(("  niter differs (islands disabled)", "%d of %d" % (int((ref["niter_noisland"] != oth["niter_noisland"]).sum()), S)))
    rows.append(("one env step, tight", sub("step_tight")))
    rows.append(("one env step, default", sub("step_default")))
    tr, to = ref["traj"], oth["traj"]
    E, T, _ = tr.shape
    err = np.abs(tr - to) / np.maximum(1.0, np.abs(tr))
    per_t = err.reshape(E, T, -1).max(axis=(0, 2))
    for t in (1, 10, 100, T):
        if t <= T:
            rows.append(("episodes: max error after %d env steps" % t, float(per_t[:t].max())))
    first = []
    for thr in (1e-9, 1e-6, 1e-3):
        over = err.reshape(E, T, -1).max(axis=2) > thr
        steps = np.where(over.any(axis=1), over.argmax(axis=1) + 1, T + 1)
        first.append("%g: %s" % (thr, ("median %d, min %d" % (np.median(steps), steps.min())) if (steps <= T).any() else "never"))
    rows.append(("episodes: first env step with error over", "; ".join(first)))
    if kind is not None:
        def term_step(traj):
            nq = int(ref["nq"])
            out = []
            for e in range(E):
                ts = T
                for t in range(T):
                    if not healthy(kind, traj[e, t, :nq], traj[e, t, nq:]):
                        ts = t + 1; break
                out.append(ts)
            return np.array(out)
        a, b = term_step(tr), term_step(to)
        rows.append(("episodes: same termination step", "%d of %d (mean length %.1f vs %.1f)" % (
            int((a == b).sum()), E, a.mean(), b.mean())))
        upto = max(float(err[e, :a[e]].max()) for e in range(E))
        rows.append(("episodes: max error up to termination", upto))
    return rows


def model_diff(ref, oth):
    out = []
    for k in ref.files:
        if not k.startswith("model.") or k not in oth.files:
            continue
        a, b = ref[k], oth[k]
        if a.shape != b.shape:
            out.append((k, "shape %s vs %s" % (a.shape, b.shape)))
        elif not np.array_equal(a, b):
            d = np.abs(a.astype(float) - b.astype(float))
            out.append((k, "max |diff| %.3g (%d entries)" % (d.max(), int((d > 0).sum()))))
    only = sorted(set(f for f in oth.files if f.startswith("model.")) - set(ref.files))
    return out, only


def fmt(v):
    return "%.3g" % v if isinstance(v, float) else str(v)


def run_cxx(args):
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cfg = ["cmake", "-S", src, "-B", args.cxx_build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
           "-DRLK_ENABLE_CUDA=OFF", "-DRLK_BUILD_BENCHMARKS=OFF", "-DRLK_BUILD_EXAMPLES=OFF",
           "-DRLK_HEADER_CHECK=OFF", "-DRLK_HOST_VARIANTS=serial", "-DRLK_MUJOCO_DIR=" + args.mujoco_dir]
    if not args.no_configure:
        subprocess.run(cfg, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", args.cxx_build, "--target", "mujoco_reference_test", "-j", str(args.jobs)], check=True)
    exe = os.path.join(args.cxx_build, "tests", "mujoco_reference_test")
    xml_out = os.path.join(args.cxx_build, "mujoco_reference_test_junit.xml")
    p = subprocess.run([exe, "-r", "junit", "-o", xml_out], capture_output=True, text=True)
    print("\n== C++ mujoco_reference_test (our engine) against the MuJoCo at %s: exit status %d" % (args.mujoco_dir, p.returncode))
    print("   what the cases measured:")
    for line in p.stdout.splitlines():
        if line.startswith("[") or line.startswith("  "):
            print("   " + line)
    import xml.etree.ElementTree as ET
    cases = {}
    for tc in ET.parse(xml_out).getroot().iter("testcase"):
        top = tc.get("name", "").split("/")[0]
        fails = cases.setdefault(top, [])
        for f in list(tc.findall("failure")) + list(tc.findall("error")):
            text = (f.text or "").strip().splitlines()
            fails.append("%s: %s" % (tc.get("name"), " | ".join(t.strip() for t in text[:4])))
    print("   cases:")
    for top, fails in cases.items():
        print("   %-6s %s" % ("FAILED" if fails else "passed", top))
        for f in fails[:6]:
            print("            " + f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref-python", default="python3", help="interpreter with the reference mujoco (3.12.0)")
    ap.add_argument("--other-python", help="interpreter with the other mujoco release")
    ap.add_argument("--models", default="hopper,walker2d,half_cheetah")
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--steps", type=int, default=200, help="env steps per replayed episode")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--state-every", type=int, default=5, help="record a state every N env steps of the rollouts")
    ap.add_argument("--cxx-build", help="build directory for mujoco_reference_test against the other release")
    ap.add_argument("--mujoco-dir", help="the other release's mujoco package directory (libmujoco.so.*, include/)")
    ap.add_argument("--no-configure", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="also write the tables as JSON here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory of recorded and evaluated states")
    # internal
    ap.add_argument("--gymnasium", type=int, default=0, metavar="N",
                    help="also run N Gymnasium v5 episodes per env in both interpreters (same seeds and actions)")
    ap.add_argument("--probes", action="store_true",
                    help="also probe single functions: quaternion/eigen helpers, capsule-capsule, RK4 free body, Ant-v5")
    ap.add_argument("--worker", choices=["record", "eval", "gym", "probe"])
    ap.add_argument("--model"); ap.add_argument("--states"); ap.add_argument("--patch"); ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    tmp = None
    if not args.other_python and not args.cxx_build:
        ap.error("give --other-python and/or --cxx-build with --mujoco-dir")
    me = os.path.abspath(__file__)
    tables = {}
    if args.other_python:
        tmp = tempfile.mkdtemp(prefix="rlk_mjcmp_")
        common = ["--episodes", str(args.episodes), "--steps", str(args.steps), "--seed", str(args.seed),
                  "--state-every", str(args.state_every)]
        for name in args.models.split(","):
            st, r, o, p = (os.path.join(tmp, "%s_%s.npz" % (name, x)) for x in ("states", "ref", "other", "patched"))
            subprocess.run([args.ref_python, me, "--worker", "record", "--model", name, "--out", st] + common, check=True)
            subprocess.run([args.ref_python, me, "--worker", "eval", "--model", name, "--states", st, "--out", r], check=True)
            subprocess.run([args.other_python, me, "--worker", "eval", "--model", name, "--states", st, "--out", o], check=True)
            subprocess.run([args.other_python, me, "--worker", "eval", "--model", name, "--states", st, "--patch", r,
                            "--out", p], check=True)
            ref, oth, pat = np.load(r), np.load(o), np.load(p)
            kind = MODELS[name][3]
            t1, t2 = compare(ref, oth, name, kind), compare(ref, pat, name, kind)
            diff, only = model_diff(ref, oth)
            print("\n== %s: MuJoCo %s (reference) vs %s; %d states (%d from rollouts), %d episodes x %d env steps"
                  % (name, ref["version"], oth["version"], len(ref["qM"]), int(ref["nrec"]), args.episodes, args.steps))
            print("   compiled mjModel arrays that differ: %s" % (", ".join("%s %s" % x for x in diff) or "none"))
            if only:
                print("   arrays only in %s: %s" % (oth["version"], ", ".join(only)))
            print("   patched to the reference's values: %s" % (str(pat["patched"]) or "nothing"))
            print("   %-44s %-26s %s" % ("stage (max error, relative to max(1,|ref|))", "as compiled", "constants patched"))
            for (k, a), (_, b) in zip(t1, t2):
                print("   %-44s %-26s %s" % (k, fmt(a), fmt(b)))
            tables[name] = {"as_compiled": dict(t1), "patched": dict(t2), "model_diff": dict(diff)}
            if args.gymnasium:
                ga, gb = (os.path.join(tmp, "%s_gym_%s.npz" % (name, x)) for x in ("ref", "other"))
                g = ["--model", name, "--episodes", str(args.gymnasium), "--seed", str(args.seed)]
                subprocess.run([args.ref_python, me, "--worker", "gym", "--out", ga] + g, check=True)
                subprocess.run([args.other_python, me, "--worker", "gym", "--out", gb] + g, check=True)
                gt = gym_compare(np.load(ga), np.load(gb))
                for k, v in gt:
                    print("   %-44s %s" % (k, fmt(v)))
                tables[name]["gymnasium"] = dict(gt)
    if args.other_python and args.probes:
        pa, pb = (os.path.join(tmp, "probe_%s.npz" % x) for x in ("ref", "other"))
        subprocess.run([args.ref_python, me, "--worker", "probe", "--seed", str(args.seed), "--out", pa], check=True)
        subprocess.run([args.other_python, me, "--worker", "probe", "--seed", str(args.seed), "--out", pb], check=True)
        pr = probe_compare(np.load(pa), np.load(pb))
        print("\n== probes (reference vs other)")
        for k, v in pr:
            print("   %-52s %s" % (k, fmt(v)))
        tables["probes"] = dict(pr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(tables, f, indent=1, default=str)
    if tmp is not None:
        if args.keep:
            print("\n(recorded and evaluated states kept in %s)" % tmp)
        else:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    if args.cxx_build:
        if not args.mujoco_dir:
            ap.error("--cxx-build needs --mujoco-dir")
        run_cxx(args)


if __name__ == "__main__":
    main()
