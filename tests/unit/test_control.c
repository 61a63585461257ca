/* <tests/unit/test_control.c> -- kind control through the API
 *
 * .design: design/control.txt .sol.control .sol.control.own design/runtime.txt .sol.env
 *
 * Covers:
 *   control-1.*  output control: EventControlReset keeps a kind's events
 *                out of the stream while other kinds go out; a kind
 *                turned back on before the flush sends what it buffered
 *                (output is decided when a buffer goes out); EventControl's
 *                (old & ~reset) ^ flip, EventControlSet and EventControlFlip,
 *                each returning the previous set; bits beyond the registry's
 *                kinds are never set.
 *   control-2.*  recording control: EventRecord stops a kind being recorded
 *                at all, so turning it back on later sends nothing old;
 *                EventRecordByName does it for one event of a kind.
 *   control-3.*  the Telltale kind can be neither turned off nor left
 *                unrecorded: its Intern and Label events must reach the
 *                log, or the labels of every other kind cannot be read.
 *   control-4.*  EventKindParse: "all", "none", lists, removals, spaces,
 *                and its errors (unknown kind, listing the kinds; empty
 *                name; too long; a short or empty message buffer);
 *                EventKindIndex; MPS-style masks (0x3f) beside names.
 *   control-5.*  an event with no buffer to go to (memory ran out) is
 *                counted and reported by EventsDropped, never dropped
 *                silently (.sol.dropped).  Skipped under sanitizers,
 *                whose shadow memory an address-space limit breaks.
 *                control-5.2: the asynchronous writer's drop policy, with
 *                a slowly read pipe and two emitters: written + dropped
 *                = emitted, and (under ThreadSanitizer) each emitter
 *                drops into a sink of its own.
 *                control-5.4: a fork while the parent has drops not yet
 *                reported: the child's log reports none of them, the
 *                parent's all.  control-5.5: as 5.2, with Label events
 *                filling the Telltale buffer, so that the reports of
 *                drops are dropped too: still written + dropped =
 *                emitted.
 *   control-6.*  write failures, injected by PlinthStreamFault: ENOSPC and
 *                EIO, lasting, written by the emitting thread (6.1) or the
 *                asynchronous writer (6.2), are said once, nothing is
 *                written after the cut block, even when the space comes
 *                back (6.3), and the events not written are counted and
 *                said at the end; short writes are retried, every event
 *                whole (6.4); a real file that cannot grow (RLIMIT_FSIZE)
 *                with the asynchronous writer, in a child (6.5).
 *                design/control.txt .sol.writer.fail
 * The environment variables (TELLTALE_CONTROL and friends) are covered by
 * tests/tools/example.sh, since they are read before main.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture.h"

#define BIT(kind) EVENT_KIND_BIT(EventKind##kind)
#define ALL_KINDS (EVENT_KIND_BIT(EVENT_KIND_COUNT) - 1)

/* Each case uses its own marker values, so that events a ring kept from
 * an earlier case cannot be mistaken for this case's. */

static EventKindSet controlNow(void)
{
  return atomic_load(&EVENT_SOURCE.control);
}

static EventKindSet recordNow(void)
{
  return atomic_load(&EVENT_SOURCE_RECORD);
}

/* restoreAll -- every kind output and recorded, as at start */
static int restoreAll(void **state)
{
  (void)state;
  (void)EventControlSet(ALL_KINDS);
  (void)EventRecord(0, ALL_KINDS & ~recordNow());
  assert_int_equal(controlNow(), ALL_KINDS);
  assert_int_equal(recordNow(), ALL_KINDS);
  return 0;
}


/* control-1: output ------------------------------------------------- */

/* control-1.1: Noisy off: its events stay out, Test events go out */
static void control_1_1_reset_keeps_kind_out(void **state)
{
  CaptureStruct c;
  EventKindSet old;
  (void)state;
  CaptureStart(&c);
  old = EventControlReset(BIT(Noisy));
  assert_int_equal(old, ALL_KINDS);
  assert_int_equal(controlNow(), ALL_KINDS & ~BIT(Noisy));
  for (unsigned i = 0; i < 100; ++i) {
    EVENT_PAW(TestPAW, NULL, 0, 1100 + i);
    EVENT_W(TestW, 1100 + i);
  }
  CaptureFinish(&c);
  assert_int_equal(CaptureCount(&c, EventCodeTestPAW), 0);
  assert_int_equal(CaptureCount(&c, EventCodeTestW), 100);
  CaptureClose(&c);
}

/* control-1.2: output is decided at the call, per event, not when a
 * buffer goes out (.sol.control.cut): of a kind turned off and on
 * again before any flush, the event emitted while off is not sent, and
 * those emitted while on, before and after, are */
static void control_1_2_decided_at_the_call(void **state)
{
  CaptureStruct c;
  EventRecordStruct rec;
  unsigned seen[3] = {0, 0, 0};
  (void)state;
  CaptureStart(&c);
  EVENT_PAW(TestPAW, NULL, 0, 1200);
  (void)EventControlReset(BIT(Noisy));
  EVENT_PAW(TestPAW, NULL, 0, 1201);
  (void)EventControlSet(BIT(Noisy));
  EVENT_PAW(TestPAW, NULL, 0, 1202);
  CaptureFinish(&c);
  while (CaptureNext(&c, &rec))
    if (rec.code == EventCodeTestPAW && rec.values[2].u >= 1200 && rec.values[2].u <= 1202)
      ++seen[rec.values[2].u - 1200];
  assert_int_equal(seen[0], 1);
  assert_int_equal(seen[1], 0);
  assert_int_equal(seen[2], 1);
  CaptureClose(&c);
}

/* control-1.3: EventControl computes (old & ~reset) ^ flip and returns old */
static void control_1_3_control_formula(void **state)
{
  (void)state;
  /* reset Test and Noisy, then flip Noisy: Test off, Noisy on */
  assert_int_equal(EventControl(BIT(Test) | BIT(Noisy), BIT(Noisy)), ALL_KINDS);
  assert_int_equal(controlNow(), ALL_KINDS & ~BIT(Test));
  /* flip only: Test on again, Noisy off */
  assert_int_equal(EventControl(0, BIT(Test) | BIT(Noisy)), ALL_KINDS & ~BIT(Test));
  assert_int_equal(controlNow(), ALL_KINDS & ~BIT(Noisy));
  /* EventControl(0, 0) reads without changing */
  assert_int_equal(EventControl(0, 0), ALL_KINDS & ~BIT(Noisy));
  assert_int_equal(controlNow(), ALL_KINDS & ~BIT(Noisy));
}

