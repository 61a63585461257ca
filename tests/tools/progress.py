#!/usr/bin/env python3
# tests/tools/progress.py -- a long conversion says how far it is, on a terminal only
#
# .design: design/tools.txt .export.progress
#
# Usage: tests/tools/progress.py CONFIG      e.g. python3 tests/tools/progress.py build
# CONFIG's eventcnv must be built; bench/bench (for a log of 2M events)
# is built if it is not.  The log comes on eventcnv's stdin with a pause
# of 1.2 s in the middle, so every conversion has taken a second before
# its first event, however fast or busy the machine.
# Covers:
#   progress-tty       stderr a terminal (a pty), SQLite to a file:
#                      lines "eventcnv: N%, DONE of TOTAL events, S s",
#                      the last cleared at the end; the output is whole
#   progress-pipe      stderr a pipe: nothing on it
#   progress-text      the same for the text output to a file
#   progress-pager     text on stdout, a pipe (a pager): nothing said
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

import os
import pty
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from results import result, summary  # noqa: E402


def feed(w, data):
    """Write data to the pipe w with a pause in the middle, and close it."""
    half = len(data) // 2
    try:
        with os.fdopen(w, "wb") as f:
            f.write(data[:half])
            f.flush()
            time.sleep(1.2)
            f.write(data[half:])
    except BrokenPipeError:
        pass


def on_pty(cmd, log, stdout=subprocess.DEVNULL):
    """Run cmd with stderr on a terminal and log fed slowly on stdin
    (feed); its exit status and what it said there."""
    master, slave = pty.openpty()
    r, w = os.pipe()
    p = subprocess.Popen(cmd, stdin=r, stdout=stdout, stderr=slave)
    os.close(slave)
    os.close(r)
    with open(log, "rb") as f:
        feeder = threading.Thread(target=feed, args=(w, f.read()))
    feeder.start()
    said = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:         # EIO: the other end is closed
            break
        if not data:
            break
        said += data
    os.close(master)
    feeder.join()
    return p.wait(), said.decode("utf-8", "replace")


def check_tty(rc, said, total):
    if rc != 0:
        return "exit %d: %r" % (rc, said[-300:])
    lines = [l for l in said.split("\r") if l.strip() and l != "\x1b[K"]
    if not lines:
        return "nothing said, after a second's pause"
    for line in lines:
        m = re.match(r"^eventcnv: +(\d+)%, (\d+) of (\d+) events, \d+ s$", line)
        if not m or int(m.group(3)) != total or int(m.group(2)) > total:
            return "a line %r" % line
    if not said.endswith("\r\x1b[K"):
        return "the last line is not cleared: %r" % said[-80:]
    return None


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: tests/tools/progress.py CONFIG\n")
        return 2
    config = os.path.abspath(sys.argv[1])
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    eventcnv = os.path.join(config, "eventcnv")
    bench = os.path.join(config, "bench", "bench")
    if not os.path.exists(bench):
        subprocess.run(["ninja", "-C", top, os.path.relpath(bench, top)], stdout=subprocess.PIPE)
    with tempfile.TemporaryDirectory(prefix="progress-test.") as tmp:
        log = os.path.join(tmp, "big.log")
        subprocess.run([bench, "--case", "enabled", "--count", "2000000", "--file", log],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        count = subprocess.run([eventcnv, "--count", log], stdout=subprocess.PIPE).stdout.decode()
        total = sum(int(line.split()[0]) for line in count.splitlines())
        db = os.path.join(tmp, "big.db")
        rc, said = on_pty([eventcnv, "--format", "sqlite", "-o", db, "-"], log)
        why = check_tty(rc, said, total)
        if not why:
            rows = subprocess.run(["sqlite3", db, "SELECT count(*) FROM event"],
                                  stdout=subprocess.PIPE).stdout.decode().strip()
            why = None if rows == str(total) else "%s rows, want %d" % (rows, total)
        result("progress-tty", why)
        r = subprocess.run([eventcnv, "--format", "sqlite", "-o", db, log],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        result("progress-pipe", None if r.returncode == 0 and r.stderr == b""
               else "exit %d, stderr %r" % (r.returncode, r.stderr[:200]))
        text = os.path.join(tmp, "big.txt")
        with open(text, "wb") as out:
            rc, said = on_pty([eventcnv, "-"], log, stdout=out)
        why = check_tty(rc, said, total)
        if not why:
            with open(text, "rb") as f:
                lines = sum(1 for _ in f)
            why = None if lines == total else "%d lines, want %d" % (lines, total)
        result("progress-text", why)
        pager = subprocess.Popen(["wc", "-l"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        rc, said = on_pty([eventcnv, "-"], log, stdout=pager.stdin)
        pager.stdin.close()
        lines = pager.stdout.read().decode().strip()
        pager.wait()
        result("progress-pager", "exit %d: %r" % (rc, said[-300:]) if rc != 0
               else "said %r" % said[:200] if said != ""
               else None if lines == str(total) else "%s lines, want %d" % (lines, total))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
