#!/usr/bin/env python3
"""tests/clients/idioms/check.py -- compare the idioms programs' logs with their page

.design: design/tests.txt .test.trust design/plinth.txt .sol.death.limits

Usage:
  check.py EVENTCNV DIR [--logs GLOB] [--traceback STDERR [--slack S]] [--cut N]
           [--procs PATTERN STDERR]
  check.py EVENTCNV --multi BAD SOUND...

The first form reads every log in DIR (GLOB, default '*.log*', never a
live file) with EVENTCNV --format jsonl and --header, and the page the
programs kept (DIR/page, tests/clients/idioms/page.h), and checks:

  every event of a slot is whole: its name is the one its seq modulo 4
          gives, its check, number and string fields are those slot and
          seq make, and it is in the log of the process that owns the slot;
  every slot's events are in order within each log, and no event is in
          the logs twice;
  every event whose emitter returned (seq below done, not a hole a
          handler left by siglongjmp) is in some log: the counts are
          exact.  Nothing emitted may be dropped (no program uses
          async,drop or nests handlers), so a loss that EventsDropped
          reports is a failure too, named as reported; but the runtime
          counts an emission cut short (a hole a siglongjmp left, or one
          begun and not done at an asynchronous cancel) as dropped
          (.sol.signal.jump, .sol.cancel): up to that many may be said;
  no event is in a log that was never begun (seq at or above attempts);
          the one a thread was in when it died or was cancelled (seq done,
          when attempts is done + 1) may be there or not, and is noted:
          from outside, an event begun cannot be told from one about to
          be, as the count is stored next to the emitter, not in it;
  eventcnv exits 0 on every log: each is sound and complete, or made
          whole from its live file;

With --cut N (an asynchronous cancel of N threads, .sol.cancel): up to N
blocks a thread was writing when glibc's cancel struck inside the write
may be cut short, if eventcnv names each (exit 1), and the events lost
with them are only those the named blocks held.

With --traceback, the fatal signal's traceback on STDERR: it is there,
in time order, shows no event stamped after the moment of the failure
it states, and that moment is at most S seconds (default 0.1: the
thread may wait for a processor between its last frame and the fault)
after the recursing thread's deepest frame (the page's lastAliveNs, on
the log's clock through its header's monotonic start), and not before.

With --procs, each process's record of its own log (page.h
idiomsProcRecord): it found one; the log it wrote at the end is the one
it began, at the same name (not moved), still at that name (not
replaced by another file) and no shorter (not truncated); and a process
whose log does not have the name PATTERN gives it (%p its pid, %t a UTC
time; a forked child's is PATTERN.PID unless PATTERN has %p) names the
file it took on STDERR.

The second form: EVENTCNV given every file at once, BAD among them,
prints every event of each SOUND log (as read alone), names BAD on
stderr and exits nonzero; in text and in jsonl.

Prints what it found; exits 1 on any failure.
"""

import glob
import json
import os
import re
import struct
import subprocess
import sys

MASK = 0xFFFFFFFF
ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
TAGS = ['peer', 'path', 'key', 'text']
# event name -> (seq % 4, its string field)
NAMES = {'Accept': (0, 'peer'), 'Request': (1, 'path'), 'Store': (2, 'key'), 'Note': (3, 'text'),
         'PlugAccept': (0, 'peer'), 'PlugRequest': (1, 'path'), 'PlugStore': (2, 'key'),
         'PlugNote': (3, 'text')}
SLOTS, HOLES, PROCS = 256, 4096, 64
SLOTS_AT, HOLES_AT = 4096, 4096 + 256 * 64
PROCS_AT = HOLES_AT + 4096 * 16
TRACE = re.compile(r'^\s*(-?\d+\.\d{9}) (\S+) (T\d+)\s+(\S+)\s+(\S+)\s*(.*)$')


def check_hash(slot, seq):
    z = ((slot << 40 ^ seq) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) & MASK


def text(slot, seq):
    fill = (seq * 7 + slot * 3) % 53
    return '%s-%d-%d:%s' % (TAGS[seq & 3], slot, seq,
                            ''.join(ALPHABET[(seq + i) % 36] for i in range(fill)))


def cstr(raw):
    return raw.split(b'\0', 1)[0].decode('utf-8', 'replace')


