/* <tests/unit/capture.h> -- capture a session's stream in memory and read it back
 *
 * .design: design/runtime.txt .sol.session design/index.txt .req.share
 *
 * Shared by the CMocka tests of the runtime (test_roundtrip.c,
 * test_control.c, test_threads.c).  Include after <cmocka.h>.
 *
 * CaptureStart adds a memory stream before anything is emitted in the
 * session, so the session writes no default telltale.log.  CaptureFinish
 * ends the session (EventFinish), then opens the shared stream reader
 * (eventread.h) on the bytes; CaptureNext returns the events in time
 * order and asserts, at the end, that the stream was sound.  With
 * TELLTALE_COMPACT=1 it asserts that the blocks were compact.
 */

#ifndef capture_h
#define capture_h

#include <stdio.h>
#include <string.h>

#include "event.h"
#include "eventread.h"
#include "plinth.h"

typedef struct CaptureStruct {
  PlinthStream stream;
  const unsigned char *bytes;           /* the stream, once read */
  size_t size;
  EventStreamStruct *reader;
  const EventStreamInfoStruct *info;
  int ended;                            /* CaptureNext reached the end */
} CaptureStruct;

/* CaptureStart -- a new session whose only binary stream is in memory */
static void CaptureStart(CaptureStruct *c)
{
  memset(c, 0, sizeof *c);
  assert_int_equal(PlinthStreamOpenMemory(&c->stream), 0);
  assert_int_equal(EventStreamAddBinary(c->stream), 0);
}

/* CaptureOpen -- open the reader on what the stream holds now */
static void CaptureOpen(CaptureStruct *c)
{
  char msg[256];
  EventStreamRes res;
  c->bytes = PlinthStreamMemory(c->stream, &c->size);
  assert_non_null(c->bytes);
  res = EventStreamOpen(&c->reader, c->bytes, c->size, 0, msg, sizeof msg);
  if (res != EventStreamOK)
    fail_msg("EventStreamOpen: %s", msg);
  c->info = EventStreamInfo(c->reader);
  c->ended = 0;
  /* Run with TELLTALE_COMPACT=1 (tests/run), the log's blocks are
   * compact (design/runtime.txt .compact): the test reads them so. */
  {
    const char *compact = PlinthGetEnv("TELLTALE_COMPACT");
    if (compact != NULL && (strcmp(compact, "1") == 0 || strcmp(compact, "on") == 0)
        && c->info->blockCount > 0 && c->info->compactBlocks == 0)
      fail_msg("TELLTALE_COMPACT=%s, but none of the %zu blocks is compact", compact,
               c->info->blockCount);
  }
}

/* CaptureFinish -- end the session and open the reader on its stream */
static void CaptureFinish(CaptureStruct *c)
{
  EventFinish();
  CaptureOpen(c);
}

/* CaptureNext -- the next event, or 0 at a sound end of the stream */
static int CaptureNext(CaptureStruct *c, EventRecordStruct *rec)
{
  EventStreamRes res = EventStreamNext(c->reader, rec);
  if (res == EventStreamOK)
    return 1;
  if (res != EventStreamEND) {
    size_t n = EventStreamProblemCount(c->reader);
    fail_msg("EventStreamNext: %zu problem(s), first: %s", n,
             n > 0 ? EventStreamProblem(c->reader, 0) : "(none)");
  }
  c->ended = 1;
  return 0;
}

/* CaptureRewind -- read the stream again from its start */
static void CaptureRewind(CaptureStruct *c)
{
  EventStreamClose(c->reader);
  c->reader = NULL;
  CaptureOpen(c);
}

/* CaptureCount -- events of a code in the whole stream (rewinds) */
static size_t CaptureCount(CaptureStruct *c, unsigned code)
{
  EventRecordStruct rec;
  size_t n = 0;
  CaptureRewind(c);
  while (CaptureNext(c, &rec))
    if (rec.code == code)
      ++n;
  return n;
}

/* CaptureCountValue -- events of a code whose first parameter is value */
static size_t CaptureCountValue(CaptureStruct *c, unsigned code, uint64_t value)
{
  EventRecordStruct rec;
  size_t n = 0;
  CaptureRewind(c);
  while (CaptureNext(c, &rec))
    if (rec.code == code && rec.values[0].u == value)
      ++n;
  return n;
}

/* CaptureClose -- close the reader and the memory stream */
static void CaptureClose(CaptureStruct *c)
{
  EventStreamClose(c->reader);
  PlinthStreamClose(c->stream);
  memset(c, 0, sizeof *c);
}

#endif /* capture_h */
