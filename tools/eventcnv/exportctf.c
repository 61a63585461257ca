/* <tools/eventcnv/exportctf.c> -- a CTF 1.8 trace directory
 *
 * .design: design/export.txt .export.ctf
 *
 * OUT/metadata is the trace's TSDL: an event class per registry event,
 * its fields typed by letter, and a clock counting ns from the stream's
 * start, offset to its wall time.  Everything is little-endian and
 * byte-aligned, and an event is laid out as telltale's own (code,
 * length, clock, fields at the log's sizes), its clock made ns and its
 * length the ns's low 16 bits.  Field
 * names get a leading _ (which readers drop), so a parameter may be
 * named like a TSDL keyword (align, string).
 *
 * A sound little-endian log with no filter is copied block by block
 * (ExportCtfBlocks): OUT/stream_T_K_L holds the sequence of thread T, kind K
 * and signal level L, each packet blocks of it copied whole, only each
 * event's clock rewritten.  Otherwise each event is written on its own
 * (ctfEvent): OUT/stream_T_K holds thread T's events of kind K.  Packets
 * are at most PACKET_SIZE bytes (or a block), written as each fills; a
 * packet's context names its kind, thread, OS thread id and thread name
 * (design/export.txt .export.ctf.thread).
 */

#define _POSIX_C_SOURCE 200809L   /* openat, fdopendir, O_DIRECTORY */

#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#define PACKET_SIZE ((size_t)1 << 18)       /* the largest packet */
#define BUFFERED_MAX ((size_t)64 << 20)     /* packets held, all threads */
#define CTF_MAGIC 0xC1FC1FC1u
#define PACKET_HEADER_SIZE 54     /* magic, stream_id; content_size, packet_size,
                                     timestamp_begin, timestamp_end, thread, kind,
                                     tid; then the thread's name and its NUL */
#define NS_PER_SECOND 1000000000u

/* CtfThreadStruct -- what a packet's context says of its thread: the
 * OS id of its ThreadStart and the name of its latest ThreadName, by
 * clock (threadsFind finds them before the first packet); 0 and "" where
 * the log has none.  design/export.txt .export.ctf.thread */
typedef struct CtfThreadStruct {
  uint64_t osid;
  char *name;                   /* NULL: none */
  size_t nameLength;
  EventClock nameClock;
  struct CtfStreamStruct *streams;  /* the thread's, a kind each (ctfEvent) */
} CtfThreadStruct;

/* CtfStreamStruct -- a thread's stream of one kind: its packet being
 * filled.  The file is opened for each packet written, so a log of many
 * threads needs no more than one file descriptor; a packet grows as it
 * fills, and when all of them hold BUFFERED_MAX bytes they are all
 * written. */
typedef struct CtfStreamStruct {
  uint32_t thread;
  unsigned kind;
  const CtfThreadStruct *info;
  size_t head;                  /* its packets' header and context bytes */
  struct CtfStreamStruct *sibling;  /* the thread's next kind */
  unsigned char *packet;
  size_t used, size;            /* bytes in packet, its header included; allocated */
  uint64_t begin, end;          /* the packet's first and last timestamps */
  struct CtfStreamStruct *next; /* every stream, for the end */
} CtfStreamStruct;

typedef struct CtfStruct {
  CtfStreamStruct *streams;
  CtfStreamStruct *last;        /* the last event's stream: the next's is likely it */
  size_t buffered;              /* bytes in every packet */
  int dir;                      /* the output directory */
  int failed;
  unsigned char size[32];       /* by letter & 31: a P, A, W, U or D field's bytes */
  int byIndex;                  /* event class ids are indexes (ctfId) */
} CtfStruct;

static CtfStruct ctf;

/* putLe -- v's n low bytes at p, little-endian: one store on a
 * little-endian machine, where EventStore's loop is a store a byte.
 * design/export.txt .export.ctf.fast */
static inline void putLe(unsigned char *p, uint64_t v, unsigned n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(p, &v, n);
#else
  EventStore(p, v, n, 0);
#endif
}

