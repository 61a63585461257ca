#!/usr/bin/env python3
"""tests/lib/hostile/rss.py -- run a command, and say its peak RSS

Usage: rss.py LIMIT_MB ERRFILE CMD...
Runs CMD (its stdout to /dev/null, its stderr to ERRFILE) in a process
group of its own, and prints "STATUS PEAK_MB": its exit status and the
peak RSS of it and its children (RUSAGE_CHILDREN).  While it runs, the
RSS of the group is looked at every 20 ms, and past LIMIT_MB the group
is killed (STATUS -9): a regression must not take a shared machine's
memory with it.
"""

import os
import resource
import signal
import subprocess
import sys
import time


def group_rss_mb(pgid):
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:          # field 5, pgrp
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")   # field 24, rss
        except (OSError, IndexError, ValueError):
            pass
    return total >> 20


def main():
    limit, errfile, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    with open(errfile, "w") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        while p.poll() is None:
            if group_rss_mb(p.pid) > limit:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                break
            time.sleep(0.02)
    print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)


if __name__ == "__main__":
    main()
