/* <src/event/eventread.h> -- the one decoder of telltale streams
 *
 * .design: design/index.txt .req.share design/stream.txt .stream
 *
 * Every reader of telltale events uses this decoder: eventcnv, the
 * runtime's text mirror and crash dump, the tests and the replay tool.
 * (design/index.txt .req.share)
 *
 * It has two layers.
 *
 * The event layer (EventDecode, EventFormat and their helpers) decodes
 * and formats one event.  It depends on string.h only: it never
 * allocates, never uses stdio and keeps only small buffers on the stack,
 * so the runtime's crash dump may call it from a signal handler.
 *
 * The stream layer (EventStream*) reads a whole stream held in memory:
 * the header and the registry it carries, the blocks, and the events in
 * time order merged across threads and kinds.  It allocates with malloc.
 *
 * Both layers read only inside the buffer they are given, on any input:
 * a malformed stream is an error naming its byte offset, never a crash.
 */

#ifndef eventread_h
#define eventread_h

#include <stddef.h>
#include <stdint.h>
#include "eventcom.h"

/* EVENT_STREAM_KIND_LIMIT -- kinds in a stream's registry: the merge of
 * every registry the stream carries (design/stream.txt
 * .stream.header.registries), each of at most EVENT_KIND_LIMIT */
#define EVENT_STREAM_KIND_LIMIT 256


/* THE EVENT LAYER */

/* EventLayoutStruct -- how a stream's data is laid out.
 * design/stream.txt .stream.header design/index.txt .req.port */
typedef struct EventLayoutStruct {
  unsigned bigEndian;           /* 1 if data are big-endian, 0 if little */
  unsigned pointerSize;         /* bytes in a P or A field: 4 or 8 */
  unsigned wordSize;            /* bytes in a W field: 4 or 8 */
} EventLayoutStruct;

/* EventLayoutNative -- the layout of the running program */
extern void EventLayoutNative(EventLayoutStruct *layoutReturn);

/* EventValueUnion -- one decoded parameter.
 * P, A, W, U: u (zero-extended); D: d; S: s (points into the event,
 * NUL-terminated, stringLength characters). */
typedef union EventValueUnion {
  uint64_t u;
  int64_t i;
  double d;
  const char *s;
} EventValueUnion;

/* EventRecordStruct -- one decoded event.  design/stream.txt .stream.event */
typedef struct EventRecordStruct {
  const EventDescStruct *desc;  /* NULL if the code is not in the registry */
  unsigned code;
  unsigned length;              /* of the whole event, in bytes */
  EventClock clock;
  uint32_t thread;              /* thread serial, from the block (0 if unknown) */
  unsigned kind;                /* kind index, from the block (desc's if unknown) */
  size_t offset;                /* of the event in the stream (0 if unknown) */
  EventValueUnion values[EVENT_PARAM_MAX];
  size_t stringLength;          /* characters in the S parameter, if any */
} EventRecordStruct;

/* EventDecodeRes -- the result of EventDecode */
typedef enum EventDecodeRes {
  EventDecodeOK = 0,            /* decoded: desc, header and values are set */
  EventDecodeEND,               /* code 0: no more events in this block */
  EventDecodeUNKNOWN,           /* code not in the registry: header set, skip by length */
  EventDecodeTRUNCATED,         /* the event runs past the bytes available */
  EventDecodeCORRUPT            /* the event cannot be right */
} EventDecodeRes;

/* EventRegistryLookup -- the descriptor of a code, or NULL.
 * The registry's events must be sorted by code (eventcom.h). */
extern const EventDescStruct *EventRegistryLookup(const EventRegistryStruct *registry,
                                                  unsigned code);

/* EventDecode -- decode the event at p, with avail bytes readable there.
 *
 * Reads only p[0 .. avail-1].  On EventDecodeOK and EventDecodeUNKNOWN,
 * rec->length bytes make up the event.  On TRUNCATED and CORRUPT,
 * *whyReturn (if whyReturn is not NULL) is a static sentence saying what
 * is wrong; rec->code and rec->length are set if avail allowed reading
 * them.  rec->thread and rec->offset are set to 0 and rec->kind to the
 * descriptor's kind: a caller that knows better sets them.
 * registry may be NULL: then every code is unknown. */
extern EventDecodeRes EventDecode(const EventLayoutStruct *layout,
                                  const EventRegistryStruct *registry,
                                  const unsigned char *p, size_t avail,
                                  EventRecordStruct *rec, const char **whyReturn);

