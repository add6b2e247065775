"""Start and stop a standalone ironic_alloc service (``ironic-alloc``).

The service gets its own directory (state_path, config file, log file), a
free TCP port on 127.0.0.1 and, unless a database URL is given, its own
SQLite file there.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time

from tools.bench import client as api_client

READY_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0


def free_port(host='127.0.0.1'):
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def parse_status(text):
    """VmRSS and VmHWM (peak RSS) in KiB from /proc/<pid>/status text.

    :returns: dict with 'rss_kib' and 'peak_kib' (None when absent).
    """
    found = {'rss_kib': None, 'peak_kib': None}
    names = {'VmRSS:': 'rss_kib', 'VmHWM:': 'peak_kib'}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in names:
            found[names[parts[0]]] = int(parts[1])
    return found


def memory_of(pid):
    """Resident and peak memory of a process in MiB, or None values."""
    try:
        with open('/proc/%d/status' % pid) as f:
            found = parse_status(f.read())
    except OSError:
        found = {'rss_kib': None, 'peak_kib': None}
    return {('rss' if k == 'rss_kib' else 'peak'):
            (v / 1024.0 if v is not None else None)
            for k, v in found.items()}


def parse_stat_cpu(text, ticks_per_second):
    """User + system CPU seconds from /proc/<pid>/stat text.

    The command name (field 2) may hold spaces and parentheses, so the
    fields are counted after its last closing parenthesis: utime and stime
    are fields 14 and 15 of the line.
    """
    fields = text.rsplit(')', 1)[1].split()
    # fields[0] is field 3 (state): utime is field 14 -> index 11.
    return (int(fields[11]) + int(fields[12])) / float(ticks_per_second)


def cpu_seconds(pid):
    """CPU seconds (user + system) used so far by a process, or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return parse_stat_cpu(f.read(), os.sysconf('SC_CLK_TCK'))
    except (OSError, ValueError, IndexError):
        return None


def parse_proc_stat_busy(text, ticks_per_second):
    """Busy CPU seconds of the whole machine (all CPUs) from /proc/stat.

    The first line sums every CPU: user nice system idle iowait irq
    softirq steal ...; busy is everything but idle and iowait (guest
    time is already counted in user and nice).
    """
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == 'cpu':
            values = [int(v) for v in fields[1:9]]
            busy = sum(values) - values[3] - values[4]
            return busy / float(ticks_per_second)
    raise ValueError('no cpu line in /proc/stat')


def machine_busy_seconds():
    """Busy CPU seconds of the machine so far (every process), or None."""
    try:
        with open('/proc/stat') as f:
            return parse_proc_stat_busy(f.read(), os.sysconf('SC_CLK_TCK'))
    except (OSError, ValueError):
        return None


def executable_of(pid, proc_root='/proc'):
    """The program file process ``pid`` runs (links resolved: a
    virtualenv's python names the interpreter it was made from), or None
    when it cannot be read (gone, or another user's without the right)."""
    try:
        return os.path.realpath(
            os.readlink(os.path.join(proc_root, str(pid), 'exe')))
    except OSError:
        return None


def _ancestors(pid, proc_root):
    """``pid`` and the pids of its parent, grandparent... up to init."""
    chain = set()
    while pid > 0 and pid not in chain:
        chain.add(pid)
        try:
            with open(os.path.join(proc_root, str(pid), 'stat')) as f:
                pid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return chain