static int ctfFail(ExportStruct *ex, CtfStruct *state, const char *what, int err)
{
  if (!state->failed)
    fprintf(stderr, "eventcnv: cannot write %s%s%s: %s\n", ex->outPath, what[0] != '\0' ? "/" : "",
            what, strerror(err));
  state->failed = 1;
  return 1;
}

static int writeAll(int fd, const unsigned char *p, size_t n)
{
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* writeMetadata -- the TSDL.  design/export.txt .export.ctf */
/* ctfId -- an event class's id: its code, or where a registry's code
 * has its number above it (several registries, .stream.header.registries),
 * too wide for the header's 16 bits, its index in the registry; then no
 * block is copied whole, as its events carry their own codes.
 * design/export.txt .export.ctf.header */
static int idsByIndex(const EventRegistryStruct *registry)
{
  for (unsigned i = 0; i < registry->eventCount; ++i)
    if (registry->events[i].code > 0xFFFF)
      return 1;
  return 0;
}

static unsigned ctfId(const EventRegistryStruct *registry, const EventDescStruct *desc)
{
  return idsByIndex(registry) ? (unsigned)(desc - registry->events) : desc->code;
}

static int writeMetadata(ExportStruct *ex, CtfStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  const EventStreamInfoStruct *info = ex->info;
  ExportOutStruct m;
  int fd, err;
  memset(&m, 0, sizeof m);
  m.fd = -1;
  ExportPutString(&m,
    "/* CTF 1.8 */\n"
    "/* Written by telltale's eventcnv --format ctf */\n\n"
    "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
    "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
    "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
    "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
    "typealias integer { size = 32; align = 8; signed = false; base = 16; } := hex32_t;\n"
    "typealias integer { size = 64; align = 8; signed = false; base = 16; } := hex64_t;\n"
    "typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := double_t;\n\n"
    "trace {\n  major = 1;\n  minor = 8;\n  byte_order = le;\n"
    "  packet.header := struct { uint32_t magic; uint32_t stream_id; };\n};\n\n"
    "env {\n  procname = ");
  ExportPutJsonString(&m, info->program, strlen(info->program));
  ExportPutString(&m, ";\n  vpid = ");
  ExportPutUnsigned(&m, info->pid);
  ExportPutString(&m, ";\n  telltale_registry = ");
  ExportPutJsonString(&m, registry->name, strlen(registry->name));
  ExportPutString(&m, ";\n};\n\n"
    "clock {\n  name = telltale;\n  description = \"ns since the stream started\";\n"
    "  freq = 1000000000;\n  offset_s = ");
  ExportPutUnsigned(&m, info->startRealtime / 1000000000u);
  ExportPutString(&m, ";\n  offset = ");
  ExportPutUnsigned(&m, info->startRealtime % 1000000000u);
  ExportPutString(&m, ";\n  absolute = true;\n};\n\n"
    "typealias integer { size = 16; align = 8; signed = false; map = clock.telltale.value; }"
    " := clock16_t;\n"
    "typealias integer { size = 64; align = 8; signed = false; map = clock.telltale.value; }"
    " := clock_t;\n\n"
    "typealias enum : uint16_t {");
  /* design/export.txt .export.ctf.thread */
  for (unsigned k = 0; k < registry->kindCount; ++k) {
    ExportPutString(&m, k > 0 ? ",\n  " : "\n  ");
    ExportPutJsonString(&m, registry->kinds[k].name, strlen(registry->kinds[k].name));
    ExportPutString(&m, " = ");
    ExportPutUnsigned(&m, k);
  }
  ExportPutString(&m, "\n} := kind_t;\n\n"
    "stream {\n  id = 0;\n"
    "  packet.context := struct { uint64_t content_size; uint64_t packet_size;"
    " clock_t timestamp_begin; clock_t timestamp_end; uint32_t thread; kind_t kind;"
    " uint64_t tid; string thread_name; };\n"
    /* design/export.txt .export.ctf.header */
    "  /* telltale's event header, its length replaced by the time's low bits */\n"
    "  event.header := struct { uint16_t id; clock16_t timestamp_low; clock_t timestamp; };\n};\n");
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    ExportPutString(&m, "\nevent {\n  name = ");
    ExportPutJsonString(&m, desc->name, strlen(desc->name));
    ExportPutString(&m, ";\n  id = ");
    ExportPutUnsigned(&m, ctfId(registry, desc));
    ExportPutString(&m, ";\n  stream_id = 0;\n  fields := struct {");
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      const EventTypeStruct *type = EventTypeOf(desc->format[p]);
      int wide = EventTypeSize(type, info->layout.pointerSize, info->layout.wordSize) == 8;
      ExportPutString(&m, type->form == EventTypeSTRING ? " string _"
                      : type->form == EventTypeDOUBLE ? " double_t _"
                      : type->hex ? (wide ? " hex64_t _" : " hex32_t _")
                      : wide ? " uint64_t _" : " uint32_t _");
      ExportPutString(&m, desc->paramNames[p]);
      ExportPutChar(&m, ';');
    }
    ExportPutString(&m, " };\n};\n");
  }
  if (m.err != 0) {
    free(m.buf);
    return ctfFail(ex, state, "metadata", m.err);
  }
  fd = openat(state->dir, "metadata", O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    free(m.buf);
    return ctfFail(ex, state, "metadata", errno);
  }
  err = writeAll(fd, (unsigned char *)m.buf, m.used);
  free(m.buf);
  if (close(fd) != 0 && err == 0)
    err = errno;
  return err != 0 ? ctfFail(ex, state, "metadata", err) : 0;
}