/* EventDecodeFields -- the fields of an event of desc, whose code and
 * length (length bytes at p) are known to be sound: the second half of
 * EventDecode, for a reader that checked the header itself */
extern EventDecodeRes EventDecodeFields(const EventLayoutStruct *layout, const EventDescStruct *desc,
                                        const unsigned char *p, size_t length,
                                        EventRecordStruct *rec, const char **whyReturn);

/* EventLabelFunction -- the label of an address, or NULL if it has none */
typedef const char *(*EventLabelFunction)(void *closure, uint64_t address);

/* EventFormatCacheStruct -- what EventFormat may remember between the
 * lines of one reader: the latest elapsed second's clock range and the
 * latest wall-clock second's "HH:MM:SS.".  One per thread that formats;
 * zero it before use. */
typedef struct EventFormatCacheStruct {
  int secondValid, wallValid;
  uint64_t hz;                  /* the rate secondStart was found with */
  uint64_t seconds;             /* whole elapsed seconds ... */
  uint64_t secondStart;         /* ... from this many ticks after the start */
  uint64_t wallSecond;          /* realtime / 10^9 that wall shows */
  char wall[9];
  int elapsedValid;
  uint64_t elapsedSeconds;      /* the elapsed second elapsed shows ... */
  unsigned elapsedLen;          /* ... in this many characters, up to its "." */
  char elapsed[24];
  int nsValid[2];               /* the elapsed and the wall clock's nanoseconds: */
  uint32_t nsHigh[2];           /* ns / 10^4 ... */
  char nsText[2][16];           /* ... and the 9 digits of a ns with it */
  /* The latest line's text from after the times to its first value
   * (" T1  Kind  Event  name="), then each later field's " name=", for
   * the next event of the same thread, kind and descriptor. */
  int headValid;
  const void *headDesc, *headRegistry;
  uint32_t headThread;
  unsigned headKind, headKindWidth, headNameWidth;
  unsigned short headEnd[EVENT_PARAM_MAX];   /* where field i's " name=" ends */
  char head[1280 + 16];          /* and 16 that a copy by 16 bytes may read */
} EventFormatCacheStruct;

/* EventFormatContextStruct -- what EventFormat needs besides the record */
typedef struct EventFormatContextStruct {
  const EventRegistryStruct *registry;  /* for kind names; may be NULL */
  EventClock startClock;        /* clock value at the start of the stream */
  uint64_t clockHz;             /* clock frequency; 0: the clock counts ns */
  uint64_t startRealtime;       /* CLOCK_REALTIME at startClock, ns since the epoch */
  EventLabelFunction label;     /* may be NULL: no labels */
  void *labelClosure;
  unsigned kindWidth;           /* kind names are padded to this width */
  unsigned nameWidth;           /* event names are padded to this width */
  EventFormatCacheStruct *cache; /* may be NULL: nothing remembered */
} EventFormatContextStruct;

/* EventFormatContextInit -- a context for registry: widths from its
 * names, the clock counting ns from 0, no labels.  The caller then sets
 * the clock fields and the label function. */
extern void EventFormatContextInit(EventFormatContextStruct *ctx,
                                   const EventRegistryStruct *registry);

/* EventFormat -- one line of text for rec, without a newline.
 *
 *   ELAPSED WALLCLOCK THREAD KIND EVENT name=value ...
 *       0.000500000 22:13:20.123956789 T1  Telltale StreamStart   major=1 ...
 *
 * ELAPSED is seconds since ctx->startClock with 9 decimals; WALLCLOCK
 * is the UTC time of day HH:MM:SS.nnnnnnnnn.  P and A values are hex,
 * a P or A value followed by [label] if ctx->label knows it; W and U are
 * decimal; D is like printf's %.17g ("nan", "inf", "-inf"); S is quoted
 * with C escapes.  An unknown code gives "? code=0x1234 length=N".
 *
 * Writes at most size bytes including a terminating NUL (if size > 0)
 * and returns the length of the whole line, like snprintf: a result of
 * size or more means the line was cut short. */
extern size_t EventFormat(char *buf, size_t size, const EventRecordStruct *rec,
                          const EventFormatContextStruct *ctx);

/* EventFormatTimes -- the ELAPSED and WALLCLOCK columns of EventFormat's
 * line for clock, "    0.000500000 22:13:20.123956789".  Returns the
 * length, like EventFormat. */
