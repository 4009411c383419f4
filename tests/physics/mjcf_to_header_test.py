#!/usr/bin/env python3
"""scripts/mjcf_to_header.py: the committed model headers are exactly what it generates from
Gymnasium's XML, and MJCF outside the engine's subset is refused with the element named.

Run by CTest (mjcf_to_header_test) when the mujoco package is found:
    python3 tests/physics/mjcf_to_header_test.py <repository root> <gymnasium assets dir>
"""
import os
import subprocess
import sys
import tempfile

root, assets = sys.argv[1], sys.argv[2]
script = os.path.join(root, "scripts", "mjcf_to_header.py")
failures = []


def run(xml_path, name, output=None, *flags):
    cmd = [sys.executable, script, xml_path, "--name", name, *flags]
    if output:
        cmd += ["-o", output]
    return subprocess.run(cmd, capture_output=True, text=True)


# 1. The committed headers are reproducible (with the capacity flags their first line names).
for name, xml in (("hopper", "hopper.xml"), ("walker2d", "walker2d_v5.xml"), ("half_cheetah", "half_cheetah.xml"),
                  ("ant", "ant.xml"), ("humanoid", "humanoid.xml"), ("humanoid_standup", "humanoidstandup.xml"),
                  ("inverted_pendulum", "inverted_pendulum.xml"),
                  ("inverted_double_pendulum", "inverted_double_pendulum.xml"), ("swimmer", "swimmer.xml"),
                  ("reacher", "reacher.xml"), ("pusher", "pusher_v5.xml")):
    committed = open(os.path.join(root, "include", "rlkernels", "envs", "mujoco", "models", name + ".hpp")).read()
    first = committed.splitlines()[0]
    flags = first[first.index(xml) + len(xml):first.index(" with MuJoCo")].split()
    r = run(os.path.join(assets, xml), name, None, *flags)
    if r.returncode != 0:
        failures.append(f"{xml}: generator failed: {r.stderr.strip()}")
    elif r.stdout != committed:
        failures.append(f"{xml}: the committed {name}.hpp differs from what the generator writes now")
# ... and the test-only models (box geoms; sensors: from tests/reference/, included as <rlkernels/...>).
for stem in ("box_crawler", "sensor_robot", "friction_quad", "friction_islands"):
    committed = open(os.path.join(root, "tests", "physics", "models", stem + ".hpp")).read()
    r = run(os.path.join(root, "tests", "reference", f"mujoco_{stem}.xml"), stem, None, "--system-includes")
    if r.returncode != 0 or r.stdout != committed:
        failures.append(f"mujoco_{stem}.xml: the committed {stem}.hpp differs from what the generator writes now "
                        f"({r.stderr.strip()})")
# ... and the example robot (examples/my_robot/: position servos).
committed = open(os.path.join(root, "examples", "my_robot", "my_robot_model.hpp")).read()
r = run(os.path.join(root, "examples", "my_robot", "my_robot.xml"), "my_robot", None, "--system-includes")
if r.returncode != 0 or r.stdout != committed:
    failures.append(f"my_robot.xml: the committed my_robot_model.hpp differs from what the generator writes now "
                    f"({r.stderr.strip()})")

