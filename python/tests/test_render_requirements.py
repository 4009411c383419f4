"""test_render_policy.py skips, naming the piece and how to install it, when an optional piece is
missing (mujoco, imageio, Pillow), instead of failing: each case runs that test file in a fresh
pytest where the piece's module is shadowed by one that fails to import, as if it were not installed.
(Without imageio, Gymnasium's MuJoCo renderer raised ModuleNotFoundError inside the script, and the
test failed.)"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RENDER_TEST = os.path.join(HERE, "test_render_policy.py")


@pytest.mark.parametrize("module,package", [("mujoco", "mujoco"), ("imageio", "imageio"), ("PIL", "Pillow")])
def test_render_test_skips_with_a_clear_message_when_a_piece_is_missing(tmp_path, module, package):
    shadow = tmp_path / "shadow" / module
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        f"raise ModuleNotFoundError(\"No module named '{module}' (hidden by test_render_requirements.py)\", "
        f"name={module!r})\n")
    env = dict(os.environ)
    # the shadow first, then this interpreter's path (its rlkernels); scripts the test starts inherit it
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "shadow")] + [p for p in sys.path if p])
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", RENDER_TEST],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode in (0, 5), out  # 5: a module skipped whole leaves no test collected
    assert "skipped" in out and "passed" not in out, out
    assert f"the render test needs {package} (No module named '{module}'" in out, out
    assert 'pip install "mujoco==3.12.0" "gymnasium[mujoco]==1.4.0"' in out, out