/* headSize -- the bytes of a packet's header and context on stream */
static size_t headSize(const CtfThreadStruct *info)
{
  return PACKET_HEADER_SIZE + info->nameLength + 1;
}

/* seal -- a packet's header and context, for used bytes of it (the
 * first headSize(stream->info) of which are kept for them) */
static void seal(unsigned char *packet, size_t used, const CtfStreamStruct *stream, uint64_t begin,
                 uint64_t end)
{
  EventStore(packet, CTF_MAGIC, 4, 0);
  EventStore(packet + 4, 0, 4, 0);
  EventStore(packet + 8, (uint64_t)used * 8, 8, 0);
  EventStore(packet + 16, (uint64_t)used * 8, 8, 0);
  EventStore(packet + 24, begin, 8, 0);
  EventStore(packet + 32, end, 8, 0);
  EventStore(packet + 40, stream->thread, 4, 0);
  EventStore(packet + 44, stream->kind, 2, 0);
  EventStore(packet + 46, stream->info->osid, 8, 0);
  if (stream->info->nameLength > 0)
    memcpy(packet + PACKET_HEADER_SIZE, stream->info->name, stream->info->nameLength);
  packet[PACKET_HEADER_SIZE + stream->info->nameLength] = 0;
}

/* flushPacket -- write thread's packet, its sizes and times filled in */
static int flushPacket(ExportStruct *ex, CtfStruct *state, CtfStreamStruct *stream)
{
  char name[32];
  int fd, err;
  if (stream->used <= stream->head)
    return 0;
  seal(stream->packet, stream->used, stream, stream->begin, stream->end);
  snprintf(name, sizeof name, "stream_%lu_%u", (unsigned long)stream->thread, stream->kind);
  fd = openat(state->dir, name, O_WRONLY | O_CREAT | O_APPEND, 0666);
  if (fd < 0)
    return ctfFail(ex, state, name, errno);
  err = writeAll(fd, stream->packet, stream->used);
  if (close(fd) != 0 && err == 0)
    err = errno;
  state->buffered -= stream->used;
  stream->used = 0;
  return err != 0 ? ctfFail(ex, state, name, err) : 0;
}

/* roomFor -- room for need more bytes in stream's packet: it grows, or is
 * written when full (or when every packet together is too big) */
static int roomFor(ExportStruct *ex, CtfStruct *state, CtfStreamStruct *stream, size_t need)
{
  if (stream->used + need > PACKET_SIZE && flushPacket(ex, state, stream) != 0)
    return 1;
  if (state->buffered + need > BUFFERED_MAX)
    for (CtfStreamStruct *s = state->streams; s != NULL; s = s->next)
      if (flushPacket(ex, state, s) != 0)
        return 1;
  if (stream->head + stream->used + need > stream->size) {
    size_t size = stream->size > 0 ? stream->size : 4096;
    while (size < stream->head + stream->used + need)
      size *= 2;
    unsigned char *bigger = realloc(stream->packet, size);
    if (bigger == NULL)
      return ctfFail(ex, state, "", ENOMEM);
    stream->packet = bigger;
    stream->size = size;
  }
  return 0;
}