/* control-1.4: EventControlSet turns on, EventControlFlip toggles */
static void control_1_4_set_and_flip(void **state)
{
  (void)state;
  (void)EventControlReset(BIT(Test) | BIT(Noisy) | BIT(User));
  assert_int_equal(EventControlSet(BIT(Test)), ALL_KINDS & ~(BIT(Test) | BIT(Noisy) | BIT(User)));
  assert_int_equal(controlNow(), ALL_KINDS & ~(BIT(Noisy) | BIT(User)));
  assert_int_equal(EventControlSet(BIT(Test)), controlNow());   /* already on: no change */
  assert_int_equal(EventControlFlip(BIT(Test) | BIT(Noisy)), ALL_KINDS & ~(BIT(Noisy) | BIT(User)));
  assert_int_equal(controlNow(), ALL_KINDS & ~(BIT(Test) | BIT(User)));
  (void)EventControlFlip(BIT(Test) | BIT(Noisy));
  assert_int_equal(controlNow(), ALL_KINDS & ~(BIT(Noisy) | BIT(User)));
}

/* control-1.5: bits beyond the registry's kinds are never set */
static void control_1_5_unknown_bits_ignored(void **state)
{
  (void)state;
  assert_true(EVENT_KIND_COUNT < 32);
  (void)EventControlSet((EventKindSet)1 << 31);
  assert_int_equal(controlNow(), ALL_KINDS);
  (void)EventControlFlip((EventKindSet)-1);
  assert_int_equal(controlNow(), BIT(Telltale));
  (void)EventRecord(0, (EventKindSet)1 << 31);
  assert_int_equal(recordNow(), ALL_KINDS);
}


/* control-2: recording ----------------------------------------------- */

/* control-2.1: a kind not recorded is not even buffered: turning it
 * back on sends only what was emitted afterwards */
static void control_2_1_record_off_not_buffered(void **state)
{
  CaptureStruct c;
  (void)state;
  CaptureStart(&c);
  assert_int_equal(EventRecord(BIT(Noisy), 0), ALL_KINDS);
  assert_int_equal(recordNow(), ALL_KINDS & ~BIT(Noisy));
  EVENT_PAW(TestPAW, NULL, 0, 2100);
  EVENT_W(TestW, 2100);
  assert_int_equal(EventRecord(0, BIT(Noisy)), ALL_KINDS & ~BIT(Noisy));
  EVENT_PAW(TestPAW, NULL, 0, 2101);
  CaptureFinish(&c);
  assert_int_equal(CaptureCount(&c, EventCodeTestW), 1);
  assert_int_equal(CaptureCount(&c, EventCodeTestPAW), 1);
  {
    EventRecordStruct rec;
    CaptureRewind(&c);
    while (CaptureNext(&c, &rec))
      if (rec.code == EventCodeTestPAW)
        assert_int_equal(rec.values[2].u, 2101);
  }
  CaptureClose(&c);
}

/* control-2.3: one event turned off (EventRecordByName) is not recorded
   while others of its kind are; turned on again, it is; an unknown name
   and telltale's own events are refused with a message */
static void control_2_3_event_off(void **state)
{
  CaptureStruct c;
  char err[128];
  (void)state;
  CaptureStart(&c);
  assert_int_equal(EventRecordByName("TestW", 0, err, sizeof err), 0);
  assert_int_equal(atomic_load(&EVENT_SOURCE_OFF[EventCodeTestW]), 1);
  EVENT_W(TestW, 2300);
  EVENT_U(TestU, 2300);                         /* same kind: still recorded */
  assert_int_equal(EventRecordByName("TestW", 1, err, sizeof err), 0);
  EVENT_W(TestW, 2301);
  CaptureFinish(&c);
  assert_int_equal(CaptureCountValue(&c, EventCodeTestW, 2300), 0);
  assert_int_equal(CaptureCountValue(&c, EventCodeTestU, 2300), 1);
  assert_int_equal(CaptureCountValue(&c, EventCodeTestW, 2301), 1);
  CaptureClose(&c);
  assert_int_not_equal(EventRecordByName("NoSuchEvent", 0, err, sizeof err), 0);
  assert_non_null(strstr(err, "unknown event 'NoSuchEvent'"));
  assert_int_not_equal(EventRecordByName("Intern", 0, err, sizeof err), 0);
  assert_non_null(strstr(err, "telltale's own events cannot be turned off"));
  assert_int_equal(atomic_load(&EVENT_SOURCE_OFF[EventCodeIntern]), 0);
  assert_int_not_equal(EventRecordByName(NULL, 0, NULL, 0), 0);
}

/* control-2.2: recording everything off but the Telltale kind */
static void control_2_2_record_none(void **state)
{
  CaptureStruct c;
  (void)state;
  CaptureStart(&c);
  (void)EventRecord(ALL_KINDS, 0);
  assert_int_equal(recordNow(), BIT(Telltale));
  EVENT_W(TestW, 2200);
  EVENT_U(TestU, 2200);
  EVENT_WS(TestWS, 2200, "not recorded");
  CaptureFinish(&c);
  assert_int_equal(CaptureCount(&c, EventCodeTestW), 0);
  assert_int_equal(CaptureCount(&c, EventCodeTestU), 0);
  assert_int_equal(CaptureCount(&c, EventCodeTestWS), 0);
  assert_int_equal(CaptureCount(&c, EventCodeStreamEnd), 1);
  CaptureClose(&c);
}


/* control-3: the Telltale kind ---------------------------------------- */

/* control-3.1: the Telltale kind cannot be turned off, in output or
 * recording, by any of the functions.  Its Intern, Label, ClockSync and
 * thread events are what make the rest of the stream readable
 * (design/control.txt .sol.control.own). */
