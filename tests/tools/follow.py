#!/usr/bin/env python3
# tests/tools/follow.py -- eventcnv --follow: the events as the log grows
#
# .design: design/tools.txt .eventcnv.follow
#
# Usage: tests/tools/follow.py CONFIG      e.g. python3 tests/tools/follow.py build
# CONFIG's eventcnv, examples/pool and tests/trust_client must be built.
#
# The example's real log is copied into the followed file a piece at a
# time: its header in two halves, then each block in two pieces, with a
# pause after each piece.
# Covers:
#   follow-early       the first events are printed before the log is whole
#   follow-lines       every line that eventcnv prints for the whole log,
#                      once each (each block's events when it is whole),
#                      but for labels that reached the file after the line
#   follow-end         eventcnv ends by itself, exit 0, at StreamEnd
#   follow-exec        a log that ended at an exec (tests/clients/trust/client.c
#                      exec): eventcnv ends by itself, exit 0, a look
#                      after StreamExec, having printed it (other
#                      threads' later blocks may follow it)
#   follow-exec-live   followed while it runs: a recorded shell that execs
#                      a recorded program, which moves the log aside as
#                      LOG.exec1 and writes its own: eventcnv prints every
#                      line of LOG.exec1 and ends, exit 0, whether the
#                      shell wrote blocks before the exec or none
#   follow-death       followed while it runs: a recorded sleep killed by
#                      SIGKILL (not waited for: a zombie), whose events are
#                      all in its live file: eventcnv ends by itself (the
#                      header's pid runs no more), printing every line,
#                      message and exit status that eventcnv gives the
#                      log without --follow
#   follow-kill9       followed while it runs: tests/lib/follow_child.py (under the malloc
#                      recorder, 4 KiB buffers, three threads) killed by
#                      SIGKILL after 1.5 s: eventcnv ends by itself with
#                      every line a later read prints, each thread's and
#                      kind's in the same order, the same times, message
#                      and exit status (no ClockRate: the recorder has no
#                      control thread)
#   follow-segv        the same, the program dying of its own SIGSEGV:
#                      eventcnv waited for the death's ClockRate, and
#                      prints the same times (.eventcnv.follow.time)
#   follow-rate        the same with the control thread, dying of SIGSEGV
#                      after 4 s: eventcnv printed while the program ran
#                      (the control thread sent ClockRate a second after
#                      the start), and the same times, for the death's
#                      ClockSync does not change the rate
#   follow-late        the program dying of SIGSEGV after 4 s, without the
#                      control thread: eventcnv stopped waiting for
#                      ClockRate and printed at the header's rate; the
#                      death's ClockRate changes the rate a later read
#                      takes, and eventcnv says by how much the times it
#                      printed differ, which is the largest difference
#                      found
#   follow-empty       an empty log no process holds (a child killed
#                      before its header): eventcnv ends by itself, saying
#                      what eventcnv says of it, exit 1
#   follow-insert      --follow --format clickhouse --insert COMMAND of an
#                      ended log: COMMAND (sh -c) gets the rows a plain
#                      export writes, TabSeparated and Native; one that fails (exit 3) loses its
#                      batch, said with the rows lost (the log's events),
#                      exit 1 (.export.clickhouse.follow)
#   follow-usage       --follow with two FILEs, with -, or with --format
#                      jsonl, and --insert without --follow: usage errors
#                      (exit 2)
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from results import result, summary  # noqa: E402
import follow_child  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "build", "gen", "core"))
import eventgen as wire  # noqa: E402  gen's wire format: design/registry.txt .gen.wire


def blocks(data):
    """The offsets of the stream's blocks (2.0 on), by gen's wire format."""
    pos = struct.unpack_from("<I", data, wire.STREAM_HEADER["header_length"][0])[0]
    out = []
    magic = wire.EVENT_BLOCK_MAGIC
    while pos + wire.EVENT_BLOCK_HEADER_LEN <= len(data) and data[pos:pos + len(magic)] == magic:
        out.append(pos)
        pos += struct.unpack_from("<I", data, pos + wire.BLOCK_HEADER["length"][0])[0]
    return out, pos


