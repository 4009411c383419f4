"""Checks of README.md and docs/ that keep them true of the tree (CTest: docs_test; plain python3).

- README's C++ example is examples/quickstart.cpp as it is (CTest example_quickstart runs that file;
  python/tests/test_readme.py runs README's Python example).
- README's apt line installs exactly the packages .ci/run installs, and its pip line exactly the
  Python packages (with the same extras and version pins) that .ci/run installs into its venv.
- The quick start's two commands name workflow presets that CMakePresets.json defines.
- Every relative link in README.md and docs/**/*.md names a file that exists and, with #anchor, a
  heading of that file (GitHub's anchor rule).

Run: python3 tests/docs_test.py [-v]
"""

import json
import re
import shlex
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fenced_blocks(text: str, language: str) -> list:
    """The bodies of the ```language fenced blocks of a Markdown text, in order."""
    return re.findall(r"^```" + re.escape(language) + r"\n(.*?)^```", text, flags=re.M | re.S)


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text: lower case, markup and punctuation dropped (letters,
    digits, spaces, '-' and '_' kept), spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    found, seen = set(), {}
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            a = github_anchor(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            found.add(a if n == 0 else f"{a}-{n}")
    return found


def links(path: Path) -> list:
    """(line number, target) of the Markdown links and images outside code blocks and code spans."""
    out, in_code = [], False
    for no, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        out += [(no, t) for t in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line)]
    return out


class Readme(unittest.TestCase):
    readme = (ROOT / "README.md").read_text()

    def test_cpp_example_is_examples_quickstart(self):
        blocks = fenced_blocks(self.readme, "cpp")
        self.assertTrue(blocks, "README.md has no ```cpp block")
        self.assertEqual(blocks[0], (ROOT / "examples/quickstart.cpp").read_text(),
                         "README's first C++ block differs from examples/quickstart.cpp")

    def test_apt_line_installs_what_ci_installs(self):
        ci = re.search(r"^packages=\((.*?)\)", (ROOT / ".ci/run").read_text(), flags=re.M)
        self.assertIsNotNone(ci, ".ci/run has no packages=(...) line")
        apt = re.search(r"apt-get install -y ([^\n`]*)", self.readme)
        self.assertIsNotNone(apt, "README.md has no apt-get install line")
        self.assertEqual(sorted(apt.group(1).split()), sorted(ci.group(1).split()))

    def test_pip_line_installs_what_ci_installs(self):
        # .ci/run: `... -m pip install [options] "pkg" ... \` continued on the next line
        ci_text = (ROOT / ".ci/run").read_text().replace("\\\n", " ")
        ci = re.search(r"-m pip install ([^\n]*)", ci_text)
        self.assertIsNotNone(ci, ".ci/run has no `python -m pip install` line")
        ci_packages = [w for w in shlex.split(ci.group(1)) if not w.startswith("-")]
        self.assertIn("gymnasium[mujoco]==1.4.0", ci_packages)  # the parse found the list
        lines = [m for m in re.findall(r"pip install ([^`\n]*)", self.readme) if "mujoco" in m]
        self.assertEqual(len(lines), 1, f"README.md should have one pip line of the optional packages, has {lines}")
        self.assertEqual(sorted(shlex.split(lines[0])), sorted(ci_packages),
                         "README's pip line differs from the packages .ci/run installs")

    def test_quick_start_presets_exist(self):
        presets = json.loads((ROOT / "CMakePresets.json").read_text())
        workflows = {p["name"] for p in presets.get("workflowPresets", [])}
        used = re.findall(r"cmake --workflow --preset (\S+)", self.readme)
        self.assertIn("example", used)
        self.assertIn("test", used)
        for name in used:
            self.assertIn(name, workflows, f"README runs workflow preset {name!r}, which CMakePresets.json lacks")


class Links(unittest.TestCase):
    def test_relative_links_resolve(self):
        files = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
        bad = []
        cache = {}
        for f in files:
            for no, target in links(f):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                dest = (f.parent / path).resolve() if path else f
                where = f"{f.relative_to(ROOT)}:{no}: {target}"
                if not dest.exists():
                    bad.append(f"{where}: no such file")
                    continue
                if anchor and dest.suffix == ".md":
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if anchor not in cache[dest]:
                        bad.append(f"{where}: no heading with that anchor in {dest.relative_to(ROOT)}")
        self.assertEqual(bad, [], "broken links:\n" + "\n".join(bad))

    def test_anchor_rule(self):
        self.assertEqual(github_anchor("The workspace: capacities and bytes per env"),
                         "the-workspace-capacities-and-bytes-per-env")
        self.assertEqual(github_anchor("Throughput of the MuJoCo envs: an estimate"),
                         "throughput-of-the-mujoco-envs-an-estimate")
        self.assertEqual(github_anchor("`make_vec`"), "make_vec")
        self.assertEqual(github_anchor("SAC, TD3 and DQN: one replay buffer per rank"),
                         "sac-td3-and-dqn-one-replay-buffer-per-rank")


if __name__ == "__main__":
    unittest.main()
