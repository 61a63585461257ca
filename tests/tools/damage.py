#!/usr/bin/env python3
"""tests/tools/damage.py -- real logs, damaged, read by eventcnv

.design: design/stream.txt .stream.check design/control.txt .sol.recover design/tests.txt .test.damage

Usage: damage.py CONFIG [RUNS]      e.g. damage.py build/san 20

Makes real logs with CONFIG/tests/trust_client (four workers emitting
numbered Step events, tests/clients/trust/client.c) with 4 KiB buffers, so that
buffers are sent in part and live blocks share their sequence numbers
with the log's blocks:

  killed    the client killed with SIGKILL: a log and its LOG.live;
  full      the same with the file size limited (RLIMIT_FSIZE, as a full
            disk), so that writes fail with EFBIG part way;
  full-finish  the file size limited, and the client ends normally
            (EventFinish, then a return): eventcnv says the writes
            failed, and not that the program died (full-disk-finish).

Then it damages copies, one byte at a time, where damage hurts most: the
sequence number, length or session id of a block in the log or a region
in the live file, and a random byte anywhere in either.  Each damaged
pair is read with CONFIG/eventcnv, which must

  - finish within 20 s (no walk may fail to move on),
  - not crash, nor print a sanitizer report,
  - show no Step event twice, nor out of its worker's order,
  - show no more Step events than the undamaged pair shows,
  - exit 1, and say what is wrong, whenever it shows fewer;
and that a live file cut (on a page or not), zeroed in part, repeated,
or not a regular file at all (a directory, a FIFO, a link to /dev/zero)
is said, with exit 1, and shows nothing twice;
but for damage in a live region's data, which carry no check (they
change while the program runs): there a wrong value may show, and only
the first, second and fourth hold.

The undamaged killed pair must read exactly (every counted step, exit 0),
and the full-disk one must say it is incomplete or cut, with exit 1.
Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".
"""

import os
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from results import result, summary  # noqa: E402
# gen's eventgen.py of telltale's registry: the wire format (design/registry.txt .gen.wire)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                'build', 'gen', 'core'))
import eventgen as wire  # noqa: E402

STEP = re.compile(r' Step +worker=(\d+) seq=(\d+)')
BLOCK_HEADER = wire.EVENT_BLOCK_HEADER_LEN
LENGTH_AT = wire.BLOCK_HEADER['length'][0]   # a block's fields
SEQ_AT = wire.BLOCK_HEADER['seq'][0]


def blocks(data, start):
    """(offset, length) of each block or region, walking by lengths"""
    out = []
    pos = start
    while pos + BLOCK_HEADER <= len(data):
        length = struct.unpack_from('<I', data, pos + LENGTH_AT)[0]
        if length < BLOCK_HEADER or pos + length > len(data):
            break
        out.append((pos, length))
        pos += length
    return out


def header_length(data):
    return struct.unpack_from('<I', data, wire.STREAM_HEADER['header_length'][0])[0]


def run_client(client, d, env_extra, limit=None, mode='kill'):
    env = dict(os.environ, TRUST_COUNTS='counts', TELLTALE_FILE='t.log', TELLTALE_BUFFER='4096')
    env.update(env_extra)

    def pre():
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = subprocess.Popen([client, mode], cwd=d, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=pre)
    if mode != 'kill':
        return p.wait() == 0
    line = p.stdout.readline()
    time.sleep(0.005)
    p.kill()
    p.wait()
    return line.startswith(b'ready')


