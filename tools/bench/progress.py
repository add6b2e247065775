"""A progress line on stderr: plain text, no dependency.

On a terminal the line is redrawn in place with ``\\r`` at most a few times
a second; otherwise (a log file, CI) one line is written at every tenth of
the work, so logs stay readable.
"""

import sys
import threading
import time

BAR_WIDTH = 24


def render(label, done, total, elapsed):
    """One progress line, e.g. ``allocate [######....] 245/500 49% 48.7/s``.

    :param elapsed: seconds since the phase started.
    """
    fraction = min(1.0, done / total) if total else 1.0
    filled = int(round(BAR_WIDTH * fraction))
    line = '%-9s [%s%s] %d/%d %3d%%' % (label, '#' * filled,
                                        '.' * (BAR_WIDTH - filled), done,
                                        total, int(fraction * 100))
    if elapsed > 0 and done:
        speed = done / elapsed
        line += ' %.1f/s' % speed
        if done < total:
            line += ' eta %ds' % int((total - done) / speed)
    return line


class Progress:
    """Thread-safe progress of one phase.

    :param label: the phase name shown at the start of the line.
    :param total: the number of items the phase will process.
    :param stream: where to write (stderr by default).
    :param enabled: False writes nothing at all.
    """

    def __init__(self, label, total, stream=None, enabled=True,
                 min_interval=0.2):
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.interactive = enabled and _isatty(self.stream)
        self.min_interval = min_interval
        self.done = 0
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._last_tenth = 0
        self._width = 0

    def advance(self, count=1):
        with self._lock:
            self.done += count
            if not self.enabled:
                return
            now = time.monotonic()
            if self.interactive:
                if now - self._last_draw >= self.min_interval:
                    self._last_draw = now
                    self._redraw(self._line(now))
            else:
                tenth = int(10 * self.done / self.total) if self.total else 10
                if tenth > self._last_tenth and self.done < self.total:
                    self._last_tenth = tenth
                    self._write(self._line(now) + '\n')

    def finish(self, note=''):
        """Draw the final line (with ``note`` appended) and end it."""
        with self._lock:
            if not self.enabled:
                return
            line = self._line(time.monotonic())
            if note:
                line += ' ' + note
            if self.interactive:
                self._redraw(line)
                self._write('\n')
            else:
                self._write(line + '\n')

    def _redraw(self, line):
        # NOTE: padded so that a shorter line hides the previous one.
        self._write('\r' + line.ljust(self._width))
        self._width = len(line)

    def _line(self, now):
        return render(self.label, self.done, self.total, now - self._start)

    def _write(self, text):
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # stderr went away: keep benchmarking


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
