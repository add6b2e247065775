"""Running ``python -m tools.bench`` in a child process, for the tests of
its commands end to end."""

import json
import os
import subprocess
import sys

from testtools import content

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                         '..', '..', '..'))


def run_bench(testcase, args, json_path, timeout):
    """Run the command with ``args`` (and ``--json json_path``), attach its
    output to the test, check that it succeeded.

    :returns: (the completed process, its JSON document).
    """
    result = subprocess.run(
        [sys.executable, '-m', 'tools.bench', *args, '--json', json_path],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL)
    testcase.addDetail('bench-output', content.text_content(
        result.stdout + result.stderr))
    testcase.assertEqual(0, result.returncode)
    with open(json_path) as f:
        return result, json.load(f)
