/* <src/read/eventstreamint.h> -- what the stream layer's files share, and no one else
 *
 * .design: design/stream.txt .stream design/tools.txt .eventcnv.reader
 *
 * The stream layer (eventread.h's EventStream*) is one module in three
 * files, split by concern:
 *   eventheader.c  the stream header and the registry it carries
 *   eventindex.c   the block index: every block and event checked, in
 *                  file order, before any event is returned
 *   eventscan.c    a scan's index split over threads, the same result
 *   eventstream.c  the interface: open, scan, the merge in time order,
 *                  labels, counts and problems
 * Names follow eventint.h's rule: what one of these files defines and
 * another uses is eventXxx, declared here; what one file uses alone is
 * static.
 */

#ifndef eventstreamint_h
#define eventstreamint_h

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "eventpack.h"
#include "eventread.h"

/* TableStruct -- a hash table from 64-bit keys to 64-bit values, for
 * the Intern and Label tables.  design/index.txt .req.intern */

typedef struct TableEntryStruct {
  uint64_t key;
  uint64_t value;
  int used;
} TableEntryStruct;

typedef struct TableStruct {
  TableEntryStruct *entries;
  size_t capacity;              /* a power of 2, or 0 */
  size_t count;
} TableStruct;

/* BlockStruct -- a block found by the index.  design/stream.txt .stream.block */

typedef struct IndexEntryStruct {
  uint32_t index;               /* a block's index in the log (.stream.check) */
  size_t offset;                /* and where it is */
} IndexEntryStruct;

typedef struct BlockStruct {
  size_t offset;                /* of the block header */
  unsigned reg;                 /* its registry: an index in regs */
  int registry;                 /* it carries a registry (.stream.block.registry) */
  size_t dataEnd;               /* end of its sound events: code 0, end, or a fault */
  uint32_t thread;
  unsigned kind;
  unsigned level;               /* signal level, from the flags (.sol.signal.level) */
  uint64_t seq;
  uint32_t index;               /* its place in the log (2.0 on), or NONE */
  uint32_t length;              /* as its header says */
  int cut;                      /* it runs past the end of the stream */
  int compact;                  /* its data are compact (.compact) */
  int zstd;                     /* its data are a zstd frame (.zstd.reader) */
  const unsigned char *raw;     /* then: its events expanded, at offset + block header
                                   length on; NULL if raw (.compact.reader) */
  size_t events;                /* known events in it */
} BlockStruct;

/* HoleStruct -- a block the program died before writing whole, as its
 * header says, or with seq EVENT_SEQ_NONE if that is zeros too
 * (eventholes.c eventHoleFind).  design/control.txt .sol.writer.at */
typedef struct HoleStruct {
  uint64_t offset, end;         /* in the stream */
  uint64_t seq;
  uint32_t thread;
  unsigned kind, level;
  int recovered;                /* a recovered block has its events */
} HoleStruct;

/* SeqStruct -- the blocks of one (thread, kind), and a cursor in them.
 * Only the clock of the current event is read: its fields are decoded
 * when it is returned.  design/stream.txt .stream.order design/tools.txt .eventcnv.reader */

typedef struct SeqStruct {
  size_t block;                 /* current block: index into blocks */
  size_t blockLimit;            /* one past its last block */
  size_t pos;                   /* stream offset of the current event */
  EventClock clock;             /* its clock */
  const EventDescStruct *desc;  /* its descriptor */
} SeqStruct;

/* CodeStruct -- what the index knows of a code, in a table of all
 * 65536, so that checking an event is a load, not a search.
 * design/tools.txt .eventcnv.reader */

typedef struct CodeStruct {
  uint32_t head;                /* if length is not 0: the first 4 bytes of each of its
                                   events (code, length) as the machine loads them;
                                   else a value no event of this code starts with */
  uint16_t event;               /* 1 + its index in the registry's events; 0: unknown */
  uint16_t length;              /* the length of all its events, if that is fixed and
                                   the index need not look inside them; 0: decode each */
} CodeStruct;

/* ThreadStruct -- a thread with events, for EventStreamThread */

/* RegStruct -- one of the registries a stream carries (3.0.6): its
 * events by their own codes, and where they are in the merge that is
 * the stream's registry, whose codes are the number above the code.
 * design/stream.txt .stream.header.registries */
#define REG_OWNED 6
typedef struct RegStruct {
  unsigned number;              /* as its blocks' kinds say */
  EventRegistryStruct reg;      /* by its own codes */
  unsigned kindMap[EVENT_KIND_LIMIT];  /* each of its kinds' index in the merge */
  unsigned *eventMap;           /* each of its events' index in the merge */
  CodeStruct *codes;            /* by its own codes (registry 0's: the stream's codes) */
  void *owned[REG_OWNED];       /* its arrays, freed at close */
} RegStruct;

typedef struct ThreadStruct {
  uint32_t thread;
  size_t events;
} ThreadStruct;