def read(eventcnv, path):
    try:
        r = subprocess.run([eventcnv, path], capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None, None, None, 'hangs (no end within 20 s)'
    out = r.stdout.decode('utf-8', 'replace')
    err = r.stderr.decode('utf-8', 'replace')
    steps = [(int(w), int(s)) for w, s in STEP.findall(out)]
    return r.returncode, steps, err, None


def judge(steps, status, err, limit, checked=True):
    """what is wrong with a damaged read, or None.  Where the damage is
    in a live region's data (checked False), which change as the program
    runs and so carry no check, a damaged byte may show as a wrong value
    or end the region's events early: only safety and the count hold."""
    if status < 0 or status >= 128:
        return 'crashed (%d)' % status
    if 'Sanitizer' in err or 'runtime error' in err:
        return 'sanitizer report: ' + err[:200]
    if not checked:
        return None if len(steps) <= limit else '%d steps shown, the sound pair has %d' % (
            len(steps), limit)
    seen = set()
    last = {}
    for w, s in steps:
        if (w, s) in seen:
            return 'worker %d seq %d shown twice' % (w, s)
        seen.add((w, s))
        if s < last.get(w, -1):
            return 'worker %d seq %d after seq %d' % (w, s, last[w])
        last[w] = s
    if len(steps) > limit:
        return '%d steps shown, the sound pair has %d' % (len(steps), limit)
    if len(steps) < limit and status != 1:
        return '%d of %d steps shown with exit %d, and %s' % (len(steps), limit, status,
                                                            'nothing said' if not err else err[:200])
    return None


def main():
    cfg = sys.argv[1].rstrip('/')
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    client = os.path.abspath(os.path.join(cfg, 'tests', 'trust_client'))
    eventcnv = os.path.abspath(os.path.join(cfg, 'eventcnv'))
    rnd = random.Random(int(os.environ.get('DAMAGE_SEED', '1')))
    tmp = tempfile.mkdtemp()
    try:
        # The sound pair.
        d = os.path.join(tmp, 'killed')
        os.mkdir(d)
        if not run_client(client, d, {}):
            result('killed', 'the client did not start')
            return summary()
        log = open(os.path.join(d, 't.log'), 'rb').read()
        live = open(os.path.join(d, 't.log.live'), 'rb').read()
        status, steps, err, hang = read(eventcnv, os.path.join(d, 't.log'))
        counts = struct.unpack_from('8Q', open(os.path.join(d, 'counts'), 'rb').read(), 0)
        if hang:
            result('killed', hang)
            return summary()
        want = sum(counts[1:5])     # workers 1 to 4
        result('killed', None if status == 0 and want <= len(steps) <= want + 4
               and judge(steps, status, err, len(steps)) is None
               else 'exit %d, %d steps of %d counted: %s' % (status, len(steps), want, err[:300]))
        limit = len(steps)
        logBlocks = blocks(log, header_length(log))
        liveRegions = blocks(live, header_length(live))
        liveBlocks = [b for b in liveRegions if live[b[0]:b[0] + len(wire.EVENT_BLOCK_MAGIC)] == wire.EVENT_BLOCK_MAGIC]

        # Damage, one byte at a time.
        def damaged(name, which, offset):
            dl = os.path.join(tmp, name)
            os.makedirs(dl, exist_ok=True)
            a, b = bytearray(log), bytearray(live)
            target = a if which == 'log' else b
            old = target[offset]
            target[offset] = (old + rnd.randrange(1, 256)) & 0xFF
            open(os.path.join(dl, 't.log'), 'wb').write(a)
            open(os.path.join(dl, 't.log.live'), 'wb').write(b)
            st, got, e, hang = read(eventcnv, os.path.join(dl, 't.log'))
            checked = which == 'log' or offset < header_length(live) or any(
                o <= offset < o + BLOCK_HEADER for o, _ in liveRegions)
            why = hang or judge(got, st, e, limit, checked)
            if why:
                why = '%s byte %d: %s' % (which, offset, why)
                if os.environ.get('DAMAGE_KEEP'):
                    shutil.copytree(dl, os.path.join(os.environ['DAMAGE_KEEP'], name), dirs_exist_ok=True)
            shutil.rmtree(dl)
            return why

        cases = []
        for field in ('seq', 'length', 'session', 'index', 'magic'):
            lo, size = wire.BLOCK_HEADER[field]
            hi = lo + size
            for _ in range(runs):
                if logBlocks:
                    o, _ = rnd.choice(logBlocks)
                    cases.append(('log-' + field, 'log', o + rnd.randrange(lo, hi)))
                if liveBlocks:
                    o, _ = rnd.choice(liveBlocks)
                    cases.append(('live-' + field, 'live', o + rnd.randrange(lo, hi)))
        for _ in range(runs):
            cases.append(('log-any', 'log', rnd.randrange(len(log))))
            cases.append(('live-any', 'live', rnd.randrange(len(live))))
        whys = {}
        for name, which, offset in cases:
            why = damaged(name, which, offset)
            if why and name not in whys:
                whys[name] = why
        for name in dict.fromkeys(c[0] for c in cases):
            result(name, whys.get(name))

        # The live file cut, zeroed, repeated, or not a file at all: the
        # log is read, nothing is shown twice, and exit 1 says what.
        def liveCase(name, make):
            dl = os.path.join(tmp, name)
            os.makedirs(dl)
            open(os.path.join(dl, 't.log'), 'wb').write(log)
            make(os.path.join(dl, 't.log.live'))
            st, got, e, hang = read(eventcnv, os.path.join(dl, 't.log'))
            why = hang or judge(got, st, e, limit)
            if not why and st != 1:
                why = 'exit %d: %s' % (st, e[:300])
            result(name, why)
            shutil.rmtree(dl)

        def write(data):
            return lambda path: open(path, 'wb').write(data)
        region = liveRegions[-1][0]
        liveCase('live-cut-odd', write(live[:region + 1000]))
        liveCase('live-cut-page', write(live[:region]))
        zeroed = bytearray(live)
        zeroed[liveRegions[0][0]:liveRegions[0][0] + 4096] = bytes(4096)
        liveCase('live-zeroed', write(bytes(zeroed)))
        liveCase('live-twice', write(live + live[header_length(live):]))
        if liveBlocks:            # a block's magic zeroed: not a free region
            unfreed = bytearray(live)
            unfreed[liveBlocks[0][0]:liveBlocks[0][0] + 4] = bytes(4)
            liveCase('live-magic-zeroed', write(bytes(unfreed)))
        # A region the program was making a block of when it died, from
        # one whose events were all written (the older slot of a kind):
        # magic zero, its data ended, its header's number rewritten but
        # not yet its check.  It holds nothing: no damage, nothing lost.
        # Before .sol.recover.free knew it, every such region was damage.
        why = 'no live block to make one of'
        for o, _ in liveBlocks:
            dl = os.path.join(tmp, 'live-preparing')
            os.makedirs(dl)
            preparing = bytearray(live)
            preparing[o:o + len(wire.EVENT_BLOCK_MAGIC)] = bytes(len(wire.EVENT_BLOCK_MAGIC))
            preparing[o + BLOCK_HEADER:o + BLOCK_HEADER + 4] = bytes(4)
            preparing[o + SEQ_AT] ^= 0x5A
            open(os.path.join(dl, 't.log'), 'wb').write(log)
            open(os.path.join(dl, 't.log.live'), 'wb').write(bytes(preparing))
            st, got, e, hang = read(eventcnv, os.path.join(dl, 't.log'))
            shutil.rmtree(dl)
            why = hang or judge(got, st, e, len(got))
            if why:
                break
            if st == 0 and len(got) == limit and 'damaged' not in e:
                break           # one whose events were all written: sound
            why = 'every region so made: exit %d, %d of %d steps: %s' % (st, len(got), limit,
                                                                         e[:300])
        result('live-preparing', why)

        # A block the program died before writing whole (.sol.writer.at):
        # the last send of a live block, its header there and its data
        # zeros, from their start or from a page boundary of the file.
        # The live file holds its events: recovered, every step shown,
        # exit 0, and the hole said.  Without the live file, or with its
        # header zeros too (which block it was is not known), exit 1 and
        # the loss said.
        liveSeqs = {struct.unpack_from('<Q', live, o + SEQ_AT)[0] for o, _ in liveBlocks}
        lastSend = {}
        for o, n in logBlocks:
            seq = struct.unpack_from('<Q', log, o + SEQ_AT)[0]
            if seq in liveSeqs and n > BLOCK_HEADER:
                lastSend[seq] = (o, n)

        def holeCase(name, lo, hi, withLive, wantExit, said, liveBytes=live, archived=False):
            dl = os.path.join(tmp, name)
            os.makedirs(dl)
            holed = bytearray(log)
            holed[lo:hi] = bytes(hi - lo)
            open(os.path.join(dl, 't.log'), 'wb').write(holed)
            if withLive:
                open(os.path.join(dl, 't.log.live'), 'wb').write(liveBytes)
            st, got, e, hang = read(eventcnv, os.path.join(dl, 't.log'))
            why = hang or judge(got, st, e, limit)
            if not why and st != wantExit:
                why = 'exit %d, not %d: %s' % (st, wantExit, e[:300])
            if not why and wantExit == 0 and len(got) != limit:
                why = '%d of %d steps' % (len(got), limit)
            if not why and not re.search(said, e):
                why = 'not said (%s): %s' % (said, e[:300])
            # Archived with its live file, the hole is one still: the
            # archive's blocks before it are shorter than the log's, so
            # a page boundary of the log is none of the archive's.
            if not why and archived:
                a = os.path.join(dl, 'a.tt')
                r = subprocess.run([eventcnv, '--format', 'telltale', '--zstd', '-o', a,
                                    os.path.join(dl, 't.log')], capture_output=True, timeout=60)
                ast, agot, ae, ahang = read(eventcnv, a)
                if r.returncode != st or not os.path.exists(a):
                    why = 'archive: exit %d, not %d: %s' % (r.returncode, st, r.stderr[:300])
                elif ahang or ast != st or agot != got or not re.search(said, ae):
                    why = 'the archive reads otherwise: %s, exit %s, %d steps: %s' % (
                        ahang, ast, len(agot or []), (ae or '')[:300])
            result(name, why)
            shutil.rmtree(dl)

        if not lastSend:
            result('hole', 'no log block whose live block is there')
        else:
            o, n = max(lastSend.values(), key=lambda b: b[1])    # the largest
            page = (o + BLOCK_HEADER + 4095) // 4096 * 4096
            recovered = r'died before writing (it|them) whole; (its|their) events are among those recovered'
            lost = r'died before writing whole .* events are lost'
            holeCase('hole-recovered', o + BLOCK_HEADER, o + n, True, 0, recovered, archived=True)
            if page < o + n:
                holeCase('hole-cut-on-page', page, o + n, True, 0, recovered, archived=True)
            # Cut on its last page boundary, fewer zeros than a page:
            # copied as it was, the archive's reader found no page
            # boundary in them at the block's new offset, and took the
            # hole for damage (1 run of 200 killed clients).  The block
            # with the fewest such zeros, so a copy is least likely to
            # keep a boundary in them by chance.
            cuts = [((bo + bn - 1) // 4096 * 4096, bo + bn) for bo, bn in lastSend.values()
                    if (bo + bn - 1) // 4096 * 4096 > bo + BLOCK_HEADER]
            if cuts:
                lo, hi = min(cuts, key=lambda c: c[1] - c[0])
                holeCase('hole-cut-on-last-page', lo, hi, True, 0, recovered, archived=True)
            # The same without the live file, from any block of the log
            # (a sent block is whole, so most cross a page): the hole is
            # lost, and the archive says so too, not damage.
            cuts = [((bo + bn - 1) // 4096 * 4096, bo + bn) for bo, bn in logBlocks
                    if (bo + bn - 1) // 4096 * 4096 > bo + BLOCK_HEADER]
            cuts = [(lo, hi) for lo, hi in cuts if hi - lo >= 256 and any(log[lo:hi])]
            if not cuts:
                result('hole-cut-on-last-page-lost', 'no block of the log crosses a page')
            else:
                lo, hi = min(cuts, key=lambda c: c[1] - c[0])
                holeCase('hole-cut-on-last-page-lost', lo, hi, False, 1, lost, archived=True)
            holeCase('hole-no-live', o + BLOCK_HEADER, o + n, False, 1, lost)
            # Which block it was is known only from the live file's places
            # (3.0.8, .sol.writer.at): without its place there (the
            # program's own, if it died writing this block, taken out
            # here), the loss is said.  With its place, as a program
            # leaves it that dies before the write after the lock, its
            # header is put back and its events recovered.  A place of
            # another session's block is not taken.
            places = header_length(live) - (wire.EVENT_LIVE_PLACES * wire.EVENT_LIVE_PLACE_LEN
                                            + 10 * wire.EVENT_LIVE_SLOTS
                                            + wire.EVENT_LIVE_REGIONS_LEN)
            unplaced = bytearray(live)
            for at in range(places, places + wire.EVENT_LIVE_PLACES * wire.EVENT_LIVE_PLACE_LEN,
                            wire.EVENT_LIVE_PLACE_LEN):
                if struct.unpack_from('<Q', unplaced, at + 40)[0] == o:
                    struct.pack_into('<I', unplaced, at, 0)
            holeCase('hole-header-too', o, o + n, True, 1, lost, bytes(unplaced))
            placed = bytearray(unplaced)
            at = places
            while struct.unpack_from('<I', placed, at)[0] != 0:
                at += wire.EVENT_LIVE_PLACE_LEN     # the program's own: kept
            struct.pack_into('<I', placed, at, 7)
            placed[at + 4:at + 4 + BLOCK_HEADER] = log[o:o + BLOCK_HEADER]
            struct.pack_into('<Q', placed, at + 40, o)
            holeCase('hole-header-placed', o, o + n, True, 0, recovered, bytes(placed))
            placed[at + 4 + wire.BLOCK_HEADER['session'][0]] ^= 0x5A
            holeCase('hole-header-placed-elsewhere', o, o + n, True, 1, lost, bytes(placed))
            # A hole leaves the log no less sound: a live block's magic
            # zeroed (not a free region) is still damage, said.  Before
            # recovery knew holes, it took the log as passed over and
            # every such region as free, and lost its events unsaid.
            holeSeq = struct.unpack_from('<Q', log, o + SEQ_AT)[0]
            other = [b for b in liveBlocks if struct.unpack_from('<Q', live, b[0] + SEQ_AT)[0] != holeSeq]
            if other:
                unfreed = bytearray(live)
                unfreed[other[0][0]:other[0][0] + 4] = bytes(4)
                holeCase('hole-and-live-magic-zeroed', o + BLOCK_HEADER, o + n, True, 1,
                         r'damaged header', bytes(unfreed))
        # The log's last bytes the first 1 to 35 of a block header, as a
        # write after the lock cut short by death leaves them (its header
        # now goes with its events, .sol.writer.at): left out, and the
        # live file's blocks read after them, every step there.  Before,
        # 1 to 3 such bytes were kept, and the recovered blocks after
        # them read as damage, every one lost.  The log is taken up to
        # where its blocks end (before a last block cut short, whose
        # events the live file has), past holes.
        end = header_length(log)
        while end + BLOCK_HEADER <= len(log):
            if log[end:end + 4] != wire.EVENT_BLOCK_MAGIC:
                end = log.find(wire.EVENT_BLOCK_MAGIC, end)
                if end < 0:
                    end = len(log)
                continue
            length = struct.unpack_from('<I', log, end + LENGTH_AT)[0]
            if end + length > len(log):
                break
            end += length
        for n in (1, 2, 3, 35):
            dl = os.path.join(tmp, 'tail-%d' % n)
            os.makedirs(dl)
            open(os.path.join(dl, 't.log'), 'wb').write(log[:end] + log[logBlocks[-1][0]:][:n])
            open(os.path.join(dl, 't.log.live'), 'wb').write(live)
            st, got, e, hang = read(eventcnv, os.path.join(dl, 't.log'))
            why = hang or judge(got, st, e, limit)
            if not why and (st != 0 or len(got) != limit):
                why = 'exit %d, %d of %d steps: %s' % (st, len(got), limit, e[:300])
            result('tail-header-%d' % n, why)
            shutil.rmtree(dl)
        liveCase('live-dir', os.mkdir)
        liveCase('live-fifo', os.mkfifo)
        liveCase('live-dev-zero', lambda path: os.symlink('/dev/zero', path))

        # A full disk (RLIMIT_FSIZE: writes fail with EFBIG), then SIGKILL.
        d = os.path.join(tmp, 'full')
        os.mkdir(d)
        if not run_client(client, d, {}, limit=40000):
            result('full-disk', 'the client did not start')
        else:
            st, got, e, hang = read(eventcnv, os.path.join(d, 't.log'))
            why = hang or judge(got, st, e, 10 ** 9)
            if not why and st != 1:
                why = 'exit %d over a log cut by a full disk: %s' % (st, e[:300])
            if not why and not re.search(r'incomplete|cut short|could not write all of its log', e):
                why = 'nothing said of the loss: ' + e[:300]
            result('full-disk', why)

        # A full disk, and the program ends as it means to: EventFinish
        # (its StreamEnd goes with the failed writes), then a return.
        # That is not a death, and is not said to be one.
        d = os.path.join(tmp, 'full-finish')
        os.mkdir(d)
        if not run_client(client, d, {}, limit=40000, mode='finish'):
            result('full-disk-finish', 'the client did not end with exit 0')
        else:
            st, got, e, hang = read(eventcnv, os.path.join(d, 't.log'))
            why = hang or judge(got, st, e, 10 ** 9)
            if not why and st != 1:
                why = 'exit %d over a log cut by a full disk: %s' % (st, e[:300])
            if not why and (re.search(r'died before|after the crash', e)
                            or not re.search(r'writes to its log failed', e)):
                why = 'not said as a failed write: ' + e[:400]
            result('full-disk-finish', why)
    finally:
        shutil.rmtree(tmp)
    return summary()


if __name__ == '__main__':
    sys.exit(main())