SAID = re.compile(rb"[^\n]*: times printed before the clock's rate reached the file \(its ClockRate\) "
                  rb"were reckoned at the rate known then; a read of the log now puts them up to "
                  rb"(\d+) ns (earlier|later)\n")


def sequences(out):
    """Each thread's and kind's lines, in order, as (elapsed ns, the rest)."""
    seqs = {}
    for line in out.decode().splitlines():
        f = line.split()
        seqs.setdefault((f[2], f[3]), []).append(
            (int(f[0].replace(".", "")), line.split(None, 2)[2]))
    return seqs


def dies(eventcnv, recorder, tmp, how):
    """A Python program followed while it runs, dying by SIGKILL or its own
    SIGSEGV: None if eventcnv ends by itself and prints what a later read
    prints, else why not."""
    log = os.path.join(tmp, how + ".log")
    prog = follow_child.start(log, recorder, {"kill9": "kill", "rate": "late"}.get(how, how),
                              {"TELLTALE_CTL": "1" if how == "rate" else "0"})
    began = time.monotonic()
    f = subprocess.Popen([eventcnv, "--follow", log], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    got = {"out": [], "first": None}

    def read():
        for line in f.stdout:
            if got["first"] is None:
                got["first"] = time.monotonic() - began
            got["out"].append(line)
    reader = threading.Thread(target=read)
    reader.start()
    if how == "kill9":
        time.sleep(1.5)
        prog.kill()
    ended = None
    try:
        prog.wait(timeout=60)
        ended = time.monotonic() - began
        f.wait(timeout=60)
    except subprocess.TimeoutExpired:
        f.kill()
        prog.kill()
        prog.wait()
        return "still following 60 s after the program died"
    finally:
        reader.join()
    out, err = b"".join(got["out"]), f.stderr.read()
    rc = prog.returncode
    if rc != (-9 if how == "kill9" else -11):
        return "the program ended with %d" % rc
    if how == "rate" and (got["first"] is None or got["first"] > ended - 0.5):
        return "nothing printed while the program ran (first line at %s s, its end at %.1f s)" % (
            got["first"], ended)
    plain = subprocess.run([eventcnv, log], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    said = SAID.search(err)
    rest = SAID.sub(b"", err)
    if (f.returncode, rest) != (plain.returncode, plain.stderr):
        return "exit %d, %r; a later read: exit %d, %r" % (f.returncode, err[:300],
                                                          plain.returncode, plain.stderr[:300])
    got, want = sequences(out), sequences(plain.stdout)
    if sorted(got) != sorted(want):
        return "threads and kinds %s; a later read %s" % (sorted(got), sorted(want))
    worst = 0
    for key in want:
        if [r for _, r in got[key]] != [r for _, r in want[key]]:
            return "%s: %d lines, a later read %d, or not in its order" % (
                key, len(got[key]), len(want[key]))
        for (a, _), (b, _) in zip(got[key], want[key]):
            if abs(a - b) > abs(worst):
                worst = a - b
    lines = sum(len(v) for v in want.values())
    if lines < 1000 or len(want) < 6:
        return "only %d lines in %d sequences" % (lines, len(want))
    if how != "late":   # printed at the rate a later read takes: the same times
        return None if worst == 0 and said is None else "times up to %d ns apart, said %r" % (
            worst, said and said.group(0))
    # Printed before the death's ClockRate: said, with the largest
    # difference (to 2 ns: each printed time is rounded down to a ns).
    if said is None:
        return "times up to %d ns apart, not said" % worst
    stated = int(said.group(1)) * (1 if said.group(2) == b"earlier" else -1)
    return None if worst != 0 and abs(stated - worst) <= 2 else (
        "said %d ns, found %d" % (stated, worst))


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: tests/tools/follow.py CONFIG\n")
        return 2
    config = os.path.abspath(sys.argv[1])
    eventcnv = os.path.join(config, "eventcnv")
    with tempfile.TemporaryDirectory(prefix="follow-test.") as tmp:
        log = os.path.join(tmp, "pool.log")
        subprocess.run([os.path.join(config, "examples", "pool")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=dict(os.environ, TELLTALE_FILE=log), check=True)
        data = open(log, "rb").read()
        want = subprocess.run([eventcnv, log], stdout=subprocess.PIPE).stdout.decode().splitlines()
        starts, end = blocks(data)
        if len(starts) < 2 or end != len(data):
            print("FAIL follow-setup: the example's log has %d blocks" % len(starts))
            return 1
        pieces = [data[:40], data[40:starts[0]]]
        for a, b in zip(starts, starts[1:] + [end]):
            mid = (a + b) // 2
            pieces += [data[a:mid], data[mid:b]]
        grown = os.path.join(tmp, "grown.log")
        open(grown, "wb").close()
        p = subprocess.Popen([eventcnv, "--follow", grown], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        got, first = [], []

        def read():
            for line in p.stdout:
                if not first:
                    first.append(time.monotonic())
                got.append(line.decode().rstrip("\n"))
        reader = threading.Thread(target=read)
        reader.start()
        with open(grown, "ab") as f:
            for piece in pieces:
                f.write(piece)
                f.flush()
                time.sleep(0.5)
        written = time.monotonic()
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = None
        reader.join()
        err = p.stderr.read().decode()
        result("follow-early", None if first and first[0] < written - 1.0
               else "the first line came %s" % ("never" if not first else
                                                "%.1f s before the log was whole" % (written - first[0])))
        # A label is shown once its Label event has reached the file: a
        # block written before it shows the address bare.
        unlabel = lambda lines: sorted(re.sub(r"(=0x[0-9a-f]+)\[[^]]*\]", r"\1", l) for l in lines)
        result("follow-lines", None if unlabel(got) == unlabel(want)
               else "%d lines, want %d; first missing %r, first extra %r" % (
                   len(got), len(want), [l for l in want if l not in got][:1],
                   [l for l in got if l not in want][:1]))
        result("follow-end", None if rc == 0 else "exit %r: %s" % (rc, err[:300]))
        execLog = os.path.join(tmp, "t.log")
        subprocess.run([os.path.join(config, "tests", "trust_client"), "exec"], cwd=tmp,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=dict(os.environ, TELLTALE_FILE=execLog, TRUST_COUNTS="counts"))
        try:
            r = subprocess.run([eventcnv, "--follow", execLog], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            lines = r.stdout.decode().splitlines()
            why = (None if r.returncode == 0
                   and any(" StreamExec " in l and "error=0" in l for l in lines)
                   else "exit %d, %d lines: %r" % (r.returncode, len(lines), r.stderr[:200]))
        except subprocess.TimeoutExpired:
            why = "still following 30 s after the exec"
        result("follow-exec", why)
        # Followed while it runs: a recorded shell that execs a recorded
        # program, which moves the log aside (LOG.exec1) and writes its
        # own at the path.  eventcnv follows the file it opened to its
        # StreamExec, whether the shell wrote blocks before the exec
        # (4 KiB buffers) or none (the recorder's 1 MiB).
        recorder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "build", "libtelltale-malloc.so")
        for name, env in (("follow-exec-live", {"TELLTALE_BUFFER": "4096"}),
                          ("follow-exec-live (one buffer)", {})):
            liveLog = os.path.join(tmp, "x%d.log" % len(env))
            prog = subprocess.Popen(
                ["bash", "-c", 'sleep 0.3; for i in $(seq 3000); do x="$x$i"; done; exec /bin/true'],
                env=dict(os.environ, TELLTALE_FILE=liveLog, LD_PRELOAD=recorder, **env))
            for _ in range(500):
                if os.path.exists(liveLog):
                    break
                time.sleep(0.01)
            try:
                r = subprocess.run([eventcnv, "--follow", liveLog], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=30)
                prog.wait()
                lines = r.stdout.decode().splitlines()
                whole = subprocess.run([eventcnv, liveLog + ".exec1"], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE).stdout.decode().splitlines()
                why = (None if r.returncode == 0 and len(whole) > 3000 and len(lines) == len(whole)
                       and any(" StreamExec " in l and "error=0" in l for l in lines)
                       else "exit %d, %d lines of the %d in LOG.exec1: %r" % (
                           r.returncode, len(lines), len(whole), r.stderr[:200]))
            except subprocess.TimeoutExpired:
                prog.wait()
                why = "still following 30 s after it started"
            result(name, why)
        # Killed while followed: no StreamEnd, and every event in the
        # live file (the recorder's 1 MiB buffers are never full).
        deathLog = os.path.join(tmp, "death.log")
        prog = subprocess.Popen(["sleep", "60"], env=dict(os.environ, TELLTALE_FILE=deathLog,
                                                           LD_PRELOAD=recorder))
        follow_child.wait_for(deathLog)
        f = subprocess.Popen([eventcnv, "--follow", deathLog], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        time.sleep(0.5)
        prog.kill()
        try:
            out, err = f.communicate(timeout=20)
            plain = subprocess.run([eventcnv, deathLog], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
            why = (None if (f.returncode, out, err) == (plain.returncode, plain.stdout, plain.stderr)
                   and plain.stdout.count(b"\n") > 10
                   else "exit %d, %d lines, %r; without --follow exit %d, %d lines, %r" % (
                       f.returncode, out.count(b"\n"), err[:200], plain.returncode,
                       plain.stdout.count(b"\n"), plain.stderr[:200]))
        except subprocess.TimeoutExpired:
            f.kill()
            f.communicate()
            why = "still following 20 s after the program was killed"
        prog.wait()
        result("follow-death", why)
        for how in ("kill9", "segv", "rate", "late"):
            result("follow-" + how, dies(eventcnv, recorder, tmp, how))
        empty = os.path.join(tmp, "empty.log.999999")
        open(empty, "wb").close()
        try:
            r = subprocess.run([eventcnv, "--follow", empty], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=20)
            why = (None if r.returncode == 1 and b"empty.log.999999: offset 0: empty file" in r.stderr
                   else "exit %d: %r" % (r.returncode, r.stderr[:200]))
        except subprocess.TimeoutExpired:
            why = "still following 20 s after it began"
        result("follow-empty", why)
        why = None
        for fmt in ("clickhouse-native", "clickhouse"):    # rows: the last, TabSeparated
            rows = subprocess.run([eventcnv, "--format", fmt, log], stdout=subprocess.PIPE).stdout
            shipped = os.path.join(tmp, "shipped." + fmt)
            ok = subprocess.run([eventcnv, "--follow", "--format", fmt, "--insert",
                                 "cat >'%s'" % shipped, log], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, timeout=60)
            if ok.returncode != 0 or ok.stdout or open(shipped, "rb").read() != rows or not rows:
                why = "%s: exit %d, %d bytes shipped of %d: %r" % (
                    fmt, ok.returncode, os.path.getsize(shipped), len(rows), ok.stderr[:200])
        bad = subprocess.run([eventcnv, "--follow", "--format", "clickhouse", "--insert",
                              "cat >/dev/null; exit 3", log], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=60)
        lost = b"exited 3: %d rows not shipped" % rows.count(b"\n")
        if bad.returncode != 1 or lost not in bad.stderr or b"rows were not shipped" not in bad.stderr:
            why = (why or "") + "; failing COMMAND: exit %d, %r" % (bad.returncode, bad.stderr[:300])
        result("follow-insert", why)
        why = None
        for args in (["--follow", log, log], ["--follow", "-"], ["--follow", "--format", "jsonl", log],
                     ["--insert", "true", "--format", "clickhouse", log]):
            r = subprocess.run([eventcnv] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, timeout=30)
            if r.returncode != 2 or b"--follow" not in r.stderr:
                why = "%r: exit %d: %r" % (args, r.returncode, r.stderr[:200])
        result("follow-usage", why)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
