/* <tests/clients/registries/plugin.c> -- a plugin, opened with dlopen mid-run, with a registry of its own
 *
 * .design: design/tests.txt .test.registries
 */

#include <telltale/event.h>

#include "regtest.h"

PluginCallFunction pluginCall;

static int self;

void pluginCall(unsigned thread, unsigned long seq)
{
  EVENT_UUWP(PluginCall, 4, thread, seq, &self);
}
