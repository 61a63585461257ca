/* <tools/eventcnv/cnvint.h> -- eventcnv's rooms, and what they share
 *
 * .design: design/tools.txt .eventcnv
 *
 * eventcnv is in rooms of one concern each:
 *   eventcnv.c    main: the FILEs opened, the events printed or exported
 *   cnvoptions.c  the command line and its help
 *   cnvfilter.c   --kind and --event
 *   cnvreport.c   --header, --list, --count, --summary and --spans
 *   cnvend.c      what is said of a log at the end, and the exit status
 *   cnvfollow.c   --follow
 */

#ifndef cnvint_h
#define cnvint_h

#include "eventread.h"
#include "input.h"

#include <stddef.h>

/* Exit status: design/tools.txt .eventcnv.exit */
#define EXIT_BAD_STREAM 1
#define EXIT_USAGE      2

/* CnvOptionsStruct -- what the command line asked for (cnvoptions.c) */
typedef struct CnvOptionsStruct {
  int header, list, count, summary, spans, resync, follow;
  const char *kinds;            /* --kind argument, or NULL */
  const char *events;           /* --event argument, or NULL */
  const char *format;           /* --format argument, or NULL: text */
  const char *output;           /* -o argument, or NULL: stdout */
  const char *insert;           /* --insert argument, or NULL */
  const char **paths;           /* the FILEs; "-" for stdin */
  size_t pathCount;
  const char *jobs;             /* --jobs argument, or NULL: one a processor */
  const char *zstd;             /* --zstd's LEVEL, "" for none given, or NULL: no --zstd */
} CnvOptionsStruct;

/* CnvParseArgs -- the command line into opt; a usage error exits 2 */
extern void CnvParseArgs(int argc, char **argv, CnvOptionsStruct *opt);

/* CnvIsArchive -- 1 if the stream is rewritten (--format telltale) */
extern int CnvIsArchive(const CnvOptionsStruct *opt);

/* CnvIsRows -- 1 if the format is ClickHouse's rows, which --follow ships */
extern int CnvIsRows(const CnvOptionsStruct *opt);

/* CnvIsExport -- 1 if the events go to a writer of export.c */
extern int CnvIsExport(const CnvOptionsStruct *opt);


/* CnvFilterStruct -- --kind and --event in one registry (cnvfilter.c) */
typedef struct CnvFilterStruct {
  int byKind, byEvent;
  unsigned char kinds[EVENT_STREAM_KIND_LIMIT];  /* 1 for a kind that --kind named */
  const EventRegistryStruct *registry;
  unsigned char *events;        /* 1 for an event that --event named, by index */
} CnvFilterStruct;

/* CnvFilterInit -- opt's --kind and --event in registry; a name it
 * does not have is a usage error (exit 2) that lists the names it has */
extern void CnvFilterInit(CnvFilterStruct *filter, const CnvOptionsStruct *opt,
                          const EventRegistryStruct *registry);

/* CnvFilterPasses -- 1 if an event of kind and code passes */
extern int CnvFilterPasses(const CnvFilterStruct *filter, unsigned kind, unsigned code);


/* CnvLogStruct -- one FILE being read */
typedef struct CnvLogStruct {
  const char *path, *name;      /* as given; as said in messages */
  InputStruct in;
  EventStreamStruct *stream;
  InputRecoveredStruct recovered;    /* what InputRecoverLive found */
  CnvFilterStruct filter;       /* --kind and --event in its registry */
} CnvLogStruct;


/* CnvPrintEach -- --header, --list, --count, --summary and --spans of
 * one log (cnvreport.c); returns EXIT_SUCCESS, or EXIT_BAD_STREAM
 * having said why */
extern int CnvPrintEach(const CnvOptionsStruct *opt, CnvLogStruct *log);

/* CnvPutSeconds -- ns as seconds with 9 decimals, into buf */
extern void CnvPutSeconds(char *buf, size_t size, int64_t ns);


/* CnvEnded -- the stream ended as the program meant (cnvend.c) */
extern int CnvEnded(const EventStreamInfoStruct *info);

/* CnvEnding -- how the stream ended, after "end  " in --header */
extern void CnvEnding(char *buf, size_t size, const EventStreamInfoStruct *info,
                      const InputRecoveredStruct *recovered);

/* CnvDropped -- the events of a kind that the program dropped */
extern uint64_t CnvDropped(const EventStreamInfoStruct *info,
                           const InputRecoveredStruct *recovered, unsigned kind);

/* CnvFinish -- say what went wrong with a log, and what was lost;
 * returns the exit status, status or worse */
extern int CnvFinish(const CnvOptionsStruct *opt, CnvLogStruct *log, int status);


/* CnvFollow -- --follow (cnvfollow.c); returns the exit status */
extern int CnvFollow(const CnvOptionsStruct *opt);

#endif /* cnvint_h */
