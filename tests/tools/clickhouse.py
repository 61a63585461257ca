#!/usr/bin/env python3
# tests/tools/clickhouse.py -- eventcnv --format clickhouse into a real ClickHouse
#
# .design: design/export.txt .export.clickhouse .export.clickhouse.cluster
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
# Then the man page's cluster recipe, as it says it: two more servers, A
# and B, each a shard of a cluster two_shards (config.xml's
# remote_servers), each with telltale.event and the man page's
# Distributed table telltale.event_all over the two; the logs of four or
# more processes (the pool example and a recorded ls, hosts alpha and
# beta) inserted through A's event_all, waiting for the shards
# (insert_distributed_sync=1).
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
#   clickhouse-cluster-ddl    on A and B, --format clickhouse-ddl and the
#                      man page's CREATE TABLE telltale.event_all (CLUSTER
#                      named); system.clusters lists the two shards
#   clickhouse-cluster-load   TabSeparated and Native by turns; each shard
#                      holds two processes or more, each process on one
#                      shard, the one cityHash64(host, pid) names; the
#                      shards' rows sum to eventcnv --count's, as does
#                      count() through event_all on A and on B.  Rows
#                      queued a second time wait 10 minutes (LATE): an
#                      INSERT that did not wait for the shards fails this
#   clickhouse-cluster-who    clickhouse-who's counts through event_all,
#                      on A and on B
#   clickhouse-cluster-query  the README's SQLite query through event_all,
#                      on A and on B: per pool process, and over them all
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


def free_ports(n):
    """n distinct ports free on 127.0.0.1 (each held until all are found)"""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def start_server(tmp, name="ch", ports=None, extra="", profile=""):
    """A clickhouse-server of its own in tmp/name, on ports (TCP, HTTP),
    else two free ones; extra goes in its config.xml, profile in its
    users' settings."""
    tcp, http = ports or free_ports(2)
    d = os.path.join(tmp, name)
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
{extra}</yandex>
""".format(d=d, tcp=tcp, http=http, extra=extra))
    with open(os.path.join(d, "users.xml"), "w") as f:
        f.write("""<?xml version="1.0"?>
<yandex>
  <profiles><default>{profile}</default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