# 2. Unsupported features are refused, naming the element.
BASE = """<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 .1"/>
    <body name="b" pos="0 0 1">
      {body}
    </body>
  </worldbody>
  {extra}
</mujoco>"""
cases = [
    ("limited ball joint", dict(body='<joint name="shoulder" type="ball" range="0 1"/><geom type="sphere" size=".1"/>',
                                extra=""), "joint 'shoulder'"),
    ("ball joint stiffness", dict(body='<joint name="wrist" type="ball" stiffness="2"/><geom type="sphere" size=".1"/>',
                                  extra=""), "joint 'wrist'"),
    ("ellipsoid geom", dict(body='<joint type="hinge"/><geom name="egg" type="ellipsoid" size=".1 .1 .2"/>',
                            extra=""), "geom 'egg'"),
    ("box-sphere collision", dict(body='<joint type="hinge"/><geom name="crate" type="box" size=".1 .1 .1"/>'
                                       '<body name="c"><joint type="hinge"/>'
                                       '<geom type="sphere" size=".05" contype="0" conaffinity="0"/>'
                                       '<body name="e"><joint type="hinge"/><geom name="marble" type="sphere" size=".1"/>'
                                       '</body></body>', extra=""),
     "geoms 'marble' and 'crate' can collide, but the engine has no sphere-box collision"),
    ("tendon frictionloss", dict(body='<joint name="j" type="hinge"/><geom type="sphere" size=".1"/>',
                                 extra='<tendon><fixed name="sticky" frictionloss="1"><joint joint="j" coef="1"/></fixed>'
                                       '</tendon>'), "tendon 'sticky'"),
    ("user bias", dict(body='<joint name="j" type="hinge"/><geom type="sphere" size=".1"/>',
                    extra='<actuator><general name="flexor" joint="j" biastype="user"/></actuator>'),
     "actuator 'flexor'"),
    ("ellipsoid fluid model", dict(body='<joint type="hinge"/><geom name="fin" type="sphere" size=".1" fluidshape="ellipsoid"/>',
                                   extra='<option density="1000"/>'), "geom 'fin'"),
    ("adhesion", dict(body='<joint type="hinge"/><geom name="sticky_ball" type="sphere" size=".1" adhesion="1"/>',
                      extra=""), "geom 'sticky_ball'"),
    ("two trees under PGS", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/></body><body name="c" pos="1 0 1">'
                                      '<joint type="hinge"/><geom type="sphere" size=".1"/>',
                                 extra='<option solver="PGS"/>'), "kinematic trees"),
    ("tendon limits", dict(body='<joint name="j" type="hinge"/><geom type="sphere" size=".1"/>',
                           extra='<tendon><fixed name="t" range="-1 1"><joint joint="j" coef="1"/></fixed></tendon>'),
     "tendon 't'"),
    ("tendon stiffness", dict(body='<joint name="j" type="hinge"/><geom type="sphere" size=".1"/>',
                              extra='<tendon><fixed name="t2" stiffness="3"><joint joint="j" coef="1"/></fixed></tendon>'),
     "tendon 't2'"),
    ("spatial tendon", dict(body='<joint name="j" type="hinge"/><geom type="sphere" size=".1"/><site name="s1"/>'
                                 '<site name="s2" pos="0 0 .1"/>',
                            extra='<tendon><spatial name="rope"><site site="s1"/><site site="s2"/></spatial></tendon>'),
     "tendon 'rope'"),
    ("elliptic cone", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/>',
                           extra='<option cone="elliptic"/>'), "cone"),
    ("CG solver", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/>',
                       extra='<option solver="CG"/>'), "mjSOL_CG"),
    ("implicit integrator", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/>',
                                 extra='<option integrator="implicitfast"/>'), "integrator"),
    ("polynomial stiffness", dict(body='<joint name="springy" type="hinge" stiffness="1 0.5"/><geom type="sphere" size=".1"/>',
                                  extra=""), "joint 'springy'"),
    ("actuator group disabled", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/>',
                                     extra='<option actuatorgroupdisable="2"/>'), "actuatorgroupdisable"),
    ("moving surface", dict(body='<joint type="slide"/><geom name="belt" type="sphere" size=".1" surfacevel="1 0 0"/>',
                            extra=""), "geom 'belt'"),
    ("sparse Jacobians", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/>',
                              extra='<option jacobian="sparse"/>'), "jacobian"),
]
with tempfile.TemporaryDirectory() as tmp:
    for label, parts, expected in cases:
        path = os.path.join(tmp, label.replace(" ", "_") + ".xml")
        with open(path, "w") as f:
            f.write(BASE.format(**parts))
        r = run(path, "x")
        if r.returncode == 0:
            failures.append(f"{label}: accepted, but the engine does not support it")
        elif "unsupported" not in r.stderr or expected not in r.stderr:
            failures.append(f"{label}: refused without naming '{expected}': {r.stderr.strip()}")
    # A supported model generates and writes a file.
    ok = os.path.join(tmp, "ok.xml")
    with open(ok, "w") as f:
        f.write(BASE.format(body='<joint type="hinge" axis="0 1 0"/><geom type="capsule" size=".05 .2"/>',
                            extra='<actuator><motor joint="j0" gear="10"/></actuator>').replace(
                                '<joint type="hinge"', '<joint name="j0" type="hinge"'))
    out = os.path.join(tmp, "ok.hpp")
    r = run(ok, "pendulum_on_floor", out)
    if r.returncode != 0 or "struct pendulum_on_floor_dims" not in open(out).read():
        failures.append(f"a supported model failed to generate: {r.stderr.strip()}")
    # Capacities below what the pairs can make are written as given, with the full ones beside them
    # (ncon_full, nefc_full: physics::dims_full_capacity); larger ones are ignored, and a Dims at the
    # full capacities has no *_full members.
    for flags, expect, absent in ((["--max-contacts", "1", "--max-rows", "3"],
                                   ("ncon = 1;", "nefc = 3;", "ncon_full = 2;", "nefc_full = 8;"), ()),
                                  (["--max-contacts", "99"], ("ncon = 2;", "nefc = 8;"), ("ncon_full", "nefc_full"))):
        r = run(ok, "pendulum_on_floor", out, *flags)
        text = open(out).read() if r.returncode == 0 else ""
        if r.returncode != 0 or any(e not in text for e in expect) or any(a in text for a in absent):
            failures.append(f"{' '.join(flags)}: expected {expect} and not {absent} in the header ({r.stderr.strip()})")
    # The PGS solver is supported and written into the model.
    pgs = os.path.join(tmp, "pgs.xml")
    with open(pgs, "w") as f:
        f.write(open(ok).read().replace("</mujoco>", '<option solver="PGS"/></mujoco>'))
    out = os.path.join(tmp, "pgs.hpp")
    r = run(pgs, "pendulum_pgs", out)
    if r.returncode != 0 or "m.solver = physics::solver_kind::pgs;" not in open(out).read():
        failures.append(f"a model with solver=\"PGS\" failed to generate or lost its solver: {r.stderr.strip()}")
    # Visual geoms other than planes, spheres, capsules and boxes (contype = conaffinity = 0: a
    # cylinder, a mesh, an ellipsoid) and the sensors the engine does not compute (an
    # accelerometer; a frame sensor of a dropped geom) are dropped, named in the header and on
    # stderr; the kept geoms are renumbered and the pairs follow them; the kept sensors are packed.
    visual = os.path.join(tmp, "visual.xml")
    with open(visual, "w") as f:
        f.write("""<mujoco>
  <asset><mesh name="tetra" vertex="0 0 0  .1 0 0  0 .1 0  0 0 .1"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 .1"/>
    <geom name="post" type="cylinder" size=".05 .5" pos="2 0 .5" contype="0" conaffinity="0"/>
    <body name="b" pos="0 0 1">
      <joint name="j0" type="hinge" axis="0 1 0"/>
      <geom name="shell" type="mesh" mesh="tetra" contype="0" conaffinity="0" condim="6"/>
      <geom name="arm" type="capsule" size=".05 .2"/>
      <geom name="egg" type="ellipsoid" size=".05 .05 .1" contype="0" conaffinity="0"/>
      <site name="tip" pos="0 0 -.2"/>
    </body>
  </worldbody>
  <sensor><jointpos name="angle" joint="j0"/><accelerometer name="acc" site="tip"/>
    <framepos name="egg_pos" objtype="geom" objname="egg"/><framepos name="tip_pos" objtype="site" objname="tip"/></sensor>
  <actuator><motor joint="j0" gear="10"/></actuator>
</mujoco>""")
    out = os.path.join(tmp, "visual.hpp")
    r = run(visual, "visual_robot", out)
    text = open(out).read() if r.returncode == 0 else ""
    for want in ("static constexpr int ngeom = 2;", "(mjModel has 5: 3 visual geoms dropped)",
                 "// Geoms dropped", "post (cylinder)", "shell (mesh)", "egg (ellipsoid)",
                 "// The header's geom k is mjModel's geom 1: 3",
                 "// Sensors (their values at sensordata[k]): angle (jointpos) 0, tip_pos (framepos) 1",
                 "static constexpr int nsensor = 2;", "static constexpr int nsensordata = 4;",
                 "m.sensor_adr[1] = 1;", "m.sensor_objtype[1] = 6;",
                 "// Sensors dropped", "acc (accelerometer): a kind the engine does not compute",
                 "egg_pos (framepos): a dropped visual geom",
                 "m.geom_type_[1] = physics::geom_type(3);",  # the capsule, renumbered from 3 to 1
                 "m.pair_geom1[0] = 0; m.pair_geom2[0] = 1;"):  # floor - arm, in the header's ids
        if want not in text:
            failures.append(f"visual geoms and sensors: '{want}' not in the header ({r.stderr.strip()})")
    if "Geoms dropped" not in r.stderr or "Sensors dropped" not in r.stderr:
        failures.append(f"visual geoms and sensors: stderr does not say what was dropped: {r.stderr.strip()}")
    # An ellipsoid that can collide is refused; several problems are named in one message.
    with open(visual, "w") as f:
        f.write(BASE.format(body='<joint name="slip" type="ball" range="0 1"/>'
                                 '<geom name="wheel" type="ellipsoid" size=".1 .05 .05"/>'
                                 '<geom name="toe" type="sphere" size=".05" adhesion="1"/>', extra=""))
    r = run(visual, "x")
    if r.returncode == 0:
        failures.append("a colliding ellipsoid, adhesion and a limited ball joint were accepted")
    else:
        for want in ("3 features outside the engine's subset", "geom 'wheel'", "geom 'toe'", "joint 'slip'"):
            if want not in r.stderr:
                failures.append(f"several problems: '{want}' not in the one message: {r.stderr.strip()}")
    # A name that is not an identifier is refused.
    if run(ok, "not-an-identifier").returncode == 0:
        failures.append("--name with a '-' was accepted")

