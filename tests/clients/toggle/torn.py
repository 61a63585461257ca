#!/usr/bin/env python3
"""tests/clients/toggle/torn.py -- a live region torn while it was retagged

.design: design/control.txt .sol.control.retag design/tests.txt .test.toggle

Usage: torn.py EVENTCNV LOG
LOG is the log of a program killed just after output was switched off
(tests/tools/toggle.sh kill-off), with its live file LOG.live beside it.  A
retag writes a region's number, index and check in place, so a kill can
tear it.  This tears a region retagged to "output off" (its number
changed, its check left as it was), as such a kill would:
  flagged    with the live file's flag EVENT_LIVE_RETAG set, as the
             runtime sets it while it retags: eventcnv prints exactly
             what it prints of the untorn files, with the same status
  unflagged  without the flag: the region is damage, said, exit 1
Prints "ok NAME" or "FAIL NAME: why", then "N passed, N failed".
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
from results import result, summary  # noqa: E402

MAGIC = b"TTBK"
FLAGS_AT = 19                  # EVENT_STREAM_FLAGS_AT
LIVE_RETAG = 0x08              # EVENT_LIVE_RETAG
OUTPUT_OFF = 0xFFFFFFFE        # EVENT_LIVE_OUTPUT_OFF
PAGE = 4096                    # regions start on pages


def off_region(live):
    """The offset of the first region whose index says output off."""
    for at in range(PAGE, len(live) - 36, PAGE):
        if live[at:at + 4] == MAGIC and struct.unpack_from("<I", live, at + 28)[0] == OUTPUT_OFF:
            return at
    return None


def read(eventcnv, log):
    p = subprocess.run([eventcnv, log], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def main():
    eventcnv, log = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp()
    try:
        live = open(log + ".live", "rb").read()
        at = off_region(live)
        if at is None:
            result("setup", "no live region retagged to output off in %s.live" % log)
            return summary()
        torn = bytearray(live)
        seq = struct.unpack_from("<Q", torn, at + 16)[0]
        struct.pack_into("<Q", torn, at + 16, seq ^ 0x5A5A)   # a new number, the old check
        copies = {}
        for name, data in (("whole", live), ("flagged", torn), ("unflagged", torn)):
            d = os.path.join(tmp, name)
            os.mkdir(d)
            shutil.copy(log, os.path.join(d, "t.log"))
            data = bytearray(data)
            if name == "flagged":
                data[FLAGS_AT] |= LIVE_RETAG
            else:
                data[FLAGS_AT] &= ~LIVE_RETAG & 0xFF
            open(os.path.join(d, "t.log.live"), "wb").write(data)
            copies[name] = read(eventcnv, os.path.join(d, "t.log"))
        whole, flagged, unflagged = copies["whole"], copies["flagged"], copies["unflagged"]
        if "damaged" in whole[2]:
            result("setup", "the untorn files already read as damaged: %s" % whole[2].strip())
        if flagged[:2] == whole[:2] and "damaged" not in flagged[2]:
            result("flagged (%d lines, exit %d, as the untorn files)"
                   % (whole[1].count(b"\n"), whole[0]), "")
        else:
            result("flagged", "exit %d against %d, %d lines against %d, stderr: %s"
                   % (flagged[0], whole[0], flagged[1].count(b"\n"), whole[1].count(b"\n"),
                      flagged[2].strip()[:300]))
        if unflagged[0] == 1 and "damaged header" in unflagged[2]:
            result("unflagged", "")
        else:
            result("unflagged", "exit %d, stderr: %s" % (unflagged[0], unflagged[2].strip()[:300]))
    finally:
        shutil.rmtree(tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
