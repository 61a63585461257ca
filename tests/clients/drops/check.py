#!/usr/bin/env python3
"""tests/clients/drops/check.py -- drops under async,drop add up, however the program ends

.design: design/control.txt .sol.dropped design/tests.txt .test.drops

Usage: check.py CONFIG [REPEAT]      e.g. check.py build/san 2

Runs CONFIG/tests/drops_client (tests/clients/drops/client.c) in a fresh
directory per run, with TELLTALE_WRITER=async,drop and 4 KiB buffers,
ending in each of its ways (finish-*: EventFinish while the workers go
on into a second session, whose log must hold their events in order;
killed, those still in the first session's live regions may be
missing, since a thread leaves them only as it prepares its slots
again, .sol.live.session), kill and
fork-kill killed by SIGKILL at random moments, REPEAT runs of each
(default 3; kill 3*REPEAT), with the live file and without (TELLTALE_MAP
=off), no fork under ThreadSanitizer (it refuses a thread started after
a threaded fork).  Then per
kind (Work: Step; Side: Mark) checks that the events CONFIG/eventcnv
finds plus the drops it reports (--summary) are what the client
counted outside telltale: exactly, or, where a worker was cut between
its two counts, within one per such worker.  Each worker's events are
in order and its own; eventcnv's message on stderr gives the same
totals and splits them rightly into those EventsDropped reports and
those only the live file counts.  A forked child's log holds only the
child's events and drops.  With TELLTALE_MAP=off (no live file) the
drops since the last report may be missing, never counted twice.
Prints "ok NAME" or "FAIL NAME: why" per run, then "N passed, N failed".
"""

import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
import results  # noqa: E402
from results import result, summary  # noqa: E402

LINE = re.compile(r'^\s*-?\d+\.\d{9} \S+ (T\d+)\s+(\S+)\s+(\S+)\s*(.*)$')
FIELD = re.compile(r'(\w+)=(\S+)')
MSG = re.compile(r'the program dropped (\d+) events of kind (\w+) \((?:(\d+) by EventsDropped, '
                 r'(\d+) counted only in (\S+): it died before reporting them|EventsDropped)\)')
KINDS = {'Work': 'Step', 'Side': 'Mark'}


def counts(path):
    # none if killed before it made the file
    raw = open(path, 'rb').read() if os.path.exists(path) else b''
    raw += bytes(256 - len(raw))
    q = struct.unpack_from('32Q', raw, 0)
    return {'Work': (q[0:8], q[8:16]), 'Side': (q[16:24], q[24:32])}


