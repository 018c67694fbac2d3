"""How the kernel names a test after what it tests: the apply stage (which files a narrow worktree
holds) and the boot stage (which KUnit suites sit beside a touched file) read it alike."""
from __future__ import annotations

import re
from pathlib import Path

_AFFIXES = re.compile(r"^(?:test_|test-)|(?:_kunit_test|_kunit|_test|-test|_tests|-kunit)$")


def test_stem(path: str) -> str:
    """The file name without directory, extension and test affixes: a test and what it tests share it
    (lib/overflow.c, lib/overflow_kunit.c, lib/tests/test_overflow.c)."""
    return _AFFIXES.sub("", Path(path).stem)