""".format(profile=profile))
    server = subprocess.Popen([SERVER, "--config-file=" + os.path.join(d, "config.xml")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=d)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        r = subprocess.run([CLIENT, "--port", str(tcp), "--query", "SELECT 1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode == 0:
            return server, tcp
        if server.poll() is not None:
            break
        time.sleep(0.1)
    stop(server)
    raise RuntimeError("clickhouse-server did not start: %s" % open(os.path.join(d, "error.log")).read()[-500:]
                       if os.path.exists(os.path.join(d, "error.log")) else "no log")


def stop(server):
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def query(port, sql, data=None, settings=()):
    r = subprocess.run([CLIENT, "--port", str(port)] + list(settings) + ["--query", sql], input=data,
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


def who(eventcnv, logs):
    """Events per (host, pid, program, registry, kind) as jsonl gives them
    (the pool example's Telltale kind in registry telltale, its others in
    "pool example"; a recorder's all in "telltale malloc"), each log's
    events by (host, log), and why, if jsonl and --count differ."""
    want, events, why = {}, {}, None
    for host, log in logs:
        ev = jsonl(eventcnv, log)
        events[(host, log)] = ev
        own = "pool example" if ev[0]["program"] == "pool" else "telltale malloc"
        for e in ev:
            registry = "telltale" if own == "pool example" and e["kind"] == "Telltale" else own
            k = (host, str(e["pid"]), e["program"], registry, e["kind"])
            want[k] = want.get(k, 0) + 1
        if sum(n for k, n in want.items() if k[:2] == (host, str(ev[0]["pid"]))) \
                != count_events(eventcnv, log):
            why = "jsonl and --count differ for %s" % log
    return want, events, why


def who_got(port, table):
    return {tuple(r[:5]): int(r[5]) for r in
            query(port, "SELECT host, pid, program, registry, kind, count() FROM telltale.%s"
                        " GROUP BY host, pid, program, registry, kind" % table)}


def sqlite_sizes(eventcnv, log):
    """The README's SQLite query on log's SQLite export: PoolAlloc's sizes"""
    db = log + ".db"
    if not os.path.exists(db):
        subprocess.run([eventcnv, "--format", "sqlite", "-o", db, log], check=True)
    return sorted(sqlite3.connect(db).execute("SELECT size, count(*) FROM PoolAlloc GROUP BY size"))


def sizes(port, table, where):
    """The same query in ClickHouse (the man page's), on table's rows where"""
    return sorted((int(s), int(n)) for s, n in query(
        port, "SELECT visitParamExtractUInt(fields, 'size') AS size, count() FROM telltale.%s"
              " WHERE %s AND event = 'PoolAlloc' GROUP BY size" % (table, where)))


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
        stop(server)
        server = None
        cluster(eventcnv, config, tmp)
    finally:
        if server is not None:
            stop(server)
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
    # With the control thread, whose ClockRate lets --follow ship rows a
    # second after the start (.eventcnv.follow.time), and long enough that
    # they reach the table before its end.
    prog = follow_child.start(py, recorder, "long", {"TELLTALE_CTL": "1"})
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
        # Times shipped before the stream's ClockRate, once --follow
        # stops waiting for it, are reckoned at the rate known then, and
        # --follow says by how much they may differ
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

    want, events, why = who(eventcnv, logs)
    got = who_got(port, "event")
    result("clickhouse-who", why or (None if got == want and len({k[:3] for k in got}) == 3
           and {k[3] for k in got} == {"telltale", "pool example", "telltale malloc"}
           else "got %r, want %r" % (got, want)))

    why = None
    for host, log in logs[:1]:
        pid = events[(host, log)][0]["pid"]
        want_sizes = sqlite_sizes(eventcnv, log)
        got_sizes = sizes(port, "event", "host = '%s' AND pid = %d" % (host, pid))
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

    # bench/run's ClickHouse rows, from bench/clickhouse.py on the same log
    # (it starts a server of its own): a line for each format's load.
    run = subprocess.run([sys.executable, os.path.join(top, "bench", "clickhouse.py"), eventcnv, big,
                          str(n)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = run.stdout.decode(errors="replace")
    loads = [line for line in out.splitlines() if line.startswith("ClickHouse load, ")]
    result("clickhouse-bench", None if run.returncode == 0 and len(loads) == 2
           else "exit %d, %d load lines: %s" % (run.returncode, len(loads), out[-300:]))


# The cluster: two servers, A and B, each a shard of cluster two_shards.
SHARDS = """  <remote_servers><two_shards>
    <shard><replica><host>127.0.0.1</host><port>{a}</port></replica></shard>
    <shard><replica><host>127.0.0.1</host><port>{b}</port></replica></shard>
  </two_shards></remote_servers>
"""
# Without it, an INSERT into a Distributed table returns once its rows are
# queued on the server it was sent to, which sends them on later (18.16
# has no SYSTEM FLUSH DISTRIBUTED); with it, once every shard has them.
SYNC = ["--insert_distributed_sync=1"]
# A server looks for queued rows to send on when it first queues some,
# then every 10 minutes (by default every 100 ms): so an INSERT that did
# not wait for the shards fails the test every time, not only when the
# machine is slow.
LATE = "<distributed_directory_monitor_sleep_time_ms>600000</distributed_directory_monitor_sleep_time_ms>"


def recipe(top):
    """The man page's statement for the Distributed table, as it says it"""
    with open(os.path.join(top, "man", "eventcnv.1")) as f:
        text = re.sub(r"\\f[BIRP]", "", f.read()).replace("\\-", "-")
    m = re.search(r"CREATE TABLE\s+telltale\.event_all\s.*?\)\)", text, re.S)
    return m and re.sub(r"\s+", " ", m.group(0))


def cluster(eventcnv, config, tmp):
    """A and B started (ports free, then taken: another may take one
    between, so three tries), the cases run, both stopped whatever
    happens."""
    servers, ports, why = [], None, None
    try:
        for attempt in range(3):
            a, b, http_a, http_b = free_ports(4)
            try:
                for name, port, http in (("ch-a", a, http_a), ("ch-b", b, http_b)):
                    servers.append(start_server(os.path.join(tmp, "%d" % attempt), name, (port, http),
                                                SHARDS.format(a=a, b=b), LATE)[0])
                ports = a, b
                break
            except RuntimeError as e:
                why = str(e)
                while servers:
                    stop(servers.pop())
        if ports is None:
            result("clickhouse-cluster-ddl", "servers did not start: %s" % why)
            return
        cluster_cases(eventcnv, config, tmp, *ports)
    finally:
        for server in servers:
            stop(server)


def cluster_cases(eventcnv, config, tmp, a, b):
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    recorder = os.path.join(top, "build", "libtelltale-malloc.so")
    n = [0]

    def process(host):
        """A log of a process: the pool example, then a recorded ls, by turns"""
        n[0] += 1
        log = os.path.join(tmp, "cluster-%d.log" % n[0])
        if n[0] % 2:
            cmd, env = [os.path.join(config, "examples", "pool")], {}
        else:
            cmd, env = ["ls", "/"], {"LD_PRELOAD": recorder}
        subprocess.run(cmd, env=dict(os.environ, TELLTALE_FILE=log, **env),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return host, log

    why = None
    statement = recipe(top)
    if not statement or "Distributed(CLUSTER," not in statement:
        why = "no Distributed(CLUSTER, ...) recipe in man/eventcnv.1: %r" % statement
    else:
        statement = statement.replace("Distributed(CLUSTER,", "Distributed(two_shards,")
        first = process("alpha")
        ddl = subprocess.run([eventcnv, "--format", "clickhouse-ddl", first[1]], stdout=subprocess.PIPE)
        try:
            for port in a, b:
                for sql in ddl.stdout.decode().split(";") + [statement]:
                    if sql.strip():
                        query(port, sql)
                shards = query(port, "SELECT shard_num, port, is_local FROM system.clusters"
                                     " WHERE cluster = 'two_shards' ORDER BY shard_num")
                if shards != [["1", str(a), str(int(port == a))], ["2", str(b), str(int(port == b))]]:
                    why = "%d: cluster two_shards is %r" % (port, shards)
        except RuntimeError as e:
            why = str(e)
        why = why or (ddl.returncode != 0 and "exit %d" % ddl.returncode)
    result("clickhouse-cluster-ddl", why, statement)
    if why:
        return

    # Processes of hosts alpha and beta, each host the pool example's and
    # ls's, through event_all on A, TabSeparated and Native by turns: four,
    # then more until each shard has two (a process's rows all go to one
    # shard; one in 300,000 that 24 are not enough).  B's second is one
    # that LATE would hold back, had the INSERT not waited.
    logs, why, local, procs = [first], None, [0, 0], [0, 0]
    while True:
        host, log = logs[-1]
        fmt, name = [("clickhouse", "TabSeparated"), ("clickhouse-native", "Native")][len(logs) % 2]
        rows = subprocess.run([eventcnv, "--format", fmt, log], stdout=subprocess.PIPE,
                              env=dict(os.environ, TELLTALE_HOST=host))
        try:
            query(a, "INSERT INTO telltale.event_all FORMAT %s" % name, rows.stdout, SYNC)
        except RuntimeError as e:
            why = str(e)
            break
        shards = [query(port, "SELECT count(), uniqExact(host, pid) FROM telltale.event")[0]
                  for port in (a, b)]
        local, procs = [int(r[0]) for r in shards], [int(r[1]) for r in shards]
        if (len(logs) >= 4 and min(procs) >= 2) or len(logs) == 24:
            break
        logs.append(process(["alpha", "beta", "beta", "alpha"][len(logs) % 4]))
    total = sum(count_events(eventcnv, log) for host, log in logs)
    if not why:
        through = [int(query(port, "SELECT count() FROM telltale.event_all")[0][0]) for port in (a, b)]
        if min(procs) < 2 or sum(local) != total or through != [total, total]:
            why = "%d processes: %r on the shards, %r rows, %r through event_all, want %d" % (
                len(logs), procs, local, through, total)
    if not why:
        # Each process's rows on the shard cityHash64(host, pid) names.
        seen = {}
        for shard, port in enumerate((a, b)):
            for host, pid, slot, _ in query(port, "SELECT host, pid, cityHash64(host, pid) % 2, count()"
                                                  " FROM telltale.event GROUP BY host, pid"):
                seen.setdefault((host, pid), []).append(shard)
                if int(slot) != shard:
                    why = "%s %s: on shard %d, cityHash64 %% 2 = %s" % (host, pid, shard + 1, slot)
        if len(seen) != len(logs) or any(len(v) != 1 for v in seen.values()):
            why = "processes on the shards: %r, want %d, each on one" % (seen, len(logs))
    result("clickhouse-cluster-load", why, "%r processes, %r rows on the shards" % (procs, local))

    want, events, why = who(eventcnv, logs)
    for port in a, b:
        got = who_got(port, "event_all")
        if got != want or {k[0] for k in got} != {"alpha", "beta"}:
            why = why or "through %d: got %r, want %r" % (port, got, want)
    result("clickhouse-cluster-who", why)

    why, whole = None, {}
    for (host, log), ev in events.items():
        if ev[0]["program"] != "pool":
            continue
        want_sizes = sqlite_sizes(eventcnv, log)
        for size, count in want_sizes:
            whole[size] = whole.get(size, 0) + count
        for port in a, b:
            got_sizes = sizes(port, "event_all", "host = '%s' AND pid = %d" % (host, ev[0]["pid"]))
            if not want_sizes or got_sizes != want_sizes:
                why = "%s %d through %d: sizes %r, want %r" % (host, ev[0]["pid"], port, got_sizes,
                                                                want_sizes)
    for port in a, b:
        got_sizes = sizes(port, "event_all", "1")
        if got_sizes != sorted(whole.items()):
            why = "all through %d: sizes %r, want %r" % (port, got_sizes, sorted(whole.items()))
    result("clickhouse-cluster-query", why)


if __name__ == "__main__":
    sys.exit(main())