static void control_3_1_telltale_always_on(void **state)
{
  (void)state;
  (void)EventControlReset(BIT(Telltale));
  assert_true(controlNow() & BIT(Telltale));
  (void)EventControl(ALL_KINDS, 0);
  assert_int_equal(controlNow(), BIT(Telltale));
  (void)EventControlFlip(BIT(Telltale));
  assert_true(controlNow() & BIT(Telltale));
  (void)EventRecord(BIT(Telltale), 0);
  assert_true(recordNow() & BIT(Telltale));
  (void)EventRecord(0, BIT(Telltale));
  assert_true(recordNow() & BIT(Telltale));
}

/* control-3.2: with everything but Telltale off, labels still reach the
 * log, so an A event of a kind turned on later can be read with them */
static void control_3_2_labels_reach_log(void **state)
{
  static int object;
  CaptureStruct c;
  EventRecordStruct rec;
  int found = 0;
  (void)state;
  CaptureStart(&c);
  (void)EventControl(ALL_KINDS, 0);
  (void)EventRecord(ALL_KINDS, 0);
  EventLabelString((EventA)&object, "kept label 3.2");
  (void)EventRecord(0, ALL_KINDS & ~recordNow());
  (void)EventControlSet(ALL_KINDS);
  EVENT_A(TestA, (EventA)&object);
  CaptureFinish(&c);
  assert_int_equal(CaptureCount(&c, EventCodeLabel), 1);
  CaptureRewind(&c);
  while (CaptureNext(&c, &rec))
    if (rec.code == EventCodeTestA && rec.values[0].u == (EventA)&object) {
      const char *label = EventStreamLabel(c.reader, rec.values[0].u);
      assert_non_null(label);
      assert_string_equal(label, "kept label 3.2");
      found = 1;
    }
  assert_true(found);
  CaptureClose(&c);
}


/* control-4: parsing kind sets ---------------------------------------- */

static EventKindSet parseOK(const char *spec)
{
  EventKindSet kinds = 0xDEADBEEF;
  char err[256] = "";
  int res = EventKindParse(spec, &kinds, err, sizeof err);
  if (res != 0)
    fail_msg("EventKindParse(\"%s\") = %d: %s", spec, res, err);
  return kinds;
}

/* parseError -- parse a bad spec; the message, in a static buffer */
static const char *parseError(const char *spec)
{
  static char err[1024];
  EventKindSet kinds = 0x5A5A5A5A;
  memset(err, 'x', sizeof err - 1);
  err[sizeof err - 1] = '\0';
  assert_int_equal(EventKindParse(spec, &kinds, err, sizeof err), 22);
  assert_int_equal(kinds, 0x5A5A5A5A);          /* not written on error */
  return err;
}

/* control-4.1: all and none */
static void control_4_1_parse_all_none(void **state)
{
  (void)state;
  assert_int_equal(parseOK("all"), ALL_KINDS);
  assert_int_equal(parseOK("none"), 0);
  assert_int_equal(parseOK("none,Test"), BIT(Test));
  assert_int_equal(parseOK("all,none"), 0);
}

/* control-4.2: lists, removals, signs and spaces */
static void control_4_2_parse_lists(void **state)
{
  (void)state;
  assert_int_equal(parseOK("Test"), BIT(Test));
  assert_int_equal(parseOK("Test,Noisy"), BIT(Test) | BIT(Noisy));
  assert_int_equal(parseOK(" Test , Noisy "), BIT(Test) | BIT(Noisy));
  assert_int_equal(parseOK("\tTest,\tNoisy\t"), BIT(Test) | BIT(Noisy));
  assert_int_equal(parseOK("all,-Noisy"), ALL_KINDS & ~BIT(Noisy));
  assert_int_equal(parseOK("all, -Noisy, -Test"), ALL_KINDS & ~(BIT(Noisy) | BIT(Test)));
  assert_int_equal(parseOK("+Test,+Arena"), BIT(Test) | BIT(Arena));
  assert_int_equal(parseOK("Test,-Test"), 0);
  assert_int_equal(parseOK("Telltale,Arena,Pool,Trace,Seg,Ref,Object,User,Test,Noisy"), ALL_KINDS);
}

/* control-4.3: an unknown kind is named, and the message lists every kind */
static void control_4_3_parse_unknown_lists_kinds(void **state)
{
  const char *err;
  (void)state;
  err = parseError("Test,Bogus");
  if (strstr(err, "Bogus") == NULL)
    fail_msg("message does not name the kind: %s", err);
  for (unsigned i = 0; i < EventRegistry.kindCount; ++i)
    if (strstr(err, EventRegistry.kinds[i].name) == NULL)
      fail_msg("message does not list kind %s: %s", EventRegistry.kinds[i].name, err);
  if (strstr(err, "all") == NULL || strstr(err, "none") == NULL)
    fail_msg("message does not list all and none: %s", err);
  err = parseError("test");                     /* names are case-sensitive */
  assert_non_null(strstr(err, "test"));
}

/* control-4.4: empty names */
static void control_4_4_parse_empty_name(void **state)
{
  (void)state;
  assert_non_null(strstr(parseError("Test,,Noisy"), "empty"));
  assert_non_null(strstr(parseError(",Test"), "empty"));
  assert_non_null(strstr(parseError("-"), "empty"));
  assert_non_null(strstr(parseError("Test, -"), "empty"));
}

/* control-4.5: a name longer than EVENT_NAME_MAX; one of exactly that
 * length is merely unknown */
static void control_4_5_parse_too_long(void **state)
{
  char name[EVENT_NAME_MAX + 2];
  (void)state;
  memset(name, 'K', EVENT_NAME_MAX + 1);
  name[EVENT_NAME_MAX + 1] = '\0';
  assert_non_null(strstr(parseError(name), "too long"));
  name[EVENT_NAME_MAX] = '\0';
  assert_non_null(strstr(parseError(name), "unknown"));
}

/* control-4.6: a short message buffer is cut and terminated; a NULL or
 * empty one is not written; NULL arguments are refused */