/* threadInfo -- what ex's thread table keeps for serial in a CTF packet's
 * context; NULL (said) if out of memory */
static CtfThreadStruct *threadInfo(ExportStruct *ex, CtfStruct *state, uint32_t serial)
{
  ExportThreadStruct *thread = ExportThread(ex, serial);
  if (thread == NULL)
    return ctfFail(ex, state, "", ENOMEM), NULL;
  if (thread->writer == NULL && (thread->writer = calloc(1, sizeof(CtfThreadStruct))) == NULL)
    return ctfFail(ex, state, "", ENOMEM), NULL;
  return thread->writer;
}

/* threadsFind -- each thread's OS id (its ThreadStart) and name (its
 * latest ThreadName by clock) from telltale's own kind's blocks, before
 * any packet is written: a packet's context names its thread, and its
 * events may come before the ThreadName that does.  0, or 1 said.
 * design/export.txt .export.ctf.thread */
static int threadsFind(ExportStruct *ex, CtfStruct *state)
{
  size_t count = EventStreamBlockCount(ex->stream);
  unsigned big = ex->info->layout.bigEndian, word = ex->info->layout.wordSize;
  for (size_t i = 0; i < count; ++i) {
    EventStreamBlockStruct block;
    const unsigned char *p, *limit;
    EventStreamBlock(ex->stream, i, &block);
    if (block.kind != 0)        /* telltale's own kind (.stream.header.registries) */
      continue;
    for (p = block.data, limit = p + block.size; limit - p >= EVENT_HEADER_LEN; ) {
      unsigned code = (unsigned)EventLoad(p, 2, big), length = (unsigned)EventLoad(p + 2, 2, big);
      EventClock clock = EventLoad(p + 4, 8, big);
      CtfThreadStruct *info;
      if (length < EVENT_HEADER_LEN || length > (size_t)(limit - p))
        break;                  /* cannot be: the index checked every event */
      if ((code == EVENT_CODE_THREAD_START && length >= EVENT_HEADER_LEN + 4 + word)
          || (code == EVENT_CODE_THREAD_NAME && length > EVENT_HEADER_LEN + 4)) {
        if ((info = threadInfo(ex, state, (uint32_t)EventLoad(p + EVENT_HEADER_LEN, 4, big))) == NULL)
          return 1;
        if (code == EVENT_CODE_THREAD_START)
          info->osid = EventLoad(p + EVENT_HEADER_LEN + 4, word, big);
        else if (info->name == NULL || clock >= info->nameClock) {
          const unsigned char *s = p + EVENT_HEADER_LEN + 4;
          size_t n = strnlen((const char *)s, length - EVENT_HEADER_LEN - 4);
          char *name = malloc(n + 1);
          if (name == NULL)
            return ctfFail(ex, state, "", ENOMEM);
          memcpy(name, s, n);
          name[n] = '\0';
          free(info->name);
          info->name = name;
          info->nameLength = n;
          info->nameClock = clock;
        }
      }
      p += length;
    }
  }
  return 0;
}

static CtfStreamStruct *streamOf(ExportStruct *ex, CtfStruct *state, uint32_t serial, unsigned kind)
{
  CtfThreadStruct *info = threadInfo(ex, state, serial);
  CtfStreamStruct *stream;
  if (info == NULL)
    return NULL;
  for (stream = info->streams; stream != NULL; stream = stream->sibling)
    if (stream->kind == kind)
      return stream;
  stream = calloc(1, sizeof *stream);
  if (stream == NULL)
    return ctfFail(ex, state, "", ENOMEM), NULL;
  stream->thread = serial;
  stream->kind = kind;
  stream->info = info;
  stream->head = headSize(info);
  stream->sibling = info->streams;
  info->streams = stream;
  stream->next = state->streams;
  state->streams = stream;
  return stream;
}

