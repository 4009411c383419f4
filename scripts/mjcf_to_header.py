#!/usr/bin/env python3
"""Compile an MJCF file with MuJoCo and write a C++ header of rlkernels physics model constants.

    python3 scripts/mjcf_to_header.py MODEL.xml --name hopper -o include/rlkernels/envs/mujoco/models/hopper.hpp

The header defines `rlkernels::models::<name>_dims` (the compile-time sizes) and
`template <class Scalar> constexpr physics::model<Scalar, <name>_dims> rlkernels::models::<name>()`,
whose fields are mjModel's values (same names, same layout: include/rlkernels/physics/model.hpp),
written as exact double literals, plus the candidate collision pairs MuJoCo's broadphase filters
would let through (contype/conaffinity, same-weld and parent filters, <exclude>), in the order in
which MuJoCo's mj_collision visits them.

Sensors of the kinds the engine computes (joint position and velocity, frame position,
orientation, axes and velocities, gyro, velocimeter, subtree centre of mass and velocity, clock:
physics/sensor.hpp) are kept, their values packed in sensordata in their order. Visual geoms other
than planes, spheres, capsules and boxes (contype = conaffinity = 0: cylinders, ellipsoids,
meshes, ...) and the other sensors cannot act on the dynamics: they are dropped, and the
header's first lines and stderr say which. Anything else outside the engine's subset is refused,
with one message that names every such element (free, ball, hinge and slide joints; plane, sphere and capsule geoms, boxes that
collide only with planes, cylinders that collide with planes, spheres, capsules and cylinders (MuJoCo's GJK/EPA with multiCCD); fixed tendons
(length and Jacobian); sites (their world frames); motors and position/velocity servos (affine bias) on hinge and slide joints;
joint friction loss (dof friction-loss rows); fluid forces by the inertia-box model; condim 1, 3, 4 and 6 under the pyramidal cone;
no spatial tendons, equality constraints, flexes, plugins, the ellipsoid fluid model, tendon friction loss; the Newton or PGS solver
(Newton also on several kinematic trees: constraint islands); Euler or RK4). Needs the `mujoco` Python package (pinned for the generated
headers: see REFERENCE_MUJOCO below); the library itself needs no Python.
"""

import argparse
import math
import os
import sys

import mujoco

# The MuJoCo release the committed headers were generated with (and the tests compare against).
REFERENCE_MUJOCO = "3.12.0"

# Collision functions the engine has, by (type1, type2) with type1 <= type2 (mjtGeom numbers), and
# how many contacts each can return.
PLANE, SPHERE, CAPSULE = int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_SPHERE), int(mujoco.mjtGeom.mjGEOM_CAPSULE)
BOX = int(mujoco.mjtGeom.mjGEOM_BOX)
CYLINDER = int(mujoco.mjtGeom.mjGEOM_CYLINDER)
MAX_CONTACTS = {
    (PLANE, SPHERE): 1,
    (PLANE, CAPSULE): 2,
    (PLANE, BOX): 4,
    (PLANE, CYLINDER): 4,
    (SPHERE, SPHERE): 1,
    (SPHERE, CAPSULE): 1,
    (SPHERE, CYLINDER): 1,
    (CAPSULE, CAPSULE): 2,
    # MuJoCo's general convex collider (GJK/EPA) with multiCCD: 1 + 4 contacts
    (CAPSULE, CYLINDER): 5,
    (CYLINDER, CYLINDER): 5,
}
CONVEX_PAIRS = {(CAPSULE, CYLINDER), (CYLINDER, CYLINDER)}
HINGE, SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
BALL, FREE = int(mujoco.mjtJoint.mjJNT_BALL), int(mujoco.mjtJoint.mjJNT_FREE)
GEOM_NAMES = {PLANE: "plane", SPHERE: "sphere", CAPSULE: "capsule", CYLINDER: "cylinder", BOX: "box"}
# Visual-only geoms of these types stay in the header; other visual-only geoms are dropped.
VISUAL_KEPT = (PLANE, SPHERE, CAPSULE, BOX)

# Sensors the engine computes (physics/sensor.hpp), by mjtSensor, and the objects they may read.
_S = mujoco.mjtSensor
SENSOR_KINDS = {int(_S.mjSENS_VELOCIMETER), int(_S.mjSENS_GYRO), int(_S.mjSENS_JOINTPOS), int(_S.mjSENS_JOINTVEL),
                int(_S.mjSENS_FRAMEPOS), int(_S.mjSENS_FRAMEQUAT), int(_S.mjSENS_FRAMEXAXIS), int(_S.mjSENS_FRAMEYAXIS),
                int(_S.mjSENS_FRAMEZAXIS), int(_S.mjSENS_FRAMELINVEL), int(_S.mjSENS_FRAMEANGVEL),
                int(_S.mjSENS_SUBTREECOM), int(_S.mjSENS_SUBTREELINVEL), int(_S.mjSENS_CLOCK)}
_O = mujoco.mjtObj
FRAME_OBJECTS = (int(_O.mjOBJ_BODY), int(_O.mjOBJ_XBODY), int(_O.mjOBJ_GEOM), int(_O.mjOBJ_SITE))