static void control_4_6_parse_message_buffers(void **state)
{
  char small[8], untouched[4] = {'x', 'x', 'x', 'x'};
  EventKindSet kinds = 0;
  (void)state;
  memset(small, 'x', sizeof small);
  assert_int_equal(EventKindParse("Bogus", &kinds, small, sizeof small), 22);
  assert_true(memchr(small, '\0', sizeof small) != NULL);
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_int_equal(EventKindParse("Bogus", &kinds, NULL, 0), 22);
  assert_int_equal(EventKindParse("Bogus", &kinds, untouched, 0), 22);
  assert_memory_equal(untouched, "xxxx", 4);
  assert_int_equal(EventKindParse(NULL, &kinds, NULL, 0), 22);
  assert_int_equal(EventKindParse("all", NULL, NULL, 0), 22);
}

/* control-4.8: MPS-style numeric masks beside names: decimal or 0x
 * hexadecimal (never octal), added or removed; bits for kinds the
 * registry lacks, or a token that is not a number, are errors */
static void control_4_8_parse_masks(void **state)
{
  char all[24];
  (void)state;
  assert_int_equal(parseOK("0x3"), 0x3);
  assert_int_equal(parseOK("0X3"), 0x3);
  assert_int_equal(parseOK("3"), 0x3);
  assert_int_equal(parseOK("010"), 10);
  assert_int_equal(parseOK("0"), 0);
  assert_int_equal(parseOK("all,-0x1"), ALL_KINDS & ~1u);
  assert_int_equal(parseOK("0x1, Test"), 1u | BIT(Test));
  snprintf(all, sizeof all, "0x%x", (unsigned)ALL_KINDS);
  assert_int_equal(parseOK(all), ALL_KINDS);
  assert_non_null(strstr(parseError("0x3q"), "'0x3q' is not a mask"));
  assert_non_null(strstr(parseError("0x"), "not a mask"));
  assert_non_null(strstr(parseError("99999999999999999999999"), "not a mask"));
  snprintf(all, sizeof all, "0x%x", (unsigned)ALL_KINDS + 1);
  assert_non_null(strstr(parseError(all), "bits for kinds the registry lacks"));
}

/* control-4.7: EventKindIndex: registry order, telltale's kinds first */
static void control_4_7_kind_index(void **state)
{
  (void)state;
  assert_int_equal(EventKindIndex("Telltale"), EventKindTelltale);
  assert_int_equal(EventKindIndex("Telltale"), 0);
  assert_int_equal(EventKindIndex("User"), EventKindUser);
  assert_int_equal(EventKindIndex("Test"), EventKindTest);
  assert_int_equal(EventKindIndex("Noisy"), EventKindNoisy);
  assert_int_equal(EventKindIndex("Noisy"), EVENT_KIND_COUNT - 1);
  assert_int_equal(EventKindIndex("Bogus"), -1);
  assert_int_equal(EventKindIndex(""), -1);
  assert_int_equal(EventKindIndex("all"), -1);
  assert_int_equal(EventKindIndex("test"), -1);
}


#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

static void *dropThread(void *arg)
{
  (void)arg;
  for (EventW i = 0; i < 10; ++i)
    EVENT_W(TestW, 0x5100 + i);
  return NULL;
}

/* control-5.1: with 64 MiB buffers and an address-space limit, a new
   thread's buffers cannot be had: its 10 events are counted, and the
   main thread's EventFinish reports them as EventsDropped(Test, 10). */
static void control_5_1_dropped_counted(void **state)
{
  pid_t child;
  int status;
  (void)state;
#ifdef SANITIZED
  skip();
#endif
  child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    CaptureStruct c;
    EventRecordStruct rec;
    struct rlimit limit;
    pthread_attr_t attr;
    pthread_t thread;
    unsigned long pages = 0;
    size_t reported = 0, leaked = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    CaptureStart(&c);
    EVENT_W(TestW, 0x50FF);       /* the main thread's buffers exist first */
    if (statm == NULL || fscanf(statm, "%lu", &pages) != 1)
      _exit(3);
    fclose(statm);
    if (EventBufferSizeSet((size_t)64 << 20) != 0)
      _exit(4);
    limit.rlim_cur = limit.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)16 << 20);
    if (setrlimit(RLIMIT_AS, &limit) != 0)
      _exit(5);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (pthread_create(&thread, &attr, dropThread, NULL) != 0)
      _exit(6);
    pthread_join(thread, NULL);
    CaptureFinish(&c);
    while (EventStreamNext(c.reader, &rec) == EventStreamOK) {
      if (rec.code == EventCodeEventsDropped && rec.values[0].u == EventKindTest)
        reported += rec.values[1].u;
      if (rec.code == EventCodeTestW && rec.values[0].u >= 0x5100 && rec.values[0].u < 0x5110)
        ++leaked;
    }
    if (reported != 10 || leaked != 0)
      fprintf(stderr, "control-5.1: EventsDropped(Test) reported %zu, events leaked %zu\n", reported, leaked);
    _exit(reported == 10 && leaked == 0 ? 0 : 7);
  }
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* A slow reader at the end of a pipe, for control-5.2 */
typedef struct SlowReaderStruct {
  int fd;
  unsigned char *data;
  size_t size, limit;
} SlowReaderStruct;

static void *slowReader(void *arg)
{
  SlowReaderStruct *r = arg;
  for (;;) {
    ssize_t n;
    if (r->size + 4096 > r->limit) {
      r->limit = r->limit == 0 ? 1 << 20 : 2 * r->limit;
      r->data = realloc(r->data, r->limit);
      if (r->data == NULL)
        return NULL;
    }
    n = read(r->fd, r->data + r->size, 4096);
    if (n <= 0)
      return NULL;
    r->size += (size_t)n;
    usleep(1000);               /* about 4 MB/s: the writer falls behind */
  }
}

/* pipeSessionStart -- a session of its own that writes to a pipe the
 * slow reader reads, with the writer thread, the drop policy and small
 * buffers for the threads made from now on */
