#!/usr/bin/env python3
# tests/clickhouse.py -- eventcnv --format clickhouse into a real ClickHouse
#
# .design: design/telemetry.txt .export.clickhouse
#
# Usage: tests/clickhouse.py CONFIG      e.g. python3 tests/clickhouse.py build
# CONFIG's eventcnv and examples/pool must be built, and build's
# libtelltale-malloc.so.  Needs Debian's clickhouse-server (.ci/install);
# without it, exits 77 (skipped).
#
# A clickhouse-server is started as an ordinary process with its own
# config in a temporary directory, on 127.0.0.1 and two free ports.  The
# logs of three processes go in one table: two runs of the pool example
# (said to be of hosts alpha and beta by TELLTALE_HOST) and a recorded
# ls (another registry, host beta).
# Covers:
#   clickhouse-ddl     --format clickhouse-ddl makes the database and table
#   clickhouse-load    the three logs load (clickhouse-client INSERT ...
#                      FORMAT TabSeparated), with no error
#   clickhouse-who     events per host, pid, program and registry: each
#                      log's count as eventcnv --count gives it
#   clickhouse-query   the README's SQLite query (sizes of PoolAlloc)
#                      gives the same answer as the SQLite export, per
#                      process; threads' events and names, and each
#                      log's first and last time_ns, as jsonl gives them
#   clickhouse-rate    1 M events of bench's log load; the rate is printed
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import result, summary  # noqa: E402