extern size_t EventFormatTimes(char *buf, size_t size, EventClock clock,
                               const EventFormatContextStruct *ctx);

/* EventClockRate -- the clock's rate in Hz: headerHz, unless the pair
 * (clock, monotonic), a ClockSync, is at least EVENT_SYNC_SPAN_NS after
 * the stream's start pair, when the rate between the two is used (and
 * at any span when headerHz is 0, unknown). */
extern uint64_t EventClockRate(uint64_t headerHz, EventClock startClock,
                               uint64_t startMonotonic, EventClock clock, uint64_t monotonic);

/* EventUtf8Length -- the length of the valid UTF-8 sequence at s (of
 * at most avail bytes) whose first byte is >= 0x80, or 0 if it is not
 * one: no overlong forms, surrogates or code points above U+10FFFF.
 * The one test of UTF-8 for the text line and the tools' textsafe.c. */
static inline size_t EventUtf8Length(const unsigned char *s, size_t avail)
{
  unsigned c = s[0];
  size_t n, i;
  unsigned lo = 0x80, hi = 0xBF;       /* the second byte's range */
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else
    return 0;
  if (avail < n || s[1] < lo || s[1] > hi)
    return 0;
  for (i = 2; i < n; ++i)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0;
  return n;
}

/* EventEscape -- n bytes of s with C escapes (\" \\ \n \t \r, \ooo for
 * other controls, DEL, C1 controls and bytes of invalid UTF-8; valid
 * UTF-8 as itself), as an S field is shown, into buf (NUL-terminated,
 * truncated); returns the length it needed.  design/export.txt
 * .export.text */
extern size_t EventEscape(char *buf, size_t size, const char *s, size_t n);

/* EventFormatDouble -- d as printf's "%.17g" would, into buf.
 * Returns the length, like EventFormat. */
extern size_t EventFormatDouble(char *buf, size_t size, double d);

/* EventDecimalPairs, EventHexPairs -- "00" to "99", and "00" to "ff":
 * the two digits of each number below 100, of each byte */
extern const char EventDecimalPairs[200], EventHexPairs[512];


/* THE STREAM LAYER */

/* EventStreamStruct -- a stream being read; opaque */
typedef struct EventStreamStruct EventStreamStruct;

/* Options for EventStreamOpen */
#define EVENT_STREAM_RESYNC 0x1u    /* on a corrupt block, report it and skip
                                       to the next block magic; the default
                                       is to stop reading blocks there */

/* EventStreamRes -- the result of the stream functions */
typedef enum EventStreamRes {
  EventStreamOK = 0,            /* success; a record was returned */
  EventStreamEND,               /* no more events; the stream was sound */
  EventStreamERROR,             /* a bad stream or no memory: see EventStreamProblem */
  EventStreamREFUSED            /* EventStreamOpen: the header is unreadable */
} EventStreamRes;

/* EventStreamInfoStruct -- what the header says, and what the reader
 * found in the blocks.  design/stream.txt .stream.header */