def read_page(path):
    raw = open(path, 'rb').read()
    if raw[:8] != b'IDIOMS01':
        return None
    nslots, nholes, nprocs, fault_slot, last_alive = struct.unpack_from('<4IQ', raw, 8)
    slots = []
    for s in range(min(nslots, SLOTS)):
        attempts, done, pid, tid = struct.unpack_from('<4Q', raw, SLOTS_AT + 64 * s)
        role = cstr(raw[SLOTS_AT + 64 * s + 32:SLOTS_AT + 64 * s + 64])
        slots.append({'attempts': attempts, 'done': done, 'pid': pid, 'tid': tid, 'role': role})
    holes = set()
    for h in range(min(nholes, HOLES)):
        slot, _, seq = struct.unpack_from('<IIQ', raw, HOLES_AT + 16 * h)
        holes.add((slot, seq))
    procs = []
    for p in range(min(nprocs, PROCS)):
        at = PROCS_AT + 1024 * p
        pid, start_ino, end_ino, at_path_ino, start_size, end_size, slot, _ = \
            struct.unpack_from('<8Q', raw, at)
        procs.append({'pid': pid, 'startIno': start_ino, 'endIno': end_ino,
                      'atPathIno': at_path_ino, 'startSize': start_size, 'endSize': end_size,
                      'slot': slot, 'startPath': cstr(raw[at + 64:at + 544]),
                      'endPath': cstr(raw[at + 544:at + 1024])})
    return {'slots': slots, 'holes': holes, 'procs': procs, 'faultSlot': fault_slot,
            'lastAlive': last_alive, 'nholes': nholes}


def header_of(eventcnv, log):
    out = subprocess.run([eventcnv, '--header', log], capture_output=True, text=True).stdout
    fields = {}
    for line in out.splitlines():
        m = re.match(r'^(\w[\w ]*?)\s{2,}(.*)$', line)
        if m:
            fields[m.group(1)] = m.group(2)
    return fields


def first_line(s):
    s = s.strip()
    return s.splitlines()[0][:300] if s else '(nothing)'


def verify(ev, slot_count):
    """why the event (a jsonl object of our registries) is not whole, or None"""
    f = ev.get('fields', {})
    try:
        slot, seq = int(f['slot']), int(f['seq'])
    except (KeyError, ValueError, TypeError):
        return 'an event %s without slot and seq: %s' % (ev.get('event'), f)
    index, field = NAMES[ev['event']]
    if slot >= slot_count:
        return 'slot %d seq %d: no such slot (%d taken)' % (slot, seq, slot_count)
    if seq % 4 != index:
        return 'slot %d seq %d is a %s, not the event its seq gives' % (slot, seq, ev['event'])
    if int(f.get('check', -1)) != check_hash(slot, seq):
        return 'slot %d seq %d: check %s is torn' % (slot, seq, f.get('check'))
    if f.get(field) != text(slot, seq):
        return 'slot %d seq %d: %s %r is torn' % (slot, seq, field, f.get(field))
    if index == 1 and int(f.get('status', -1)) != 200 + seq % 300:
        return 'slot %d seq %d: status %s is torn' % (slot, seq, f.get('status'))
    if index == 2 and int(f.get('bytes', -1)) != seq * 3:
        return 'slot %d seq %d: bytes %s is torn' % (slot, seq, f.get('bytes'))
    return None


def pattern_regex(pattern, pid, forked):
    out = ''
    i = 0
    while i < len(pattern):
        if pattern[i] == '%' and i + 1 < len(pattern):
            c = pattern[i + 1]
            out += {'p': str(pid), 't': r'\d{8}T\d{6}Z', '%': '%'}.get(c, re.escape('%' + c))
            i += 2
        else:
            out += re.escape(pattern[i])
            i += 1
    if forked and '%p' not in pattern:
        out += re.escape('.%d' % pid)
    return re.compile('^' + out + '$')


CUT_EVENTS = 300                # events a cut 4 KiB block may have held, at most


