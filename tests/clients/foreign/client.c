/* <tests/clients/foreign/client.c> -- the same events on every platform
 *
 * .design: design/tests.txt .test.foreign
 *
 * A deterministic client of the test registry (tests/lib/eventdef.h), built
 * natively and with Debian's cross compilers (tests/tools/foreign.sh).  Every
 * value it emits is fixed and fits 32 bits where the field is a word or
 * an address, so that a log written on s390x, powerpc or i386 decodes
 * on x86-64 to the same lines as the native log's, times and thread ids
 * apart.  The main thread emits every format letter (P A W U S D, none,
 * and TestMany with all of them), interns strings and labels addresses;
 * then THREADS named threads, running together, each emit STEPS
 * TestThread events and a string, with 4 KiB buffers (TELLTALE_BUFFER,
 * set by the script) so that buffers fill and switch.
 *
 * Usage: foreign_client MODE
 *   finish   EventFinish, then return                    exit 0
 *   abort    abort() after the threads have joined       SIGABRT
 *   kill     raise(SIGKILL) after the threads have joined: the
 *            events not yet written are in the live file SIGKILL
 *   drops    nothing of the above: the log and a pipe nobody reads as
 *            streams, the writer thread with the drop policy, and
 *            DROP_EVENTS TestW, most of them dropped, counted in the
 *            live file and not yet reported; then SIGKILL   SIGKILL
 *   big      nothing of the above: BIG_EVENTS TestS of BIG_STRING
 *            characters, a log past 2 GiB (a 32-bit off_t's end), then
 *            EventFinish                                 exit 0
 */

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <telltale/event.h>
#include <telltale/plinth.h>

#define THREADS 3
#define STEPS 2000u
#define DROP_EVENTS 100000u
#define BIG_EVENTS 2200000u
#define BIG_STRING 1000u

/* drops -- the drops ending (above) */
static int drops(void)
{
  PlinthStream log, stalled;
  int fds[2];
  const char *path = getenv("TELLTALE_FILE");
  if (path == NULL || pipe(fds) != 0 || PlinthStreamOpenFile(&log, path) != 0
      || PlinthStreamOpenFd(&stalled, fds[1], 0) != 0 || EventStreamAddBinary(log) != 0
      || EventStreamAddBinary(stalled) != 0 || EventWriterAsync(1, 1) != 0)
    return 98;
  for (EventW i = 0; i < DROP_EVENTS; ++i)
    EVENT_W(TestW, i);
  raise(SIGKILL);
  return 97;
}

/* big -- the big ending (above) */
static int big(void)
{
  static char s[BIG_STRING + 1];
  memset(s, 'b', BIG_STRING);
  for (EventW i = 0; i < BIG_EVENTS; ++i)
    EVENT_S(TestS, s);
  EventFinish();
  return 0;
}

/* check -- a function of thread and seq that fits 32 bits */
static EventW check(EventU thread, EventW seq)
{
  uint32_t z = (uint32_t)thread * 0x9E3779B9u ^ (uint32_t)seq;
  z = (z ^ (z >> 16)) * 0x85EBCA6Bu;
  z = (z ^ (z >> 13)) * 0xC2B2AE35u;
  return z ^ (z >> 16);
}

static void *worker(void *arg)
{
  EventU thread = (EventU)(uintptr_t)arg;
  char name[32];
  snprintf(name, sizeof name, "worker-%u", (unsigned)thread);
  EventThreadNameSet(name);
  EVENT_WS(TestWS, thread, name);
  for (EventW seq = 0; seq < STEPS; ++seq)
    EVENT_UWW(TestThread, thread, seq, check(thread, seq));
  EVENT_WS(TestWS, thread, "done");
  return NULL;
}

/* Fixed pointers and addresses: 32 bits wide, so they read the same. */
#define P1 ((EventP)(uintptr_t)0x12345678u)
#define P2 ((EventP)(uintptr_t)0xFEDCBA98u)
#define A1 ((EventA)0x00010000u)
#define A2 ((EventA)0x80000000u)
#define A3 ((EventA)0xDEADBEE0u)

int main(int argc, char **argv)
{
  static char longString[5000];
  pthread_t threads[THREADS];
  const char *mode = argc == 2 ? argv[1] : "";
  if (strcmp(mode, "drops") == 0)
    return drops();
  if (strcmp(mode, "big") == 0)
    return big();
  if (strcmp(mode, "finish") != 0 && strcmp(mode, "abort") != 0 && strcmp(mode, "kill") != 0) {
    fprintf(stderr, "usage: foreign_client finish|abort|kill|drops|big\n");
    return 2;
  }
  memset(longString, 'x', sizeof longString - 1);

  EventThreadNameSet("main");
  EventLabelString(A1, "the first arena");
  EventLabelString(A2, "high half");
  EventLabel(A3, EventInternString("interned label"));
  (void)EventInternString("interned, not a label");

  EVENT_0(TestNone);
  EVENT_P(TestP, P1);
  EVENT_P(TestP, P2);
  EVENT_P(TestP, NULL);
  EVENT_A(TestA, A1);
  EVENT_A(TestA, A2);
  EVENT_A(TestA, A3);
  EVENT_A(TestA, (EventA)0x1234u);               /* no label */
  EVENT_W(TestW, 0);
  EVENT_W(TestW, 1);
  EVENT_W(TestW, 0xFFFFFFFFu);
  EVENT_W(TestW, 0x01020304u);
  EVENT_U(TestU, 0);
  EVENT_U(TestU, 0xFFFFFFFFu);
  EVENT_U(TestU, 0xA1B2C3D4u);
  EVENT_S(TestS, "");
  EVENT_S(TestS, "hello, foreign world");
  EVENT_S(TestS, "tab\there, quote \" and backslash \\");
  EVENT_S(TestS, longString);                    /* cut to 1023 characters */
  EVENT_D(TestD, 0.0);
  EVENT_D(TestD, -1.5);
  EVENT_D(TestD, 3.141592653589793);
  EVENT_D(TestD, 1e300);
  EVENT_D(TestD, -2.2250738585072014e-308);
  EVENT_D(TestD, 0.1);
  EVENT_PAW(TestPAW, P1, A1, 42);
  EVENT_PAW(TestPAW, P2, A3, 0x89ABCDEFu);
  EVENT_PAWUDPAWUDPAWUDS(TestMany,
                         P1, A1, 1, 0x11111111u, 1.25,
                         P2, A2, 0x22222222u, 2, -2.5,
                         NULL, A3, 3, 0x33333333u, 1e-10,
                         "sixteen parameters");
  EVENT_WS(TestWS, 7, "seven");

  for (unsigned i = 0; i < THREADS; ++i)
    if (pthread_create(&threads[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) {
      fprintf(stderr, "foreign_client: pthread_create failed\n");
      return 99;
    }
  for (unsigned i = 0; i < THREADS; ++i)
    pthread_join(threads[i], NULL);

  EVENT_WS(TestWS, 0, mode);
  if (strcmp(mode, "abort") == 0)
    abort();
  if (strcmp(mode, "kill") == 0)
    raise(SIGKILL);
  EventFinish();
  return 0;
}