struct EventStreamStruct {
  const unsigned char *base;    /* the stream; for a scan, its window */
  size_t size;                  /* bytes at base */
  unsigned options;

  /* A scan (EventStreamScan) holds a window of the stream, bytes
   * origin to origin + size, and reads more as the index needs them.
   * design/tools.txt .eventcnv.scan */
  size_t origin;                /* stream offset of base[0]; 0 if not a scan */
  int eof;                      /* the stream ends at origin + size */
  unsigned char *window;
  size_t windowCapacity;
  EventStreamReadFunction read; /* NULL if not a scan */
  void *readClosure;
  struct ScanSplitStruct *split;  /* a scan split over threads, or NULL */
  size_t splitNext;             /* where the walk next looks at it (eventScanTake) */

  EventStreamInfoStruct info;

  /* The registry the stream carries, and the memory behind it. */
  EventRegistryStruct registry;
  EventKindDescStruct *kinds;
  EventDescStruct *events;
  const char **paramStrings;    /* paramNames and paramDocs of every event */
  EventSpanDescStruct *spans;   /* 2.0.1 on: .stream.header.span */
  EventCounterDescStruct *counters;
  char *strings;                /* NUL-terminated copies of the header's strs */
  size_t stringsSize, stringsUsed;

  CodeStruct *codes;            /* 65536 of them, by code: registry 0's */
  RegStruct *regs;              /* the registries, in number order (3.0.6) */
  unsigned regCount, regCapacity;
  unsigned char regOf[256];     /* a number's 1 + its index in regs; 0: none */
  void **retired;               /* merges a registry block replaced: kept, as */
  size_t retiredCount;          /* their descriptors may be held */
  unsigned swap;                /* the data's byte order is not the machine's */
  size_t fixedMax;              /* the longest length of a CodeStruct, or 0 */
  unsigned char *plans;         /* by event index, EVENT_PARAM_MAX field sizes (4 or 8,
                                   then 0) of an event with a CodeStruct length */
  size_t *counts;               /* known events by kind and event: [kind * eventCount + i] */
  size_t countsKinds, countsEvents;  /* the registry's, when counts was made, */
  unsigned *countsCodes;        /* and its events' codes */
  ThreadStruct *threads;        /* sorted by serial */
  size_t threadCount;

  BlockStruct *blocks;
  size_t blockCount, blockCapacity;
  IndexEntryStruct *indexes;    /* the log's block indexes, for eventIndexCheck */
  HoleStruct *holes;            /* blocks the program died before writing whole,
                                   in file order (.sol.writer.at) */
  size_t holeCapacity;
  TableStruct seen;             /* index -> offset of the block read with it */
  size_t indexCount, indexCapacity;
  int merging;                  /* mergeStart has run */
  SeqStruct *seqs;
  size_t seqCount;
  size_t *heap;                 /* indexes of seqs, a min-heap by EventBefore */
  size_t heapCount;
  EventClock runnerClock;       /* the earliest clock of the top's children (heapTop) */

  TableStruct interns;          /* string id -> the string (in the stream, or an expansion) */
  TableStruct labels;           /* address -> string id */

  char **problems;
  size_t problemCount, problemCapacity;
  int outOfMemory;

  /* Compact blocks, expanded (.compact.reader): each block's own
   * buffer, kept until the stream is closed; a scan reuses one. */
  EventPackStateStruct *pack;
  unsigned char **raws;
  size_t rawCount, rawCapacity;
  size_t rawHeld;               /* their bytes, within EVENT_EXPAND_HELD_MAX: .zstd.held */
  size_t rawLastSize;           /* the bytes of the last one made */
  int expandCapped;             /* a block passed that cap: said once */
  unsigned char *scanRaw;
  size_t scanRawSize;
  /* zstd blocks (.zstd.reader): the decompressor, and its output when
   * that is compact, to be expanded again */
  void *zstd;                   /* a ZSTD_DCtx */
  unsigned char *unzstd;
  size_t unzstdSize;
};


/* eventstream.c: the tables, and messages */

extern TableEntryStruct *eventTableFind(const TableStruct *table, uint64_t key);
extern int eventTableSet(TableStruct *table, uint64_t key, uint64_t value);
/* eventFormatMessage -- snprintf to buf: every number is passed as
 * uint64_t and printed with PRIu64 or PRIx64, which the compiler checks */
extern void eventFormatMessage(char *buf, size_t size, const char *format, ...)
  __attribute__((format(printf, 3, 4)));
extern const char *eventQuote(char *buf, size_t size, const char *s);
extern void eventProblemAdd(EventStreamStruct *stream, const char *format, ...)
  __attribute__((format(printf, 2, 3)));

/* eventheader.c */

extern EventStreamRes eventParseHeader(EventStreamStruct *stream, char *msg, size_t msgSize);
extern int eventRegistryBlock(EventStreamStruct *stream, size_t pos, size_t end, char *msg,
                              size_t msgSize);