static int ctfBegin(ExportStruct *ex)
{
  CtfStruct *state = &ctf;
  DIR *d;
  struct dirent *entry;
  memset(state, 0, sizeof *state);
  state->dir = -1;
  for (unsigned i = 0; i < 32; ++i)
    state->size[i] = (unsigned char)EventTypeSize(&EventTypes[i], ex->info->layout.pointerSize,
                                                  ex->info->layout.wordSize);
  state->byIndex = idsByIndex(ex->registry);
  ex->state = state;
  /* A new or empty directory: a trace is all the files in it. */
  if (mkdir(ex->outPath, 0777) != 0 && errno != EEXIST)
    return ctfFail(ex, state, "", errno);
  state->dir = open(ex->outPath, O_RDONLY | O_DIRECTORY);
  if (state->dir < 0)
    return ctfFail(ex, state, "", errno);
  d = fdopendir(dup(state->dir));
  if (d == NULL)
    return ctfFail(ex, state, "", errno);
  while ((entry = readdir(d)) != NULL)
    if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
      closedir(d);
      fprintf(stderr, "eventcnv: %s is not empty: give --format ctf a new or empty directory\n",
              ex->outPath);
      state->failed = 1;
      return 1;
    }
  closedir(d);
  return writeMetadata(ex, state) != 0 || threadsFind(ex, state) != 0;
}

static int ctfEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  CtfStruct *state = ex->state;
  const EventDescStruct *desc = rec->desc;
  CtfStreamStruct *stream = state->last != NULL && state->last->thread == rec->thread
    && state->last->kind == rec->kind ? state->last : streamOf(ex, state, rec->thread, rec->kind);
  int64_t elapsed = ExportElapsedNs(ex, rec->clock);
  uint64_t ts = elapsed > 0 ? (uint64_t)elapsed : 0;   /* the clock starts at 0 */
  size_t need = EVENT_HEADER_LEN + (size_t)desc->paramCount * 8 + rec->stringLength + 1;
  unsigned char *p;
  (void)seq;
  if (stream == NULL || roomFor(ex, state, stream, need) != 0)
    return 1;
  state->last = stream;
  if (stream->used == 0) {
    stream->used = stream->head;
    state->buffered += stream->head;
    stream->begin = ts;
  }
  stream->end = ts;
  p = stream->packet + stream->used;
  putLe(p, state->byIndex ? (uint64_t)(desc - ex->registry->events) : desc->code, 2);
  putLe(p + 2, ts, 2);
  putLe(p + 4, ts, 8);
  p += EVENT_HEADER_LEN;
  for (unsigned i = 0; i < desc->paramCount; ++i) {
    const EventValueUnion *v = &rec->values[i];
    char letter = desc->format[i];
    if (letter == 'S') {        /* the last */
      memcpy(p, v->s, rec->stringLength);
      p += rec->stringLength;
      *p++ = 0;
      break;
    }
    /* Eight bytes (D's bits are the union's), of which a field of 4 is
     * the low ones: the next field, or need's 8 a field, takes the rest. */
    putLe(p, v->u, 8);
    p += state->size[letter & 31];
  }
  state->buffered += (size_t)(p - stream->packet) - stream->used;
  stream->used = (size_t)(p - stream->packet);
  return 0;
}

/* CtfClockStruct -- the stream's clock, for ctfNs */
typedef struct CtfClockStruct {
  const ExportStruct *ex;
  EventClock start;
  uint64_t hz;                  /* 0: the clock counts ns */
  double nsPerTick;
} CtfClockStruct;

/* ctfNs -- ctfEvent's time of an event at clock value, exactly:
 * floor(ticks * 10^9 / hz), guessed in a double and made exact by at
 * most one step, which the remainder (from 128-bit products, no
 * division) says; where one step would not do, ExportElapsedNs's own.
 * design/export.txt .export.ctf.time */
static inline uint64_t ctfNs(const CtfClockStruct *clock, EventClock value)
{
  uint64_t ticks = value - clock->start, hz = clock->hz;
  int64_t elapsed;
  if (value <= clock->start)
    return 0;
  if (ticks < (uint64_t)1 << 52) {
    if (hz == 0)
      return ticks;
    if (hz >= 1000000) {
      uint64_t q = (uint64_t)((double)ticks * clock->nsPerTick);
      unsigned __int128 num = (unsigned __int128)ticks * NS_PER_SECOND;
      unsigned __int128 prod = (unsigned __int128)q * hz;
      if (prod > num) {
        --q;
        prod -= hz;
      } else if (num - prod >= hz) {
        ++q;
        prod += hz;
      }
      if (prod <= num && num - prod < hz)
        return q;
    }
  }
  elapsed = ExportElapsedNs(clock->ex, value);
  return elapsed > 0 ? (uint64_t)elapsed : 0;
}