typedef struct EventStreamInfoStruct {
  unsigned major, median, minor;  /* version: design/stream.txt .sol.version */
  EventLayoutStruct layout;
  unsigned doubleFormat;        /* 1: IEEE 754 binary64 */
  uint32_t headerLength;
  uint32_t headerChecks[4];     /* offsets of the header's checks, after the registry
                                   (2.0 on) and the spans (2.0.1 on), of its flags
                                   (2.0.5 on), and after the other registries (3.0.6
                                   on), or 0: for a tool that rewrites the header
                                   (.zstd.writer) */
  uint64_t headerHz;            /* clock frequency in the header, 0 if unknown */
  uint64_t clockHz;             /* the frequency used: from ClockSync events if
                                   two are at least 1 ms apart, else headerHz;
                                   0: the clock counts ns */
  EventClock startClock;
  uint64_t startRealtime;       /* ns since the epoch */
  uint64_t startMonotonic;      /* ns */
  uint32_t pid;
  uint32_t session;             /* the session id, in every block (2.0 on; .stream.check) */
  unsigned blockHeaderLength;   /* 36, or 24 in a 1.0 stream */
  const char *program;
  const EventRegistryStruct *registry;  /* the registry the stream carries */
  /* Found in the blocks when the stream was opened */
  size_t blockCount;            /* blocks read */
  size_t compactBlocks;         /* of them compact (3.0 on; .compact) */
  size_t zstdBlocks;            /* of them zstd (4.0 on; .zstd) */
  int recoveredInto;            /* an archive into which its log's live file was
                                   recovered (4.0 on; .zstd.live) */
  int recoveredUnchecked;       /* an archive before 4.0.5 whose flags say so, which
                                   no check covers: not taken as recovered
                                   (.stream.header.check) */
  size_t unindexedBlocks;       /* blocks of no index: recovered from a live file */
  size_t unindexedEvents;       /* and their events */
  size_t eventCount;            /* events with known codes */
  size_t unknownCount;          /* events skipped: code not in the registry */
  size_t clockSyncCount;
  size_t skippedBytes;          /* bytes skipped because they were corrupt */
  size_t badBlocks;             /* blocks not read: damaged, cut short, another session's */
  size_t missingBlocks;         /* block indexes absent from the log (2.0 on) */
  size_t duplicateBlocks;       /* blocks found again, not read twice (2.0 on) */
  size_t misorderedBlocks;      /* blocks not in the order written (2.0 on) */
  size_t holes;                 /* blocks the program died before writing whole,
                                   zeros where their events should be
                                   (.sol.writer.at) */
  size_t holesLost;             /* of them, those no live file recovered: a problem */
  size_t holeBlocks;            /* the block indexes missing there */
  uint64_t holeOffset;          /* where the first is */
  int stopped;                  /* reading stopped at damage: the rest was not read */
  uint64_t streamSize;          /* bytes in the stream */
  int streamEnd;                /* 1 if a StreamEnd event was seen */
  int streamSnapshot;           /* 1 if it is a snapshot: StreamSnapshot ends it
                                   (3.0.4 on, .ctl.snapshot) */
  int streamExec;               /* 1 if the last StreamExec came before an exec,
                                   not after a failed one: with no StreamEnd,
                                   the stream ended at the exec (3.0.2 on,
                                   .sol.exec) */
  EventClock firstClock, lastClock;  /* the lowest and highest clock of the
                                   known events; 0 if there are none */
  const EventRegistryStruct *registryOf[256];  /* each registry the stream carries, by its
                                   number, with its own codes (.stream.header.registries);
                                   NULL for a number it has not */
  uint16_t kindWire[EVENT_STREAM_KIND_LIMIT];  /* each kind as blocks carry it: its registry's
                                   number above its own index (.stream.block.registry) */
  uint64_t dropped[EVENT_STREAM_KIND_LIMIT];  /* events the program dropped, by kind:
                                   the sum of the EventsDropped events */
  size_t threadStarts, threadExits;  /* ThreadStart and ThreadExit events: the
                                   threads still running when the stream
                                   ended (.sol.finish) */
  /* Found as the events are read (EventStreamNextHead, or a tool that
   * copies blocks: EventStreamClockBack) */
  size_t clockBacks;            /* events stamped before the one before them in
                                   their sequence, given its time instead
                                   (.stream.order.back) */
  uint64_t clockBackOffset;     /* the first one's offset (a compact block's) */
  uint32_t clockBackThread;     /* and thread */
} EventStreamInfoStruct;

/* EventStreamOpen -- read the header and index the blocks of a stream
 *
 * The index walks every block and event once, in file order, and
 * counts what it finds: EventStreamInfo, EventStreamCount and
 * EventStreamThread then answer without reading the events again.
 * design/tools.txt .eventcnv.reader .eventcnv.scan
 *
 * buf holds the whole stream and must outlive the stream object.
 * Returns EventStreamOK with *streamReturn set; EventStreamREFUSED or
 * EventStreamERROR with a message in msg (at most msgSize bytes,
 * "offset N: ...") and *streamReturn NULL if the header cannot be read.
 * A fault in the blocks does not fail the open: events before it are
 * read, then EventStreamNext returns EventStreamERROR. */
extern EventStreamRes EventStreamOpen(EventStreamStruct **streamReturn,
                                      const unsigned char *buf, size_t size,
                                      unsigned options, char *msg, size_t msgSize);

/* EventStreamReadFunction -- read up to size bytes of a stream into
 * buf: returns how many, 0 at its end, or -1 if it cannot be read */
typedef long (*EventStreamReadFunction)(void *closure, unsigned char *buf, size_t size);