def check_dir(eventcnv, d, logs_glob, traceback_path, slack, procs_pattern, procs_err, cut_max=0):
    failures = []
    notes = []
    cut = 0                     # blocks eventcnv says were cut short
    page = read_page(os.path.join(d, 'page'))
    if page is None:
        return ['the page is not there or was never written'], notes
    slots = page['slots']
    logs = sorted(p for p in glob.glob(os.path.join(d, logs_glob))
                  if '.live' not in os.path.basename(p) and os.path.isfile(p))
    if not logs:
        return ['no log in the directory: %s' % ' '.join(sorted(os.listdir(d)))], notes
    got = {}                    # slot -> {seq: log}
    dropped = {}                # pid -> EventsDropped total
    headers = {}
    for log in logs:
        name = os.path.basename(log)
        header = header_of(eventcnv, log)
        headers[log] = header
        run = subprocess.run([eventcnv, '--format', 'jsonl', log], capture_output=True)
        stderr = run.stderr.decode('utf-8', 'replace')
        said_cut = [int(m.group(1)) for m in
                    re.finditer(r'died before writing whole \(zeros where its events should be; (\d+) such', stderr)]
        others = [l for l in stderr.splitlines() if 'died before writing whole' not in l
                  and not re.search(r'dropped \d+ events? of kind', l)]
        if run.returncode != 0 and cut_max and said_cut and not others and sum(said_cut) <= cut_max:
            cut += sum(said_cut)
            notes.append('%s: eventcnv exit %d, naming %d block(s) cut short (allowed: %d)'
                         % (name, run.returncode, sum(said_cut), cut_max))
        elif run.returncode != 0:
            failures.append('%s: eventcnv exit %d: %s' % (name, run.returncode, first_line(stderr)))
        last = {}
        torn = 0
        for line in run.stdout.decode('utf-8', 'replace').splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                failures.append('%s: eventcnv wrote a line that is not JSON: %r' % (name, line[:120]))
                continue
            if ev.get('event') == 'EventsDropped':
                dropped[ev.get('pid')] = dropped.get(ev.get('pid'), 0) + int(ev['fields']['count'])
                continue
            if ev.get('event') not in NAMES:
                continue
            why = verify(ev, len(slots))
            if why:
                torn += 1
                if torn <= 3:
                    failures.append('%s: %s' % (name, why))
                continue
            slot, seq = int(ev['fields']['slot']), int(ev['fields']['seq'])
            if ev.get('pid') != slots[slot]['pid']:
                failures.append('%s: slot %d (%s of pid %d) seq %d is in the log of pid %s' %
                                (name, slot, slots[slot]['role'], slots[slot]['pid'], seq,
                                 ev.get('pid')))
            if seq in got.setdefault(slot, {}):
                failures.append('slot %d (%s) seq %d is logged twice: in %s and %s' %
                                (slot, slots[slot]['role'], seq, got[slot][seq], name))
            elif slot in last and seq < last[slot]:
                failures.append('%s: slot %d (%s) seq %d after seq %d: out of order' %
                                (name, slot, slots[slot]['role'], seq, last[slot]))
            got[slot][seq] = name
            last[slot] = seq
        if torn > 3:
            failures.append('%s: %d torn events in all' % (name, torn))
        notes.append('%s: pid %s, %s; eventcnv exit %d%s' %
                     (name, header.get('pid', '?'), 'end ' + header.get('end', '(none)')[:100],
                      run.returncode, '' if not stderr.strip() else ': ' + first_line(stderr)))
    # The counts, slot by slot.
    missing_by_pid = {}
    for s, slot in enumerate(slots):
        seqs = got.get(s, {})
        done, attempts = slot['done'], slot['attempts']
        holes = {seq for (hs, seq) in page['holes'] if hs == s}
        missing = [q for q in range(done) if q not in seqs and q not in holes]
        never = [q for q in seqs if q >= attempts]
        notes.append('slot %d (%s, pid %d): done %d, attempts %d, logged %d%s' %
                     (s, slot['role'], slot['pid'], done, attempts, len(seqs),
                      ', holes %d (%d of them logged)' % (len(holes), len(holes & set(seqs)))
                      if holes else ''))
        if attempts == done + 1:
            notes.append('slot %d (%s): its last event (seq %d) was begun and not returned '
                         'from (the thread died or was cancelled in it): %s' %
                         (s, slot['role'], done, 'logged' if done in seqs else 'not logged'))
        if never:
            failures.append('slot %d (%s): %d events logged that were never begun (seq %d...)' %
                            (s, slot['role'], len(never), min(never)))
        if missing:
            missing_by_pid.setdefault(slot['pid'], []).append((s, slot['role'], missing, done))
    if page['nholes'] > HOLES:
        failures.append('more holes than the page holds (%d): the check is not exact' % page['nholes'])
    for pid, lost in sorted(missing_by_pid.items()):
        total = sum(len(m) for _, _, m, _ in lost)
        said = dropped.get(pid, 0)
        where = '; '.join('slot %d (%s): %d of %d, first seq %d%s' %
                          (s, role, len(m), done, m[0], ', last %d' % m[-1] if len(m) > 1 else '')
                          for s, role, m, done in lost)
        if cut and total <= cut * CUT_EVENTS:
            notes.append('pid %d: %d emitted events in no log, in the %d block(s) eventcnv '
                         'names as cut short (.sol.cancel): %s' % (pid, total, cut, where))
        elif said >= total:
            failures.append('pid %d: %d emitted events are not in any log, reported as dropped '
                            '(EventsDropped %d), though nothing here may be dropped: %s' %
                            (pid, total, said, where))
        else:
            failures.append('pid %d: %d emitted events are in no log (%s): %s' %
                            (pid, total, 'EventsDropped reports only %d' % said if said
                             else 'no EventsDropped', where))
    # An emission cut short (a hole a siglongjmp left, or one begun and
    # not done when an asynchronous cancel came: attempts above done) is
    # counted as dropped by the runtime (.sol.signal.jump, .sol.cancel).
    cut = {}                    # pid -> emissions cut short
    for s, slot in enumerate(slots):
        holes = sum(1 for (hs, _) in page['holes'] if hs == s)
        cut[slot['pid']] = cut.get(slot['pid'], 0) + holes + max(slot['attempts'] - slot['done'], 0)
    for pid, n in sorted(dropped.items()):
        if pid not in missing_by_pid and n > cut.get(pid, 0):
            failures.append('pid %s: EventsDropped reports %d dropped, though only %d emissions '
                            'were cut short and nothing else may be dropped'
                            % (pid, n, cut.get(pid, 0)))
        elif pid not in missing_by_pid:
            notes.append('pid %s: EventsDropped %d, of %d emissions cut short' %
                         (pid, n, cut.get(pid, 0)))
    if traceback_path:
        failures += traceback(open(traceback_path, errors='replace').read(), page, slots,
                              headers, slack, notes)
    if procs_pattern is not None:
        failures += procs(page, slots, procs_pattern, open(procs_err, errors='replace').read(), d)
    return failures, notes


