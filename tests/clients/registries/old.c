/* <tests/clients/registries/old.c> -- a program compiled against an older telltale
 *
 * .design: design/tests.txt .test.registries
 *
 * Built by tests/clients/registries/check.py against telltale's headers before
 * registries had sources, and run with this libtelltale.so: two threads
 * emit OldTick, and main turns Tick's output off and on again with the
 * old interface.
 */

#include <pthread.h>
#include <stdio.h>

#include "event.h"

#define EVENTS 3000

static void *ticker(void *arg)
{
  unsigned slot = (unsigned)(uintptr_t)arg;
  char text[48];
  for (unsigned long seq = 0; seq < EVENTS; ++seq) {
    snprintf(text, sizeof text, "tick-%u-%lu", slot, seq);
    EVENT_UWS(OldTick, slot, seq, text);
  }
  return NULL;
}

int main(void)
{
  pthread_t threads[2];
  (void)EventControlReset(EVENT_KIND_BIT(EventKindTick));
  (void)EventControlSet(EVENT_KIND_BIT(EventKindTick));
  for (unsigned i = 0; i < 2; ++i)
    if (pthread_create(&threads[i], NULL, ticker, (void *)(uintptr_t)i) != 0)
      return 3;
  for (unsigned i = 0; i < 2; ++i)
    pthread_join(threads[i], NULL);
  return 0;
}
