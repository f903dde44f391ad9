"""Tests of tools/check_mutants.py that need no build: every stored mutant applies to the
reference and changes it, each lab keeps at least six, and a mutant that no longer
matches its region (the reference moved on) is reported, not silently skipped. The full
run (building and grading every mutant) is too slow for CI: tools/README.md has its
command.

Run: python3 -m unittest discover -s tests/tools
"""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import check_mutants  # noqa: E402


class StoredMutants(unittest.TestCase):
    def test_every_mutant_applies_and_changes_its_region(self):
        labs = check_mutants.load_labs()
        for lab in labs.values():
            self.assertGreaterEqual(len(lab.mutants), 6, f"lab {lab.number} needs at least 6 mutants")
            for mutant in lab.mutants:
                source = (check_mutants.REPO / mutant.file).read_text()
                mutated = check_mutants.apply_mutant(source, mutant)
                self.assertNotEqual(mutated, source, f"lab{lab.number}/{mutant.name} changes nothing")
                self.assertTrue(mutant.description.strip(), f"lab{lab.number}/{mutant.name}: no description")

    def test_names_are_unique_per_lab(self):
        for lab in check_mutants.load_labs().values():
            names = [m.name for m in lab.mutants]
            self.assertEqual(len(names), len(set(names)))


class Applying(unittest.TestCase):
    SOURCE = ("int f() {\n    // LAB 09 BEGIN: the loop\n    // hint\n    for (int i = 0; i < n; ++i) x += i;\n"
              "    // LAB 09 END\n    for (int i = 0; i < n; ++i) y += i;\n}\n")

    def mutant(self, old, new):
        return check_mutants.Mutant("09", "m", "d", "f.cpp", "the loop", [(old, new)])

    def test_replaces_inside_the_region_only(self):
        out = check_mutants.apply_mutant(self.SOURCE, self.mutant("i < n", "i <= n"))
        self.assertIn("i <= n; ++i) x", out)
        self.assertIn("i < n; ++i) y", out)

    def test_text_not_in_the_region_is_an_error(self):
        with self.assertRaisesRegex(check_mutants.UsageError, "occurs 0 times"):
            check_mutants.apply_mutant(self.SOURCE, self.mutant("y += i", "y -= i"))

    def test_unknown_region_is_an_error(self):
        m = check_mutants.Mutant("09", "m", "d", "f.cpp", "another loop", [("i", "j")])
        with self.assertRaisesRegex(check_mutants.UsageError, "no region"):
            check_mutants.apply_mutant(self.SOURCE, m)

    def test_bad_mutant_file_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "lab09"
            folder.mkdir()
            (folder / "broken.json").write_text(json.dumps({"description": "no file"}))
            lab = check_mutants.Lab("09", "09-x", ["f.cpp"], "lab09_tests", [])
            saved = check_mutants.MUTANTS
            check_mutants.MUTANTS = Path(tmp)
            try:
                with self.assertRaisesRegex(check_mutants.UsageError, "not a mutant file"):
                    check_mutants.load_mutants(lab)
            finally:
                check_mutants.MUTANTS = saved


if __name__ == "__main__":
    unittest.main()
