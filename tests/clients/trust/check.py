#!/usr/bin/env python3
"""tests/clients/trust/check.py -- compare a trust client's log with its counts

.design: design/tests.txt .test.trust

Usage: check.py EVENTCNV LOG COUNTS MODE PROMISE [STDERR [EVENTS]]

Reads LOG with EVENTCNV (which recovers LOG.live when it is there) and
the counts the client kept outside telltale (tests/clients/trust/client.c), and
checks, for every worker: its Step events are seq 0, 1, 2, ... once
each, in order and whole (the check field), and

  exact   as many as it counted, or one more (an event committed but
          not yet counted when the process died); with EventsDropped
          in the log, the events and the drops add up so;
  prefix  at most one more than it counted (events may be lost only
          at the end, as the design says for this case), and a log
          that lost any must not say "end clean";
  finish  at least what it had counted before EventFinish.

Handled events (mode signal) are checked the same way.  A log made
whole from its live file must not say in its header that every block
was checked.  With STDERR,
the traceback is checked too: it is in time order, names its threads,
shows the worker that failed, says the moment of the failure ("up to
the failure at ELAPSED"), which is no earlier than the Fault event the
worker emitted just before it failed, and shows no event stamped after
that moment, however the machine scheduled the threads.  In segv-slow
the moment is the fault's first coming, before the program's handler
slept 50 ms: within 20 ms of the Fault event.
Prints what it found; exits 1 on any failure.
"""

import decimal
import re
import struct
import subprocess
import sys

LINE = re.compile(r'^\s*(-?\d+\.\d{9}) (\S+) (T\d+)\s+(\S+)\s+(\S+)\s*(.*)$')
FIELD = re.compile(r'(\w+)=(\S+)')
MASK = 0xFFFFFFFF


def check_hash(worker, seq):
    z = ((worker << 40 ^ seq) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) & MASK


def events(lines):
    for line in lines:
        m = LINE.match(line)
        if m:
            yield (float(m.group(1)), m.group(3), m.group(5),
                   dict(FIELD.findall(m.group(6))))


def main():
    eventcnv, log, countsPath, mode, promise = sys.argv[1:6]
    stderrPath = sys.argv[6] if len(sys.argv) > 6 else None
    raw = open(countsPath, 'rb').read()
    steps = struct.unpack_from('8Q', raw, 0)
    handled = struct.unpack_from('8Q', raw, 64)
    atFinish = struct.unpack_from('8Q', raw, 128)
    run = subprocess.run([eventcnv, log], capture_output=True, text=True)
    header = subprocess.run([eventcnv, '--header', log], capture_output=True, text=True).stdout
    clean = re.search(r'^end\s+clean', header, re.M) is not None
    failures = []
    seqs = {}
    sigs = {}
    dropped = 0
    for _, _, name, f in events(run.stdout.splitlines()):
        if name == 'Step':
            w, seq = int(f['worker']), int(f['seq'])
            if int(f['check']) != check_hash(w, seq):
                failures.append('worker %d seq %d is torn' % (w, seq))
            seqs.setdefault(w, []).append(seq)
        elif name == 'Handled':
            sigs.setdefault(int(f['worker']), []).append(int(f['seq']))
        elif name == 'EventsDropped':
            dropped += int(f['count'])
    workers = [w for w in range(8) if steps[w] > 0 or w in seqs]
    if mode == 'fork':                  # the child's steps are in its own log
        workers = [w for w in workers if w != 7]
    elif mode == 'fork-child':
        workers = [7]
    lost = 0
    for label, got, counted in ([('worker %d' % w, seqs.get(w, []), steps[w]) for w in workers] +
                                [('handler on worker %d' % w, sigs.get(w, []), handled[w])
                                 for w in range(8) if handled[w] > 0 or w in sigs]):
        n = len(got)
        if dropped == 0:
            if got != list(range(n)):
                bad = next(i for i, s in enumerate(got) if s != i)
                failures.append('%s: seq %d where %d was due (of %d)' % (label, got[bad], bad, n))
        elif got != sorted(set(got)):
            failures.append('%s: out of order or repeated' % label)
        print('%s: counted %d, logged %d' % (label, counted, n))
        if n > counted + 1:
            failures.append('%s: %d logged, only %d emitted' % (label, n, counted))
        if promise == 'exact' and dropped == 0 and n < counted:
            failures.append('%s: %d emitted, %d logged: %d lost' % (label, counted, n, counted - n))
        if n < counted:
            lost += counted - n
        if promise == 'finish' and label.startswith('worker'):
            w = int(label.split()[1])
            if n < atFinish[w]:
                failures.append('%s: %d counted before EventFinish, %d logged' % (label, atFinish[w], n))
    if dropped:
        total = sum(len(v) for v in seqs.values())
        counted = sum(steps[w] for w in workers)
        print('dropped (EventsDropped): %d' % dropped)
        if not (counted <= total + dropped <= counted + len(workers)):
            failures.append('%d emitted, %d logged + %d dropped' % (counted, total, dropped))
    # A loss that EventsDropped counted is said; any other is not clean.
    if lost > dropped and clean and promise != 'finish':
        failures.append('the log lost %d events (%d of them counted as dropped) but says '
                        '"end clean"' % (lost, dropped))
    # Blocks recovered from a live file carry no check: the header must
    # not say that every block was checked (.sol.recover).
    blocksLine = re.search(r'^blocks\s+(.*)$', header, re.M)
    if (re.search(r'[1-9][0-9]* of them from \S+\.live', run.stderr) and blocksLine
            and 'every one checked' in blocksLine.group(1)):
        failures.append('the header says "%s" of a log recovered from its live file'
                        % blocksLine.group(1))
    if promise == 'exact' and run.returncode != 0:
        failures.append('eventcnv exit %d: %s' % (run.returncode, run.stderr.strip()[:300]))
    if stderrPath:
        failures += traceback(open(stderrPath, errors='replace').read(), mode,
                              int(sys.argv[7]) if len(sys.argv) > 7 else None)
    for f in failures:
        print('FAIL: ' + f)
    sys.exit(1 if failures else 0)


