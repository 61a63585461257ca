# <tools/gdb/telltale.py> -- telltale commands for gdb
#
# .design: design/tools.txt .gdb
#
# Load it into gdb with "source tools/gdb/telltale.py" (or gdb -x), then
# "help telltale".  The commands read the program's telltale runtime
# (src/event/eventint.h names what they read) out of memory and decode its events themselves, in
# Python, with the registries read from the program (eventSlots, each a
# kind of one registry: .reg.many).  They make no calls into the
# inferior, so they work on a core file as on a live process; only
# "on", "off" and "record" change it: they call EventKindsSwitch in a
# live process, so that the change takes effect at once in every thread
# (.sol.control.cut), and otherwise write each registry's control and
# record sets.

import importlib.util
import os
import re
import struct

import gdb


def _load_wire():
    """gen's eventgen.py of telltale's registry: the wire format
    (design/registry.txt .gen.wire).  Installed beside this file; in
    the tree, build/gen/core/eventgen.py.  Found by this file's path as
    its code has it: __file__ is the auto-load script's when that
    sources this file."""
    here = os.path.dirname(os.path.abspath(_load_wire.__code__.co_filename))
    for path in (os.path.join(here, "eventgen.py"),
                 os.path.join(here, os.pardir, os.pardir, "build", "gen", "core", "eventgen.py")):
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("telltale_eventgen", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise gdb.GdbError("telltale: eventgen.py, the wire format, is not beside %s "
                       "(run ninja, or install telltale)" % here)


wire = _load_wire()

# eventcom.h's sizes are read from the program's debug info (Limits, and
# _block_header_len); these are macros that no type carries, or the
# fallback where debug info lacks the type, so they are gen's copies.
EVENT_BLOCK_HEADER_LEN = wire.EVENT_BLOCK_HEADER_LEN
EVENT_NAME_MAX = wire.EVENT_NAME_MAX
DUMP_DEFAULT = 20
SLOT_SIZE_MAX = 1 << 30         # larger than any buffer (64M), for sanity checks
THREAD_LIMIT = 1 << 20          # more threads than this means a corrupt list
NS_PER_SECOND = 1000000000
SYNC_SPAN_MIN = 1000000         # ns between ClockSyncs to trust them, when the rate is unknown
SYNC_SPAN = wire.EVENT_SYNC_SPAN_NS   # .sol.clock
M64 = (1 << 64) - 1
ELAPSED_WIDTH = 15              # column widths of EventFormat (eventformat.c)
THREAD_WIDTH = 3
OWN_KIND = 0                    # the Telltale kind: always on, .sol.control.own


class TelltaleError(gdb.GdbError):
    pass


def _fail(message):
    raise TelltaleError("telltale: " + message)


# Reading the inferior: memory and symbols only, never a call ------------

def _inferior():
    inf = gdb.selected_inferior()
    if inf is None or not inf.is_valid() or (inf.pid == 0 and not _has_core()):
        _fail("no process or core file: run, attach to or load a telltale program first")
    return inf


def _has_core():
    try:
        return "core" in gdb.execute("info target", to_string=True).lower()
    except gdb.error:
        return False


def _core_ranges():
    """the address ranges whose contents a core file holds: its load
    sections (a mapping the core left out is read by gdb from the file
    mapped there, as that file is now)"""
    ranges = []
    try:
        text = gdb.execute("maint info sections", to_string=True)
    except gdb.error:
        return ranges
    core = text.find("Core file:")
    for m in re.finditer(r"0x([0-9a-f]+)->0x([0-9a-f]+) at 0x[0-9a-f]+: load\S* .*HAS_CONTENTS",
                         text[core:] if core >= 0 else ""):
        ranges.append((int(m.group(1), 16), int(m.group(2), 16)))
    return ranges


def _live_identity(session):
    """None if the live file on disk is this session's (or there is
    none); else a sentence saying whose it is.  A core without the live
    file's regions would otherwise be read against another run's file
    of the same name (.sol.recover: pid and start times)."""
    try:
        name = session["liveName"].string()
        start = int(session["startClock"])
        realtime = int(session["startRealtime"])
    except (gdb.MemoryError, gdb.error):
        return "its name and this session's start cannot be read from memory"
    if name == "":
        return None
    try:
        with open(name, "rb") as f:
            head = f.read(64)
    except FileNotFoundError:
        return None             # gdb cannot read it either, and says so
    except OSError as err:
        return "%s cannot be read (%s)" % (name, err.strerror)
    if (len(head) < wire.EVENT_STREAM_FIXED_LEN
            or head[:wire.EVENT_STREAM_MAGIC_LEN] != wire.EVENT_STREAM_MAGIC):
        return "%s is not a telltale live file" % name
    clock, = struct.unpack_from("<Q", head, wire.STREAM_HEADER["start_clock"][0])
    rt, = struct.unpack_from("<Q", head, wire.STREAM_HEADER["start_realtime"][0])
    pid, = struct.unpack_from("<I", head, wire.STREAM_HEADER["pid"][0])
    if clock != start or rt != realtime:
        return ("%s on disk is another session's (pid %d, start clock %d), not this core's "
                "(start clock %d)" % (name, pid, clock, start))
    return None


def _read(addr, size):
    """size bytes at addr, or gdb.MemoryError"""
    if size == 0:
        return b""
    return bytes(gdb.selected_inferior().read_memory(addr, size))


def _cstr(addr, limit=4096, raw=False):
    """the NUL-terminated string at addr (None for NULL), at most limit
    bytes; bytes if raw, else str"""
    addr = int(addr)
    if addr == 0:
        return None
    out = b""
    while len(out) < limit:
        chunk = 256 - (addr + len(out)) % 256     # do not read across a page needlessly
        try:
            data = _read(addr + len(out), chunk)
        except gdb.MemoryError:
            _fail("cannot read a string at 0x%x: the registry is not in memory" % addr)
        nul = data.find(b"\0")
        if nul >= 0:
            out += data[:nul]
            break
        out += data
    out = out[:limit]
    return out if raw else out.decode("utf-8", "replace")


def _byte_order():
    try:
        text = gdb.execute("show endian", to_string=True)
    except gdb.error:
        return "<"
    return ">" if "big endian" in text else "<"


def _global(name):
    """the value of a global variable, or None"""
    try:
        sym = gdb.lookup_global_symbol(name)
    except gdb.error:
        sym = None
    if sym is None:
        try:
            sym = gdb.lookup_symbol(name)[0]
        except gdb.error:
            sym = None
    if sym is None or sym.is_function or sym.addr_class == gdb.SYMBOL_LOC_TYPEDEF:
        return None
    try:
        return sym.value()
    except gdb.error:
        return None


def _static(name, source):
    """the value of the file-static name defined in a file ending in source, or None"""
    syms = []
    try:
        syms = list(gdb.lookup_static_symbols(name))       # gdb 10 and later
    except (AttributeError, gdb.error):
        try:
            sym = gdb.lookup_static_symbol(name)
            syms = [sym] if sym is not None else []
        except (AttributeError, gdb.error):
            syms = []
    for sym in syms:
        if sym.symtab is not None and sym.symtab.filename.endswith(source):
            try:
                return sym.value()
            except gdb.error:
                return None
    try:        # older gdb: the file-scope syntax, which is not a call
        return gdb.parse_and_eval("'%s'::%s" % (source.split("/")[-1], name))
    except gdb.error:
        return None


def _type(name):
    """the type named name in the program's debug info"""
    try:
        return gdb.lookup_type(name).strip_typedefs()
    except gdb.error:
        _fail("the type %s is not found: is this a telltale program built with -g? (linked with the packaged libtelltale.so: install libtelltale0-dbgsym)" % name)


def _field(value_type, name):
    """the field name of a struct type"""
    for f in value_type.fields():
        if f.name == name:
            return f
    _fail("%s has no field %s: the runtime is not what this script expects" % (value_type, name))


def _length(array_type):
    """the number of elements of an array type"""
    low, high = array_type.strip_typedefs().range()
    return high - low + 1


def _global_type(name):
    """the type of a global variable (thread-local ones too), from debug info only"""
    try:
        sym = gdb.lookup_global_symbol(name)
    except gdb.error:
        sym = None
    if sym is None:
        _fail("%s is not found: is this a telltale program built with -g? (linked with the packaged libtelltale.so: install libtelltale0-dbgsym)" % name)
    return sym.type.strip_typedefs()


class Limits(object):
    """eventcom.h's sizes and limits, taken from the program's debug info
    (sizeof and offsetof through gdb), so that none is copied here and a
    core is read with its own program's: the event header
    (EventHeaderStruct), the parameter limit (EventRecordStruct's
    values), the string limit (Intern's string), the kind limit
    (EventThreadBuf) and the slot limit (eventSlots)."""

    def __init__(self):
        header = _type("EventHeaderStruct")
        self.header_len = header.sizeof
        self.clock_offset = _field(header, "clock").bitpos // 8
        self.param_max = _length(_field(_type("EventRecordStruct"), "values").type)
        self.string_max = _length(_field(_type("EventStructIntern"), "string").type) - 1
        self.kind_limit = _length(_global_type("EventThreadBuf"))
        self.slot_limit = _length(_global_type("eventSlots"))


def _read_registry(reg, limits, where):
    """an EventRegistryStruct in the inferior: (name, [(kind, doc)],
    {code: (name, format, parameter names)})"""
    try:
        name = _cstr(reg["name"])
        kind_count = int(reg["kindCount"])
        event_count = int(reg["eventCount"])
        if kind_count > limits.kind_limit or event_count > 0x10000:
            _fail("%s is corrupt: %d kinds, %d events" % (where, kind_count, event_count))
        kinds = []
        for i in range(kind_count):
            k = reg["kinds"][i]
            kinds.append((_cstr(k["name"]) or "K%d" % i, _cstr(k["doc"]) or ""))
        events = {}
        for i in range(event_count):
            e = reg["events"][i]
            fmt = _cstr(e["format"]) or ""
            if fmt == "0":
                fmt = ""
            names = []
            pn = int(e["paramNames"])
            for j in range(min(len(fmt), limits.param_max)):
                names.append(_cstr(e["paramNames"][j]) if pn != 0 else None)
            events[int(e["code"])] = (_cstr(e["name"]) or "?", fmt, names)
    except gdb.MemoryError as err:
        _fail("cannot read %s: %s" % (where, err))
    except gdb.error as err:
        _fail("%s is not what telltale expects: %s" % (where, err))
    return name, kinds, events


class Source(object):
    """a registry in the process (EventSourceStruct): its tables, its
    number, and where its record and control sets are"""

    def __init__(self, value, limits):
        self.name, self.kinds, self.events = _read_registry(
            value["registry"].dereference(), limits, "a registry of the process")
        self.number = int(value["number"])
        self.record = int(value["record"])
        self.control = int(value["control"].address)


class Registry(object):
    """The registries in the process, as the runtime keeps them
    (.reg.many): its slots (eventSlots), each a kind of one registry, read
    out of the inferior's memory.  kinds[slot] is (name, doc) or None for
    a free slot, named as the runtime names it (eventKindName): the
    registry's name before it when there is more than one besides
    telltale's."""

    def __init__(self):
        _inferior()
        slots = _global("eventSlots")
        if slots is None:
            _fail("this program has no telltale runtime: eventSlots is not found "
                  "(is it linked with libtelltale and built with -g?)")
        self.limits = Limits()
        self.sources = {}
        self.slots = []
        try:
            for g in range(self.limits.slot_limit):
                src = int(slots[g]["source"])
                if src == 0:
                    self.slots.append(None)
                    continue
                if src not in self.sources:
                    self.sources[src] = Source(slots[g]["source"].dereference(), self.limits)
                self.slots.append((self.sources[src], int(slots[g]["kind"])))
        except gdb.MemoryError as err:
            _fail("cannot read the runtime's slots: %s" % err)
        clients = len([s for s in self.sources.values() if s.number != 0])
        self.kinds = []
        for entry in self.slots:
            if entry is None:
                self.kinds.append(None)
                continue
            source, kind = entry
            if kind >= len(source.kinds):
                self.kinds.append(("K%d" % kind, ""))
                continue
            name, doc = source.kinds[kind]
            if source.number != 0 and clients > 1:
                name = "%s:%s" % (source.name, name)
            self.kinds.append((name, doc))
        self.name = ", ".join(s.name for s in self.sources.values() if s.number != 0 or clients == 0)
        self.kind_width = max([len(k[0]) for k in self.kinds if k is not None
                               and len(k[0]) <= 2 * EVENT_NAME_MAX + 1] or [0])
        self.name_width = max([len(n) for s in self.sources.values() for n, _, _ in s.events.values()
                               if len(n) <= EVENT_NAME_MAX] or [0])

    def events_of(self, slot):
        """the events of a slot's registry, by code"""
        entry = self.slots[slot] if slot < len(self.slots) else None
        return entry[0].events if entry is not None else {}

    def own(self, slot):
        """is the slot telltale's own kind, which stays on?"""
        entry = self.slots[slot]
        return entry is not None and entry[1] == OWN_KIND

    def slots_named(self, name):
        """the slots a kind name reaches, as the environment names them:
        all, Kind (every registry's), REGISTRY:Kind, REGISTRY:all"""
        reg, _, kind = name.rpartition(":")
        found = []
        for g, entry in enumerate(self.slots):
            if entry is None:
                continue
            source, k = entry
            if reg and source.name != reg:
                continue
            if kind == "all" or (k < len(source.kinds) and source.kinds[k][0] == kind):
                found.append(g)
        return found

    def kind_list(self):
        return ", ".join(["all"] + [k[0] for g, k in enumerate(self.kinds)
                                    if k is not None and not (self.own(g) and self.slots[g][0].number != 0)])


def _word(addr, what):
    """a 4-byte kind set in the inferior"""
    try:
        data = _read(addr, 4)
    except gdb.MemoryError:
        _fail("cannot read %s at 0x%x" % (what, addr))
    return int.from_bytes(data, "big" if _byte_order() == ">" else "little")


def _word_set(addr, bits, what):
    data = (bits & 0xFFFFFFFF).to_bytes(4, "big" if _byte_order() == ">" else "little")
    try:
        gdb.selected_inferior().write_memory(addr, data)
    except (gdb.MemoryError, gdb.error) as err:
        _fail("cannot change %s (%s): only a live process can be changed, "
              "not a core file" % (what, err))
    if _word(addr, what) != bits & 0xFFFFFFFF:
        _fail("%s did not change: is this a live process?" % what)


# Decoding events: the same rules as EventDecode (src/decode/eventdecode.c)

class Corrupt(Exception):
    pass


class Layout(object):
    def __init__(self):
        self.order = _byte_order()
        self.pointer = gdb.lookup_type("void").pointer().sizeof
        try:
            self.word = gdb.lookup_type("EventW").sizeof
        except gdb.error:
            self.word = self.pointer


def _decode(layout, limits, events, data, off):
    """decode the event at data[off:], of a registry's events: (code,
    length, clock, desc, values), None at the end of the data (code 0 or
    too little room for a header), or Corrupt with a sentence saying what
    is wrong"""
    o = layout.order
    header_len = limits.header_len
    if len(data) - off < 2:
        return None
    code, = struct.unpack_from(o + "H", data, off)
    if code == 0:
        return None
    if len(data) - off < header_len:
        raise Corrupt("event header truncated")
    length, = struct.unpack_from(o + "H", data, off + 2)
    clock, = struct.unpack_from(o + "Q", data, off + limits.clock_offset)
    if length < header_len:
        raise Corrupt("event length %d is less than the %d-byte event header" % (length, header_len))
    if length > len(data) - off:
        raise Corrupt("event (length %d) runs past the end of the data" % length)
    desc = events.get(code)
    if desc is None:
        return code, length, clock, None, []
    fmt = desc[1]
    values = []
    pos = header_len
    for i, letter in enumerate(fmt):
        if i >= limits.param_max:
            raise Corrupt("the event's format has more than %d parameters" % limits.param_max)
        type_ = wire.LETTERS.get(letter)
        if type_ is None:
            raise Corrupt("the event's format has an unknown letter")
        if type_["form"] == "string":
            if i + 1 != len(fmt):
                raise Corrupt("the event's format has a string that is not last")
            if length - pos < 1:
                raise Corrupt("event is too short for its format")
            s = data[off + pos:off + length - 1]
            if data[off + length - 1] != 0:
                raise Corrupt("string does not end with a NUL at the end of the event")
            if b"\0" in s:
                raise Corrupt("string has a NUL before the end of the event")
            if len(s) > limits.string_max:
                raise Corrupt("string is longer than EVENT_STRING_MAX (%d)" % limits.string_max)
            values.append(s)
            pos = length
            continue
        size = wire.letter_size(letter, layout.pointer, layout.word)
        if length - pos < size:
            raise Corrupt("event is too short for its format")
        if type_["form"] == "double":
            values.append(struct.unpack_from(o + "d", data, off + pos)[0])
        else:
            values.append(struct.unpack_from(o + ("I" if size == 4 else "Q"), data, off + pos)[0])
        pos += size
    if pos != length:
        raise Corrupt("event is longer than its format")
    return code, length, clock, desc, values


# Formatting: the same line as EventFormat (src/decode/eventformat.c) -------

def _escaped(s):
    if not isinstance(s, (bytes, bytearray)):
        s = s.encode("utf-8", "replace")
    out = []
    for c in bytearray(s):
        if c == 0x22:
            out.append('\\"')
        elif c == 0x5C:
            out.append("\\\\")
        elif c == 0x0A:
            out.append("\\n")
        elif c == 0x09:
            out.append("\\t")
        elif c == 0x0D:
            out.append("\\r")
        elif c < 0x20 or c >= 0x7F:
            out.append("\\%03o" % c)
        else:
            out.append(chr(c))
    return "".join(out)


def _double(d):
    if d != d:
        return "nan"
    return "%.17g" % d


class Clock(object):
    """how clock values become times: hz (0: print cycles), start, realtime"""

    def __init__(self, hz, start, realtime, source):
        self.hz, self.start, self.realtime, self.source = hz, start, realtime, source

    def columns(self, clock):
        negative = clock < self.start
        delta = self.start - clock if negative else clock - self.start
        if self.hz is None:     # no frequency: cycles since the start, no wall clock
            elapsed = ("-" if negative else "+") + "%d" % delta
            return elapsed.rjust(ELAPSED_WIDTH) + " " + "--:--:--.-cycles--"
        if self.hz == 0:
            seconds, ns = delta // NS_PER_SECOND, delta % NS_PER_SECOND
        else:
            seconds = delta // self.hz
            ns = (delta % self.hz) * NS_PER_SECOND // self.hz
        elapsed = ("-" if negative else "") + "%d.%09d" % (seconds, ns)
        total = (seconds * NS_PER_SECOND + ns) & M64
        realtime = (self.realtime - total if negative else self.realtime + total) & M64
        day = realtime // NS_PER_SECOND % 86400
        return "%s %02d:%02d:%02d.%09d" % (elapsed.rjust(ELAPSED_WIDTH), day // 3600,
                                           day // 60 % 60, day % 60, realtime % NS_PER_SECOND)


def _format(registry, clock, labels, ev):
    clk, thread, kind, _, code, length, desc, values = ev
    line = [clock.columns(clk), " ", ("T%d" % thread).ljust(THREAD_WIDTH), " "]
    if kind < len(registry.kinds) and registry.kinds[kind] is not None:
        line.append(registry.kinds[kind][0].ljust(registry.kind_width))
    else:
        line.append(("K%d" % kind).ljust(registry.kind_width))
    line.append(" ")
    if desc is None:
        line.append("? code=0x%04x length=%d" % (code, length))
        return "".join(line)
    name, fmt, names = desc
    if fmt == "":
        line.append(name)
        return "".join(line)
    line.append(name.ljust(registry.name_width))
    for i, letter in enumerate(fmt):
        v = values[i]
        line.append(" %s=" % (names[i] if names[i] is not None else "p%d" % i))
        type_ = wire.LETTERS.get(letter, {"form": None, "hex": 0})
        if type_["hex"]:
            line.append("0x%x" % v)
            label = labels.get(v)
            if label is not None:
                line.append("[%s]" % _escaped(label))
        elif type_["form"] == "unsigned":
            line.append("%d" % v)
        elif type_["form"] == "double":
            line.append(_double(v))
        elif type_["form"] == "string":
            line.append('"%s"' % _escaped(v))
        else:
            line.append("?")
    return "".join(line)


# The flight recorder: every thread's buffers (.sol.ring, .sol.traceback)

def _session():
    session = _global("eventSession")
    if session is None:
        if _global("eventSlots") is None:
            _fail("this program has no telltale runtime: neither eventSlots nor "
                  "the runtime's eventSession is found")
        _fail("the runtime's eventSession is not found: the runtime was built without -g")
    return session


def _warn(message):
    gdb.write("telltale: %s\n" % message, gdb.STDERR)


class _BufferWalk(object):
    """reads and decodes the events of one thread's buffers after
    another into events: a list of (clock, thread, kind, address, code,
    length, desc, values)"""

    def __init__(self, registry, layout, session):
        self.registry = registry
        self.layout = layout
        self.events = []
        self.in_core = _has_core()
        self.core_ranges = _core_ranges() if self.in_core else []
        self.live_wrong = _live_identity(session) if self.in_core else None
        self.live_said = False

    def thread(self, th):
        """every level and kind of a thread (_thread_state)"""
        for level in range(th["level_limit"]):
            for kind in range(th["kind_limit"]):
                self.kind(th, level, kind)

    def kind(self, th, level, kind):
        """a kind's two slots at a level: the older one up to where it
        ended, then the current one up to next.  Each signal level has
        its own buffers (.sol.signal.level): the running level's next is
        in its registry's thread-local buffers, found by hot, the others'
        in saved."""
        serial = th["serial"]
        try:
            kb = th["levels"][level][kind]
            slots = [int(kb["slot"][0]), int(kb["slot"][1])]
            sizes = [int(kb["slotSize"][0]), int(kb["slotSize"][1])]
            current = int(kb["current"])
            previous_end = int(kb["previousEnd"])
            if slots == [0, 0]:
                return
            running = level == th["running"] and th["deeper"] == 0
            if running and int(th["hot"][kind]) == 0:
                nxt_event = 0
            else:
                hot = th["hot"][kind].dereference() if running else th["saved"][level][kind]
                nxt_event = int(hot["next"])
        except (gdb.MemoryError, gdb.error) as err:
            _warn("T%d kind %d: cannot read its buffer state (%s): skipped" % (serial, kind, err))
            return
        kinds = self.registry.kinds
        where = "T%d %s" % (serial, kinds[kind][0] if kind < len(kinds) and kinds[kind] is not None
                            else "K%d" % kind)
        if current not in (0, 1):
            _warn("%s: corrupt buffer state (current slot %d): skipped" % (where, current))
            return
        other = 1 - current
        ranges = []
        if slots[other] != 0 and previous_end != 0:
            ranges.append((slots[other], sizes[other], previous_end))
        if slots[current] != 0 and nxt_event != 0:
            ranges.append((slots[current], sizes[current], nxt_event))
        for base, size, end in ranges:
            start = base + _block_header_len()
            if size > SLOT_SIZE_MAX or not start <= end <= base + size:
                _warn("%s: corrupt buffer at 0x%x: its data end 0x%x is outside it "
                      "(size %d): skipped" % (where, base, end, size))
                continue
            data = self.read(where, base, size, start, end)
            if data is not None:
                self.decode(where, serial, kind, start, data)

    def read(self, where, base, size, start, end):
        """a buffer's data, start to end, or None, said.  A region the
        core left out is read from the live file on disk: only if that
        file is this session's."""
        if self.live_wrong is not None and not any(lo <= base and base + size <= hi
                                                   for lo, hi in self.core_ranges):
            if not self.live_said:
                _warn("the live file's regions are not in this core, and %s: "
                      "they are not read" % self.live_wrong)
                self.live_said = True
            _warn("%s: the buffer at 0x%x-0x%x is not in the core: skipped"
                  % (where, start, end))
            return None
        try:
            return _read(start, end - start)
        except gdb.MemoryError:
            _warn("%s: cannot read the buffer at 0x%x-0x%x: skipped%s"
                  % (where, start, end, "" if not self.in_core else
                     " (a region of the live file is in a core file only if "
                     "bit 3 of /proc/PID/coredump_filter was set, and gdb reads "
                     "it from the log file only while that is where it was; "
                     "its events are in the log)"))
            return None

    def decode(self, where, serial, kind, start, data):
        """the events of a buffer's data, which is at start"""
        off = 0
        while True:
            try:
                ev = _decode(self.layout, self.registry.limits, self.registry.events_of(kind),
                             data, off)
            except Corrupt as why:
                _warn("%s: corrupt event at 0x%x: %s: stopped reading this buffer"
                      % (where, start + off, why))
                break
            if ev is None:
                break
            code, length, clock, desc, values = ev
            self.events.append((clock, serial, kind, start + off, code, length, desc, values))
            off += length


def _thread_state(t):
    """what the walk reads of the EventThreadStruct at t"""
    thread = t.dereference()
    levels = thread["levels"]
    th = {"serial": int(thread["serial"]), "hot": thread["hot"], "levels": levels,
          "saved": thread["saved"], "running": int(thread["level"]),
          "deeper": int(thread["deeper"]), "level_limit": levels.type.range()[1] + 1,
          "kind_limit": levels[0].type.range()[1] + 1, "next": thread["next"]}
    int(th["next"])
    return th


def _events(registry, layout, session):
    """every event in every thread's buffers: a list of
    (clock, thread, kind, address, code, length, desc, values), and the
    number of threads"""
    walk = _BufferWalk(registry, layout, session)
    seen = set()
    threads = 0
    try:
        t = session["threads"]
    except gdb.error as err:
        _fail("the runtime's eventSession is not what this script expects: %s" % err)
    while int(t) != 0:
        addr = int(t)
        if addr in seen or len(seen) >= THREAD_LIMIT:
            _warn("the thread list loops at 0x%x: stopped there" % addr)
            break
        seen.add(addr)
        try:
            th = _thread_state(t)
        except (gdb.MemoryError, gdb.error) as err:
            _warn("cannot read the thread at 0x%x (%s): stopped there" % (addr, err))
            break
        threads += 1
        walk.thread(th)
        t = th["next"]
    return walk.events, threads


def _clock(registry, session, events):
    """the clock: the plinth's frequency from memory, else from ClockSync
    events, else none (cycles)"""
    try:
        start = int(session["startClock"])
        realtime = int(session["startRealtime"])
        monotonic = int(session["startMonotonic"])
    except (gdb.MemoryError, gdb.error) as err:
        _fail("cannot read the session's start (%s)" % err)
    freq = _static("clockFrequency", "plinth.c")
    try:
        hz = int(freq) if freq is not None else 0
    except (gdb.MemoryError, gdb.error):
        hz = 0
    # ClockSync (monotonic, realtime) pairs the clock with CLOCK_MONOTONIC;
    # so does the session's start.  .sol.clock
    points = [(start, monotonic)] if start != 0 and monotonic != 0 else []
    for ev in events:
        desc = ev[6]
        if desc is not None and desc[0] in ("ClockSync", "ClockRate") and desc[1] == "WW":
            points.append((ev[0], ev[7][0]))
    try:
        rate = (int(session["rateClock"]), int(session["rateMonotonic"]))
    except (gdb.MemoryError, gdb.error):
        rate = (0, 0)           # a program before ClockRate
    if hz != 0:
        # The runtime's and the reader's rule (EventClockRate): the
        # ClockRate, else the latest ClockSync, if it is at least
        # SYNC_SPAN after the start pair.  .sol.clock.rate
        if (points or rate[0] != 0) and start != 0:
            c, m = rate if rate[0] != 0 else max(points)
            if m - monotonic >= SYNC_SPAN and c > start:
                hz = (c - start) * NS_PER_SECOND // (m - monotonic)
                return Clock(hz, start, realtime, "%d Hz, from %s" % (
                    hz, "the session's ClockRate" if rate[0] != 0 else "ClockSync events"))
        return Clock(hz, start, realtime, "%d Hz, the plinth's estimate, from memory" % hz)
    # A ClockSync's clock is read after its monotonic time, sometimes
    # long after (a thread's first event takes the slow path in between),
    # so each later point gives an upper bound on the frequency: the
    # least is the best.
    points.sort()
    if points:
        c0, m0 = points[0]
        bounds = [(c - c0) * NS_PER_SECOND // (m - m0) for c, m in points[1:]
                  if m - m0 >= SYNC_SPAN_MIN and c > c0]
        if bounds:
            hz = min(bounds)
            return Clock(hz, start, realtime, "%d Hz, from ClockSync events" % hz)
    return Clock(None, start, realtime,
                 "frequency unknown: times are cycles since the session's start")


def _block_header_len():
    """a block header's size, from the program's debug info"""
    try:
        return gdb.lookup_type("EventBlockHeaderStruct").sizeof
    except gdb.error:
        return EVENT_BLOCK_HEADER_LEN


def _fields(value_type):
    """{field name: byte offset} of a struct type"""
    return dict((f.name, f.bitpos // 8) for f in value_type.strip_typedefs().fields())


class Labels(object):
    """address -> label, as EventDump finds them: event.c's static table
    of the latest labels (labels) and the intern table (eventSession.interns).
    A runtime without that table: from the Intern and Label events in the
    buffers instead.  Strings are read only when an address needs one."""

    def __init__(self, session, events, layout, limits):
        self.ids = {}           # address -> id
        self.strings = {}       # id -> string, or address of the string
        self.string_max = limits.string_max
        order = "big" if layout.order == ">" else "little"
        table = _static("labels", "event.c")
        if table is None:
            self._from_events(events)
            return
        try:
            entry = table.type.strip_typedefs().target()
            offsets = _fields(entry)
            n = table.type.sizeof // entry.sizeof
            data = _read(int(table.address), table.type.sizeof)
            a, i = offsets["address"], offsets["id"]
            asz, isz = entry["address"].type.sizeof, entry["id"].type.sizeof
            for k in range(n):
                base = k * entry.sizeof
                address = int.from_bytes(data[base + a:base + a + asz], order)
                if address != 0:
                    self.ids[address] = int.from_bytes(data[base + i:base + i + isz], order)
            interns = session["interns"]
            size = int(session["internSize"])
            if int(interns) != 0 and 0 < size <= (1 << 24):
                entry = interns.type.strip_typedefs().target()
                offsets = _fields(entry)
                data = _read(int(interns), size * entry.sizeof)
                sp, ip = offsets["string"], offsets["id"]
                psz, isz = entry["string"].type.sizeof, entry["id"].type.sizeof
                for k in range(size):
                    base = k * entry.sizeof
                    string = int.from_bytes(data[base + sp:base + sp + psz], order)
                    if string != 0:
                        ident = int.from_bytes(data[base + ip:base + ip + isz], order)
                        self.strings.setdefault(ident, string)
        except (gdb.MemoryError, gdb.error, KeyError, ValueError) as err:
            _warn("cannot read the runtime's labels (%s): addresses are not labelled" % err)
            self.ids, self.strings = {}, {}

    def _from_events(self, events):
        for ev in sorted(events, key=lambda e: e[0]):
            desc = ev[6]
            if desc is None:
                continue
            if desc[0] == "Intern" and desc[1] == "WS":
                self.strings[ev[7][0]] = ev[7][1]
            elif desc[0] == "Label" and desc[1] == "AW":
                self.ids[ev[7][0]] = ev[7][1]

    def get(self, address):
        if address == 0 or address not in self.ids:
            return None
        string = self.strings.get(self.ids[address])
        if isinstance(string, int):
            try:
                string = _cstr(string, self.string_max + 1, raw=True)
            except gdb.GdbError:
                string = None
            self.strings[self.ids[address]] = string
        return string


# The commands -----------------------------------------------------------

def _guarded(invoke):
    """run a command; anything unexpected becomes a gdb error, not a traceback"""
    def run(self, arg, from_tty):
        try:
            return invoke(self, arg, from_tty)
        except gdb.GdbError:
            raise
        except KeyboardInterrupt:
            raise gdb.GdbError("telltale: interrupted")
        except Exception as err:    # a corrupt runtime can surprise us anywhere
            raise gdb.GdbError("telltale: cannot do that: %s: %s" % (type(err).__name__, err))
    return run


class TelltaleCommand(gdb.Command):
    """Examine and control telltale telemetry in a live process or a core file.

telltale kinds
    List the kinds of every registry in the process (the program's and
    each library's, .reg.many): slot, name, whether it is recorded,
    whether its output is on, and its doc.  A kind is "registry:Kind"
    when the process has more than one registry besides telltale's.

telltale on KIND...
telltale off KIND...
    Turn the output of kinds on or off, at once in a live process
    (EventKindsSwitch), else by writing their registries' control sets,
    which takes effect when a buffer fills or is flushed.  A kind whose
    output is off is still recorded, into its ring of two buffers (the
    flight recorder), and is not written to the log.  KIND is a kind's
    name (every registry's kind of that name), "registry:Kind" (one
    registry's), "registry:all" or "all"; names may be separated by
    spaces or commas.  The Telltale kind can't be turned off: the runtime keeps it
    on, because its Intern, Label, ClockSync and thread events are needed
    to read the rest ("off all" leaves it on).

telltale record on KIND...
telltale record off KIND...
    The same for recording: a kind not recorded is not even buffered.

telltale dump [N]
    Print the latest N events (default 20) in every thread's buffers,
    whether their output is on or off, merged in time order, oldest
    first, in the line format of eventcnv and EventDump:
        ELAPSED WALLCLOCK THREAD KIND EVENT name=value ...
    A P or A value is followed by [label] if the address is labelled,
    from the runtime's table of labels, as EventDump does (or, with a
    runtime that has none, from the Intern and Label events found).
    It reads the buffers out of memory by walking the runtime's session, and
    decodes them in Python with the registry read from the program.  It
    makes no calls into the program, so it works on a core file.
    ELAPSED is seconds since the session started, with the plinth's
    clock frequency read from memory (plinth.c's clockFrequency), as
    EventDump prints it; if that is not known, with a frequency worked
    out from the ClockSync events in the buffers and the session's start
    (each gives an upper bound, as its clock is read after its monotonic
    time; the least is used);
    if that fails too, ELAPSED is "+CYCLES", clock cycles since the
    start, and the wall clock is not shown.  The first line says which.
    A buffer that cannot be read or holds a corrupt event is reported
    and skipped from that point; the others are still printed.
    In a core file, a kind whose output is on has its buffers in regions
    of the live file; a core holds those only if bit 3 of the process's
    /proc/PID/coredump_filter was set (e.g. echo 0x3b > .../coredump_filter
    before gcore or the crash).  Otherwise their events are in the log.

Nothing here calls the program: "call EventDump(20)" does the same as
"telltale dump" in a live process, through the program, to its stderr."""

    def __init__(self):
        super(TelltaleCommand, self).__init__("telltale", gdb.COMMAND_DATA, gdb.COMPLETE_NONE, True)

    @_guarded
    def invoke(self, arg, from_tty):
        gdb.execute("help telltale", from_tty)


def _on_off(word):
    if word == "on":
        return True
    if word == "off":
        return False
    _fail("say on or off, not '%s'" % word)


def _kind_slots(registry, args, off):
    """the slots of the kinds named in args (as the environment names
    them), and the names; telltale's own kind cannot be asked off"""
    names = [n for n in args.replace(",", " ").split() if n]
    if not names:
        _fail("name at least one kind; the kinds are %s" % registry.kind_list())
    slots = []
    for name in names:
        found = registry.slots_named(name)
        if not found:
            _fail("unknown kind '%s'; the kinds are %s" % (name, registry.kind_list()))
        if off and name != "all" and not name.endswith(":all") and all(registry.own(g) for g in found):
            _fail("the %s kind can't be turned off: the runtime keeps it on, because "
                  "its Intern, Label, ClockSync and thread events are needed to read "
                  "the rest (design/control.txt .sol.control.own)" % name)
        slots.extend(g for g in found if g not in slots)
    return slots, names


def _switch_call(names, output, on):
    """Output or recording changed by a call of EventKindsSwitch in the
    live process, so that it takes effect at once in every thread
    (.sol.control.cut): True if it was.  Not on a core file, nor where
    the selected thread is inside telltale's lock (the call would
    re-enter it)."""
    inf = gdb.selected_inferior()
    if inf is None or inf.pid == 0:
        return False
    try:
        if int(gdb.parse_and_eval("lockDepth")) != 0:
            return False
    except gdb.error:
        pass
    spec = ",".join(names).replace("\\", "").replace('"', "")
    try:
        res = int(gdb.parse_and_eval('(int)EventKindsSwitch("%s", %d, %d, (char *)0, 0)'
                                     % (spec, 1 if output else 0, 1 if on else 0)))
        return res == 0
    except gdb.error:
        return False


def _change(output, args, on):
    registry = Registry()
    slots, names = _kind_slots(registry, args, not on)
    what = "output" if output else "recording"

    def bits():
        return dict((g, _word(registry.slots[g][0].control if output else registry.slots[g][0].record,
                              what) >> registry.slots[g][1] & 1) for g in slots)
    old = bits()
    if not _switch_call(names, output, on):
        for g in slots:
            source, kind = registry.slots[g]
            addr = source.control if output else source.record
            word = _word(addr, what)
            if on:
                word |= 1 << kind
            elif kind != OWN_KIND:
                word &= ~(1 << kind)
            _word_set(addr, word, what)
        if output:
            gdb.write("telltale: written to memory: it takes effect at each thread's next "
                      "full buffer or flush (.sol.control.cut)\n")
    new = bits()
    changed = [registry.kinds[g][0] for g in slots if on or not registry.own(g)]
    gdb.write("%s %s: %s (%d of %d were on, now %d)\n"
              % (what, "on" if on else "off", ", ".join(changed), sum(old.values()), len(slots),
                 sum(new.values())))
    if not on and any(registry.own(g) for g in slots):
        gdb.write("telltale: Telltale stays on: the runtime keeps it on (.sol.control.own)\n")


class TelltaleKinds(gdb.Command):
    """List the kinds of every registry in the process: slot, name, recorded, output, doc.
A kind is "registry:Kind" when the process has more than one registry besides telltale's."""

    def __init__(self):
        super(TelltaleKinds, self).__init__("telltale kinds", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

    @_guarded
    def invoke(self, arg, from_tty):
        registry = Registry()
        width = max(registry.kind_width, 4)
        gdb.write("registries \"%s\": %d kinds\n"
                  % (registry.name or "", len([k for k in registry.kinds if k is not None])))
        gdb.write("%3s  %-*s  %-6s  %-6s  %s\n" % ("#", width, "kind", "record", "output", "doc"))
        for g, entry in enumerate(registry.slots):
            if entry is None or (entry[0].number != 0 and entry[1] == OWN_KIND):
                continue        # telltale's own kind is the first registry's
            source, kind = entry
            name, doc = registry.kinds[g]
            record = _word(source.record, "recording")
            control = _word(source.control, "output")
            gdb.write("%3d  %-*s  %-6s  %-6s  %s\n" % (
                g, width, name, "on" if record >> kind & 1 else "off",
                "on" if control >> kind & 1 else "off", doc))


class TelltaleOn(gdb.Command):
    """Turn output on for kinds: telltale on KIND... (or all; alloc:Pool for one registry's)."""

    def __init__(self):
        super(TelltaleOn, self).__init__("telltale on", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

    @_guarded
    def invoke(self, arg, from_tty):
        _change(True, arg, True)


class TelltaleOff(gdb.Command):
    """Turn output off for kinds: telltale off KIND... (or all; alloc:Pool for one registry's).
Their events are still recorded, into the flight recorder.  Telltale cannot be turned off."""

    def __init__(self):
        super(TelltaleOff, self).__init__("telltale off", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

    @_guarded
    def invoke(self, arg, from_tty):
        _change(True, arg, False)


class TelltaleRecord(gdb.Command):
    """Turn recording on or off for kinds: telltale record on|off KIND... (or all).
Telltale cannot be turned off."""

    def __init__(self):
        super(TelltaleRecord, self).__init__("telltale record", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

    @_guarded
    def invoke(self, arg, from_tty):
        words = arg.split(None, 1)
        if not words:
            _fail("usage: telltale record on|off KIND...")
        _change(False, words[1] if len(words) > 1 else "", _on_off(words[0]))


class TelltaleDump(gdb.Command):
    """Print the latest N events (default 20) of every thread, oldest first: telltale dump [N].
Reads and decodes the buffers out of memory; makes no calls, so it works on a core file.
See "help telltale" for the clock and for core files."""

    def __init__(self):
        super(TelltaleDump, self).__init__("telltale dump", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

    @_guarded
    def invoke(self, arg, from_tty):
        arg = arg.strip()
        count = DUMP_DEFAULT
        if arg:
            try:
                count = int(arg, 0)
            except ValueError:
                count = -1
            if count < 0:
                _fail("usage: telltale dump [N], N a count of events, not '%s'" % arg)
        _inferior()
        registry = Registry()
        layout = Layout()
        session = _session()
        events, threads = _events(registry, layout, session)
        clock = _clock(registry, session, events)
        labels = Labels(session, events, layout, registry.limits)
        events.sort(key=lambda e: (e[0], e[1], e[2], e[3]))
        latest = events[len(events) - count:] if count > 0 else []
        gdb.write("telltale: the last %d of %d events in the buffers of %d threads, "
                  "oldest first (clock: %s):\n" % (len(latest), len(events), threads, clock.source))
        for ev in latest:
            gdb.write(_format(registry, clock, labels, ev) + "\n")


TelltaleCommand()
TelltaleKinds()
TelltaleOn()
TelltaleOff()
TelltaleRecord()
TelltaleDump()
