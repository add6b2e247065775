"""Where the service spends its time: py-spy samples grouped by area.

py-spy (``pip install py-spy``) samples the Python stacks of the service
process from outside, without changing its code. It is optional: without
it the benchmark says so and skips profiling. Sampling runs in
non-blocking mode (the service is not paused per sample), so the profiled
run is only slightly slower than an unprofiled one; compare throughput
from unprofiled runs.

Only threads that were running (not idle, not waiting on a lock or a
socket) are sampled, so the shares are shares of CPU-busy samples.
"""

import collections
import os
import shutil
import signal
import subprocess
import sys

RATE = 100
STOP_TIMEOUT = 60.0
TOP = 15

# (area, substrings of the frame's file path). The innermost frame that
# matches names the area of a sample. The first match wins, so packages
# with a "sqlalchemy" directory come before SQLAlchemy itself
# (ironic_alloc/db/sqlalchemy/ is db/, oslo_db/sqlalchemy/ is oslo_db).
AREAS = (
    ('api/', ('ironic_alloc/api/',)),
    ('conductor/', ('ironic_alloc/conductor/',)),
    ('db/', ('ironic_alloc/db/',)),
    ('objects/', ('ironic_alloc/objects/', '/oslo_versionedobjects/')),
    ('ironic_alloc (other)', ('ironic_alloc/',)),
    ('oslo_db', ('/oslo_db/',)),
    ('oslo_messaging', ('/oslo_messaging/', '/kombu/', '/amqp/')),
    ('sqlalchemy', ('/sqlalchemy/',)),
    ('pecan/wsme/webob', ('/pecan/', '/wsme/', '/wsmeext/', '/webob/')),
    ('oslo (other)', ('/oslo_',)),
    ('http server', ('/wsgiref/', '/socketserver.py', '/http/server.py',
                     '/cheroot/')),
    ('json', ('/json/',)),
    ('logging', ('/logging/',)),
)
# Areas counted in the "on the stack" (inclusive) table.
INCLUSIVE_AREAS = ('api/', 'conductor/', 'db/', 'objects/', 'oslo_messaging',
                   'sqlalchemy', 'oslo_db', 'pecan/wsme/webob',
                   'http server')
OTHER = 'other (stdlib, threads)'


def find_py_spy():
    """The py-spy executable, or None when it is not installed."""
    local = os.path.join(os.path.dirname(sys.executable), 'py-spy')
    if os.path.exists(local):
        return local
    return shutil.which('py-spy')


def parse_frame(frame):
    """``"function (path/file.py:12)"`` -> (function, path).

    py-spy's raw (collapsed) format writes one frame like that; a frame
    without a location (``"process 12:..."``) gives (frame, '').
    """
    frame = frame.strip()
    if frame.endswith(')') and ' (' in frame:
        function, _, location = frame[:-1].rpartition(' (')
        path = location.rsplit(':', 1)[0] if ':' in location else location
        return function, path
    return frame, ''


def parse_collapsed(text):
    """Collapsed stacks (``frame;frame;... count`` per line).

    :returns: list of (frames outermost first, count).
    """
    stacks = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(' ')
        try:
            count = int(count)
        except ValueError:
            continue
        frames = [parse_frame(f) for f in stack.split(';') if f]
        stacks.append((frames, count))
    return stacks


def area_of(path):
    """The area of one frame's file path, or None."""
    # NOTE: a leading slash lets relative paths match too.
    path = '/' + path.replace('\\', '/').lstrip('/')
    for area, needles in AREAS:
        if any(n in path for n in needles):
            return area
    return None


def short_path(path):
    """A path shortened to its package: ``sqlalchemy/orm/query.py``."""
    path = path.replace('\\', '/')
    for marker in ('/site-packages/', '/dist-packages/'):
        if marker in path:
            return path.split(marker, 1)[1]
    if 'ironic_alloc/' in path:
        return 'ironic_alloc/' + path.split('ironic_alloc/', 1)[1]
    for marker in ('/lib/python',):
        if marker in path:
            rest = path.split(marker, 1)[1]
            return rest.split('/', 1)[1] if '/' in rest else rest
    return path


def summarize(stacks, top=TOP, rate=RATE):
    """Group samples by area and by function.

    * ``areas``: each sample counted once, for the innermost frame that
      belongs to a known area (what was executing);
    * ``inclusive``: the share of samples with the area anywhere on the
      stack (overlapping: a database query from the API counts for api/,
      objects/, db/ and sqlalchemy);
    * ``functions``: the innermost frames (self time).
    """
    total = sum(count for _frames, count in stacks)
    areas = collections.Counter()
    inclusive = collections.Counter()
    functions = collections.Counter()
    function_area = {}
    for frames, count in stacks:
        frame_areas = [area_of(path) for _fn, path in frames]
        innermost = next((a for a in reversed(frame_areas) if a), OTHER)
        areas[innermost] += count
        for area in set(frame_areas):
            if area in INCLUSIVE_AREAS:
                inclusive[area] += count
        if frames:
            function, path = frames[-1]
            name = '%s (%s)' % (function, short_path(path)) if path \
                else function
            functions[name] += count
            function_area[name] = area_of(path) or OTHER

    def share(counter, key_name, limit=None):
        return [{key_name: key, 'samples': n,
                 'percent': 100.0 * n / total if total else 0.0}
                for key, n in counter.most_common(limit)]

    functions_list = share(functions, 'function', top)
    for item in functions_list:
        item['area'] = function_area[item['function']]
    return {'samples': total, 'rate': rate,
            'areas': share(areas, 'area'),
            'inclusive': share(inclusive, 'area'),
            'functions': functions_list}


def unavailable(reason):
    """A profile document saying why there is no profile."""
    return {'samples': 0, 'note': reason}


class Sampler:
    """py-spy recording one process until stopped.

    :param pid: the service process.
    :param output: where py-spy writes collapsed stacks.
    """

    def __init__(self, pid, output, rate=RATE, executable=None):
        self.pid = pid
        self.output = output
        self.rate = rate
        self.executable = executable or find_py_spy()
        self.process = None
        self.log = output + '.log'

    def start(self):
        """:returns: None, or why sampling could not start."""
        if not self.executable:
            return ('py-spy is not installed (pip install py-spy): '
                    'profile skipped')
        if not os.path.exists('/proc/%d' % self.pid):
            return 'no process %d: profile skipped' % self.pid
        with open(self.log, 'wb') as log:
            self.process = subprocess.Popen(
                [self.executable, 'record', '--pid', str(self.pid),
                 '--rate', str(self.rate), '--format', 'raw',
                 '--nonblocking', '--full-filenames', '--output',
                 self.output],
                stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        return None

    def stop(self):
        """Stop sampling and summarize.

        :returns: a summarize() document, or unavailable(reason).
        """
        if self.process is None:
            return unavailable('profile not started')
        if self.process.poll() is None:
            # NOTE: py-spy writes its output when interrupted.
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        try:
            with open(self.output) as f:
                stacks = parse_collapsed(f.read())
        except OSError:
            return unavailable('py-spy wrote no samples; see %s' % self.log)
        document = summarize(stacks, rate=self.rate)
        if not document['samples']:
            document['note'] = 'py-spy wrote no samples; see %s' % self.log
        return document
