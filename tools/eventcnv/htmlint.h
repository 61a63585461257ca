/* <tools/eventcnv/htmlint.h> -- the HTML timeline's rooms, as one another sees them
 *
 * .design: design/export.txt .export.html
 *
 * exporthtml.c is the writer: it gathers the events, spans and counters
 * as the log is read; htmldata.c encodes them into the page's data,
 * binary in base64, and its meta, as the page (timeline.html) reads
 * them.
 */

#ifndef htmlint_h
#define htmlint_h

#include "export.h"
#include "span.h"

#include <stddef.h>
#include <stdint.h>

enum {
  CHECKPOINT = 64,              /* events between a track's checkpoints: the page's CK */
  LANES = 64,                   /* span lanes of a row; past them, one folded lane */
  PART = 3 << 18,               /* raw bytes a bin element: 1 MiB of base64, whole groups of 3 */
  SLOTS = 16                    /* parameters whose numbers go as the difference from the last */
};

/* NameListStruct -- names made global across logs (each log has its own
 * registry): a name's index in the page */
typedef struct NameListStruct {
  const char **names;
  size_t count, limit;
} NameListStruct;

/* TrackStruct -- a thread's events: core (time difference and type an
 * event), vals (their parameters' values), ck (where in vals each 64th
 * event's begin, 4 bytes little-endian) */
typedef struct TrackStruct {
  size_t source;
  uint32_t serial;
  uint64_t n;
  int64_t lastNs;
  uint64_t last[SLOTS];         /* the last number of each parameter's place, 0 at a checkpoint */
  ExportOutStruct core, vals, ck;
  size_t coreAt, valsAt, ckAt;  /* offsets in the page's data */
} TrackStruct;

/* TypeStruct -- an event name and kind of one log: its name, kind and
 * parameters in the page */
typedef struct TypeStruct {
  size_t source;
  const EventDescStruct *desc;
  unsigned kind;
  int name, kindIndex, next;    /* next: the type of the same event and another kind, or -1 */
} TypeStruct;

typedef struct SpanBarStruct {
  int64_t begin, end;
  uint64_t key;
  int name;
  long track, beginTrack, endTrack;   /* track: on its thread's, or -1 (async) */
  size_t source;
  unsigned flags;               /* 1 unfinished, 2 key in hex, 4 async */
  size_t row;
  unsigned lane;
} SpanBarStruct;

typedef struct RowStruct {      /* an async row: a process's spans of one name */
  size_t source;
  int name;
} RowStruct;

typedef struct PointStruct {
  int counter;
  int64_t ns;
  uint64_t bits;                /* the value: a double's bits, or unsigned */
  size_t seq;
} PointStruct;

typedef struct HtmlStruct {
  ExportOutStruct scratch;
  NameListStruct events, kinds, spanNames;
  NameListStruct counterNames;  /* "name" or "name[key]": owned */
  unsigned char *counterDouble; /* by counter: its values are doubles */
  size_t counterLimit;
  int **typeFirst;              /* by log, by registry index: first type, or -1 */
  TypeStruct *types;
  size_t typeCount, typeLimit;
  SpanTrackerStruct **trackers; /* by log */
  TrackStruct *tracks;
  size_t trackCount, trackLimit;
  SpanBarStruct *spans;
  size_t spanCount, spanLimit;
  PointStruct *points;
  size_t pointCount, pointLimit;
  int64_t *lastNs;              /* by log: its latest event's time */
  int failed;                   /* out of memory */
  ExportStruct *ex;
  /* the base64 writer */
  unsigned char pending[3];
  size_t pendingCount, partUsed, bytes;
} HtmlStruct;

/* HtmlGrow -- room for one more of *count items of size in *array
 * (exporthtml.c); 0 if out of memory */
extern int HtmlGrow(void *array, size_t *count, size_t *limit, size_t size);

/* The page's numbers: LEB128, signed ones zigzag (htmldata.c) */
extern void HtmlPutVarint(ExportOutStruct *out, uint64_t v);
extern void HtmlPutZigzag(ExportOutStruct *out, int64_t v);
extern void HtmlPutBytes(ExportOutStruct *out, const char *s, size_t n);

/* HtmlPutData -- what was gathered, as the page's data on out and its
 * meta, a JSON object, in meta (htmldata.c) */
extern void HtmlPutData(ExportStruct *ex, HtmlStruct *state, ExportOutStruct *out,
                        ExportOutStruct *meta);

#endif /* htmlint_h */