/* copiesWhole -- whether the log may be copied block by block: every block
 * read, none cut, damaged or foreign, little-endian as CTF here is.
 * design/export.txt .export.ctf.fallback */
static int copiesWhole(ExportStruct *ex)
{
  const EventStreamInfoStruct *info = ex->info;
  size_t count;
  EventStreamBlockStruct block;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  return 0;                     /* the loads below are the machine's */
#endif
  if (info->layout.bigEndian || info->doubleFormat != 1 || info->stopped || info->badBlocks > 0
      || info->skippedBytes > 0 || info->missingBlocks > 0 || info->duplicateBlocks > 0
      || info->misorderedBlocks > 0 || EventStreamProblemCount(ex->stream) > 0
      || idsByIndex(ex->registry))
    return 0;
  count = EventStreamBlockCount(ex->stream);
  for (size_t i = 0; i < count; ++i) {
    EventStreamBlock(ex->stream, i, &block);
    if (block.cut || block.kind >= ex->registry->kindCount)
      return 0;
  }
  return count > 0;
}

/* copyBlock -- block's events after used bytes of packet (which has
 * room): each event's clock made ns in place, and unknown events
 * (known[code] 0) taken out.  Returns the bytes used after it; *begin
 * is set if *empty, and then *empty cleared; *end is the last time.
 * *latest is the sequence's latest clock: an event stamped before it
 * is given it, and said (EventStreamClockBack), as the merge does, so
 * that no stream goes back in time.  design/stream.txt
 * .stream.order.back */
static size_t copyBlock(ExportStruct *ex, unsigned char *packet, size_t used,
                        const EventStreamBlockStruct *block, const unsigned char *known,
                        const CtfClockStruct *clock, int *empty, uint64_t *begin, uint64_t *end,
                        EventClock *latest)
{
  unsigned char *p = packet + used, *limit = p + block->size;
  CtfClockStruct c = *clock;    /* locals, which stores to p cannot change */
  uint64_t first = 0, last = *end;
  EventClock high = *latest;
  size_t at = 0;                /* p's event's place in block->data */
  int none = *empty;
  memcpy(p, block->data, block->size);
  while (p < limit) {
    uint16_t code, length;
    uint64_t value;
    memcpy(&code, p, 2);
    memcpy(&length, p + 2, 2);
    if (length < EVENT_HEADER_LEN || length > (size_t)(limit - p)) {
      limit = p;                /* cannot be: the index checked every event */
      break;
    }
    if (!known[code]) {         /* design/stream.txt .stream.unknown */
      memmove(p, p + length, (size_t)(limit - p) - length);
      limit -= length;
      at += length;
      continue;
    }
    memcpy(&value, p + 4, 8);
    if (value < high) {
      value = high;
      EventStreamClockBack(ex->stream, block->thread,
                           block->expanded ? block->offset
                                          : block->offset + ex->info->blockHeaderLength + at);
    }
    high = value;
    at += length;
    value = ctfNs(&c, value);
    memcpy(p + 2, &value, 2);
    memcpy(p + 4, &value, 8);
    if (none) {
      first = value;
      none = 0;
    }
    last = value;
    p += length;
  }
  if (*empty && !none)
    *begin = first;
  *empty = none;
  *end = last;
  *latest = high;
  return (size_t)(limit - packet);
}

/* ExportCtfBlocks -- the log block by block: each sequence of one
 * thread, kind and signal level in a stream file of its own, its blocks
 * copied whole into packets.  design/export.txt .export.ctf.block */