def pids_matching(pattern, proc_root='/proc'):
    """Pids of the processes whose command line (arguments joined by
    spaces) matches regular expression ``pattern`` (re.search), except
    this process and its ancestors (whose command lines hold the
    pattern, as an argument)."""
    regex = re.compile(pattern)
    ours = _ancestors(os.getpid(), proc_root)
    found = []
    for entry in os.listdir(proc_root):
        if not entry.isdigit() or int(entry) in ours:
            continue
        try:
            with open(os.path.join(proc_root, entry, 'cmdline'), 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        line = ' '.join(a.decode(errors='replace') for a in argv if a)
        if line and regex.search(line):
            found.append(int(entry))
    return sorted(found)


def render_config(state_path, port, db_url=None, transport_url=None,
                  options=(), log_file=None):
    """The config file of a benchmark service.

    :param options: (section, key, value) tuples added or overriding.
    """
    sections = {'DEFAULT': {'state_path': state_path,
                            'host': 'bench-%d' % port},
                'api': {'host_ip': '127.0.0.1', 'port': str(port)}}
    if log_file:
        sections['DEFAULT']['log_file'] = log_file
    if transport_url:
        sections['DEFAULT']['transport_url'] = transport_url
    if db_url:
        sections.setdefault('database', {})['connection'] = db_url
    for section, key, value in options:
        sections.setdefault(section, {})[key] = value
    lines = []
    for section, values in sections.items():
        lines.append('[%s]' % section)
        lines += ['%s = %s' % (k, v) for k, v in values.items()]
        lines.append('')
    return '\n'.join(lines)


def parse_option(text):
    """``section.key=value`` -> (section, key, value).

    :raises: ValueError for another shape.
    """
    name, sep, value = text.partition('=')
    section, dot, key = name.strip().rpartition('.')
    if not sep or not dot or not section or not key:
        raise ValueError('expected SECTION.KEY=VALUE, got %r' % text)
    return section, key, value.strip()


def console_script(name='ironic-alloc'):
    """The console script installed next to this Python interpreter."""
    return os.path.join(os.path.dirname(sys.executable), name)


class ServiceFailed(Exception):
    pass


class StandaloneService:
    """One ``ironic-alloc`` process for the benchmark.

    :param workdir: a directory for state, config and log.
    :param db_url: an SQLAlchemy URL; default an SQLite file in workdir.
    :param transport_url: an oslo.messaging URL; default in-process.
    :param options: extra (section, key, value) config tuples.
    """

    def __init__(self, workdir, db_url=None, transport_url=None,
                 options=(), executable=None):
        self.workdir = workdir
        self.db_url = db_url or 'sqlite:///%s' % os.path.join(
            workdir, 'ironic-alloc.sqlite')
        self.transport_url = transport_url
        self.options = list(options)
        self.executable = executable or console_script()
        self.log_path = os.path.join(workdir, 'service.log')
        self.port = None
        self.process = None

    @property
    def endpoint(self):
        return 'http://127.0.0.1:%d' % self.port

    @property
    def pid(self):
        return self.process.pid if self.process else None

    def start(self, timeout=READY_TIMEOUT):
        """Start the process and wait until the allocation API answers.

        :raises: ServiceFailed when it exits or is not ready in time.
        """
        if not os.path.exists(self.executable):
            raise ServiceFailed('%s not found: install ironic_alloc in this '
                                'virtualenv' % self.executable)
        self.port = free_port()
        config = self._write_config()
        with open(os.path.join(self.workdir, 'stdout.log'), 'ab') as out:
            # NOTE: a new session, so that Ctrl-C in the terminal reaches
            # only the benchmark, which then stops the service itself.
            self.process = subprocess.Popen(
                [self.executable, '--config-file', config],
                stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        self._wait_ready(timeout)

    def _write_config(self):
        config = os.path.join(self.workdir, 'ironic-alloc.conf')
        with open(config, 'w') as f:
            f.write(render_config(self.workdir, self.port, self.db_url,
                                  self.transport_url, self.options,
                                  log_file=self.log_path))
        return config

    def reconfigure(self, options):
        """Change (section, key, value) options in the config file and
        make the running service re-read it (SIGHUP: mutable options)."""
        changed = {(section, key) for section, key, _value in options}
        self.options = [o for o in self.options
                        if (o[0], o[1]) not in changed] + list(options)
        self._write_config()
        self.process.send_signal(signal.SIGHUP)

    def _wait_ready(self, timeout):
        client = api_client.ApiClient(self.endpoint, timeout=5)
        deadline = time.monotonic() + timeout
        last = 'no answer'
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise ServiceFailed('ironic-alloc exited with status %s;'
                                        ' log: %s\n%s' % (
                                            self.process.returncode,
                                            self.log_path, self.log_tail()))
                try:
                    response = client.request('GET', '/v1/allocations',
                                              params={'limit': 1})
                    if response.status == 200:
                        return
                    last = api_client.error_kind(response)
                except api_client.ConnectionFailed as exc:
                    last = str(exc)
                time.sleep(0.2)
        finally:
            client.close()
        self.stop()
        raise ServiceFailed('ironic-alloc not ready after %ds (%s); log: %s'
                            % (timeout, last, self.log_path))

    def memory(self):
        """RSS and peak RSS (MiB) of the service process."""
        return memory_of(self.pid) if self.pid else {'rss': None,
                                                      'peak': None}

    def log_tail(self, lines=20):
        for path in (self.log_path,
                     os.path.join(self.workdir, 'stdout.log')):
            try:
                with open(path, errors='replace') as f:
                    text = f.read().splitlines()[-lines:]
            except OSError:
                continue
            if text:
                return '\n'.join(text)
        return ''

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, then SIGKILL after ``timeout`` seconds.

        :returns: the exit status, or None if it was not running.
        """
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(10)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()
