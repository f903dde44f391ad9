"""The layering test: every #include in core/ keeps to the table in core/LAYERS.md.

The first test checks the real core/ (no exceptions are listed anywhere); the others run
tools/check_layers.py on small synthetic trees, so a checker that passes everything fails.

Run: python3 -m unittest discover -s tests/tools
"""

import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import check_layers  # noqa: E402

TABLE = textwrap.dedent("""\
    # layers

    | folder | may include | owns |
    |--------|-------------|------|
    | base   |             | errors |
    | tensor | base        | tensors |
    | ops    | base, tensor | ops |
    """)


def make_tree(root: Path, files: dict, table: str = TABLE) -> None:
    (root / "core").mkdir()
    (root / "core" / "LAYERS.md").write_text(table)
    for folder in ("base", "tensor", "ops"):
        (root / "core" / folder).mkdir()
    for path, text in files.items():
        (root / "core" / path).write_text(text)


class CoreLayers(unittest.TestCase):
    def test_every_include_in_core_keeps_to_the_table(self):
        problems = check_layers.check(REPO)
        self.assertEqual(problems, [], "includes that break core/LAYERS.md:\n" + "\n".join(problems))


class Checker(unittest.TestCase):
    def check(self, files: dict, table: str = TABLE) -> list:
        with tempfile.TemporaryDirectory() as tmp:
            make_tree(Path(tmp), files, table)
            return check_layers.check(Path(tmp))

    def test_includes_down_the_table_pass(self):
        files = {"base/error.hpp": "#pragma once\n",
                 "tensor/tensor.hpp": '#include "base/error.hpp"\n#include <vector>\n',
                 "ops/ops.hpp": '#include "tensor/tensor.hpp"\n#include "ops/shape.hpp"\n',
                 "ops/shape.hpp": "#pragma once\n",
                 "ops/shape.cpp": '#include "shape.hpp"\n#include <sys/mman.h>\n'}
        self.assertEqual(self.check(files), [])

    def test_an_upward_include_is_named_with_file_line_and_rule(self):
        files = {"base/error.hpp": "", "ops/ops.hpp": "",
                 "tensor/tensor.cpp": '// the tensor\n#include <cmath>\n  #  include "ops/ops.hpp"\n'}
        problems = self.check(files)
        self.assertEqual(len(problems), 1, problems)
        self.assertTrue(problems[0].startswith("core/tensor/tensor.cpp:3: "), problems[0])
        self.assertIn("tensor may not include ops", problems[0])
        self.assertIn("tensor may include base", problems[0])

    def test_a_header_outside_core_is_reported(self):
        files = {"tensor/tensor.cpp": '#include "testkit/random.hpp"\n'}
        problems = self.check(files)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("core/tensor/tensor.cpp:1:", problems[0])
        self.assertIn("names no header of core/", problems[0])

    def test_a_rule_pointing_up_the_table_is_reported(self):
        table = TABLE.replace("| tensor | base        |", "| tensor | base, ops   |")
        problems = self.check({}, table)
        self.assertTrue(any("'tensor' may include 'ops', which is not in an earlier row" in p for p in problems),
                        problems)

    def test_a_folder_without_a_row_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            make_tree(Path(tmp), {})
            (Path(tmp) / "core" / "nn").mkdir()
            problems = check_layers.check(Path(tmp))
        self.assertTrue(any("core/nn has no row" in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main()