def sensor_problem(m, i, dropped):
    """Why the engine cannot compute sensor i (None if it can)."""
    t, ot, oid = int(m.sensor_type[i]), int(m.sensor_objtype[i]), int(m.sensor_objid[i])
    if t not in SENSOR_KINDS:
        return "a kind the engine does not compute"
    if int(m.sensor_refid[i]) >= 0 and int(m.sensor_reftype[i]) not in FRAME_OBJECTS:
        return "a reference frame of a kind the engine does not compute (a camera)"
    if int(m.sensor_refid[i]) >= 0 and int(m.sensor_reftype[i]) == int(_O.mjOBJ_GEOM) and int(m.sensor_refid[i]) in dropped:
        return "a reference frame on a dropped visual geom"
    if int(m.sensor_history[i][0]) > 0 or m.sensor_delay[i] or any(m.sensor_interval[i]):
        return "a delay or interval"
    if t in (int(_S.mjSENS_JOINTPOS), int(_S.mjSENS_JOINTVEL)) and int(m.jnt_type[oid]) not in (HINGE, SLIDE):
        return "not a hinge or slide joint"
    if t in (int(_S.mjSENS_FRAMEPOS), int(_S.mjSENS_FRAMEQUAT), int(_S.mjSENS_FRAMEXAXIS), int(_S.mjSENS_FRAMEYAXIS),
             int(_S.mjSENS_FRAMEZAXIS), int(_S.mjSENS_FRAMELINVEL), int(_S.mjSENS_FRAMEANGVEL)) and ot not in FRAME_OBJECTS:
        return "an object without a frame the engine computes"
    if ot == int(_O.mjOBJ_GEOM) and oid in dropped:
        return "a dropped visual geom"
    return None


# Disable flags the engine honours (the others must be left at their defaults).
D = mujoco.mjtDisableBit
SUPPORTED_DISABLE = (int(D.mjDSBL_CONSTRAINT) | int(D.mjDSBL_LIMIT) | int(D.mjDSBL_CONTACT) | int(D.mjDSBL_GRAVITY)
                     | int(D.mjDSBL_CLAMPCTRL) | int(D.mjDSBL_WARMSTART) | int(D.mjDSBL_FILTERPARENT)
                     | int(D.mjDSBL_EULERDAMP) | int(D.mjDSBL_SPRING) | int(D.mjDSBL_DAMPER)
                     | int(D.mjDSBL_ACTUATION) | int(D.mjDSBL_SENSOR) | int(D.mjDSBL_MIDPHASE)
                     | int(D.mjDSBL_EQUALITY) | int(D.mjDSBL_FRICTIONLOSS) | int(D.mjDSBL_REFSAFE)
                     | int(D.mjDSBL_AUTORESET) | int(D.mjDSBL_NATIVECCD) | int(D.mjDSBL_ISLAND)
                     | int(D.mjDSBL_MULTICCD))
# Enable flags that change nothing the engine computes.
HARMLESS_ENABLE = int(mujoco.mjtEnableBit.mjENBL_ENERGY)


class Unsupported(Exception):
    pass


def name_of(m, objtype, i):
    n = mujoco.mj_id2name(m, objtype, i)
    return n if n else f"#{i}"


def refuse(what):
    raise Unsupported(what)


def has_fluid(m):
    """Whether the model's medium is set (<option density/viscosity/wind>): then the header carries
    it and the engine computes MuJoCo's inertia-box fluid forces."""
    return bool(m.opt.density or m.opt.viscosity or any(m.opt.wind))


def has_actuator_bias(m):
    """Whether an actuator has an affine bias (a position or velocity servo): then the header
    carries actuator_biasprm and the engine adds the bias to the actuator forces."""
    return any(int(m.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_AFFINE) for a in range(m.nu))


def visual_only(m, g):
    """A geom that can never collide (contype = conaffinity = 0): it acts on the dynamics only
    through the mass and inertia MuJoCo's compiler already gave its body."""
    return int(m.geom_contype[g]) == 0 and int(m.geom_conaffinity[g]) == 0


def dropped_geoms(m):
    """The geoms left out of the header: visual-only geoms of a type the engine has no use for
    (cylinder, ellipsoid, mesh, height field, ...). Visual-only planes, spheres, capsules and boxes
    stay (harmless, and the header's geom ids then equal mjModel's); a visual cylinder is dropped
    like the rest (nothing reads it), a colliding one is kept."""
    return [g for g in range(m.ngeom) if int(m.geom_type[g]) not in VISUAL_KEPT and visual_only(m, g)]


