/* <tools/eventcnv/exportctf.c> -- a CTF 1.8 trace directory
 *
 * .design: design/telemetry.txt .export.ctf
 *
 * OUT/metadata is the trace's TSDL: an event class per registry event,
 * its fields typed by letter, and a clock counting ns from the stream's
 * start, offset to its wall time.  OUT/stream_N holds thread N's events
 * in packets of at most PACKET_SIZE bytes, written as each fills.  Everything is little-endian and
 * byte-aligned; field names get a leading _ (which readers drop), so a
 * parameter may be named like a TSDL keyword (align, string).
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
#define PACKET_HEADER_SIZE 44     /* magic, stream_id; content_size, packet_size,
                                     timestamp_begin, timestamp_end, thread */

/* CtfStreamStruct -- a thread's stream: its packet being filled.  The
 * file is opened for each packet written, so a log of many threads
 * needs no more than one file descriptor; a packet grows as it fills,
 * and when all of them hold BUFFERED_MAX bytes they are all written. */
typedef struct CtfStreamStruct {
  uint32_t thread;
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
} CtfStruct;

static CtfStruct ctf;

/* Le -- v's n low bytes at p, little-endian: one store on a
 * little-endian machine, where EventStore's loop is a store a byte.
 * design/telemetry.txt .export.ctf.fast */
static inline void Le(unsigned char *p, uint64_t v, unsigned n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(p, &v, n);
#else
  EventStore(p, v, n, 0);
#endif
}

static int Failed(ExportStruct *ex, CtfStruct *state, const char *what, int err)
{
  if (!state->failed)
    fprintf(stderr, "eventcnv: cannot write %s%s%s: %s\n", ex->outPath, what[0] != '\0' ? "/" : "",
            what, strerror(err));
  state->failed = 1;
  return 1;
}

static int WriteAll(int fd, const unsigned char *p, size_t n)
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

/* Metadata -- the TSDL.  design/telemetry.txt .export.ctf */
static int Metadata(ExportStruct *ex, CtfStruct *state)
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
    "typealias integer { size = 64; align = 8; signed = false; map = clock.telltale.value; }"
    " := clock_t;\n\n"
    "stream {\n  id = 0;\n"
    "  packet.context := struct { uint64_t content_size; uint64_t packet_size;"
    " clock_t timestamp_begin; clock_t timestamp_end; uint32_t thread; };\n"
    "  event.header := struct { uint16_t id; clock_t timestamp; };\n};\n");
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    ExportPutString(&m, "\nevent {\n  name = ");
    ExportPutJsonString(&m, desc->name, strlen(desc->name));
    ExportPutString(&m, ";\n  id = ");
    ExportPutUnsigned(&m, i);
    ExportPutString(&m, ";\n  stream_id = 0;\n  fields := struct {");
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char letter = desc->format[p];
      ExportPutString(&m, letter == 'P' || letter == 'A' ? " hex64_t _"
                      : letter == 'W' ? " uint64_t _" : letter == 'U' ? " uint32_t _"
                      : letter == 'D' ? " double_t _" : " string _");
      ExportPutString(&m, desc->paramNames[p]);
      ExportPutChar(&m, ';');
    }
    ExportPutString(&m, " };\n};\n");
  }
  if (m.err != 0) {
    free(m.buf);
    return Failed(ex, state, "metadata", m.err);
  }
  fd = openat(state->dir, "metadata", O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    free(m.buf);
    return Failed(ex, state, "metadata", errno);
  }
  err = WriteAll(fd, (unsigned char *)m.buf, m.used);
  free(m.buf);
  if (close(fd) != 0 && err == 0)
    err = errno;
  return err != 0 ? Failed(ex, state, "metadata", err) : 0;
}

/* FlushPacket -- write thread's packet, its sizes and times filled in */
static int FlushPacket(ExportStruct *ex, CtfStruct *state, CtfStreamStruct *stream)
{
  char name[32];
  int fd, err;
  if (stream->used <= PACKET_HEADER_SIZE)
    return 0;
  EventStore(stream->packet + 8, (uint64_t)stream->used * 8, 8, 0);
  EventStore(stream->packet + 16, (uint64_t)stream->used * 8, 8, 0);
  EventStore(stream->packet + 24, stream->begin, 8, 0);
  EventStore(stream->packet + 32, stream->end, 8, 0);
  snprintf(name, sizeof name, "stream_%lu", (unsigned long)stream->thread);
  fd = openat(state->dir, name, O_WRONLY | O_CREAT | O_APPEND, 0666);
  if (fd < 0)
    return Failed(ex, state, name, errno);
  err = WriteAll(fd, stream->packet, stream->used);
  if (close(fd) != 0 && err == 0)
    err = errno;
  state->buffered -= stream->used;
  stream->used = 0;
  return err != 0 ? Failed(ex, state, name, err) : 0;
}

/* Room -- room for need more bytes in stream's packet: it grows, or is
 * written when full (or when every packet together is too big) */