static void pipeSessionStart(PlinthStream *stream, int fds[2], SlowReaderStruct *reader,
                             pthread_t *readerThread)
{
  assert_int_equal(pipe(fds), 0);
  reader->fd = fds[0];
  assert_int_equal(pthread_create(readerThread, NULL, slowReader, reader), 0);
  EventFinish();
  assert_int_equal(PlinthStreamOpenFd(stream, fds[1], 0), 0);
  assert_int_equal(EventStreamAddBinary(*stream), 0);
  assert_int_equal(EventWriterAsync(1, 1), 0);
  assert_int_equal(EventBufferSizeSet(4096), 0);
}

/* pipeSessionEnd -- end a session that writes to a pipe the slow reader
 * reads, with the writer thread and small buffers: every block written,
 * the defaults back, the pipe closed and the reader done */
static void pipeSessionEnd(PlinthStream stream, int fds[2], pthread_t readerThread)
{
  EventFinish();
  assert_int_equal(EventWriterAsync(0, 0), 0);
  assert_int_equal(EventBufferSizeSet(65536), 0);
  PlinthStreamClose(stream);
  close(fds[1]);
  assert_int_equal(pthread_join(readerThread, NULL), 0);
  close(fds[0]);
}

/* writtenOrDropped -- what the slow reader got holds want TestW events
 * in all, some written and the rest reported as dropped, and some were
 * dropped; frees what it read */
static void writtenOrDropped(SlowReaderStruct *reader, size_t want)
{
  EventStreamStruct *s;
  EventRecordStruct rec;
  char msg[256];
  size_t got = 0, dropped = 0;
  assert_non_null(reader->data);
  assert_int_equal(EventStreamOpen(&s, reader->data, reader->size, 0, msg, sizeof msg),
                   EventStreamOK);
  while (EventStreamNext(s, &rec) == EventStreamOK) {
    if (rec.code == EventCodeTestW)
      ++got;
    else if (rec.code == EventCodeEventsDropped && rec.values[0].u == EventKindTest)
      dropped += rec.values[1].u;
  }
  print_message("written %zu, dropped %zu\n", got, dropped);
  assert_int_equal(got + dropped, want);
  assert_true(dropped > 0);
  EventStreamClose(s);
  free(reader->data);
}

#define DROP_EMITTERS 2
#define DROP_EVENTS 100000      /* per emitter */

static void *dropEmitter(void *arg)
{
  (void)arg;
  for (EventW i = 0; i < DROP_EVENTS; ++i)
    EVENT_W(TestW, i);
  return NULL;
}

/* dropsRun -- DROP_EMITTERS threads run emit into a pipe read slowly,
 * then, with last, one more, passed non-NULL, which ends the session
 * itself: every event written or reported dropped (5.2, 5.5) */
static void dropsRun(void *(*emit)(void *), int last)
{
  int fds[2];
  PlinthStream stream;
  SlowReaderStruct reader = {0};
  pthread_t readerThread, emitter[DROP_EMITTERS];
  pipeSessionStart(&stream, fds, &reader, &readerThread);
  for (int i = 0; i < DROP_EMITTERS; ++i)
    assert_int_equal(pthread_create(&emitter[i], NULL, emit, NULL), 0);
  for (int i = 0; i < DROP_EMITTERS; ++i)
    assert_int_equal(pthread_join(emitter[i], NULL), 0);
  if (last) {
    assert_int_equal(pthread_create(&emitter[0], NULL, emit, &reader), 0);
    assert_int_equal(pthread_join(emitter[0], NULL), 0);
  }
  pipeSessionEnd(stream, fds, readerThread);
  writtenOrDropped(&reader, (DROP_EMITTERS + (last != 0)) * DROP_EVENTS);
}

/* control-5.2: the asynchronous writer with the drop policy, writing to
   a pipe read slowly: the emitters never wait, and every event is either
   in the stream or counted by EventsDropped (.sol.writer).  There are two
   emitters, dropping at once: each drops into a sink of its own, which
   ThreadSanitizer checks (one shared sink is a data race). */
static void control_5_2_writer_drops_counted(void **state)
{
  (void)state;
  dropsRun(dropEmitter, 0);
}

static void *labelEmitter(void *arg)
{
  for (EventW i = 0; i < DROP_EVENTS; ++i) {
    EVENT_W(TestW, i);
    EventLabel((EventA)i, i);
  }
  if (arg != NULL)
    EventFinish();              /* its own Telltale buffer full as it reports */
  return NULL;
}

/* control-5.5: as 5.2, but each emitter labels as it goes (Label is of
   kind Telltale, as EventsDropped is), so that its Telltale buffer is
   full, and drops, whenever its Test buffer does: a report of drops
   that is itself dropped is counted again, and reported later, never
   lost.  The last emitter ends the session itself, its Telltale buffer
   full: the end waits for the writer rather than drop its report.  A
   clean end accounts for every event (.sol.dropped). */
static void control_5_5_drop_reports_not_lost(void **state)
{
  (void)state;
  dropsRun(labelEmitter, 1);
}

/* readWhole -- a file's bytes (malloc'd) */
static unsigned char *readWhole(const char *path, size_t *sizeReturn)
{
  FILE *f = fopen(path, "rb");
  unsigned char *data;
  long size;
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  size = ftell(f);
  assert_true(size > 0);
  rewind(f);
  data = malloc((size_t)size);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  *sizeReturn = (size_t)size;
  return data;
}

/* countInOrder -- the TestW events in a log, checked to be 0, 1, 2, ...;
 * fails on a dropped-events report */
static size_t countInOrder(const unsigned char *data, size_t size, const char *what)
{
  EventStreamStruct *s;
  EventRecordStruct rec;
  char msg[256];
  size_t got = 0;
  assert_int_equal(EventStreamOpen(&s, data, size, 0, msg, sizeof msg), EventStreamOK);
  while (EventStreamNext(s, &rec) == EventStreamOK) {
    if (rec.code == EventCodeEventsDropped)
      fail_msg("%s: %" PRIu64 " events dropped", what, (uint64_t)rec.values[1].u);
    if (rec.code != EventCodeTestW)
      continue;
    if (rec.values[0].u != got)
      fail_msg("%s: event %zu has value %" PRIu64, what, got, (uint64_t)rec.values[0].u);
    ++got;
  }
  EventStreamClose(s);
  return got;
}

#define DETACH_EVENTS 200000