def check_supported(m, problems):
    """Appends to `problems` every element outside the engine's subset, each named."""
    refuse = problems.append  # this check lists every problem, not only the first
    O = mujoco.mjtObj
    dropped = set(dropped_geoms(m))
    mesh_geoms = [g for g in range(m.ngeom) if int(m.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_MESH)]
    hfield_geoms = [g for g in range(m.ngeom) if int(m.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_HFIELD)]
    counts = {
        "equality": m.neq, "flex": m.nflex, "plugin": m.nplugin,
        "explicit <pair>": m.npair, "mocap body": m.nmocap, "activation state (actuator dynamics)": m.na,
        # meshes and height fields only as visual geoms (dropped); a colliding one is named below
        "hfield": m.nhfield if any(g not in dropped for g in hfield_geoms) else 0,
        "mesh": m.nmesh if any(g not in dropped for g in mesh_geoms) else 0,
    }
    for what, n in counts.items():
        if n:
            refuse(f"the model has {n} {what}(s); the engine supports none")
    opt = m.opt
    if int(opt.cone) != int(mujoco.mjtCone.mjCONE_PYRAMIDAL):
        refuse("<option cone=...>: only the pyramidal friction cone is supported")
    if int(opt.solver) not in (int(mujoco.mjtSolver.mjSOL_NEWTON), int(mujoco.mjtSolver.mjSOL_PGS)):
        refuse(f"<option solver=...>: {mujoco.mjtSolver(opt.solver).name} (only Newton and PGS are supported)")
    if int(opt.integrator) not in (int(mujoco.mjtIntegrator.mjINT_EULER), int(mujoco.mjtIntegrator.mjINT_RK4)):
        refuse("<option integrator=...>: only Euler and RK4 are supported")
    if opt.disableactuator:
        refuse("<option actuatorgroupdisable=...>: disabling actuator groups is not supported")
    if opt.noslip_iterations:
        refuse("<option noslip_iterations=...>: the noslip solver is not supported")
    if opt.disableflags & ~SUPPORTED_DISABLE:
        refuse(f"<flag>: disable flags {opt.disableflags & ~SUPPORTED_DISABLE:#x} are not supported")
    # Sparse Jacobians (jacobian="sparse", or "auto" from nv = 60: mj_isSparse) give the same
    # solution to rounding, but the engine's dense algebra would not follow MuJoCo's operation order.
    jac = int(opt.jacobian)
    if jac == int(mujoco.mjtJacobian.mjJAC_SPARSE) or (jac == int(mujoco.mjtJacobian.mjJAC_AUTO) and m.nv >= 60):
        refuse(f"<option jacobian=...>: MuJoCo would use sparse Jacobians here (nv = {m.nv}); the engine is dense "
               f"(jacobian=\"dense\", or nv < 60 with \"auto\")")
    if opt.enableflags & ~HARMLESS_ENABLE:
        refuse(f"<flag>: enable flags {opt.enableflags & ~HARMLESS_ENABLE:#x} (override, sleep, fwdinv, ...) are not supported")
    if m.ntree > 1 and int(opt.solver) == int(mujoco.mjtSolver.mjSOL_PGS):
        refuse(f"the model has {m.ntree} kinematic trees under the world body: PGS's island-local solves are not "
               f"supported (Newton's are)")
    for b in range(m.nbody):
        if m.body_gravcomp[b]:
            refuse(f"body '{name_of(m, O.mjOBJ_BODY, b)}': gravcomp is not supported")
    for j in range(m.njnt):
        jn = name_of(m, O.mjOBJ_JOINT, j)
        jt = int(m.jnt_type[j])
        if jt not in (HINGE, SLIDE, BALL, FREE):
            refuse(f"joint '{jn}': type {mujoco.mjtJoint(m.jnt_type[j]).name} (only free, ball, hinge and slide)")
        if jt in (BALL, FREE) and m.jnt_limited[j]:
            refuse(f"joint '{jn}': limits on a {mujoco.mjtJoint(m.jnt_type[j]).name} joint are not supported")
        if jt in (BALL, FREE) and m.jnt_stiffness[j]:
            refuse(f"joint '{jn}': stiffness on a {mujoco.mjtJoint(m.jnt_type[j]).name} joint is not supported")
        if m.jnt_actfrclimited[j]:
            refuse(f"joint '{jn}': actuatorfrcrange is not supported")
        if m.jnt_actgravcomp[j]:
            refuse(f"joint '{jn}': actuatorgravcomp is not supported")
        if any(m.jnt_stiffnesspoly[j]):
            refuse(f"joint '{jn}': stiffnesspoly is not supported")
    for v in range(m.nv):
        jn = name_of(m, O.mjOBJ_JOINT, m.dof_jntid[v])
        if m.dof_frictionloss[v] < 0:
            refuse(f"joint '{jn}': a negative frictionloss")
        if any(m.dof_dampingpoly[v]):
            refuse(f"joint '{jn}': dampingpoly is not supported")
    for g in range(m.ngeom):
        gn = name_of(m, O.mjOBJ_GEOM, g)
        if m.geom_fluid[g][0]:
            refuse(f"geom '{gn}': fluidshape=\"ellipsoid\" (MuJoCo's ellipsoid fluid model) is not supported; the "
                   f"default inertia-box model is")
        if g in dropped:
            continue  # never collides: its contact settings do not matter
        if int(m.geom_type[g]) not in GEOM_NAMES:
            refuse(f"geom '{gn}': type {mujoco.mjtGeom(m.geom_type[g]).name} can collide (the engine collides "
                   f"plane, sphere, capsule, cylinder and box; a visual geom with contype=\"0\" conaffinity=\"0\" is dropped)")
            continue
        if m.geom_condim[g] not in (1, 3, 4, 6):
            refuse(f"geom '{gn}': condim {m.geom_condim[g]} (1, 3, 4 and 6 are supported)")
        if m.geom_adhesion[g]:
            refuse(f"geom '{gn}': adhesion is not supported")
        if any(m.geom_surfacevel[g]):
            refuse(f"geom '{gn}': surfacevel (a moving surface) is not supported")
    # Tendons: fixed tendons (a linear combination of hinge/slide joint positions) for their
    # length and Jacobian; nothing may act on them yet.
    for t in range(m.ntendon):
        tn = name_of(m, O.mjOBJ_TENDON, t)
        adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
        for k in range(adr, adr + num):
            if int(m.wrap_type[k]) != int(mujoco.mjtWrap.mjWRAP_JOINT):
                refuse(f"tendon '{tn}': a spatial tendon (only fixed tendons are supported)")
                break
            if int(m.jnt_type[m.wrap_objid[k]]) not in (HINGE, SLIDE):
                refuse(f"tendon '{tn}': a joint that is not a hinge or slide")
        for what, bad in (("limits (range)", m.tendon_limited[t]), ("stiffness", m.tendon_stiffness[t]),
                          ("damping", m.tendon_damping[t]), ("frictionloss", m.tendon_frictionloss[t]),
                          ("armature", m.tendon_armature[t])):
            if bad:
                refuse(f"tendon '{tn}': {what} is not supported (the engine computes fixed tendons' lengths and "
                       f"Jacobians only)")
    # Actuators: one control each (a motor); MuJoCo's actuator_* arrays have nactuator rows, ctrl nu.
    if m.nu != m.nactuator or any(int(c) != 1 for c in m.actuator_ctrlnum):
        refuse(f"the model's actuators take {m.nu} controls for {m.nactuator} actuators; only one control per "
               f"actuator (motors) is supported")
    for a in range(min(m.nu, m.nactuator)):
        an = name_of(m, O.mjOBJ_ACTUATOR, a)
        if int(m.actuator_trntype[a]) != int(mujoco.mjtTrn.mjTRN_JOINT):
            refuse(f"actuator '{an}': transmission {mujoco.mjtTrn(m.actuator_trntype[a]).name} (only joint)")
        if int(m.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_NONE):
            refuse(f"actuator '{an}': dynamics {mujoco.mjtDyn(m.actuator_dyntype[a]).name} (only none: motor)")
        if int(m.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED) or any(m.actuator_gainprm[a][1:]):
            refuse(f"actuator '{an}': only a fixed gain (motor) is supported")
        bias = int(m.actuator_biastype[a])
        if bias == int(mujoco.mjtBias.mjBIAS_NONE):
            if any(m.actuator_biasprm[a]):
                refuse(f"actuator '{an}': bias parameters without a bias type are not supported")
        elif bias != int(mujoco.mjtBias.mjBIAS_AFFINE) or any(m.actuator_biasprm[a][3:]):
            refuse(f"actuator '{an}': bias {mujoco.mjtBias(bias).name} (only none, a motor, and affine: "
                   f"position/velocity servos)")
        if any(m.actuator_gear[a][1:]):
            refuse(f"actuator '{an}': gear beyond its first component is not supported")
        if m.actuator_damping[a] or any(m.actuator_dampingpoly[a]) or m.actuator_armature[a]:
            refuse(f"actuator '{an}': actuator damping/armature is not supported")
        if m.actuator_delay[a] or m.actuator_history[a][0] > 0:
            refuse(f"actuator '{an}': delay/history is not supported")
        if int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT) and (
                m.actuator_trnid[a][0] < 0 or int(m.jnt_type[m.actuator_trnid[a][0]]) not in (HINGE, SLIDE)):
            refuse(f"actuator '{an}': must drive a hinge or slide joint")


