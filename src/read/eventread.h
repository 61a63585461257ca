/* <src/read/eventread.h> -- the stream layer: read whole telltale streams
 *
 * .design: design/index.txt .req.share design/stream.txt .stream
 *
 * The stream layer (EventStream*) reads a whole stream held in memory:
 * the header and the registry it carries, the blocks, and the events in
 * time order merged across threads and kinds, each decoded by the event
 * layer (src/decode/eventdecode.h).  It allocates with malloc, and is
 * for the tools alone (libtelltale-read.a), never the runtime.  It
 * reads only inside the buffer it is given, on any input: a malformed
 * stream is an error naming its byte offset, never a crash.
 */

#ifndef eventread_h
#define eventread_h

#include <stddef.h>
#include <stdint.h>
#include "eventdecode.h"

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
  uint64_t clockHz;             /* the frequency used: from the start pair and
                                   ClockRate (else the latest ClockSync) if at
                                   least 100 ms apart, else headerHz; 0: the
                                   clock counts ns.  design/runtime.txt .sol.clock */
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
  size_t clockSyncCount;        /* ClockSyncs and ClockRates */
  int clockRated;               /* a ClockRate fixes the rate (3.0.10 on) */
  EventClock lastSyncClock;     /* the ClockSync (or ClockRate) of the highest clock, */
  uint64_t lastSyncMonotonic;   /* and its CLOCK_MONOTONIC, if clockSyncCount */
  EventClock rateSyncClock;     /* the pair's that gives clockHz; 0: the header's rate */
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
  size_t registriesRefused;     /* RegistryRefused events: registries whose events
                                   the program did not record (3.0.9, .reg.many) */
  char registryRefused[256];    /* the first one's registry, object and why */
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

/* EventStreamReadAtFunction -- read up to size bytes of a stream at
 * offset into buf, as pread(2) does: returns how many, 0 at its end, or
 * -1 if it cannot be read.  Called from several threads at once. */
typedef long (*EventStreamReadAtFunction)(void *closure, unsigned char *buf, size_t size,
                                          uint64_t offset);

/* EventStreamScanSplit -- EventStreamScan of a stream of about size
 * bytes that can be read at any offset, its index split over jobs
 * threads, each reading its own part of the stream: the info, counts,
 * threads and problems are EventStreamScan's, whatever the stream
 * holds.  jobs of 1 or less reads it on one thread.  design/tools.txt
 * .eventcnv.scan.split */
extern EventStreamRes EventStreamScanSplit(EventStreamStruct **streamReturn,
                                           EventStreamReadAtFunction readAt, void *closure,
                                           uint64_t size, unsigned jobs, char *msg,
                                           size_t msgSize);

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