def traceback(err, page, slots, headers, slack, notes):
    failures = []
    evs = [TRACE.match(l) for l in err.splitlines()]
    evs = [(float(m.group(1)), m.group(3), m.group(5)) for m in evs if m]
    if 'fatal signal' not in err:
        return ['no "fatal signal" traceback on stderr: %s' % first_line(err)]
    if not evs:
        return ['the traceback shows no event']
    times = [e[0] for e in evs]
    back = sum(1 for a, b in zip(times, times[1:]) if b < a)
    if back:
        failures.append('the traceback steps back in time %d times' % back)
    pid = slots[page['faultSlot']]['pid'] if page['faultSlot'] < len(slots) else None
    mono = [h.get('monotonic') for h in headers.values() if h.get('pid') == str(pid)]
    if not mono or page['lastAlive'] == 0:
        return failures + ['no log of pid %s, or no deepest frame recorded: no time to check '
                           'the traceback by' % pid]
    start = int(mono[0].split()[0])
    fault = (page['lastAlive'] - start) / 1e9
    # The moment the traceback is cut at, in its own stamps: no event after
    # it, exactly.  That moment is the handler's, which follows the deepest
    # frame by the fault's few instructions, unless the thread waited for a
    # processor in between, as it may on a loaded machine: so the moment is
    # checked against the frame with slack, and the events against the moment.
    at = re.search(r'^telltale: \(seconds since start.*\), up to the failure at (\d+\.\d{9}) ',
                   err, re.M)
    if at is None:
        return failures + ['the traceback does not say the moment of the failure']
    failure = float(at.group(1))
    late = [e for e in evs if e[0] > failure]
    notes.append('traceback: %d events, the last at %.9f; the deepest frame at %.9f; cut at %.9f'
                 % (len(evs), max(times), fault, failure))
    if late:
        failures.append('the traceback shows %d events stamped after the failure it states at '
                        '%.9f (the latest at %.9f)' % (len(late), failure, max(times)))
    if failure > fault + slack or failure < fault - 0.001:
        failures.append('the traceback is cut at %.9f, %.3f ms from the deepest frame at %.9f '
                        '(more than %g s after it, or before it)'
                        % (failure, (failure - fault) * 1e3, fault, slack))
    return failures