/* control-5.3: the asynchronous writer stalled (its second stream a
   pipe read slowly) while the emitter fills block after block: the
   emitter hands the live regions still being written to the writer and
   goes on in fresh ones, up to the limit, then waits; every event
   reaches both streams, in order (.sol.writer.detach).  The live
   file's region count, read before the end, shows the regions handed
   over: more than two kinds' two slots each, and no more than the
   limit's sixteen beyond them. */
static void control_5_3_writer_detaches_regions(void **state)
{
  int fds[2];
  PlinthStream file, pipeStream;
  SlowReaderStruct reader = {0};
  pthread_t readerThread;
  unsigned char *data;
  size_t size, regions;
  (void)state;
  assert_int_equal(pipe(fds), 0);
  reader.fd = fds[0];
  assert_int_equal(pthread_create(&readerThread, NULL, slowReader, &reader), 0);
  EventFinish();                                  /* a session of its own */
  assert_int_equal(PlinthStreamOpenFile(&file, "detach.log"), 0);
  assert_int_equal(PlinthStreamOpenFd(&pipeStream, fds[1], 0), 0);
  assert_int_equal(EventStreamAddBinary(file), 0);
  assert_int_equal(EventStreamAddBinary(pipeStream), 0);
  assert_int_equal(EventBufferSizeSet(4096), 0);
  assert_int_equal(EventWriterAsync(1, 0), 0);
  for (EventW i = 0; i < DETACH_EVENTS; ++i)
    EVENT_W(TestW, i);
  {
    /* the count ends the live file's header, pages long (its length at 20) */
    unsigned char bytes[EVENT_LIVE_REGIONS_LEN], length[4];
    FILE *f = fopen("detach.log.live", "rb");
    long headerLength;
    assert_non_null(f);
    assert_int_equal(fseek(f, 20, SEEK_SET), 0);
    assert_int_equal(fread(length, 1, sizeof length, f), sizeof length);
    headerLength = length[0] | length[1] << 8 | length[2] << 16 | (long)length[3] << 24;
    assert_int_equal(headerLength % sysconf(_SC_PAGESIZE), 0);
    assert_int_equal(fseek(f, headerLength - EVENT_LIVE_REGIONS_LEN, SEEK_SET), 0);
    assert_int_equal(fread(bytes, 1, sizeof bytes, f), sizeof bytes);
    fclose(f);
    regions = 0;
    for (size_t i = sizeof bytes; i > 0; --i)
      regions = regions << 8 | bytes[i - 1];
  }
  print_message("live regions %zu\n", regions);
  assert_true(regions > 4);
  assert_true(regions <= 4 + 16);
  pipeSessionEnd(pipeStream, fds, readerThread);
  PlinthStreamClose(file);
  assert_non_null(reader.data);
  assert_int_equal(countInOrder(reader.data, reader.size, "the pipe"), DETACH_EVENTS);
  data = readWhole("detach.log", &size);
  assert_int_equal(countInOrder(data, size, "detach.log"), DETACH_EVENTS);
  assert_int_equal(access("detach.log.live", F_OK), -1);   /* a clean end */
  free(data);
  free(reader.data);
  unlink("detach.log");
}

/* An emitter that drops, then stays until told to go: its drops are
   reported no earlier than its exit.  For control-5.4 */
static _Atomic int holdEmitted, holdRelease;

static void *holdEmitter(void *arg)
{
  (void)dropEmitter(arg);
  atomic_store(&holdEmitted, 1);
  while (!atomic_load(&holdRelease))
    usleep(1000);
  return NULL;
}

/* control-5.4: the parent has dropped events (its writer stalled on a
   pipe nobody reads yet) and not reported them when it forks: they are
   the parent's to report, so the child's own log says none were
   dropped, and the parent's log still accounts for every event
   (.sol.dropped, .sol.fork). */
static void control_5_4_fork_leaves_drops_to_parent(void **state)
{
  int fds[2], status;
  PlinthStream stream;
  SlowReaderStruct reader = {0};
  pthread_t readerThread, emitter;
  EventStreamStruct *s;
  EventRecordStruct rec;
  char msg[256];
  pid_t child;
  (void)state;
  assert_int_equal(pipe(fds), 0);
  EventFinish();                                  /* a session of its own */
  assert_int_equal(PlinthStreamOpenFd(&stream, fds[1], 0), 0);
  assert_int_equal(EventStreamAddBinary(stream), 0);
  assert_int_equal(EventWriterAsync(1, 1), 0);
  assert_int_equal(EventBufferSizeSet(4096), 0);   /* for the new thread */
  atomic_store(&holdEmitted, 0);
  atomic_store(&holdRelease, 0);
  assert_int_equal(pthread_create(&emitter, NULL, holdEmitter, NULL), 0);
  while (!atomic_load(&holdEmitted))
    usleep(1000);
  child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    /* No cmocka here: the child reports by its exit status. */
    char path[64];
    size_t size, childDropped = 0, mine = 0;
    unsigned char *data;
    /* no writer thread of its own: ThreadSanitizer refuses a thread
     * started after a multi-threaded fork */
    (void)EventWriterAsync(0, 0);
    EVENT_W(TestW, 0x5400);
    EventFinish();
    snprintf(path, sizeof path, "telltale.log.%ld", (long)getpid());
    if (access(path, F_OK) != 0)
      _exit(5);
    data = readWhole(path, &size);
    if (EventStreamOpen(&s, data, size, 0, msg, sizeof msg) != EventStreamOK)
      _exit(6);
    while (EventStreamNext(s, &rec) == EventStreamOK) {
      if (rec.code == EventCodeEventsDropped)
        childDropped += rec.values[1].u;
      if (rec.code == EventCodeTestW && rec.values[0].u == 0x5400)
        ++mine;
    }
    if (childDropped != 0 || mine != 1)
      fprintf(stderr, "control-5.4: the child's log reports %zu dropped, holds %zu of its event\n",
              childDropped, mine);
    unlink(path);
    _exit(childDropped == 0 && mine == 1 ? 0 : 7);
  }
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  reader.fd = fds[0];                             /* the writer goes on */
  assert_int_equal(pthread_create(&readerThread, NULL, slowReader, &reader), 0);
  atomic_store(&holdRelease, 1);
  assert_int_equal(pthread_join(emitter, NULL), 0);
  pipeSessionEnd(stream, fds, readerThread);
  writtenOrDropped(&reader, DROP_EVENTS);         /* nobody read the pipe at first */
}

