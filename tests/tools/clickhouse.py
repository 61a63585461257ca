#!/usr/bin/env python3
# tests/tools/clickhouse.py -- eventcnv --format clickhouse into a real ClickHouse
#
# .design: design/export.txt .export.clickhouse
#
# Usage: tests/tools/clickhouse.py CONFIG      e.g. python3 tests/tools/clickhouse.py build
# CONFIG's eventcnv and examples/pool must be built, and build's
# libtelltale-malloc.so.  Needs Debian's clickhouse-server (.ci/install);
# without it, exits 77 (skipped).
#
# A clickhouse-server is started as an ordinary process with its own
# config in a temporary directory, on 127.0.0.1 and two free ports.  The
# logs of three processes go in one table: a run of the pool example
# (host alpha, by TELLTALE_HOST), a recorded ls (another registry, host
# beta), both loaded when they have ended, and a recorded Python program
# (host beta) shipped while it runs by eventcnv --follow --format
# clickhouse --insert.
# Covers:
#   clickhouse-ddl     --format clickhouse-ddl makes the database and table
#   clickhouse-load    the two ended logs load (clickhouse-client INSERT ...
#                      FORMAT TabSeparated), with no error
#   clickhouse-native  --format clickhouse-native (ClickHouse's Native
#                      format) of those two logs and of tests/lib/export.py's
#                      stream (control bytes, invalid UTF-8, words past
#                      2^63), INSERT ... FORMAT Native into a table of its
#                      own: every row as the TabSeparated rows give it
#   clickhouse-follow  the running program's rows are in the table before
#                      it ends (a batch a second); eventcnv ends with it,
#                      exit 0, having shipped each event once: the rows,
#                      but seq, are those of its log's export once ended
#   clickhouse-who     events per host, pid, program, registry and kind:
#                      each kind's count as eventcnv's jsonl gives it, the
#                      pool example's Telltale kind in registry telltale
#                      (a log of two registries: .reg.many) and its others
#                      in "pool example"; the recorder's all in its own
#   clickhouse-query   the README's SQLite query (sizes of PoolAlloc)
#                      gives the same answer as the SQLite export, per
#                      process; threads' events and names, and each
#                      log's first and last time_ns, as jsonl gives them
#   clickhouse-rate    1 M events of bench's log load; the rate is printed
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

