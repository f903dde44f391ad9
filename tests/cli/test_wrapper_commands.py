"""The ./gradlab script hands every subcommand of the gradlab program to it: the READMEs
write `./gradlab profile`, `./gradlab conv-tune`, ... and each must reach the program.

Run: GRADLAB_EXE=build/tools/gradlab python3 tests/cli/test_wrapper_commands.py
(meson test --suite cli sets GRADLAB_EXE; without the program it exits 77, skipped)
"""

import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(os.environ.get("GRADLAB_EXE", ROOT / "build" / "tools" / "gradlab"))


def program_subcommands() -> list[str]:
    """The names under 'Subcommands:' in the program's --help (CLI11's layout)."""
    text = subprocess.run([str(EXE), "--help"], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    listed = text.split("Subcommands:", 1)[1]
    return re.findall(r"^  (\S+)\s", listed, re.MULTILINE)


def forwarded_by_script() -> set[str]:
    """The names in the script's case pattern that execs the program."""
    script = (ROOT / "gradlab").read_text()
    pattern = re.search(r"^\s*([\w|-]+)\)\s*\n?\s*build; exec \"\$BUILD/tools/gradlab\"", script,
                        re.MULTILINE)
    if not pattern:
        raise AssertionError("./gradlab has no case that execs $BUILD/tools/gradlab")
    return set(pattern.group(1).split("|"))


class WrapperTest(unittest.TestCase):
    def test_every_subcommand_is_forwarded(self):
        commands = program_subcommands()
        self.assertGreaterEqual(len(commands), 5, commands)  # the parse found the list
        missing = [c for c in commands if c not in forwarded_by_script()]
        self.assertEqual(missing, [], "add these to the case in ./gradlab that runs the program")


if __name__ == "__main__":
    if not EXE.is_file():
        print(f"skipped: no gradlab program at {EXE} (build it first)")
        sys.exit(77)
    unittest.main()