/* control-6: write failures, through the plinth's fault injection --- */

/* stderrCapture -- send stderr to a file; stderrRelease -- restore it
 * and return what was written (malloc'd) */
static int stderrCapture(void)
{
  int saved, fd;
  fflush(stderr);
  saved = dup(2);
  fd = open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  assert_int_equal(dup2(fd, 2), 2);
  close(fd);
  return saved;
}

static char *stderrRelease(int saved)
{
  FILE *f;
  char *text = calloc(1, 65536);
  size_t n;
  assert_int_equal(dup2(saved, 2), 2);
  close(saved);
  f = fopen("stderr.txt", "r");
  assert_non_null(f);
  assert_non_null(text);
  n = fread(text, 1, 65535, f);
  text[n] = '\0';
  fclose(f);
  unlink("stderr.txt");
  return text;
}

/* linesWith -- lines of text containing what */
static size_t linesWith(const char *text, const char *what)
{
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
    ++n;
  return n;
}

#define FAULT_EVENTS 20000u
#define FAULT_AFTER 50000u

/* faultEmit -- a fresh thread, so that its buffers are of the size just
 * set: emit FAULT_EVENTS TestW from *arg on */
static void *faultEmit(void *arg)
{
  uint64_t base = *(uint64_t *)arg;
  for (uint64_t i = 0; i < FAULT_EVENTS; ++i)
    EVENT_W(TestW, base + i);
  return NULL;
}

/* faultRun -- faultEmit on a thread, and end the session */
static void faultRun(uint64_t base)
{
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, faultEmit, &base), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  EventFinish();
}

/* faultCase -- emit FAULT_EVENTS TestW into 4 KiB buffers, to a memory
 * stream whose write fails with code once FAULT_AFTER bytes are written
 * (every later write too, or with once none): the failure is said once,
 * nothing is written after the cut, and the events not written are
 * counted and said at the end. */
static void faultCase(int async, int code, int once, uint64_t base)
{
  PlinthStream stream;
  EventStreamStruct *reader;
  EventRecordStruct rec;
  char msg[256], want[128], *err;
  const unsigned char *bytes;
  size_t size, lines = 0;
  unsigned long long lost = 0;
  uint64_t read = 0;
  const char *said;
  int saved;
  assert_int_equal(PlinthStreamOpenMemory(&stream), 0);
  PlinthStreamFault(stream, FAULT_AFTER, code, once, 0);
  assert_int_equal(EventBufferSizeSet(4096), 0);
  assert_int_equal(EventWriterAsync(async, 0), 0);
  assert_int_equal(EventStreamAddBinary(stream), 0);
  saved = stderrCapture();
  faultRun(base);
  err = stderrRelease(saved);
  assert_int_equal(EventWriterAsync(0, 0), 0);
  assert_int_equal(EventBufferSizeSet(65536), 0);

  for (const char *p = err; *p != '\0'; ++p)
    lines += *p == '\n';
  snprintf(want, sizeof want, "telltale: cannot write to memory: %s;", strerror(code));
  said = strstr(err, "events were not written to memory after its write failed");
  if (linesWith(err, want) != 1 || said == NULL || lines != 2)
    fail_msg("%s, %s: not one failure and one count on stderr:\n%s",
             async ? "async" : "sync", strerror(code), err);
  while (said > err && said[-1] != ' ')
    --said;
  while (said > err && said[-1] == ' ')
    --said;
  while (said > err && said[-1] >= '0' && said[-1] <= '9')
    --said;
  lost = strtoull(said, NULL, 10);

  bytes = PlinthStreamMemory(stream, &size);
  assert_int_equal(size, FAULT_AFTER);          /* nothing after the cut */
  assert_int_equal(EventStreamOpen(&reader, bytes, size, 0, msg, sizeof msg), EventStreamOK);
  while (EventStreamNext(reader, &rec) == EventStreamOK)
    if (rec.code == EventCodeTestW && rec.values[0].u >= base && rec.values[0].u < base + FAULT_EVENTS)
      ++read;
  EventStreamClose(reader);
  if (read == 0 || read >= FAULT_EVENTS || read + lost < FAULT_EVENTS ||
      lost > FAULT_EVENTS + 1000)
    fail_msg("%" PRIu64 " events read and %llu said lost of %u", read, lost, FAULT_EVENTS);
  free(err);
  PlinthStreamClose(stream);
}

/* control-6.1: ENOSPC and EIO that last, written by the emitting thread */
static void control_6_1_sync_failure(void **state)
{
  (void)state;
  faultCase(0, ENOSPC, 0, 0x61000000);
  faultCase(0, EIO, 0, 0x61100000);
}

/* control-6.2: the same, written by the asynchronous writer: said once,
 * not once a block */
static void control_6_2_async_failure(void **state)
{
  (void)state;
  faultCase(1, ENOSPC, 0, 0x62000000);
  faultCase(1, EIO, 0, 0x62100000);
}

/* control-6.3: a full disk that has room again after a write was cut:
 * nothing more is written, by either writer, after the cut block */
static void control_6_3_no_write_after_cut(void **state)
{
  (void)state;
  faultCase(0, ENOSPC, 1, 0x63000000);
  faultCase(1, ENOSPC, 1, 0x63100000);
}

/* control-6.4: short writes (7 bytes a write()) are retried: a file
 * stream gets every event whole, by either writer */
