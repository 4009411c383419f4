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


def run(xml_path, name, output=None):
    cmd = [sys.executable, script, xml_path, "--name", name]
    if output:
        cmd += ["-o", output]
    return subprocess.run(cmd, capture_output=True, text=True)


# 1. The committed headers are reproducible.
for name, xml in (("hopper", "hopper.xml"), ("walker2d", "walker2d_v5.xml"), ("half_cheetah", "half_cheetah.xml")):
    r = run(os.path.join(assets, xml), name)
    committed = open(os.path.join(root, "include", "rlkernels", "envs", "mujoco", "models", name + ".hpp")).read()
    if r.returncode != 0:
        failures.append(f"{xml}: generator failed: {r.stderr.strip()}")
    elif r.stdout != committed:
        failures.append(f"{xml}: the committed {name}.hpp differs from what the generator writes now")

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
    ("ball joint", dict(body='<joint name="shoulder" type="ball"/><geom type="sphere" size=".1"/>', extra=""),
     "joint 'shoulder'"),
    ("box geom", dict(body='<joint type="hinge"/><geom name="crate" type="box" size=".1 .1 .1"/>', extra=""),
     "geom 'crate'"),
    ("condim 6", dict(body='<joint type="hinge"/><geom name="ball6" type="sphere" size=".1" condim="6"/>', extra=""),
     "geom 'ball6'"),
    ("frictionloss", dict(body='<joint name="sticky" type="hinge" frictionloss="1"/><geom type="sphere" size=".1"/>',
                          extra=""), "joint 'sticky'"),
    ("position servo", dict(body='<joint name="j" type="hinge"/><geom type="sphere" size=".1"/>',
                            extra='<actuator><position name="servo" joint="j" kp="10"/></actuator>'), "actuator 'servo'"),
    ("adhesion", dict(body='<joint type="hinge"/><geom name="sticky_ball" type="sphere" size=".1" adhesion="1"/>',
                      extra=""), "geom 'sticky_ball'"),
    ("two trees", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/></body><body name="c" pos="1 0 1">'
                            '<joint type="hinge"/><geom type="sphere" size=".1"/>', extra=""), "kinematic trees"),
    ("tendon", dict(body='<joint name="j" type="hinge"/><geom type="sphere" size=".1"/>',
                    extra='<tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>'), "tendon"),
    ("elliptic cone", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/>',
                           extra='<option cone="elliptic"/>'), "cone"),
    ("implicit integrator", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/>',
                                 extra='<option integrator="implicitfast"/>'), "integrator"),
    ("polynomial stiffness", dict(body='<joint name="springy" type="hinge" stiffness="1 0.5"/><geom type="sphere" size=".1"/>',
                                  extra=""), "joint 'springy'"),
    ("actuator group disabled", dict(body='<joint type="hinge"/><geom type="sphere" size=".1"/>',
                                     extra='<option actuatorgroupdisable="2"/>'), "actuatorgroupdisable"),
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
    # A name that is not an identifier is refused.
    if run(ok, "not-an-identifier").returncode == 0:
        failures.append("--name with a '-' was accepted")

for f in failures:
    print("FAIL:", f)
print(f"mjcf_to_header_test: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
