"""Shared by the tests that run upstream conformance suites (tempest with
ironic-tempest-plugin in the keystone tier, openstacksdk's functional tests
in the clients tier) as subprocesses of the client tools' virtualenv.

The suites are run unmodified.  Their results are read from a subunit v2
stream, so that every failed test is named and every passed test counted.
What a suite may not run is written in a committed exclude list, one line
a test: ``<test id regex>  # <reason> [microversions.rst: <version>]``.
A line is accepted only when the row of that version in
doc/source/api/microversions.rst marks a feature as not served (its
"Here" cell says ``rejected`` or ``not offered``): nothing else may be
excluded.
"""

import io
import os
import re

import subunit
import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MICROVERSIONS_RST = os.path.join(ROOT, 'doc', 'source', 'api',
                                 'microversions.rst')
# "Here" cells of the microversion table that mark a feature not served.
UNSUPPORTED_MARKS = ('rejected', 'not offered')

_ROW_START = re.compile(r'^   \* - (1\.\d+)\s*$')
_CELL = re.compile(r'^     - (.*)$')
_CONTINUED = re.compile(r'^       \S')
_EXCLUDE_LINE = re.compile(
    r'^(?P<regex>\S+)\s+#\s*(?P<reason>.*?)\s*'
    r'\[microversions\.rst:\s*(?P<version>1\.\d+)\]\s*$')


class ExcludeListError(ValueError):
    """A line of an exclude list breaks the policy (module doc)."""


def microversion_table(path=MICROVERSIONS_RST):
    """{version: (what it added, what ironic_alloc does)} from the table.
    """
    rows = {}
    version = None
    cells = []

    def row_done():
        if version is not None and len(cells) == 2:
            rows[version] = tuple(' '.join(cell) for cell in cells)

    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            start = _ROW_START.match(line)
            cell = _CELL.match(line)
            if start:
                row_done()
                version, cells = start.group(1), []
            elif version is not None and cell:
                cells.append([cell.group(1).strip()])
            elif version is not None and cells and _CONTINUED.match(line):
                cells[-1].append(line.strip())
            elif version is not None and line.strip():
                row_done()
                version = None
    row_done()
    return rows


def read_exclude_list(path, table=None):
    """The entries of an exclude list: [(regex, reason, version)].

    Raises ExcludeListError for a line without a reason, without a
    microversion table row, naming a row that does not mark its feature
    unsupported, or with a regex that does not compile.
    """
    table = microversion_table() if table is None else table
    entries = []
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith('#'):
                continue
            where = '%s:%d' % (os.path.basename(path), number)
            match = _EXCLUDE_LINE.match(text)
            if not match or not match.group('reason'):
                raise ExcludeListError(
                    '%s: expected "<regex>  # <reason> [microversions.rst: '
                    '1.N]", got %r' % (where, text))
            regex, reason, version = match.group('regex', 'reason',
                                                 'version')
            try:
                re.compile(regex)
            except re.error as exc:
                raise ExcludeListError('%s: bad regex %r: %s'
                                       % (where, regex, exc))
            if version not in table:
                raise ExcludeListError(
                    '%s: microversions.rst has no row %s' % (where, version))
            here = table[version][1]
            if not any(mark in here for mark in UNSUPPORTED_MARKS):
                raise ExcludeListError(
                    '%s: microversions.rst row %s says %r, which does not '
                    'mark the feature unsupported' % (where, version, here))
            entries.append((regex, reason, version))
    return entries


class Results:
    """Test ids by final status, read from a subunit v2 stream."""

    def __init__(self):
        self.by_status = {}
        self.details = {}
        self.skip_reasons = {}

    def _add(self, test):
        self.by_status.setdefault(test['status'], []).append(test['id'])
        if test['status'] == 'skip':
            reason = test['details'].get('reason')
            self.skip_reasons[test['id']] = (
                reason.as_text() if reason is not None else '')
        if test['status'] in ('fail', 'uxsuccess'):
            text = []
            for name, detail in sorted(test['details'].items()):
                try:
                    body = detail.as_text()
                except Exception:
                    continue
                text.append('--- %s\n%s' % (name, body[-4000:]))
            self.details[test['id']] = '\n'.join(text)

    @classmethod
    def parse(cls, stream_bytes):
        results = cls()
        case = subunit.ByteStreamToStreamResult(
            io.BytesIO(stream_bytes), non_subunit_name='stdout')
        result = testtools.StreamToDict(results._add)
        result.startTestRun()
        try:
            case.run(result)
        finally:
            result.stopTestRun()
        return results

    def ids(self, status):
        return sorted(self.by_status.get(status, ()))

    @property
    def passed(self):
        return self.ids('success')

    @property
    def failed(self):
        return sorted(self.ids('fail') + self.ids('uxsuccess'))

    @property
    def skipped(self):
        return self.ids('skip')

    def skip_report(self):
        """Every skipped test with its reason, one a line."""
        return '\n'.join('%s: %s' % (test_id, self.skip_reasons[test_id])
                         for test_id in self.skipped)

    def failure_report(self):
        """Every failed test, then their details."""
        failed = self.failed
        return '%d failed:\n%s\n\n%s' % (
            len(failed), '\n'.join(failed),
            '\n\n'.join('=== %s\n%s' % (test_id, self.details.get(test_id, ''))
                        for test_id in failed))


def matching(test_ids, pattern):
    """The ids among ``test_ids`` that ``pattern`` (a regex) finds."""
    regex = re.compile(pattern)
    return [test_id for test_id in test_ids if regex.search(test_id)]