def check(eventcnv, log, cnt, slots, bound):
    """What is wrong with log against the counts of the workers in
    slots, as a list; how many drops only the live file counted; how
    many events are neither found nor said dropped; and found + dropped
    by kind.  bound: exact (within the counts), mapoff (no live file:
    at most the counts, the drops all reported) or upper (at most the
    counts)"""
    totals = {}
    bad = []
    run = subprocess.run([eventcnv, log], capture_output=True, text=True)
    summ = subprocess.run([eventcnv, '--summary', log], capture_output=True, text=True)
    if run.returncode not in (0, 1) or summ.returncode not in (0, 1):
        bad.append('eventcnv exit %d/%d: %s' % (run.returncode, summ.returncode,
                                                 run.stderr.strip()[:300]))
    seqs = {}
    reported = {}
    for line in run.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        name, f = m.group(3), dict(FIELD.findall(m.group(4)))
        if name in ('Step', 'Mark'):
            seqs.setdefault((name, int(f['worker'])), []).append(int(f['seq']))
        elif name == 'EventsDropped':
            k = int(f['kind'])
            reported[k] = reported.get(k, 0) + int(f['count'])
    # --summary: "dropped N", then a line per kind that dropped
    m = re.search(r'^dropped\s+(\d+)\n((?:\s+\d+ \S+\n)*)', summ.stdout, re.M)
    if not m:
        return bad + ['no "dropped" line in --summary'], 0, 0, {}
    total = int(m.group(1))
    sdrop = {k: int(n) for n, k in re.findall(r'^\s+(\d+) (\S+)$', m.group(2), re.M)}
    if sum(sdrop.values()) != total:
        bad.append('summary: dropped %d, but its kinds add up to %d' % (total, sum(sdrop.values())))
    unrep = 0
    gap = 0
    msgs = {}
    for mm in MSG.finditer(run.stderr):
        if mm.group(2) in msgs:
            bad.append('stderr says kind %s twice' % mm.group(2))
        msgs[mm.group(2)] = mm
    # kind indexes: Work is the first client kind
    index = {'Telltale': 0}
    lst = subprocess.run([eventcnv, '--list', log], capture_output=True, text=True).stdout
    for i, k in re.findall(r'^kind (\d+) (\w+):', lst, re.M):
        index[k] = int(i)
    for kind, event in KINDS.items():
        started, done = cnt[kind]
        lo = sum(done[w] for w in slots)
        hi = sum(started[w] for w in slots)
        found = 0
        for w in range(8):
            s = seqs.get((event, w), [])
            if s and w not in slots:
                bad.append('%s of worker %d, which is not this log\'s' % (event, w))
            if any(b <= a for a, b in zip(s, s[1:])):
                bad.append('%s of worker %d out of order or twice' % (event, w))
            if s and s[-1] >= started[w]:
                bad.append('%s of worker %d: seq %d, but it started %d'
                           % (event, w, s[-1], started[w]))
            found += len(s)
        dropped = sdrop.get(kind, 0)
        rep = reported.get(index.get(kind, -1), 0)
        gap += lo - min(lo, found + dropped)
        if os.environ.get('DROPS_VERBOSE'):
            print('  %s %s: found %d + dropped %d (reported %d) = %d; emitted %d..%d'
                  % (os.path.basename(log), kind, found, dropped, rep, found + dropped, lo, hi))
        totals[kind] = found + dropped
        if bound == 'exact':
            if not lo <= found + dropped <= hi:
                bad.append('%s: %d found + %d dropped = %d, emitted %d..%d'
                           % (kind, found, dropped, found + dropped, lo, hi))
        else:
            if dropped != rep and bound == 'mapoff':
                bad.append('%s: without a live file, summary drops %d but EventsDropped %d'
                           % (kind, dropped, rep))
            if found + dropped > hi:
                bad.append('%s: %d found + %d dropped = %d, more than the %d emitted'
                           % (kind, found, dropped, found + dropped, hi))
        mm = msgs.get(kind)
        if dropped == 0:
            if mm:
                bad.append('%s: stderr says drops the summary lacks' % kind)
            continue
        if mm is None:
            bad.append('%s: %d dropped, stderr says nothing' % (kind, dropped))
            continue
        said = int(mm.group(1))
        if said != dropped:
            bad.append('%s: stderr says %d dropped, summary %d' % (kind, said, dropped))
        if mm.group(3) is not None:
            r, u = int(mm.group(3)), int(mm.group(4))
            if r != rep or r + u != said or u == 0:
                bad.append('%s: stderr says %d = %d reported + %d unreported; the log reports %d'
                           % (kind, said, r, u, rep))
            if mm.group(5) != log + '.live':
                bad.append('%s: stderr names %s' % (kind, mm.group(5)))
            unrep += u
        elif said != rep:
            bad.append('%s: stderr says %d, all by EventsDropped, but the log reports %d'
                       % (kind, said, rep))
    return bad, unrep, gap, totals