import json
import re
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from results import result, summary  # noqa: E402
import follow_child  # noqa: E402

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
        sys.stderr.write("usage: tests/tools/clickhouse.py CONFIG\n")
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
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    recorder = os.path.join(top, "build", "libtelltale-malloc.so")
    logs = []   # (host, log)
    log = os.path.join(tmp, "pool-alpha.log")
    subprocess.run([os.path.join(config, "examples", "pool")], env=dict(os.environ, TELLTALE_FILE=log),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    logs.append(("alpha", log))
    ls = os.path.join(tmp, "ls.log")
    subprocess.run(["ls", "/"], env=dict(os.environ, TELLTALE_FILE=ls, LD_PRELOAD=recorder),
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

    why = None
    hard = os.path.join(tmp, "hard.tt")
    subprocess.run([sys.executable, os.path.join(top, "tests", "lib", "export.py"), "make", hard], check=True)
    query(port, "CREATE TABLE telltale.native AS telltale.event")
    query(port, "CREATE TABLE telltale.text AS telltale.event")
    for host, log in logs + [("gamma", hard)]:
        for fmt, table, name in (("clickhouse", "text", "TabSeparated"),
                                 ("clickhouse-native", "native", "Native")):
            rows = subprocess.run([eventcnv, "--format", fmt, log], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=dict(os.environ, TELLTALE_HOST=host))
            try:
                query(port, "INSERT INTO telltale.%s FORMAT %s" % (table, name), rows.stdout)
            except RuntimeError as e:
                why = str(e)
    if why is None:
        text = query(port, "SELECT * FROM telltale.text ORDER BY host, pid, seq")
        nat = query(port, "SELECT * FROM telltale.native ORDER BY host, pid, seq")
        if text != nat or len(text) < 300 or not any(r[0] == "gamma" for r in nat):
            why = "%d rows, TabSeparated's %d; first differing %r" % (
                len(nat), len(text), next(((a, b) for a, b in zip(nat, text) if a != b), None))
    result("clickhouse-native", why)

    # The third, shipped by --follow as it runs.
    py = os.path.join(tmp, "py.log")
    prog = follow_child.start(py, recorder, "end")
    followBound = {}
    insert = "%s --port %d --query 'INSERT INTO telltale.event FORMAT TabSeparated'" % (CLIENT, port)
    follow = subprocess.Popen([eventcnv, "--follow", "--format", "clickhouse", "--insert", insert, py],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=dict(os.environ, TELLTALE_HOST="beta"))
    early = 0
    while prog.poll() is None and early == 0:
        time.sleep(0.2)
        early = int(query(port, "SELECT count() FROM telltale.event WHERE host = 'beta'"
                                " AND program LIKE 'python%'")[0][0])
    running = prog.poll() is None
    prog.wait()
    try:
        out, err = follow.communicate(timeout=60)
        why = None if follow.returncode == 0 and not out else "exit %d, %r" % (follow.returncode,
                                                                               err[:300])
    except subprocess.TimeoutExpired:
        follow.kill()
        follow.communicate()
        why = "still following 60 s after the program ended"
    if not why and not (early > 0 and running):
        why = "no row in the table while the program ran (%d rows, running %s)" % (early, running)
    if not why:
        # Times shipped before the end's ClockSync are reckoned at the rate
        # known then, and --follow says by how much they may differ
        # (.eventcnv.follow.time): all else is the same.
        said = re.search(rb"puts them up to (\d+) ns", err)
        bound = int(said.group(1)) if said else 0
        pid = jsonl(eventcnv, py)[0]["pid"]

        def rows(table):
            return sorted((r[:5] + r[8:], int(r[6]), int(r[7])) for r in table)
        got = rows(query(port, "SELECT * FROM telltale.event WHERE host = 'beta' AND pid = %d"
                               " FORMAT TabSeparated" % pid))
        want = subprocess.run([eventcnv, "--format", "clickhouse", py], stdout=subprocess.PIPE,
                              env=dict(os.environ, TELLTALE_HOST="beta")).stdout.decode()
        want = rows(l.split("\t") for l in want.splitlines())
        seqs = [r[0] for r in query(port, "SELECT seq FROM telltale.event WHERE host = 'beta'"
                                          " AND pid = %d" % pid)]
        worst = max((max(abs(g[1] - w[1]), abs(g[2] - w[2])) for g, w in zip(got, want)), default=0)
        if [g[0] for g in got] != [w[0] for w in want] or len(want) < 1000 \
                or len(set(seqs)) != len(seqs) or worst > bound:
            why = "%d rows, want %d (%d seq values, %d distinct); times %d ns apart, said %d" % (
                len(got), len(want), len(seqs), len(set(seqs)), worst, bound)
        followBound[pid] = bound
    result("clickhouse-follow", why)
    logs.append(("beta", py))

    want, events = {}, {}
    for host, log in logs:
        ev = jsonl(eventcnv, log)
        events[(host, log)] = ev
        own = "pool example" if ev[0]["program"] == "pool" else "telltale malloc"
        for e in ev:
            registry = "telltale" if own == "pool example" and e["kind"] == "Telltale" else own
            k = (host, str(e["pid"]), e["program"], registry, e["kind"])
            want[k] = want.get(k, 0) + 1
        if sum(n for k, n in want.items() if k[1] == str(ev[0]["pid"])) != count_events(eventcnv, log):
            result("clickhouse-who", "jsonl and --count differ for %s" % log)
    got = {tuple(r[:5]): int(r[5]) for r in
           query(port, "SELECT host, pid, program, registry, kind, count() FROM telltale.event"
                       " GROUP BY host, pid, program, registry, kind")}
    result("clickhouse-who", None if got == want and len({k[:3] for k in got}) == 3
           and {k[3] for k in got} == {"telltale", "pool example", "telltale malloc"}
           else "got %r, want %r" % (got, want))

    why = None
    for host, log in logs[:1]:
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
        if any(abs(int(a) - int(b)) > followBound.get(pid, 0) for a, b in zip(span[0], want_span)):
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