static int Room(ExportStruct *ex, CtfStruct *state, CtfStreamStruct *stream, size_t need)
{
  if (stream->used + need > PACKET_SIZE && FlushPacket(ex, state, stream) != 0)
    return 1;
  if (state->buffered + need > BUFFERED_MAX)
    for (CtfStreamStruct *s = state->streams; s != NULL; s = s->next)
      if (FlushPacket(ex, state, s) != 0)
        return 1;
  if (PACKET_HEADER_SIZE + stream->used + need > stream->size) {
    size_t size = stream->size > 0 ? stream->size : 4096;
    while (size < PACKET_HEADER_SIZE + stream->used + need)
      size *= 2;
    unsigned char *bigger = realloc(stream->packet, size);
    if (bigger == NULL)
      return Failed(ex, state, "", ENOMEM);
    stream->packet = bigger;
    stream->size = size;
  }
  return 0;
}

static CtfStreamStruct *Stream(ExportStruct *ex, CtfStruct *state, uint32_t serial)
{
  ExportThreadStruct *thread = ExportThread(ex, serial);
  CtfStreamStruct *stream;
  if (thread == NULL)
    return Failed(ex, state, "", ENOMEM), NULL;
  if (thread->writer != NULL)
    return thread->writer;
  stream = calloc(1, sizeof *stream);
  if (stream == NULL)
    return Failed(ex, state, "", ENOMEM), NULL;
  stream->thread = serial;
  stream->next = state->streams;
  state->streams = stream;
  thread->writer = stream;
  return stream;
}

static int CtfBegin(ExportStruct *ex)
{
  CtfStruct *state = &ctf;
  DIR *d;
  struct dirent *entry;
  memset(state, 0, sizeof *state);
  state->dir = -1;
  ex->state = state;
  /* A new or empty directory: a trace is all the files in it. */
  if (mkdir(ex->outPath, 0777) != 0 && errno != EEXIST)
    return Failed(ex, state, "", errno);
  state->dir = open(ex->outPath, O_RDONLY | O_DIRECTORY);
  if (state->dir < 0)
    return Failed(ex, state, "", errno);
  d = fdopendir(dup(state->dir));
  if (d == NULL)
    return Failed(ex, state, "", errno);
  while ((entry = readdir(d)) != NULL)
    if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
      closedir(d);
      fprintf(stderr, "eventcnv: %s is not empty: give --format ctf a new or empty directory\n",
              ex->outPath);
      state->failed = 1;
      return 1;
    }
  closedir(d);
  return Metadata(ex, state);
}

static int CtfEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  CtfStruct *state = ex->state;
  const EventDescStruct *desc = rec->desc;
  CtfStreamStruct *stream = state->last != NULL && state->last->thread == rec->thread
    ? state->last : Stream(ex, state, rec->thread);
  int64_t elapsed = ExportElapsedNs(ex, rec->clock);
  uint64_t ts = elapsed > 0 ? (uint64_t)elapsed : 0;   /* the clock starts at 0 */
  size_t need = 10 + (size_t)desc->paramCount * 8 + rec->stringLength + 1;
  unsigned char *p;
  (void)seq;
  if (stream == NULL || Room(ex, state, stream, need) != 0)
    return 1;
  state->last = stream;
  if (stream->used == 0) {
    EventStore(stream->packet, CTF_MAGIC, 4, 0);
    EventStore(stream->packet + 4, 0, 4, 0);
    EventStore(stream->packet + 40, rec->thread, 4, 0);
    stream->used = PACKET_HEADER_SIZE;
    state->buffered += PACKET_HEADER_SIZE;
    stream->begin = ts;
  }
  stream->end = ts;
  p = stream->packet + stream->used;
  Le(p, (uint64_t)(desc - ex->registry->events), 2);
  Le(p + 2, ts, 8);
  p += 10;
  for (unsigned i = 0; i < desc->paramCount; ++i) {
    const EventValueUnion *v = &rec->values[i];
    switch (desc->format[i]) {
    case 'U':
      Le(p, v->u, 4);
      p += 4;
      break;
    case 'S':
      memcpy(p, v->s, rec->stringLength);
      p += rec->stringLength;
      *p++ = 0;
      break;
    default:                    /* P A W D: D's bits are the union's */
      Le(p, v->u, 8);
      p += 8;
    }
  }
  state->buffered += (size_t)(p - stream->packet) - stream->used;
  stream->used = (size_t)(p - stream->packet);
  return 0;
}

static int CtfEnd(ExportStruct *ex)
{
  CtfStruct *state = ex->state;
  int failed = state->failed;
  CtfStreamStruct *stream, *next;
  for (stream = state->streams; stream != NULL; stream = next) {
    next = stream->next;
    if (!failed)
      failed = FlushPacket(ex, state, stream);
    free(stream->packet);
    free(stream);
  }
  if (state->dir >= 0)
    close(state->dir);
  return failed;
}

/* One log: a CTF trace is one clock and one stream file per thread
 * serial, which the threads of several processes would share. */
const ExportWriterStruct ExportCtf = {"ctf", 1, CtfBegin, CtfEvent, NULL, CtfEnd, NULL, 1};
