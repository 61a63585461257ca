/* <tests/clients/registries/alloc.c> -- an allocator library with a registry of its own
 *
 * .design: design/tests.txt .test.registries
 *
 * A shared object linked with libtelltale.so.  Its events are its
 * registry's (alloc_eventdef.h), whose codes and names are the
 * program's too; allocQuiet turns its own kind Work's output off with
 * the API, which changes its registry's kind and no other's.
 */

#include <telltale/event.h>

#include "regtest.h"

void allocBlock(unsigned thread, unsigned long seq)
{
  EVENT_UUWW(AllocBlock, 2, thread, seq, seq * 16);
}

void allocWork(unsigned thread, unsigned long seq)
{
  EVENT_UUW(Work, 2, thread, seq);
}

void allocQuiet(void)
{
  (void)EventControlReset(EVENT_KIND_BIT(EventKindWork));
}
