"""Runs ``openstack`` commands, one after the other, in one process.

Started as ``python osc_shell.py`` with the client virtualenv's python; it
reads one JSON request per line on stdin, ``{"argv": [...], "stdin":
"..."}`` (argv without the leading ``openstack``), runs the command through
python-openstackclient's own entry point, ``openstackclient.shell.main``,
and answers one JSON line ``{"returncode": N, "stdout": "...", "stderr":
"..."}``.  Each command gets a new shell object, so no parsed option or
client outlives its command; only the imported modules are shared.

Why: importing the client stack is most of the cost of one ``openstack``
command, and a test runs dozens of them.  The console script itself is
still run as a process by the tests that check its entry points.

This script imports only the client tools, never ironic_alloc.
"""

import contextlib
import io
import json
import logging
import os
import sys
import traceback
import warnings

from openstackclient import shell


def run(argv, stdin_text):
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin_text or '')
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            try:
                returncode = shell.main(argv)
            except SystemExit as exc:
                # argparse and some commands exit; a process would end
                # with this status.
                if exc.code is None or isinstance(exc.code, int):
                    returncode = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    returncode = 1
            except Exception:
                # What the interpreter prints for an uncaught exception.
                traceback.print_exc()
                returncode = 1
    finally:
        sys.stdin = saved_stdin
        # The shell adds a console handler writing to the stderr of its
        # command; the next command must not write there.
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(level)
    return {'returncode': returncode or 0, 'stdout': out.getvalue(),
            'stderr': err.getvalue()}


def main():
    # The program name the commands print (usage lines, --version) is the
    # console script's.
    sys.argv[0] = 'openstack'
    # NOTE: answers go to the original stdout, which the commands' own
    # output never reaches (it is redirected per command).
    answers = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        answer = run(request['argv'], request.get('stdin'))
        answers.write(json.dumps(answer) + '\n')
        answers.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main())
