/* <tests/clients/registries/cache.c> -- a cache library, linked statically, with a registry of its own
 *
 * .design: design/tests.txt .test.registries
 */

#include <telltale/event.h>

#include "regtest.h"

void cacheHit(unsigned thread, unsigned long seq)
{
  EVENT_UUWD(CacheHit, 3, thread, seq, (double)seq / 4);
}
