#!/usr/bin/env python3
# bench/clickhouse.py -- the ClickHouse load rate, for bench/run
#
# .design: design/export.txt .export.clickhouse
#
# Usage: bench/clickhouse.py EVENTCNV LOG EVENTS
# Starts a clickhouse-server of its own on 127.0.0.1 (tests/tools/clickhouse.py's
# start_server), makes the table (--format clickhouse-ddl), then times,
# one run each, on the same log, as TabSeparated (--format clickhouse)
# and as Native (--format clickhouse-native):
#   load          eventcnv --format ... LOG | clickhouse-client
#                 INSERT ... FORMAT ...: what a user runs
#   rows alone    eventcnv --format ... -o FILE: eventcnv's part
#   insert alone  clickhouse-client's INSERT of that FILE: the client's
#                 parse and the server's, with the CPU each took, which
#                 say what bounds the load on a shared machine
# Prints a line each, as bench/run's rates; "not installed" without
# Debian's clickhouse-server.

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "tools"))
import clickhouse  # noqa: E402


def cpu(pid):
    """CPU seconds the process pid has used"""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def main():
    eventcnv, log, events = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if not os.path.exists(clickhouse.SERVER) or not os.path.exists(clickhouse.CLIENT):
        print("clickhouse: not installed")
        return 0
    tmp = tempfile.mkdtemp(prefix="bench-clickhouse.")
    server = None
    try:
        server, port = clickhouse.start_server(tmp)
        ddl = subprocess.run([eventcnv, "--format", "clickhouse-ddl", log], stdout=subprocess.PIPE,
                             check=True).stdout.decode()
        for statement in ddl.split(";"):
            if statement.strip():
                clickhouse.query(port, statement)
        rate = lambda label, s, more="": print("%-22s %8.2f s %8.2f M events/s%s" % (
            label, s, events / s / 1e6, more))
        for fmt, name in (("clickhouse", "TabSeparated"), ("clickhouse-native", "Native")):
            insert = [clickhouse.CLIENT, "--port", str(port), "--query",
                      "INSERT INTO telltale.event FORMAT " + name]
            clickhouse.query(port, "TRUNCATE TABLE telltale.event")
            t = time.monotonic()
            conv = subprocess.Popen([eventcnv, "--format", fmt, log], stdout=subprocess.PIPE)
            subprocess.run(insert, stdin=conv.stdout, check=True)
            conv.stdout.close()
            conv.wait()
            rate("ClickHouse load, " + name, time.monotonic() - t)
            got = clickhouse.query(port, "SELECT count() FROM telltale.event")[0][0]
            if int(got) != events:
                print("ClickHouse load: %s rows of %d events" % (got, events))

            rows = os.path.join(tmp, "rows")
            t = time.monotonic()
            subprocess.run([eventcnv, "--format", fmt, "-o", rows, log], check=True)
            rate("  rows alone", time.monotonic() - t,
                 "  (%.0f bytes a row)" % (os.path.getsize(rows) / events))
            before, children = cpu(server.pid), os.times()
            t = time.monotonic()
            with open(rows, "rb") as f:
                subprocess.run(insert, stdin=f, check=True)
            seconds = time.monotonic() - t
            time.sleep(0.5)     # the server's merge after the insert is not counted
            after = os.times()
            rate("  insert alone", seconds, "  (CPU: client %.2f s, server %.2f s)" % (
                after.children_user + after.children_system - children.children_user
                - children.children_system, cpu(server.pid) - before))
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
