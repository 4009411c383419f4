"""README.md's Python example runs as written and prints what README says it prints."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs():
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.M | re.S)
    assert blocks, "README.md has no ```python block"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md (Python example)", "exec"), {})
    expected = re.search(r"^print\(.*\)\s+#\s*(.*)$", blocks[0], flags=re.M)
    assert expected, "the example's print line has no '# expected output' comment"
    assert out.getvalue().strip() == expected.group(1).strip()
