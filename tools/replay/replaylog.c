/* <tools/replay/replaylog.c> -- the log as replay reads it
 *
 * .design: design/heap.txt .replay
 *
 * The log mapped, with what a program that died left only in LOG.live
 * recovered into it (.replay.log), its stream opened, and its events
 * found by name in the stream's own registry (.req.self): replay's
 * reading thread asks of each record only which event it is to replay
 * and the values of the parameters it reads.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventapi.h"
#include "eventread.h"
#include "replayint.h"
#include "report.h"

/* The events replay understands, found by name in the stream's own
 * registry (design/index.txt .req.self), and the parameters it
 * reads, by name. */
typedef struct EvDescStruct {
  const char *name;
  const char *params[4];        /* the parameters read, in the order replayengine.c uses */
  const char *at;               /* its twin with a call stack (.stacks), read alike */
} EvDescStruct;

static const EvDescStruct evDesc[EV_LIMIT] = {
  [EvMalloc] = {"Malloc", {"size", "result"}, "MallocAt"},
  [EvCalloc] = {"Calloc", {"count", "size", "result"}, "CallocAt"},
  [EvRealloc] = {"Realloc", {"old", "result", "size"}, "ReallocAt"},
  [EvFree] = {"Free", {"pointer"}, NULL},
  [EvFreeSized] = {"FreeSized", {"pointer"}, NULL},
  [EvMemalign] = {"Memalign", {"alignment", "size", "result"}, "MemalignAt"},
  [EvAlignedAlloc] = {"AlignedAlloc", {"alignment", "size", "result"}, "AlignedAllocAt"},
  [EvPosixMemalign] = {"PosixMemalign", {"alignment", "size", "result"}, "PosixMemalignAt"},
  [EvReallocMove] = {"ReallocMove", {"old"}, NULL},
  [EvPoolCreate] = {"PoolCreate", {"pool", "size"}, NULL},
  [EvPoolDestroy] = {"PoolDestroy", {"pool"}, NULL},
  [EvPoolAlloc] = {"PoolAlloc", {"pool", "addr", "size"}, NULL},
  [EvPoolFree] = {"PoolFree", {"pool", "addr", "size"}, NULL},
  [EvThreadExit] = {"ThreadExit", {"thread"}, NULL},
  [EvExec] = {"Exec", {NULL}, NULL},
};

static unsigned char codeEv[65536];            /* stream code -> EvKind */
static unsigned char codeParam[65536][4];      /* stream code -> value index per parameter */

/* findEvents -- which codes in this stream replay understands */
static void findEvents(const EventRegistryStruct *reg)
{
  for (unsigned i = 0; i < reg->eventCount; ++i) {
    const EventDescStruct *d = &reg->events[i];
    for (unsigned ev = EvMalloc; ev < EV_LIMIT; ++ev) {
      unsigned ok = 1, idx[4] = {0, 0, 0, 0};
      if ((strcmp(d->name, evDesc[ev].name) != 0 &&
           (evDesc[ev].at == NULL || strcmp(d->name, evDesc[ev].at) != 0)) || d->code > 0xFFFF)
        continue;
      for (unsigned p = 0; p < 4 && evDesc[ev].params[p] != NULL; ++p) {
        unsigned j;
        for (j = 0; j < d->paramCount; ++j)
          if (strcmp(d->paramNames[j], evDesc[ev].params[p]) == 0)
            break;
        if (j == d->paramCount || EventTypeOf(d->format[j])->form != EventTypeUNSIGNED)
          ok = 0;
        idx[p] = j;
      }
      if (!ok) {
        if (ReplayOptions.report)
          Report("%s: event %s has unexpected parameters: not replayed",
                  ReplayOptions.log, d->name);
        continue;
      }
      codeEv[d->code] = (unsigned char)ev;
      for (unsigned p = 0; p < 4; ++p)
        codeParam[d->code][p] = (unsigned char)idx[p];
    }
  }
}

/* ReplayLogEvent -- what the record is to replay, and the values of the
 * parameters replay reads, in evDesc's order, in v */
