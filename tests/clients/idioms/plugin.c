/* <tests/clients/idioms/plugin.c> -- a plugin that emits through libtelltale.so
 *
 * .design: design/tests.txt .test.trust design/runtime.txt .sol.session
 *
 * A shared object with a registry of its own (plugin_eventdef.h),
 * linked with libtelltale.so, which a host that does not link telltale
 * (host.c) loads with dlopen and unloads with dlclose, several times.
 * It counts what it emits in the host's page (page.h), as the client
 * does.
 */

#define _GNU_SOURCE
#include <telltale/event.h>
#include "page.h"

int idiomsPluginEmit(IdiomsPage *page, unsigned slot, unsigned n, const char *name);

/* idiomsPluginEmit -- name the calling thread, then emit n events of slot */
int idiomsPluginEmit(IdiomsPage *page, unsigned slot, unsigned n, const char *name)
{
  if (name != NULL)
    EventThreadNameSet(name);
  for (unsigned i = 0; i < n; ++i)
    IDIOMS_EMIT(page, slot, PlugAccept, PlugRequest, PlugStore, PlugNote);
  return 0;
}
