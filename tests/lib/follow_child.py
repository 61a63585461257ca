#!/usr/bin/env python3
# tests/lib/follow_child.py -- a running program to follow, for tests/tools/follow.py
# and tests/tools/clickhouse.py
#
# .design: design/tools.txt .eventcnv.follow
#
# Run under the malloc recorder with small buffers (start()), Python
# allocates on three threads, a short pause every 200 steps, so that
# blocks reach the log while it runs.  MODE:
#   end    each thread does 60000 steps; then a clean exit
#   long   the same, 150000 steps: a run of several seconds
#   kill   the threads go on; main sleeps until it is killed
#   segv   the same, but after 1.5 s main dies of its own SIGSEGV
#   late   the same, after 4 s: once --follow has stopped waiting for
#          the stream's ClockRate (design/tools.txt .eventcnv.follow.time)

import os
import subprocess
import sys
import threading
import time


def work(steps, pause):
    x = []
    for i in range(steps):
        x.append(str(i) * (i % 7))
        if len(x) > 50:
            x = []
        if i % 200 == 0:
            time.sleep(pause)


def start(log, recorder, mode, env=None):
    """This program in MODE, recorded into log, with env added: once its
    log has a header, its Popen.  The interpreter itself, not a wrapper
    script, which would exec it and end the log there."""
    prog = subprocess.Popen([os.path.realpath(sys.executable), os.path.abspath(__file__), mode],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, TELLTALE_FILE=log, LD_PRELOAD=recorder,
                                     TELLTALE_BUFFER="4096", **(env or {})))
    wait_for(log)
    return prog


def wait_for(log):
    """Until log has a byte, or 5 s"""
    for _ in range(500):
        if os.path.exists(log) and os.path.getsize(log) > 0:
            return
        time.sleep(0.01)


def main():
    mode = sys.argv[1]
    end = mode in ("end", "long")
    steps = {"end": 60000, "long": 150000}.get(mode, 100000)
    threads = [threading.Thread(target=work, args=(steps, 0.005 if end else 0.002),
                                daemon=not end) for _ in range(3)]
    for t in threads:
        t.start()
    if end:
        for t in threads:
            t.join()
        return 0
    time.sleep(4 if mode == "late" else 1.5)
    if mode in ("segv", "late"):
        import ctypes
        ctypes.string_at(0)
    time.sleep(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