EvKind ReplayLogEvent(const EventRecordStruct *rec, uint64_t v[4])
{
  for (unsigned i = 0; i < 4; ++i)
    v[i] = rec->values[codeParam[rec->code][i]].u;
  return (EvKind)codeEv[rec->code];
}

/* recoverLive -- a program that died leaves LOG.live beside its log:
 * add the events only it has, as eventcnv does.  design/control.txt
 * .sol.recover, design/heap.txt .replay.log  Returns 1 if *bufReturn is now malloc'd;
 * then the events recovered are in *recoveredReturn. */
static int recoverLive(unsigned char **bufReturn, size_t *sizeReturn, uint64_t *recoveredReturn)
{
  char livePath[4096], msg[256];
  struct stat st;
  unsigned char *liveBytes, *merged;
  size_t size;
  EventRecoverStruct recovery;
  int fd;
  if (snprintf(livePath, sizeof livePath, "%s.live", ReplayOptions.log) >= (int)sizeof livePath)
    return 0;
  fd = open(livePath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT)
      ReplayFail("%s: %s", livePath, strerror(errno));
    return 0;
  }
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    close(fd);
    return 0;
  }
  liveBytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (liveBytes == MAP_FAILED)
    ReplayFail("%s: %s", livePath, strerror(errno));
  if (EventRecover(*bufReturn, *sizeReturn, liveBytes, (size_t)st.st_size, &merged, &size,
                   &recovery, msg, sizeof msg) != 0) {
    if (ReplayOptions.report)
      Report("%s: %s; replaying the log alone", livePath, msg);
    munmap(liveBytes, (size_t)st.st_size);
    return 0;
  }
  munmap(liveBytes, (size_t)st.st_size);
  munmap(*bufReturn, *sizeReturn);
  *bufReturn = merged;
  *sizeReturn = size;
  *recoveredReturn = recovery.events;
  if (recovery.damaged > 0 && ReplayOptions.report)
    Report("%s: %lu regions have damaged headers (the first at offset %lu): "
            "not recovered", livePath, (unsigned long)recovery.damaged,
            (unsigned long)recovery.damagedOffset);
  if (recovery.logFailed && ReplayOptions.report)
    Report("%s: the program could not write all of its log: events are lost",
            livePath);
  if (recovery.rejected > 0 && ReplayOptions.report)
    Report("%s: %lu live blocks did not continue the log (the first at offset "
            "%lu): not recovered", livePath, (unsigned long)recovery.rejected,
            (unsigned long)recovery.rejectedOffset);
  return 1;
}

/* The log as read: mapped, or recovered with LOG.live into a malloc'd copy */
static unsigned char *logBytes;
static size_t logSize;
static int logRecovered;

/* ReplayLogOpen -- map the log, recover LOG.live into it, open the stream and
 * find the events replay understands in its registry */
EventStreamStruct *ReplayLogOpen(uint64_t *recoveredReturn, int *liveReturn)
{
  struct stat st;
  EventStreamStruct *stream;
  char msg[512];
  int fd = open(ReplayOptions.log, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    ReplayFail("%s: %s", ReplayOptions.log, strerror(errno));
  if (fstat(fd, &st) != 0 || st.st_size == 0)
    ReplayFail("%s: empty or unreadable", ReplayOptions.log);
  logBytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (logBytes == MAP_FAILED)
    ReplayFail("%s: %s", ReplayOptions.log, strerror(errno));
  close(fd);
  (void)madvise(logBytes, (size_t)st.st_size, MADV_SEQUENTIAL);
  logSize = (size_t)st.st_size;
  *recoveredReturn = 0;
  logRecovered = recoverLive(&logBytes, &logSize, recoveredReturn);
  *liveReturn = logRecovered;
  if (EventStreamOpen(&stream, logBytes, logSize, 0, msg, sizeof msg) != EventStreamOK)
    ReplayFail("%s: %s", ReplayOptions.log, msg);
  findEvents(EventStreamInfo(stream)->registry);
  return stream;
}

/* ReplayLogClose -- close the stream and let go of the log */
void ReplayLogClose(EventStreamStruct *stream)
{
  EventStreamClose(stream);
  if (logRecovered)
    free(logBytes);             /* EventRecover's, not the mapped log */
  else
    munmap(logBytes, logSize);
}
