/* <tests/clients/gdb_target.c> -- a process for tests/tools/gdb.sh to attach to
 *
 * .design: design/tools.txt .gdb
 *
 * Emits a known sequence of events from three threads, strictly one
 * after another (semaphores), with the Noisy kind's output off, so that
 * its events exist only in the flight recorder (.sol.ring):
 *   T1 main   labels 0x2710 "last" and 0x1387 "p4999" (Intern, Label)
 *   T1 main   TestW w=1..998                          (kind Test)
 *   T1 main   20 ms later, EventFlush: ClockSync
 *   T2, T3    their ThreadStart and ThreadName events, named noisy and two
 *   T3 two    TestD d=0.5, TestS s="worker two"       (kind Test)
 *   T2 noisy  TestPAW p=w a=2w w=1..5000              (kind Noisy: the ring
 *             wraps, so only the latest 3181 are still in memory)
 *   T1 main   TestW w=999, TestW w=1000
 * Then it writes "ready\n" to stdout and sleeps, its workers alive (a
 * thread that exits gives its buffers up), for up to 60 seconds so that
 * a debugger can attach.  With the argument "crash" it calls abort()
 * instead of sleeping.
 */

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <telltale/event.h>

#define NOISY_EVENTS 5000

static sem_t started, go1, done1, go2, done2;

static void sleepForever(void)
{
  for (int i = 0; i < 60; ++i)
    sleep(1);
}

static void *noisy(void *arg)
{
  (void)arg;
  EventThreadNameSet("noisy");
  sem_post(&started);
  sem_wait(&go1);
  for (EventW w = 1; w <= NOISY_EVENTS; ++w)
    EVENT_PAW(TestPAW, (EventP)w, (EventA)(2 * w), w);
  sem_post(&done1);
  sleepForever();
  return NULL;
}

static void *two(void *arg)
{
  (void)arg;
  EventThreadNameSet("two");
  sem_post(&started);
  sem_wait(&go2);
  EVENT_D(TestD, 0.5);
  EVENT_S(TestS, "worker two");
  sem_post(&done2);
  sleepForever();
  return NULL;
}

int main(int argc, char **argv)
{
  pthread_t t1, t2;
  int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
  (void)EventControlReset(EVENT_KIND_BIT(EventKindNoisy));
  EventThreadNameSet("main");
  EventLabelString((EventA)0x2710, "last");    /* TestPAW a=0x2710[last] w=5000 */
  EventLabelString((EventA)0x1387, "p4999");   /* TestPAW p=0x1387[p4999] w=4999 */
  for (EventW w = 1; w <= 998; ++w)
    EVENT_W(TestW, w);
  usleep(20000);
  EventFlush();   /* a ClockSync 20 ms after the start: tests/tools/gdb.sh gdb-clocksync */
  sem_init(&started, 0, 0);
  sem_init(&go1, 0, 0);
  sem_init(&done1, 0, 0);
  sem_init(&go2, 0, 0);
  sem_init(&done2, 0, 0);
  /* One at a time, so that noisy is T2 and two is T3. */
  if (pthread_create(&t1, NULL, noisy, NULL) != 0) {
    fprintf(stderr, "gdb_target: cannot create a thread\n");
    return 1;
  }
  sem_wait(&started);
  if (pthread_create(&t2, NULL, two, NULL) != 0) {
    fprintf(stderr, "gdb_target: cannot create a thread\n");
    return 1;
  }
  sem_wait(&started);
  sem_post(&go2);
  sem_wait(&done2);
  sem_post(&go1);
  sem_wait(&done1);
  EVENT_W(TestW, 999);
  EVENT_W(TestW, 1000);
  if (crash)
    abort();
  printf("ready\n");
  fflush(stdout);
  sleepForever();
  return 0;
}