extern void eventRegistriesFree(EventStreamStruct *stream);

/* eventmerge.c: the merge of the stream's registries */

extern void eventKindWires(EventStreamStruct *stream);
extern int eventMergeBuild(EventStreamStruct *stream, char *msg, size_t msgSize);

/* eventKindOf -- the merged kind of a block's wire kind (its registry's
 * number above its kind), or -1; *regReturn gets the registry's index */
static inline int eventKindOf(const EventStreamStruct *stream, unsigned wire, unsigned *regReturn)
{
  unsigned r = stream->regOf[wire >> EVENT_BLOCK_REGISTRY_SHIFT];
  unsigned kind = wire & ((1u << EVENT_BLOCK_REGISTRY_SHIFT) - 1);
  if (r == 0 || kind >= stream->regs[r - 1].reg.kindCount)
    return -1;
  *regReturn = r - 1;
  return (int)stream->regs[r - 1].kindMap[kind];
}

/* eventindex.c */

#define EVENT_SEQ_NONE UINT64_MAX /* a hole's block whose header is zeros too */

/* IndexStruct -- what the walk notes beside the stream's info */
typedef struct SyncStruct {
  EventClock clock;
  uint64_t monotonic;
} SyncStruct;

typedef struct IndexStruct {
  SyncStruct first, last;       /* ClockSyncs with the lowest and highest clock */
  SyncStruct rate;              /* the ClockRate (the lowest clock's, if several),
                                   if info->clockRated */
} IndexStruct;

extern void eventFill(EventStreamStruct *stream, size_t *pos, size_t need);
extern int eventCodesInit(EventStreamStruct *stream);
extern void eventIndexBlocks(EventStreamStruct *stream);
extern size_t eventFindBlockMagic(const EventStreamStruct *stream, size_t from);
extern int eventBlockAdd(EventStreamStruct *stream, const BlockStruct *block);
extern int eventBlockRead(EventStreamStruct *stream, size_t pos, BlockStruct *block, char *what,
                          size_t whatSize);
extern void eventBlockFetch(EventStreamStruct *stream, size_t *pos);
extern int eventBlockEvents(EventStreamStruct *stream, IndexStruct *index, BlockStruct *block,
                            size_t end);

/* eventscan.c: a scan split over threads.  design/tools.txt .eventcnv.scan.split */

typedef struct ScanSplitStruct ScanSplitStruct;
#define SCAN_WINDOW (256u * 1024u)      /* a scan's window: fastest of 64K to 4M, measured */
extern EventStreamRes eventScanOpen(EventStreamStruct **streamReturn, EventStreamReadFunction read,
                                    void *closure, ScanSplitStruct *split, char *msg,
                                    size_t msgSize);
extern void eventScanStart(EventStreamStruct *stream);
extern void eventScanTake(EventStreamStruct *stream, IndexStruct *index, size_t *pos);
extern void eventScanStop(EventStreamStruct *stream);
extern void eventScanFree(ScanSplitStruct *split);

/* eventexpand.c: a compact or zstd block's data, expanded */

extern size_t eventBlockExpand(EventStreamStruct *stream, BlockStruct *block, const unsigned char *in,
                               size_t inSize, int *sound);
extern const unsigned char *eventBlockUnzstd(EventStreamStruct *stream, BlockStruct *block,
                                             const unsigned char *in, size_t inSize,
                                             size_t *sizeReturn);
extern void eventRawTrim(EventStreamStruct *stream, BlockStruct *block);

/* eventholes.c: blocks missing, repeated, or holes */

extern int eventIndexNote(EventStreamStruct *stream, const BlockStruct *block);
extern void eventIndexCheck(EventStreamStruct *stream);
extern size_t eventHoleFind(EventStreamStruct *stream, size_t *pos, BlockStruct *block);
extern void eventHoleAdd(EventStreamStruct *stream, const BlockStruct *block);
extern void eventHolesCheck(EventStreamStruct *stream);

/* eventIsFormat -- desc is known and has this format */
static inline int eventIsFormat(const EventDescStruct *desc, const char *format)
{
  return desc != NULL && desc->format != NULL && strcmp(desc->format, format) == 0;
}

/* Loading in the data's byte order, for the index and the merge: swap
 * is 1 if it is not the machine's. */

static inline uint16_t eventLoad16(const unsigned char *p, unsigned swap)
{
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return swap ? (uint16_t)(v >> 8 | v << 8) : v;
}

static inline uint64_t eventLoad64(const unsigned char *p, unsigned swap)
{
  unsigned char bytes[8];
  uint64_t v;
  unsigned i;
  if (!swap) {
    memcpy(&v, p, sizeof v);
    return v;
  }
  for (i = 0; i < 8; ++i)
    bytes[i] = p[7 - i];
  memcpy(&v, bytes, sizeof v);
  return v;
}


#endif /* eventstreamint_h */