/* EventStreamScan -- EventStreamOpen for a stream that is read, not
 * held: read calls give its bytes in order, each byte once, and the
 * index counts them as they come through a small window, which is much
 * faster than touching a large mapping once.  The stream it returns
 * answers EventStreamInfo, EventStreamCount, EventStreamThread* and
 * the problems, but holds no events: EventStreamNext returns none.
 * There is no EVENT_STREAM_RESYNC: reading stops at the first fault.
 * A read failure is a problem, "offset N: the stream could not be
 * read further".  design/tools.txt .eventcnv.scan */
extern EventStreamRes EventStreamScan(EventStreamStruct **streamReturn,
                                      EventStreamReadFunction read, void *closure,
                                      char *msg, size_t msgSize);

extern void EventStreamClose(EventStreamStruct *stream);

extern const EventStreamInfoStruct *EventStreamInfo(const EventStreamStruct *stream);

/* EventStreamNext -- the next event in time order.
 * design/stream.txt .stream.order .stream.unknown
 * Returns EventStreamOK and a record; at the end, EventStreamEND if the
 * stream was sound, or EventStreamERROR if problems were found.  The
 * record's strings point into the stream's buffer.  Intern and Label
 * events update the label table before they are returned. */
extern EventStreamRes EventStreamNext(EventStreamStruct *stream, EventRecordStruct *recReturn);

/* EventStreamHeadStruct -- an event's place in the stream and its
 * header, as the merge finds it: what EventStreamDecode needs */
typedef struct EventStreamHeadStruct {
  const unsigned char *bytes;   /* the event: in the stream, or a compact block's expansion */
  const EventDescStruct *desc;
  EventClock clock;
  size_t offset;                /* as EventRecordStruct's */
  uint32_t thread;
  unsigned kind;
  uint16_t code, length;
} EventStreamHeadStruct;

/* EventStreamNextHead, EventStreamDecode -- EventStreamNext in two:
 * the merge, which one thread must do in order, and the decoding of the
 * fields, which reads the stream and changes nothing, so that other
 * threads may do it while the stream is open (ExportText's workers).
 * Labels stand as at the event when EventStreamNextHead returns it.
 * EventStreamDecode sets every member of the record but the values past
 * the event's fields, which EventStreamNext zeroes.
 * design/tools.txt .eventcnv.text.split */
extern EventStreamRes EventStreamNextHead(EventStreamStruct *stream,
                                          EventStreamHeadStruct *headReturn);
extern void EventStreamDecode(const EventStreamStruct *stream, const EventStreamHeadStruct *head,
                              EventRecordStruct *recReturn);

/* EventStreamLabelCount -- how many addresses have a label so far */
extern size_t EventStreamLabelCount(const EventStreamStruct *stream);

/* EventStreamCount -- how many known events with code the blocks of
 * kind hold: how many of them EventStreamNext returns, counted by
 * EventStreamOpen without merging.  design/tools.txt .eventcnv.scan */
extern size_t EventStreamCount(const EventStreamStruct *stream, unsigned kind, unsigned code);

/* EventStreamThreadCount, EventStreamThread -- the threads that have
 * known events, by serial number, and how many each has. */
extern size_t EventStreamThreadCount(const EventStreamStruct *stream);
extern void EventStreamThread(const EventStreamStruct *stream, size_t i, uint32_t *threadReturn,
                              size_t *eventsReturn);

/* EventStreamBlockStruct -- a block the index read, as it stands:
 * for a writer that copies events whole rather than one at a time */
typedef struct EventStreamBlockStruct {
  uint32_t thread;
  unsigned kind;
  unsigned level;               /* signal level (.sol.signal.level) */
  uint64_t seq;                 /* the buffer's sequence number */
  const unsigned char *data;    /* its events, in the data's byte order: in the
                                   stream, or a compact block's expansion */
  size_t size;                  /* bytes of sound events at data: each has a code
                                   other than 0, a length from 12 to what is left,
                                   and, if its code is known, fields that decode */
  size_t events;                /* known events in it */
  int cut;                      /* it runs past the end of the stream */
  int compact;                  /* stored compact: data is its expansion */
  uint64_t offset;              /* the block's offset in the stream */
  int expanded;                 /* data is not the stream's but an expansion (compact,
                                   zstd): its events are said to be at offset */
} EventStreamBlockStruct;

/* EventStreamBlockCount, EventStreamBlock -- the blocks the index
 * read, in the merge's order: by thread, kind, signal level, then
 * sequence number, so each run of one (thread, kind, level) is a
 * sequence whose events are in time order (.stream.order).  A scan
 * holds no blocks: the count is 0.  design/export.txt .export.ctf.block */
