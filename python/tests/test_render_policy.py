"""scripts/render_policy.py: a policy file flown by our engine, drawn offscreen by MuJoCo's renderer."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

# What the test needs beyond the rlkernels package: (module, package). CI (.ci/run) installs all of
# them: "gymnasium[mujoco]" brings mujoco and imageio (Gymnasium's MuJoCo renderer imports it),
# and imageio brings Pillow (the test reads the GIF with it). Plain `gymnasium` has neither.
REQUIREMENTS = [("mujoco", "mujoco"), ("imageio", "imageio"), ("PIL.Image", "Pillow")]
PIP_LINE = 'pip install "mujoco==3.12.0" "gymnasium[mujoco]==1.4.0" (as .ci/run)'
EGL_LINE = "apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri"


def missing_requirement():
    """None when every module of REQUIREMENTS imports; else the skip message naming the first that
    does not, and how to install it."""
    for module, package in REQUIREMENTS:
        try:
            importlib.import_module(module)
        except ImportError as e:
            return f"the render test needs {package} ({e}): {PIP_LINE}"
    return None


_missing = missing_requirement()
if _missing:
    pytest.skip(_missing, allow_module_level=True)

from PIL import Image  # noqa: E402  (after the check: Pillow imports)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "render_policy.py")
HOPPER_POLICY = os.path.join(ROOT, "tests", "reference", "mujoco_hopper_v5_policy.txt")


def run_script(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # this interpreter's rlkernels
    env.pop("DISPLAY", None)  # headless, as CI
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, env=env, timeout=300)


def test_renders_a_short_clip_without_a_display(tmp_path):
    out = tmp_path / "hopper.gif"
    # Hopper-v5: dt 0.008 s, 25 frames/s -> a frame every 5 env steps; 0.2 s = 25 steps -> 6 frames
    r = run_script(HOPPER_POLICY, "--out", str(out), "--seconds", "0.2", "--width", "64", "--height", "48")
    if r.returncode != 0 and os.environ.get("CI") != "true" and "EGL" in r.stderr:
        pytest.skip(f"the render test needs offscreen OpenGL (EGL): {EGL_LINE} ("
                    + r.stderr.strip().splitlines()[-1] + ")")
    assert r.returncode == 0, r.stderr
    assert "Hopper-v5, seed 0: 6 frames (5 env steps, 40 ms each)" in r.stdout
    assert "over 25 steps" in r.stdout
    with Image.open(out) as gif:
        assert gif.size == (64, 48)
        assert gif.n_frames == 6
        frames = []
        for k in range(gif.n_frames):
            gif.seek(k)
            frames.append(np.asarray(gif.convert("RGB"), dtype=np.int16))
    # A picture (not a blank frame), and one that changes as the hopper moves.
    assert frames[0].std() > 5
    assert max(np.abs(f - frames[0]).max() for f in frames[1:]) > 0


def test_refuses_bad_arguments(tmp_path):
    r = run_script(HOPPER_POLICY, "--out", str(tmp_path / "x.gif"), "--fps", "0")
    assert r.returncode == 2 and "--fps must be positive" in r.stderr
    r = run_script(HOPPER_POLICY, "--out", str(tmp_path / "x.gif"), "--width", "8")
    assert r.returncode == 2 and "at least 16" in r.stderr