def procs(page, slots, pattern, err, d):
    failures = []
    real = os.path.realpath(d)
    for p in page['procs']:
        role = slots[p['slot']]['role'] if p['slot'] < len(slots) else '?'
        who = 'pid %d (%s)' % (p['pid'], role)
        if not p['startPath']:
            failures.append('%s: found no log of its own among its open files' % who)
            continue
        start = p['startPath']
        if p['endPath'] != start:
            failures.append('%s: its log was moved or replaced while it ran: it began writing %s, '
                            'and ended writing %s' % (who, os.path.basename(start),
                                                      os.path.basename(p['endPath']) or '(none)'))
        elif p['atPathIno'] != p['startIno']:
            failures.append('%s: its log %s was replaced by another file while it ran' %
                            (who, os.path.basename(start)))
        elif p['endSize'] < p['startSize']:
            failures.append('%s: its log %s was truncated while it ran (%d bytes, then %d)' %
                            (who, os.path.basename(start), p['startSize'], p['endSize']))
        name = os.path.basename(start)
        if os.path.dirname(start) != real:
            failures.append('%s: its log %s is not in the run directory' % (who, start))
        if not pattern_regex(pattern, p['pid'], role == 'fork-child').match(name) \
                and name not in err:
            failures.append('%s: its log is %s, not %s (another name taken, or its log moved '
                            'before it first looked), and stderr does not name it' %
                            (who, name, pattern))
    return failures


def multi(eventcnv, bad, sound):
    failures = []
    alone = {}
    for log in sound:
        run = subprocess.run([eventcnv, '--format', 'jsonl', log], capture_output=True, text=True)
        if run.returncode != 0:
            failures.append('%s alone: eventcnv exit %d: %s' % (log, run.returncode,
                                                                first_line(run.stderr)))
        alone[log] = sorted((e['pid'], e['fields']['slot'], e['fields']['seq'], e['event'])
                            for e in map(json.loads, run.stdout.splitlines())
                            if e['event'] in NAMES)
    files = sound[:1] + [bad] + sound[1:]
    want = sorted(x for v in alone.values() for x in v)
    print('%d events in %d sound logs, read alone' % (len(want), len(sound)))
    for fmt in ('jsonl', 'text'):
        run = subprocess.run([eventcnv, '--format', fmt] + files, capture_output=True, text=True)
        if fmt == 'jsonl':
            seen = []
            for line in run.stdout.splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    failures.append('jsonl: a line that is not JSON: %r' % line[:100])
                    continue
                if e.get('event') in NAMES:
                    seen.append((e['pid'], e['fields']['slot'], e['fields']['seq'], e['event']))
            seen.sort()
            if seen != want:
                failures.append('jsonl: %d events of the sound logs printed, not %d (%d of them '
                                'missing)' % (len(seen), len(want), len(set(want) - set(seen))))
        else:
            n = sum(1 for line in run.stdout.splitlines()
                    if re.search(r'\s(Accept|Request|Store|Note)\s+slot=', line))
            if n != len(want):
                failures.append('text: %d events of the sound logs printed, not %d' % (n, len(want)))
        if bad not in run.stderr and os.path.basename(bad) not in run.stderr:
            failures.append('%s: the bad file %s is not named on stderr: %s' %
                            (fmt, os.path.basename(bad), first_line(run.stderr)))
        if run.returncode == 0:
            failures.append('%s: eventcnv exit 0 with a bad file among its inputs' % fmt)
        print('%s: exit %d, stderr: %s' % (fmt, run.returncode, first_line(run.stderr)))
    return failures


def main():
    args = sys.argv[1:]
    if len(args) >= 3 and args[1] == '--multi':
        failures = multi(args[0], args[2], args[3:])
    else:
        eventcnv, d = args[0], args[1]
        logs_glob, tb, slack, pattern, perr, cut_max = '*.log*', None, 0.1, None, None, 0
        rest = args[2:]
        while rest:
            opt = rest.pop(0)
            if opt == '--logs':
                logs_glob = rest.pop(0)
            elif opt == '--traceback':
                tb = rest.pop(0)
            elif opt == '--slack':
                slack = float(rest.pop(0))
            elif opt == '--procs':
                pattern, perr = rest.pop(0), rest.pop(0)
            elif opt == '--cut':
                cut_max = int(rest.pop(0))
            else:
                sys.exit('check.py: unknown option %s' % opt)
        failures, notes = check_dir(eventcnv, d, logs_glob, tb, slack, pattern, perr, cut_max)
        for n in notes:
            print(n)
    for f in failures:
        print('FAIL: ' + f)
    sys.exit(1 if failures else 0)


main()