def main():
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    cfg = sys.argv[1].rstrip('/')
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    client = os.path.join(top, cfg, 'tests', 'drops_client')
    eventcnv = os.path.join(top, cfg, 'eventcnv')
    for f in (client, eventcnv):
        if not os.access(f, os.X_OK):
            result('setup', '%s is not built' % f)
            return summary()
    env = dict(os.environ, TELLTALE_WRITER='async,drop', TELLTALE_BUFFER='4096',
               TELLTALE_FILE='t.log', DROPS_COUNTS='counts',
               ASAN_OPTIONS='handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0',
               TSAN_OPTIONS='halt_on_error=1:report_thread_leaks=0:handle_segv=0:handle_sigbus=0'
                            ':handle_abort=0')
    # mode, expected status, kill after (s): None, or (lo, hi)
    modes = [('return', 0, None), ('labels', 0, None), ('return-racy', 0, None),
             ('exit-worker', 3, None), ('_exit', 4, None), ('abort', -6, None),
             ('segv', -11, None), ('flush-kill', -9, None), ('fork', 0, None),
             ('fork-kill', -9, (0.3, 0.6)), ('kill', -9, (0.0, 0.4))]
    # EventFinish while threads go on into a second session with a live
    # file: the second log holds their events in order (.sol.live.session).
    modes += [('finish-return', 0, None), ('finish-kill', -9, None)]
    tmp = tempfile.mkdtemp()
    stats = {}
    for mapping in ('on', 'off'):
        for mode, status, kill in modes:
            if mode.startswith('fork') and cfg.endswith('tsan'):
                continue            # TSan: no thread started after a threaded fork
            n = repeat * (3 if mode == 'kill' else 1)
            for i in range(n):
                name = '%s%s.%d' % (mode, '' if mapping == 'on' else '-mapoff', i)
                d = tempfile.mkdtemp(dir=tmp)
                e = dict(env)
                if mapping == 'off':
                    e['TELLTALE_MAP'] = 'off'
                p = subprocess.Popen([client, mode], cwd=d, env=e,
                                     stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(d, 'err'), 'w'))
                if kill:
                    time.sleep(random.uniform(*kill))
                    p.kill()
                try:
                    r = p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    r = p.wait()
                bad = []
                if r != status:
                    bad.append('exit %d, not %d: %s' % (r, status,
                               open(os.path.join(d, 'err')).read()[-300:]))
                err = open(os.path.join(d, 'err'), errors='replace').read()
                for sign in ('ThreadSanitizer', 'AddressSanitizer', 'runtime error:'):
                    if sign in err:
                        i = err.index(sign)
                        bad.append('the sanitizer: %s' % err[i:i + 300].replace('\n', ' '))
                log = os.path.join(d, 't.log')
                unrep = gap = 0
                cnt = counts(os.path.join(d, 'counts'))
                # (an event begun but not done when the kill came is never
                # in the log: a log still empty then has nothing to show)
                if os.path.exists(log) and (os.path.getsize(log) > 0 or any(cnt['Work'][1])):
                    bound = ('upper' if mode.startswith('finish') else
                             'exact' if mapping == 'on' else 'mapoff')
                    b, unrep, gap, totals = check(eventcnv, log, cnt, [1, 2, 3, 4], bound)
                    bad += b
                    if mode.startswith('finish') and not bad:
                        gap = 0
                        # the second session's log
                        b, u, g, t1 = check(eventcnv, log + '.2', cnt, [1, 2, 3, 4], bound)
                        bad += ['second session: ' + x for x in b]
                        unrep += u
                        for kind, (started, done) in cnt.items():
                            both = totals.get(kind, 0) + t1.get(kind, 0)
                            lo, hi = sum(done[1:5]), sum(started[1:5])
                            gap += lo - min(lo, both)
                            # killed, the second session's events in the
                            # first's regions are lost: at most, then
                            if both > hi or (mode == 'finish-return' and both < lo):
                                bad.append('%s: both sessions found + dropped %d, emitted '
                                           '%d..%d' % (kind, both, lo, hi))
                elif any(cnt['Work'][1]):
                    bad.append('no log, but events were emitted')
                if mode.startswith('fork') and not bad:
                    b, u, g, _ = check(eventcnv, log + '.child', cnt, [7],
                                       'exact' if mapping == 'on' else 'mapoff')
                    bad += ['child: ' + x for x in b]
                    unrep += u
                    gap += g
                s = stats.setdefault(name.split('.')[0], [0, 0, 0, 0])
                s[0] += 1
                s[1] += unrep
                s[2] += unrep > 0
                s[3] += gap
                if bad:
                    result(name, '%s (kept in %s)' % ('; '.join(bad), d))
                    shutil.copytree(d, d + '.kept')
                else:
                    result(name, None, 'unreported drops %d, unsaid %d' % (unrep, gap))
                shutil.rmtree(d)
    if results.failed == 0:
        shutil.rmtree(tmp)
    for k, (runs, unrep, withUnrep, gap) in sorted(stats.items()):
        print('# %-18s runs %2d, with unreported drops %2d, unreported in all %d, unsaid %d'
              % (k, runs, withUnrep, unrep, gap))
    return summary()


if __name__ == '__main__':
    sys.exit(main())