def candidate_pairs(m, problems=None):
    """Geom pairs MuJoCo's broadphase + geom filters can pass, in mj_collision's order: body pairs
    by signature (b1 < b2), then the geoms of b1 by the geoms of b2 (sorted by geom ids where a
    body has several geoms and the midphase is on, as MuJoCo sorts that pair's contacts); each
    pair with the lower geom type first (as the narrow phase orders it). A pair the engine has no
    collider for is appended to `problems` (or, without a list, refused at once) and left out."""
    dsbl_filterparent = bool(m.opt.disableflags & int(D.mjDSBL_FILTERPARENT))
    excluded = set()
    for k in range(m.nexclude):
        sig = int(m.exclude_signature[k])
        excluded.add((sig >> 16, sig & 0xFFFF))

    def bitmask_blocks(ct1, ca1, ct2, ca2):
        return not (ct1 & ca2) and not (ct2 & ca1)

    body_ct = [0] * m.nbody
    body_ca = [0] * m.nbody
    for g in range(m.ngeom):
        body_ct[m.geom_bodyid[g]] |= int(m.geom_contype[g])
        body_ca[m.geom_bodyid[g]] |= int(m.geom_conaffinity[g])

    pairs = []
    midphase_disabled = bool(m.opt.disableflags & int(D.mjDSBL_MIDPHASE))
    for b1 in range(m.nbody):
        for b2 in range(b1 + 1, m.nbody):
            if not (body_ct[b1] or body_ca[b1]) or not (body_ct[b2] or body_ca[b2]):
                continue
            w1, w2 = int(m.body_weldid[b1]), int(m.body_weldid[b2])
            p1 = int(m.body_weldid[m.body_parentid[w1]])
            p2 = int(m.body_weldid[m.body_parentid[w2]])
            if w1 == w2:
                continue
            if m.body_dofnum[w1] == 0 and m.body_dofnum[w2] == 0:
                continue
            if not dsbl_filterparent and w1 != 0 and w2 != 0 and (w1 == p2 or w2 == p1):
                continue
            if bitmask_blocks(body_ct[b1], body_ca[b1], body_ct[b2], body_ca[b2]):
                continue
            if (b1, b2) in excluded:
                continue
            g1s = [g for g in range(m.ngeom) if m.geom_bodyid[g] == b1]
            g2s = [g for g in range(m.ngeom) if m.geom_bodyid[g] == b2]
            body_pairs = []
            for g1 in g1s:
                for g2 in g2s:
                    if bitmask_blocks(m.geom_contype[g1], m.geom_conaffinity[g1], m.geom_contype[g2],
                                      m.geom_conaffinity[g2]):
                        continue
                    a, b = (g1, g2) if m.geom_type[g1] <= m.geom_type[g2] else (g2, g1)
                    key = (int(m.geom_type[a]), int(m.geom_type[b]))
                    if key not in MAX_CONTACTS:
                        if problems is None:
                            refuse(f"no {key[0]}-{key[1]} collision for geoms {a} and {b}")
                        if key[0] in GEOM_NAMES and key[1] in GEOM_NAMES:  # (other types are named above)
                            problems.append(
                                f"geoms '{name_of(m, mujoco.mjtObj.mjOBJ_GEOM, a)}' and "
                                f"'{name_of(m, mujoco.mjtObj.mjOBJ_GEOM, b)}' can collide, but the engine has no "
                                f"{GEOM_NAMES[key[0]]}-{GEOM_NAMES[key[1]]} collision")
                        continue
                    body_pairs.append((a, b, MAX_CONTACTS[key]))
            if (len(g1s) > 1 or len(g2s) > 1) and not midphase_disabled:
                # MuJoCo sends a body pair with several geoms through its BVH midphase, then sorts
                # that pair's contacts (stably) by their geom ids as stored, lower geom type first
                # (mj_collision's contactcompare); the single-geom and all-to-all paths keep this
                # loop's order.
                body_pairs.sort(key=lambda p: (p[0], p[1]))
            pairs += body_pairs
    return pairs


