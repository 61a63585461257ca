/* <tests/clients/registries/regtest.h> -- what the registries test's libraries export
 *
 * .design: design/tests.txt .test.registries
 *
 * Each library emits into its own registry; the program calls these
 * without seeing the libraries' events, as a program uses a library.
 */

#ifndef regtest_h
#define regtest_h

/* alloc: a shared library */
extern void allocBlock(unsigned thread, unsigned long seq);
extern void allocWork(unsigned thread, unsigned long seq);
extern void allocQuiet(void);   /* its own kind Work's output off */

/* cache: a static library */
extern void cacheHit(unsigned thread, unsigned long seq);

/* plugin: opened with dlopen, by this name */
typedef void PluginCallFunction(unsigned thread, unsigned long seq);
#define PLUGIN_CALL "pluginCall"

#endif /* regtest_h */