static void control_6_4_short_writes(void **state)
{
  (void)state;
  for (int async = 0; async < 2; ++async) {
    PlinthStream stream;
    EventStreamStruct *reader;
    EventRecordStruct rec;
    FILE *f;
    unsigned char *bytes = malloc(1 << 20);
    char msg[256];
    size_t size;
    uint64_t base = 0x64000000 + ((uint64_t)async << 20), next = base;
    EventStreamRes res;
    assert_non_null(bytes);
    assert_int_equal(PlinthStreamOpenFile(&stream, "short.log"), 0);
    PlinthStreamFault(stream, 0, 0, 0, 7);
    assert_int_equal(EventBufferSizeSet(4096), 0);
    assert_int_equal(EventWriterAsync(async, 0), 0);
    assert_int_equal(EventStreamAddBinary(stream), 0);
    faultRun(base);
    assert_int_equal(EventWriterAsync(0, 0), 0);
    assert_int_equal(EventBufferSizeSet(65536), 0);
    PlinthStreamClose(stream);
    f = fopen("short.log", "rb");
    assert_non_null(f);
    size = fread(bytes, 1, 1 << 20, f);
    fclose(f);
    unlink("short.log");
    assert_true(size > 0 && size < (1 << 20));   /* raw or compact: the events are counted below */
    assert_int_equal(EventStreamOpen(&reader, bytes, size, 0, msg, sizeof msg), EventStreamOK);
    while ((res = EventStreamNext(reader, &rec)) == EventStreamOK)
      if (rec.code == EventCodeTestW && rec.values[0].u >= base && rec.values[0].u < base + FAULT_EVENTS) {
        assert_int_equal(rec.values[0].u, next);
        ++next;
      }
    assert_int_equal(res, EventStreamEND);
    assert_int_equal(next, base + FAULT_EVENTS);
    EventStreamClose(reader);
    free(bytes);
  }
}

/* control-6.5: a real file that cannot grow (RLIMIT_FSIZE, SIGXFSZ
 * ignored: EFBIG, as a full disk gives ENOSPC), in a child, with the
 * asynchronous writer: said once, the file no longer than the limit, and
 * the loss counted.  Not under ThreadSanitizer (a threaded process's
 * child starting a thread). */
#define FSIZE_LIMIT 100000
static void control_6_5_file_too_large(void **state)
{
  pid_t child;
  int status;
  struct stat st;
  FILE *f;
  char text[4096];
  size_t n;
  (void)state;
#ifdef EVENT_TSAN
  skip();
#endif
  child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    struct rlimit limit = { FSIZE_LIMIT, FSIZE_LIMIT };
    PlinthStream stream;
    pthread_t thread;
    uint64_t base = 0x65000000;
    int fd, err;
    signal(SIGXFSZ, SIG_IGN);
    (void)EventCompact(0);      /* raw blocks, so that the events outgrow the limit in either form */
    err = open("fsize.err", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    fd = open("fsize.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (err < 0 || dup2(err, 2) != 2 || fd < 0 || setrlimit(RLIMIT_FSIZE, &limit) != 0 ||
        PlinthStreamOpenFd(&stream, fd, 1) != 0 || EventBufferSizeSet(4096) != 0 ||
        EventWriterAsync(1, 0) != 0 || EventStreamAddBinary(stream) != 0 ||
        pthread_create(&thread, NULL, faultEmit, &base) != 0)
      _exit(3);
    pthread_join(thread, NULL);
    EventFinish();
    _exit(0);
  }
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(stat("fsize.log", &st), 0);
  assert_true(st.st_size > 0 && st.st_size <= FSIZE_LIMIT);
  f = fopen("fsize.err", "r");
  assert_non_null(f);
  n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  if (linesWith(text, "telltale: cannot write to fd ") != 1 ||
      linesWith(text, strerror(EFBIG)) != 2 ||
      linesWith(text, "events were not written to fd ") != 1)
    fail_msg("not one failure and one count on stderr:\n%s", text);
  unlink("fsize.log");
  unlink("fsize.err");
}

int main(void)
{
  char dir[] = "/tmp/test_control.XXXXXX";
  int failures;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(control_1_1_reset_keeps_kind_out, restoreAll),
    cmocka_unit_test_teardown(control_1_2_decided_at_the_call, restoreAll),
    cmocka_unit_test_teardown(control_1_3_control_formula, restoreAll),
    cmocka_unit_test_teardown(control_1_4_set_and_flip, restoreAll),
    cmocka_unit_test_teardown(control_1_5_unknown_bits_ignored, restoreAll),
    cmocka_unit_test_teardown(control_2_1_record_off_not_buffered, restoreAll),
    cmocka_unit_test_teardown(control_2_2_record_none, restoreAll),
    cmocka_unit_test_teardown(control_2_3_event_off, restoreAll),
    cmocka_unit_test_teardown(control_3_1_telltale_always_on, restoreAll),
    cmocka_unit_test_teardown(control_3_2_labels_reach_log, restoreAll),
    cmocka_unit_test(control_4_1_parse_all_none),
    cmocka_unit_test(control_4_2_parse_lists),
    cmocka_unit_test(control_4_3_parse_unknown_lists_kinds),
    cmocka_unit_test(control_4_4_parse_empty_name),
    cmocka_unit_test(control_4_5_parse_too_long),
    cmocka_unit_test(control_4_6_parse_message_buffers),
    cmocka_unit_test(control_4_7_kind_index),
    cmocka_unit_test(control_4_8_parse_masks),
    cmocka_unit_test(control_5_1_dropped_counted),
    cmocka_unit_test_teardown(control_5_2_writer_drops_counted, restoreAll),
    cmocka_unit_test_teardown(control_5_3_writer_detaches_regions, restoreAll),
    cmocka_unit_test_teardown(control_5_4_fork_leaves_drops_to_parent, restoreAll),
    cmocka_unit_test_teardown(control_5_5_drop_reports_not_lost, restoreAll),
    cmocka_unit_test(control_6_1_sync_failure),
    cmocka_unit_test(control_6_2_async_failure),
    cmocka_unit_test(control_6_3_no_write_after_cut),
    cmocka_unit_test(control_6_4_short_writes),
    cmocka_unit_test(control_6_5_file_too_large),
  };
  /* an empty directory, so that a stray default telltale.log would show */
  if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
    perror("test_control: temporary directory");
    return 1;
  }
  failures = cmocka_run_group_tests(tests, NULL, NULL);
  EventFinish();
  if (access("telltale.log", F_OK) == 0) {
    fprintf(stderr, "test_control: a default telltale.log was written in %s\n", dir);
    ++failures;
  } else
    (void)rmdir(dir);
  return failures == 0 ? 0 : 1;
}