SERVER = shutil.which("clickhouse-server") or "/usr/sbin/clickhouse-server"
CLIENT = shutil.which("clickhouse-client") or "/usr/bin/clickhouse-client"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tmp):
    tcp, http = free_port(), free_port()
    d = os.path.join(tmp, "ch")
    os.makedirs(d)
    with open(os.path.join(d, "config.xml"), "w") as f:
        f.write("""<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>{tcp}</tcp_port>
  <http_port>{http}</http_port>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/schema/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
</yandex>
""".format(d=d, tcp=tcp, http=http))
    with open(os.path.join(d, "users.xml"), "w") as f:
        f.write("""<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
""")
    server = subprocess.Popen([SERVER, "--config-file=" + os.path.join(d, "config.xml")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=d)
    for _ in range(300):
        r = subprocess.run([CLIENT, "--port", str(tcp), "--query", "SELECT 1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode == 0:
            return server, tcp
        if server.poll() is not None:
            break
        time.sleep(0.1)
    server.kill()
    server.wait()
    raise RuntimeError("clickhouse-server did not start: %s" % open(os.path.join(d, "error.log")).read()[-500:]
                       if os.path.exists(os.path.join(d, "error.log")) else "no log")


def query(port, sql, data=None):
    r = subprocess.run([CLIENT, "--port", str(port), "--query", sql], input=data,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (sql, r.stderr.decode()[:400]))
    return [line.split("\t") for line in r.stdout.decode().splitlines()]


def count_events(eventcnv, log):
    """eventcnv --count's events, summed over its lines (count NAME)"""
    out = subprocess.run([eventcnv, "--count", log], stdout=subprocess.PIPE).stdout.decode()
    return sum(int(line.split()[0]) for line in out.splitlines() if line.strip())


def jsonl(eventcnv, log):
    r = subprocess.run([eventcnv, "--format", "jsonl", log], stdout=subprocess.PIPE)
    return [json.loads(line) for line in r.stdout.decode().splitlines()]


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: tests/clickhouse.py CONFIG\n")
        return 2
    if not os.path.exists(SERVER) or not os.path.exists(CLIENT):
        print("skip clickhouse: no clickhouse-server (Debian's: .ci/install)")
        return 77
    config = os.path.abspath(sys.argv[1])
    eventcnv = os.path.join(config, "eventcnv")
    tmp = tempfile.mkdtemp(prefix="clickhouse-test.")
    server = None
    try:
        server, port = start_server(tmp)
        cases(eventcnv, config, tmp, port)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


def cases(eventcnv, config, tmp, port):
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    logs = []   # (host, log)
    for host in ("alpha", "beta"):
        log = os.path.join(tmp, "pool-%s.log" % host)
        subprocess.run([os.path.join(config, "examples", "pool")], env=dict(os.environ, TELLTALE_FILE=log),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        logs.append((host, log))
    ls = os.path.join(tmp, "ls.log")
    subprocess.run(["ls", "/"], env=dict(os.environ, TELLTALE_FILE=ls,
                                         LD_PRELOAD=os.path.join(top, "build", "libtelltale-malloc.so")),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    logs.append(("beta", ls))

    ddl = subprocess.run([eventcnv, "--format", "clickhouse-ddl", logs[0][1]], stdout=subprocess.PIPE)
    why = None
    for statement in ddl.stdout.decode().split(";"):
        if statement.strip():
            try:
                query(port, statement)
            except RuntimeError as e:
                why = str(e)
    result("clickhouse-ddl", why or (ddl.returncode != 0 and "exit %d" % ddl.returncode))

    why = None
    for host, log in logs:
        rows = subprocess.run([eventcnv, "--format", "clickhouse", log], stdout=subprocess.PIPE,
                              env=dict(os.environ, TELLTALE_HOST=host))
        try:
            query(port, "INSERT INTO telltale.event FORMAT TabSeparated", rows.stdout)
        except RuntimeError as e:
            why = str(e)
    result("clickhouse-load", why)

    want, events = {}, {}
    for host, log in logs:
        ev = jsonl(eventcnv, log)
        events[(host, log)] = ev
        reg = subprocess.run([eventcnv, "--list", log], stdout=subprocess.PIPE).stdout.decode()
        registry = reg.split('registry "', 1)[1].split('"')[0] if 'registry "' in reg else "?"
        count = str(count_events(eventcnv, log))
        want[(host, str(ev[0]["pid"]), ev[0]["program"])] = (registry, count)
    got = {(h, p, prog): (reg, n) for h, p, prog, reg, n in
           query(port, "SELECT host, pid, program, registry, count() FROM telltale.event"
                       " GROUP BY host, pid, program, registry")}
    result("clickhouse-who", None if got == want and len(got) == 3 else "got %r, want %r" % (got, want))

    why = None
    for host, log in logs[:2]:
        pid = events[(host, log)][0]["pid"]
        db = os.path.join(tmp, "%s.db" % host)
        subprocess.run([eventcnv, "--format", "sqlite", "-o", db, log], check=True)
        want_sizes = sorted(sqlite3.connect(db).execute("SELECT size, count(*) FROM PoolAlloc GROUP BY size"))
        got_sizes = sorted((int(s), int(n)) for s, n in query(
            port, "SELECT visitParamExtractUInt(fields, 'size') AS size, count() FROM telltale.event"
                  " WHERE host = '%s' AND pid = %d AND event = 'PoolAlloc' GROUP BY size" % (host, pid)))
        if not want_sizes or got_sizes != want_sizes:
            why = "%s: sizes %r, want %r" % (host, got_sizes, want_sizes)
    for (host, log), ev in events.items():
        pid = ev[0]["pid"]
        want_threads = {}
        for e in ev:
            k = (str(e["thread"]), e["thread_name"] or "\\N")
            want_threads[k] = want_threads.get(k, 0) + 1
        got_threads = {(t, name): int(n) for t, name, n in query(
            port, "SELECT thread, anyLast(thread_name), count() FROM telltale.event WHERE host = '%s'"
                  " AND pid = %d GROUP BY thread, thread_name" % (host, pid))}
        got_t = {}
        for (t, name), n in got_threads.items():
            got_t[(t, name)] = got_t.get((t, name), 0) + n
        if got_t != want_threads:
            why = "%s %d: threads %r, want %r" % (host, pid, got_t, want_threads)
        span = query(port, "SELECT min(time_ns), max(time_ns) FROM telltale.event WHERE host = '%s'"
                           " AND pid = %d" % (host, pid))
        want_span = [str(min(e["time_ns"] for e in ev)), str(max(e["time_ns"] for e in ev))]
        if span[0] != want_span:
            why = "%s %d: times %r, want %r" % (host, pid, span[0], want_span)
    result("clickhouse-query", why)

    bench = os.path.join(config, "bench", "bench")
    if not os.path.exists(bench):
        subprocess.run(["ninja", "-C", top, os.path.relpath(bench, top)], stdout=subprocess.PIPE)
    big = os.path.join(tmp, "big.log")
    subprocess.run([bench, "--case", "enabled", "--count", "1000000", "--file", big],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    n = count_events(eventcnv, big)
    t0 = time.monotonic()
    conv = subprocess.Popen([eventcnv, "--format", "clickhouse", big], stdout=subprocess.PIPE)
    load = subprocess.run([CLIENT, "--port", str(port), "--query",
                           "INSERT INTO telltale.event FORMAT TabSeparated"], stdin=conv.stdout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    conv.stdout.close()
    conv.wait()
    seconds = time.monotonic() - t0
    got = query(port, "SELECT count() FROM telltale.event WHERE program = 'bench'")
    print("clickhouse-rate: %d events in %.2f s, %.2f M events/s" % (n, seconds, n / seconds / 1e6))
    result("clickhouse-rate", None if load.returncode == 0 and got == [[str(n)]] and n >= 1000000
           else "exit %d, %r rows of %d: %r" % (load.returncode, got, n, load.stderr[:300]))


if __name__ == "__main__":
    sys.exit(main())