extern size_t EventStreamBlockCount(EventStreamStruct *stream);
extern void EventStreamBlock(const EventStreamStruct *stream, size_t i,
                             EventStreamBlockStruct *blockReturn);

/* EventStreamClockBack -- a tool that reads a block's events itself
 * (EventStreamBlock) found one of thread at offset stamped before the
 * one before it in its sequence, and gave it that one's time: noted in
 * the info as the merge notes its own.  design/stream.txt
 * .stream.order.back */
extern void EventStreamClockBack(EventStreamStruct *stream, uint32_t thread, uint64_t offset);

/* EventStreamLabel -- an EventLabelFunction: closure is the stream.
 * The label of address from the Intern and Label events read so far. */
extern const char *EventStreamLabel(void *closure, uint64_t address);

/* EventStreamFormatContext -- a format context for this stream:
 * its registry, clock and labels. */
extern void EventStreamFormatContext(EventStreamStruct *stream, EventFormatContextStruct *ctxReturn);

/* EventStreamProblemCount, EventStreamProblem -- faults found, in
 * order, each "offset N: what is wrong".  Without EVENT_STREAM_RESYNC
 * there is at most one, and reading stopped there. */
extern size_t EventStreamProblemCount(const EventStreamStruct *stream);
extern const char *EventStreamProblem(const EventStreamStruct *stream, size_t i);

/* THE LIVE FILE */

/* EventRecover -- a dead program's log with its last events recovered
 * from its live file (LOG.live): a malloc'd stream of the log followed
 * by blocks of the events the log lacks.  Returns 0, or 1 with a message
 * if the files do not belong together.  A live block whose events do
 * not continue the log's blocks of its number (one file is damaged) is
 * not recovered, and is counted in rejected.  eventrecover.c;
 * design/control.txt .sol.recover */
typedef struct EventRecoverStruct {
  size_t events, blocks;        /* recovered */
  size_t rejected;              /* live blocks not recovered: they do not fit the log */
  size_t rejectedOffset;        /* the first of them, in the live file */
  size_t damaged;               /* live regions whose header is damaged: not recovered */
  size_t damagedOffset;         /* the first of them */
  size_t retagged;              /* 1 if a region's header was torn by a death while it was
                                   rewritten in place (3.0.7): it held nothing to recover */
  int logFailed;                /* the program could not write all of its log */
  size_t missing;               /* regions the program made that are not there */
  int dropsCounted;             /* the live file counts the program's drops (3.0.1): */
  uint64_t dropped[EVENT_LIVE_SLOTS];  /* events dropped, by slot, reported or not, */
  uint16_t wire[EVENT_LIVE_SLOTS];     /* of each slot's kind as blocks carry it (3.0.6; before,
                                          a slot is a kind) */
} EventRecoverStruct;

extern int EventRecover(const unsigned char *log, size_t logSize,
                        const unsigned char *live, size_t liveSize,
                        unsigned char **streamReturn, size_t *sizeReturn,
                        EventRecoverStruct *result, char *msg, size_t msgSize);

/* EventUnzstd -- a zstd block's data, in[0 .. inSize), decompressed
 * into *buf (realloc'd as needed, *bufSize its size), *sizeReturn bytes;
 * 0 if the frame is not one the reader takes (.zstd.reader) or memory
 * ran out.  eventrecover.c; design/recorder.txt .malloc.zstd */
extern int EventUnzstd(const unsigned char *in, size_t inSize, unsigned char **buf,
                       size_t *bufSize, size_t *sizeReturn);

/* EventZstdFrameCheck -- NULL, with *sizeReturn the bytes a zstd block's
 * frame in[0 .. inSize) expands to, if the reader takes it: it says its
 * size, at most a block's and EVENT_ZSTD_RATIO_MAX times its bytes;
 * else why not.  eventindex.c; design/stream.txt .zstd.reader */
extern const char *EventZstdFrameCheck(const unsigned char *in, size_t inSize, size_t *sizeReturn);

/* EventDropsUnreported -- events of a kind that the program dropped
 * and died before reporting: what its live file counts beyond the
 * EventsDropped in the recovered stream.  design/control.txt
 * .sol.dropped */
extern uint64_t EventDropsUnreported(const EventRecoverStruct *result,
                                     const EventStreamInfoStruct *info, unsigned kind);

#endif /* eventread_h */