def traceback(text, mode, count):
    """the traceback on the client's stderr, cut at the failure it
    states; count events, if count is given"""
    failures = []
    lines = [l for l in text.splitlines() if LINE.match(l)]
    evs = list(events(lines))
    if not evs:
        return ['no traceback on stderr']
    if count is not None and len(evs) != count:
        failures.append('the traceback shows %d events, not %d' % (len(evs), count))
    times = [e[0] for e in evs]
    back = sum(1 for a, b in zip(times, times[1:]) if b < a)
    if back:
        failures.append('the traceback steps back in time %d times' % back)
    names = re.search(r'^telltale: threads: (.*)$', text, re.M)
    if names is None or 'worker-' not in names.group(1):
        failures.append('the traceback does not name the workers')
    # Both stamps are the runtime's own, at ns, by one rule (.sol.clock):
    # compared exactly, with no allowance for skew.
    at = re.search(r'^telltale: \(seconds since start.*\), up to the failure at (\d+\.\d{9}) ',
                   text, re.M)
    if at is None:
        failures.append('the traceback does not say the moment of the failure')
        return failures
    failure = decimal.Decimal(at.group(1))
    late = [e for e in lines if decimal.Decimal(LINE.match(e).group(1)) > failure]
    if late:
        failures.append('%d events in the traceback are stamped after the failure at %s: %s'
                        % (len(late), failure, late[0].strip()))
    fault = [e for e in evs if e[2] == 'Fault']
    if fault:
        if decimal.Decimal('%.9f' % fault[-1][0]) > failure:
            failures.append('the Fault event is after the failure at %s' % failure)
        if mode == 'segv-slow' and float(failure) > fault[-1][0] + 0.02:
            failures.append('the failure at %s is %.3f s after the Fault event: not the first '
                            'coming (the program\'s handler sleeps 50 ms)'
                            % (failure, float(failure) - fault[-1][0]))
        failed = fault[-1][1]
        if failed not in {e[1] for e in evs if e[2] == 'Step'}:
            failures.append('the traceback has none of the failing thread\'s steps')
    print('traceback: %d events, %d threads' % (len(evs), len({e[1] for e in evs})))
    return failures


main()