int ExportCtfBlocks(ExportStruct *ex)
{
  CtfStruct *state = ex->state;
  EventStreamStruct *stream = ex->stream;
  const EventRegistryStruct *registry = ex->registry;
  size_t count, next;
  unsigned char *known, *packet = NULL;
  size_t packetSize = 0;
  CtfClockStruct clock;
  ProgressStruct progress;
  uint64_t read = 0;
  char name[64];
  int err = 0;

  if (state->failed || !copiesWhole(ex))
    return -1;
  known = calloc(65536, 1);
  if (known == NULL)
    return ctfFail(ex, state, "", ENOMEM);
  for (unsigned i = 0; i < registry->eventCount; ++i)
    known[registry->events[i].code & 0xFFFF] = 1;
  clock.ex = ex;
  clock.start = ex->fmt.startClock;
  clock.hz = ex->fmt.clockHz;
  clock.nsPerTick = clock.hz != 0 ? (double)NS_PER_SECOND / (double)clock.hz : 1.0;
  count = EventStreamBlockCount(stream);
  ProgressStart(&progress, ex->info->eventCount);
  name[0] = '\0';
  for (size_t i = 0; i < count && err == 0; i = next) {
    EventStreamBlockStruct first, block;
    CtfStreamStruct seq;        /* what seal needs of the sequence */
    size_t used = 0;            /* bytes in packet, its header included; 0: none */
    uint64_t begin = 0, end = 0;
    EventClock latest = 0;
    int empty = 1, fd;
    EventStreamBlock(stream, i, &first);
    memset(&seq, 0, sizeof seq);
    seq.thread = first.thread;
    seq.kind = first.kind;
    if ((seq.info = threadInfo(ex, state, first.thread)) == NULL) {
      err = ENOMEM;
      break;
    }
    seq.head = headSize(seq.info);
    snprintf(name, sizeof name, "stream_%lu_%u_%u", (unsigned long)first.thread, first.kind,
             first.level);
    fd = openat(state->dir, name, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
      err = errno;
      break;
    }
    for (next = i; next < count; ++next) {
      EventStreamBlock(stream, next, &block);
      if (block.thread != first.thread || block.kind != first.kind || block.level != first.level)
        break;
      if (used > 0 && used + block.size > PACKET_SIZE) {
        if (!empty) {
          seal(packet, used, &seq, begin, end);
          if ((err = writeAll(fd, packet, used)) != 0)
            break;
        }
        used = 0;
        empty = 1;
      }
      if (used == 0)
        used = seq.head;
      if (used + block.size > packetSize) {
        size_t size = used + block.size > PACKET_SIZE ? used + block.size : PACKET_SIZE;
        unsigned char *bigger = realloc(packet, size);
        if (bigger == NULL) {
          err = ENOMEM;
          break;
        }
        packet = bigger;
        packetSize = size;
      }
      used = copyBlock(ex, packet, used, &block, known, &clock, &empty, &begin, &end, &latest);
      read += block.events;
      ProgressTick(&progress, read);
    }
    if (err == 0 && !empty) {
      seal(packet, used, &seq, begin, end);
      err = writeAll(fd, packet, used);
    }
    if (close(fd) != 0 && err == 0)
      err = errno;
  }
  ProgressEnd(&progress);
  free(known);
  free(packet);
  return err != 0 ? ctfFail(ex, state, err == ENOMEM ? "" : name, err) : 0;
}

static int ctfEnd(ExportStruct *ex)
{
  CtfStruct *state = ex->state;
  int failed = state->failed;
  CtfStreamStruct *stream, *next;
  for (stream = state->streams; stream != NULL; stream = next) {
    next = stream->next;
    if (!failed)
      failed = flushPacket(ex, state, stream);
    free(stream->packet);
    free(stream);
  }
  for (size_t i = 0; i < ex->threadLimit; ++i)
    if (ex->threads[i].used && ex->threads[i].writer != NULL) {
      CtfThreadStruct *info = ex->threads[i].writer;
      free(info->name);
      free(info);
      ex->threads[i].writer = NULL;
    }
  if (state->dir >= 0)
    close(state->dir);
  return failed;
}

/* One log: a CTF trace is one clock and one stream file per thread
 * serial, which the threads of several processes would share. */
const ExportWriterStruct ExportCtf = {"ctf", 1, ctfBegin, ctfEvent, NULL, ctfEnd, NULL, 1};