# 3. The candidate pairs come in the order MuJoCo's contacts do, also for bodies with several geoms
# (which MuJoCo's midphase visits in its tree's order and then sorts): random overlapping spheres
# and capsules in two bodies above a plane, with and without the midphase.
sys.path.insert(0, os.path.join(root, "scripts"))
import itertools  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from mjcf_to_header import candidate_pairs  # noqa: E402

rng = np.random.default_rng(7)
mismatches = 0
for trial in range(60):
    def geoms(k, radius):
        out = []
        for i, (x, y, z) in enumerate(rng.uniform(-0.3, 0.3, (k, 3))):
            if i % 2:
                out.append(f'<geom type="capsule" size="{radius / 2}" fromto="{x:.3f} 0 {z:.3f} {x + .1:.3f} {y:.3f} {z + .05:.3f}"/>')
            else:
                out.append(f'<geom type="sphere" size="{radius}" pos="{x:.3f} {y:.3f} {z:.3f}"/>')
        return "".join(out)
    ga, gc = geoms(4, 0.1), geoms(3, 0.12)
    for flag in ("", '<flag midphase="disable"/>'):
        m = mujoco.MjModel.from_xml_string(
            f'<mujoco><option>{flag}</option><worldbody><geom type="plane" size="5 5 .1" pos="0 0 .75"/>'
            f'<body name="a" pos="0 0 1"><joint type="slide" axis="0 0 1"/>{ga}</body>'
            f'<body name="c" pos="0 0 1"><joint type="slide" axis="1 0 0"/>{gc}</body></worldbody></mujoco>')
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        touched = [k for k, _ in itertools.groupby((int(c.geom1), int(c.geom2)) for c in d.contact[:d.ncon])]
        ours = [(a, b) for a, b, _ in candidate_pairs(m) if (a, b) in touched]
        mismatches += ours != touched
if mismatches:
    failures.append(f"candidate pairs out of MuJoCo's contact order in {mismatches} of 120 multi-geom models")

for f in failures:
    print("FAIL:", f)
print(f"mjcf_to_header_test: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
