#!/usr/bin/env python3
# tests/tools/progress.py -- a long conversion says how far it is, on a terminal only
#
# .design: design/tools.txt .export.progress
#
# Usage: tests/tools/progress.py CONFIG      e.g. python3 tests/tools/progress.py build
# CONFIG's eventcnv must be built; bench/bench (for a log of 2M events)
# is built if it is not.
# Covers:
#   progress-tty       stderr a terminal (a pty): after a second, lines
#                      "eventcnv: N%, DONE of TOTAL events, S s", the last
#                      cleared at the end; the output is whole
#   progress-pipe      stderr a pipe: nothing on it
#   progress-text      the same for the text output, with stderr a pty
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

import os
import pty
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from results import result, summary  # noqa: E402


def on_pty(cmd):
    """Run cmd with stderr on a terminal; its exit status, what it said
    there and how long it took."""
    master, slave = pty.openpty()
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
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
    return p.wait(), said.decode("utf-8", "replace"), time.monotonic() - start


def check_tty(rc, said, took, total):
    if rc != 0:
        return "exit %d: %r" % (rc, said[-300:])
    lines = [l for l in said.split("\r") if l.strip() and l != "\x1b[K"]
    if not lines:
        return None if took < 1.5 else "nothing said in %.1f s" % took
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
        rc, said, took = on_pty([eventcnv, "--format", "sqlite", "-o", db, log])
        why = check_tty(rc, said, took, total)
        if not why and took >= 1.5 and "%" not in said:
            why = "nothing said in %.1f s" % took
        if not why:
            rows = subprocess.run(["sqlite3", db, "SELECT count(*) FROM event"],
                                  stdout=subprocess.PIPE).stdout.decode().strip()
            why = None if rows == str(total) else "%s rows, want %d" % (rows, total)
        result("progress-tty", why)
        r = subprocess.run([eventcnv, "--format", "sqlite", "-o", db, log],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        result("progress-pipe", None if r.returncode == 0 and r.stderr == b""
               else "exit %d, stderr %r" % (r.returncode, r.stderr[:200]))
        rc, said, took = on_pty([eventcnv, log])
        result("progress-text", check_tty(rc, said, took, total))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