def mixed_condim(m, g1, g2):
    """The pair's condim as mj_setContact mixes it (priority wins, else the maximum)."""
    p1, p2 = m.geom_priority[g1], m.geom_priority[g2]
    if p1 > p2:
        return int(m.geom_condim[g1])
    if p2 > p1:
        return int(m.geom_condim[g2])
    return max(int(m.geom_condim[g1]), int(m.geom_condim[g2]))


def lit(x):
    """An exact C++ double literal (repr round-trips)."""
    x = float(x)
    if math.isinf(x):
        return "std::numeric_limits<double>::infinity()" if x > 0 else "-std::numeric_limits<double>::infinity()"
    if math.isnan(x):
        refuse("a NaN constant in the compiled model")
    r = repr(x)
    if "e" not in r and "." not in r and "inf" not in r:
        r += ".0"
    return r


def generate(xml_path, name, max_contacts=None, max_rows=None, system_includes=False):
    m = mujoco.MjModel.from_xml_path(xml_path)
    problems = []
    check_supported(m, problems)
    pairs = candidate_pairs(m, problems)
    dropped = dropped_geoms(m)
    keep = [g for g in range(m.ngeom) if g not in dropped]  # (a few geoms: a list will do)
    if not keep:
        problems.append("every geom is a dropped visual geom; the engine needs at least one geom")
    if problems:
        raise Unsupported(problems[0] if len(problems) == 1 else
                          f"{len(problems)} features outside the engine's subset:\n  - " + "\n  - ".join(problems))
    geom_id = {g: i for i, g in enumerate(keep)}  # mjModel's geom id -> the header's
    # pairs for MuJoCo's general convex collider: its native GJK/EPA with multiCCD (the engine has
    # no libccd path and no single-contact mode)
    convex = any((int(m.geom_type[g1]), int(m.geom_type[g2])) in CONVEX_PAIRS for (g1, g2, _) in pairs)
    if convex and m.opt.disableflags & (int(D.mjDSBL_NATIVECCD) | int(D.mjDSBL_MULTICCD)):
        raise Unsupported("<flag nativeccd=\"disable\"> or <flag multiccd=\"disable\">: the engine's convex collider "
                          "is MuJoCo's native GJK/EPA with multiCCD")
    if convex and not 1 <= m.opt.ccd_iterations <= 150:
        raise Unsupported(f"<option ccd_iterations={m.opt.ccd_iterations}>: the engine takes 1 to 150 (its EPA "
                          f"polytope is on the stack)")
    pairs = [(geom_id[g1], geom_id[g2], maxcon) for (g1, g2, maxcon) in pairs]
    # sensors: the supported ones kept (sensordata packed in their order), the others dropped
    sensors = [i for i in range(m.nsensor) if sensor_problem(m, i, set(dropped)) is None]
    dropped_sensors = [i for i in range(m.nsensor) if i not in sensors]
    sensor_adr, nsensordata = [], 0
    for i in sensors:
        sensor_adr.append(nsensordata)
        nsensordata += int(m.sensor_dim[i])
    nlimited = int(sum(1 for j in range(m.njnt) if m.jnt_limited[j]))
    ncon = sum(p[2] for p in pairs)
    nfriction = int(sum(1 for v in range(m.nv) if m.dof_frictionloss[v] != 0))
    nefc = 2 * nlimited + nfriction
    max_condim = 3
    for (g1, g2, maxcon) in pairs:
        condim = mixed_condim(m, keep[g1], keep[g2])
        nefc += maxcon * (1 if condim == 1 else 2 * (condim - 1))
        max_condim = max(max_condim, condim)
    # The workspace's capacities: every contact the pairs can make and every row (the default), or
    # what the caller chose (measured maxima with a margin); a step that needs more is reported.
    ncon_doc = "contact capacity: every contact the candidate pairs can make"
    nefc_doc = ("constraint-row capacity: " + (f"{nfriction} friction-loss rows, " if nfriction else "")
                + "2 per limited joint plus every contact's rows")
    ncon_full, nefc_full = ncon, nefc  # written as ncon_full / nefc_full where a capacity is below them
    if max_contacts is not None and max_contacts < ncon:
        ncon, ncon_doc = max_contacts, f"contact capacity (--max-contacts; the pairs can make {ncon})"
    if max_rows is not None and max_rows < nefc:
        nefc, nefc_doc = max_rows, f"constraint-row capacity (--max-rows; at most {nefc} possible)"

    lines = []
    out = lines.append
    S = "Scalar"

    def scalar(field, value):
        out(f"  m.{field} = {S}({lit(value)});")

    def integer(field, value):
        out(f"  m.{field} = {int(value)};")

    def scalars(field, values):
        for i, v in enumerate(values):
            if hasattr(v, "__len__"):
                for k, w in enumerate(v):
                    out(f"  m.{field}[{i}][{k}] = {S}({lit(w)});")
            else:
                out(f"  m.{field}[{i}] = {S}({lit(v)});")

    def integers(field, values, cast=None):
        for i, v in enumerate(values):
            out(f"  m.{field}[{i}] = {cast + '(' if cast else ''}{int(v)}{')' if cast else ''};")

    opt = m.opt
    out("  // mjOption and mjStatistic")
    scalar("timestep", opt.timestep)
    scalars("gravity", opt.gravity)
    scalar("impratio", opt.impratio)
    scalar("tolerance", opt.tolerance)
    scalar("ls_tolerance", opt.ls_tolerance)
    scalar("o_margin", opt.o_margin)
    out(f"  m.integrator = physics::integrator_kind::{'rk4' if int(opt.integrator) == int(mujoco.mjtIntegrator.mjINT_RK4) else 'euler'};")
    out(f"  m.solver = physics::solver_kind::{'pgs' if int(opt.solver) == int(mujoco.mjtSolver.mjSOL_PGS) else 'newton'};")
    integer("iterations", opt.iterations)
    integer("ls_iterations", opt.ls_iterations)
    integer("disableflags", opt.disableflags)
    integer("enableflags", opt.enableflags)
    scalar("meaninertia", m.stat.meaninertia)
    if convex:
        out("  // the general convex collider (GJK/EPA; its iterations are Dims::ccd_iterations)")
        scalar("ccd_tolerance", opt.ccd_tolerance)
    if has_fluid(m):
        out("  // the medium of the fluid forces (inertia-box model)")
        scalar("density", opt.density)
        scalar("viscosity", opt.viscosity)
        scalars("wind", opt.wind)
    out("  // bodies")
    for f in ("body_parentid", "body_rootid", "body_weldid", "body_jntnum", "body_jntadr", "body_dofnum", "body_dofadr",
              "body_sameframe"):
        integers(f, getattr(m, f))
    for f in ("body_pos", "body_quat", "body_ipos", "body_iquat", "body_mass", "body_inertia", "body_invweight0",
              "body_subtreemass"):
        scalars(f, getattr(m, f))
    out("  // joints")
    integers("jnt_type", m.jnt_type, "physics::joint_type")
    for f in ("jnt_qposadr", "jnt_dofadr", "jnt_bodyid", "jnt_limited", "jnt_actuatorid"):
        integers(f, getattr(m, f))
    for f in ("jnt_pos", "jnt_axis", "jnt_range", "jnt_stiffness", "jnt_margin", "jnt_solref", "jnt_solimp"):
        scalars(f, getattr(m, f))
    out("  // dofs")
    for f in ("dof_bodyid", "dof_jntid", "dof_parentid", "dof_simplenum"):
        integers(f, getattr(m, f))
    for f in ("dof_armature", "dof_damping", "dof_invweight0", "dof_M0", "qpos0", "qpos_spring"):
        scalars(f, getattr(m, f))
    if nfriction:
        out("  // dry friction of the dofs (one friction-loss row per dof with frictionloss > 0)")
        for f in ("dof_frictionloss", "dof_solref", "dof_solimp"):
            scalars(f, getattr(m, f))
    if m.ntree > 1:
        out("  // kinematic trees (the constraint islands are unions of them)")
        integers("body_treeid", m.body_treeid)
        integers("dof_treeid", m.dof_treeid)
    out("  // geoms" + (" (mjModel's geoms without the dropped ones: see the comment at the top)" if dropped else ""))

    def kept(values):
        return [values[g] for g in keep]

    integers("geom_type_", kept(m.geom_type), "physics::geom_type")
    for f in ("geom_bodyid", "geom_contype", "geom_conaffinity", "geom_condim", "geom_priority", "geom_sameframe"):
        integers(f, kept(getattr(m, f)))
    for f in ("geom_solmix", "geom_solref", "geom_solimp", "geom_margin", "geom_gap", "geom_friction", "geom_size",
              "geom_pos", "geom_quat"):
        scalars(f, kept(getattr(m, f)))
    out("  // candidate collision pairs")
    conadr = 0
    for i, (g1, g2, maxcon) in enumerate(pairs):
        gn1 = name_of(m, mujoco.mjtObj.mjOBJ_GEOM, keep[g1])
        gn2 = name_of(m, mujoco.mjtObj.mjOBJ_GEOM, keep[g2])
        out(f"  m.pair_geom1[{i}] = {g1}; m.pair_geom2[{i}] = {g2}; m.pair_maxcon[{i}] = {maxcon}; "
            f"m.pair_conadr[{i}] = {conadr};  // {gn1} - {gn2}")
        conadr += maxcon
    if m.ntendon:
        out("  // fixed tendons")
        integers("tendon_adr", m.tendon_adr)
        integers("tendon_num", m.tendon_num)
        integers("wrap_objid", m.wrap_objid)
        scalars("wrap_prm", m.wrap_prm)
    if m.nsite:
        out("  // sites (their world frames: data::site_xpos, data::site_xmat)")
        integers("site_bodyid", m.site_bodyid)
        integers("site_sameframe", m.site_sameframe)
        scalars("site_pos", m.site_pos)
        scalars("site_quat", m.site_quat)
    if sensors:
        out("  // sensors (data::sensordata; physics/sensor.hpp)")
        integers("sensor_type", [m.sensor_type[i] for i in sensors])
        integers("sensor_datatype", [m.sensor_datatype[i] for i in sensors])
        integers("sensor_objtype", [m.sensor_objtype[i] for i in sensors])
        integers("sensor_objid", [geom_id[int(m.sensor_objid[i])] if int(m.sensor_objtype[i]) == int(_O.mjOBJ_GEOM)
                                  else m.sensor_objid[i] for i in sensors])
        integers("sensor_reftype", [m.sensor_reftype[i] if int(m.sensor_refid[i]) >= 0 else 0 for i in sensors])
        integers("sensor_refid", [geom_id[int(m.sensor_refid[i])] if int(m.sensor_refid[i]) >= 0
                                  and int(m.sensor_reftype[i]) == int(_O.mjOBJ_GEOM) else m.sensor_refid[i]
                                  for i in sensors])
        integers("sensor_dim", [m.sensor_dim[i] for i in sensors])
        integers("sensor_adr", sensor_adr)
        scalars("sensor_cutoff", [m.sensor_cutoff[i] for i in sensors])
    out("  // actuators")
    integers("actuator_trnid", [m.actuator_trnid[a][0] for a in range(m.nu)])
    integers("actuator_ctrllimited", m.actuator_ctrllimited)
    integers("actuator_forcelimited", m.actuator_forcelimited)
    scalars("actuator_gear", [m.actuator_gear[a][0] for a in range(m.nu)])
    scalars("actuator_gainprm", [m.actuator_gainprm[a][0] for a in range(m.nu)])
    scalars("actuator_ctrlrange", m.actuator_ctrlrange)
    scalars("actuator_forcerange", m.actuator_forcerange)
    if has_actuator_bias(m):
        scalars("actuator_biasprm", [m.actuator_biasprm[a][:3] for a in range(m.nu)])

    # One member a line, each with its own ///< comment (Doxygen documents a declaration list's
    # last name only).
    dims_members = [("nq", m.nq, "position coordinates"), ("nv", m.nv, "degrees of freedom"),
                    ("nu", m.nu, "actuators (controls)"), ("nbody", m.nbody, "bodies, the world (body 0) included"),
                    ("njnt", m.njnt, "joints"), ("ngeom", len(keep), "geoms" + (
                        f" (mjModel has {m.ngeom}: {len(dropped)} visual geoms dropped)" if dropped else "")),
                    ("npair", len(pairs), "candidate collision pairs"), ("ncon", ncon, ncon_doc),
                    ("nefc", nefc, nefc_doc), ("ntendon", m.ntendon, "fixed tendons"),
                    ("nwrap", m.nwrap, "joint entries of the fixed tendons")]
    if (ncon, nefc) != (ncon_full, nefc_full):  # written only below the full capacities (physics::dims_full_capacity)
        at = [name for name, _, _ in dims_members].index("nefc") + 1
        dims_members[at:at] = [("ncon_full", ncon_full, "every contact the candidate pairs can make (dims_full_capacity)"),
                               ("nefc_full", nefc_full, "every row those contacts and the model can need (dims_full_capacity)")]
    if m.ntree > 1:  # written only with several trees (a Dims without ntree has one)
        dims_members.append(("ntree", m.ntree, "kinematic trees: the Newton solver works on constraint islands"))
    if m.nsite:  # written only when there are sites (a Dims without nsite has none)
        dims_members.append(("nsite", m.nsite, "sites"))
    if sensors:  # written only with sensors the engine computes (a Dims without nsensor has none)
        dims_members.append(("nsensor", len(sensors), "sensors (physics/sensor.hpp)"))
        dims_members.append(("nsensordata", nsensordata, "values of all sensors (data::sensordata)"))
    if has_actuator_bias(m):  # written only with servos (a Dims without actuator_bias has none)
        dims_members.append(("actuator_bias", 1, "actuators with an affine bias (servos): the model carries "
                             "actuator_biasprm"))
    if has_fluid(m):  # written only with fluid forces (a Dims without fluid has none)
        dims_members.append(("fluid", 1, "fluid forces (inertia-box model): the model carries density, viscosity, wind"))
    if convex:  # written only with convex pairs (a Dims without ccd_iterations has none)
        dims_members.append(("ccd_iterations", int(opt.ccd_iterations), "GJK/EPA iterations of the convex collider "
                             "(capsule/cylinder-cylinder pairs; sizes EPA's polytope)"))
    if nfriction:  # written only with friction loss (a Dims without frictionloss has none)
        dims_members.append(("frictionloss", 1, "dry friction on dofs: the model carries dof_frictionloss, dof_solref, "
                             "dof_solimp"))
    if max_condim > 3:  # written only above 3 (a Dims without max_condim has at most 3)
        dims_members.append(("max_condim", max_condim, "the largest contact condim (torsional"
                             + (" and rolling" if max_condim == 6 else "") + " friction)"))
    if int(opt.solver) == int(mujoco.mjtSolver.mjSOL_PGS):
        dims_members.append(("solver", 0, "the PGS solver (mjtSolver): the workspace makes room for its matrix"))
    dims_decls = [f"static constexpr int {member} = {value};" for member, value, _ in dims_members]
    width = max(len(d) for d in dims_decls)
    dims_body = "\n".join(f"  {d:<{width}}  ///< {doc}" for d, (_, _, doc) in zip(dims_decls, dims_members))
    joint_names = ", ".join(name_of(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt))
    actuator_names = ", ".join(name_of(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(m.nu))
    flags = (f" --max-contacts {max_contacts}" if max_contacts is not None else "") + (
        f" --max-rows {max_rows}" if max_rows is not None else "")
    if system_includes:
        flags += " --system-includes"
        includes = "#include <rlkernels/core/config.hpp>\n#include <rlkernels/physics/model.hpp>"
    else:
        includes = '#include "../../../core/config.hpp"\n#include "../../../physics/model.hpp"'
    header = f"""// Generated by scripts/mjcf_to_header.py from {os.path.basename(xml_path)}{flags} with MuJoCo {mujoco.__version__}.
// Do not edit: regenerate (docs/physics.md says how). The values are mjModel's, compiled by MuJoCo.
// Joints (qpos order): {joint_names}
// Actuators (ctrl order): {actuator_names}
#pragma once

{includes}

#include <limits>

namespace rlkernels {{
namespace models {{

/// Sizes of the `{name}` model ({os.path.basename(xml_path)}).
struct {name}_dims {{
{dims_body}
}};

/// @brief The `{name}` model ({os.path.basename(xml_path)} as MuJoCo {mujoco.__version__} compiles it).
/// @tparam Scalar float or double (the values are written as exact doubles; float rounds them once)
template <class Scalar>
constexpr physics::model<Scalar, {name}_dims> {name}() {{
  physics::model<Scalar, {name}_dims> m{{}};
"""
    footer = """  return m;
}

}  // namespace models
}  // namespace rlkernels
"""
    site_names = ", ".join(name_of(m, mujoco.mjtObj.mjOBJ_SITE, i) for i in range(m.nsite))
    notes = []
    if site_names:
        notes.append(f"// Sites: {site_names}")
    if dropped:
        notes.append("// Geoms dropped (visual only: contype = conaffinity = 0, not a plane, sphere, capsule or box; "
                     "their mass is in their bodies'): " + ", ".join(
                         f"{name_of(m, mujoco.mjtObj.mjOBJ_GEOM, g)} ({mujoco.mjtGeom(m.geom_type[g]).name.split('_', 1)[1].lower()})"
                         for g in dropped))
        notes.append("// The header's geom k is mjModel's geom " + ", ".join(
            f"{k}: {g}" for k, g in enumerate(keep) if k != g) + " (the others keep their ids)")
    def sensor_label(i):
        return f"{name_of(m, mujoco.mjtObj.mjOBJ_SENSOR, i)} ({mujoco.mjtSensor(m.sensor_type[i]).name.split('_', 1)[1].lower()})"

    if sensors:
        notes.append("// Sensors (their values at sensordata[k]): " + ", ".join(
            f"{sensor_label(i)} {adr}" for i, adr in zip(sensors, sensor_adr)))
    if dropped_sensors:
        notes.append("// Sensors dropped (they do not act on the dynamics): " + ", ".join(
            f"{sensor_label(i)}: {sensor_problem(m, i, set(dropped))}" for i in dropped_sensors))
    if notes:
        header = header.replace("// Actuators (ctrl order)", "\n".join(notes) + "\n// Actuators (ctrl order)", 1)
    return header + "\n".join(lines) + "\n" + footer


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("xml", help="MJCF file")
    ap.add_argument("--name", required=True, help="C++ name of the model (an identifier, e.g. hopper)")
    ap.add_argument("-o", "--output", help="header to write (default: stdout)")
    ap.add_argument("--max-contacts", type=int, help="contact capacity of the workspace (default: every contact "
                    "the candidate pairs can make); a step that needs more sets warning_contact_full")
    ap.add_argument("--max-rows", type=int, help="constraint-row capacity of the workspace (default: every row "
                    "the limits and contacts can make); a step that needs more sets warning_efc_full")
    ap.add_argument("--system-includes", action="store_true",
                    help="include the library as <rlkernels/...> (for a header outside include/rlkernels/envs/mujoco/"
                    "models/, e.g. a robot of your own; the default includes relative to that folder)")
    ap.add_argument("--allow-version", action="store_true",
                    help=f"generate with a MuJoCo other than {REFERENCE_MUJOCO} (the committed headers use {REFERENCE_MUJOCO})")
    args = ap.parse_args()
    if not args.name.isidentifier():
        sys.exit(f"mjcf_to_header: --name must be a C++ identifier, got '{args.name}'")
    if mujoco.__version__ != REFERENCE_MUJOCO and not args.allow_version:
        sys.exit(f"mjcf_to_header: MuJoCo {mujoco.__version__} is installed; the reference is {REFERENCE_MUJOCO} "
                 f"(pip install mujoco=={REFERENCE_MUJOCO}, or pass --allow-version)")
    try:
        text = generate(args.xml, args.name, args.max_contacts, args.max_rows, args.system_includes)
    except Unsupported as e:
        sys.exit(f"mjcf_to_header: {args.xml}: unsupported: {e}")
    for line in text.splitlines():
        if line.startswith(("// Geoms dropped", "// Sensors dropped")):
            print(f"mjcf_to_header: {args.xml}: {line[3:]}", file=sys.stderr)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
