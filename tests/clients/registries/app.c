/* <tests/clients/registries/app.c> -- a program with a registry, and libraries with theirs, in one log
 *
 * .design: design/tests.txt .test.registries
 *
 *   app COUNTS PLUGIN MODE
 *
 * The program (registry app), a shared library (alloc), a static one
 * (cache) and a plugin opened with dlopen after events began and closed
 * with dlclose, then loaded and closed again (plugin): four registries
 * generated each on its own,
 * whose codes clash, emitting from several threads into one log.  Then
 * alloc turns its kind Work's output off, and both app and alloc emit
 * Work again: only app's may be in the log.  The traceback goes to
 * dump.txt.  COUNTS gets what was emitted, per registry and event, as
 * JSON, for tests/clients/registries/check.py; MODE return ends by returning
 * from main, kill by SIGKILL (the log is then recovered from its live
 * file), exit by exit(7) from worker 0 half way, while the others emit
 * into every registry.
 *
 *   app COUNTS PLUGIN churn LOADS
 *
 * The plugin loaded, called once and closed LOADS times while THREADS
 * workers emit app's Work as fast as they can: each load writes a
 * registry block into the log while the blocks of the workers' events
 * are being written (run with TELLTALE_WRITER=async, by the writer
 * thread).  COUNTS gets how many each worker emitted.
 */

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <telltale/event.h>

#include "regtest.h"

#define THREADS 3
#define EVENTS 2000             /* per thread, of each event */
#define PLUGIN_THREADS 2
#define AFTER 500               /* Work after alloc's is off */
#define AGAIN 100               /* plugin calls when it is loaded again */

static PluginCallFunction *plugin;
static int exitHalfWay;

static void *worker(void *arg)
{
  unsigned slot = (unsigned)(uintptr_t)arg;
  char name[64];
  for (unsigned long seq = 0; seq < EVENTS; ++seq) {
    snprintf(name, sizeof name, "job-%u-%lu", slot, seq);
    EVENT_UUWS(AppJob, 1, slot, seq, name);
    allocBlock(slot, seq);
    cacheHit(slot, seq);
    EVENT_UUW(Work, 1, slot, seq);
    allocWork(slot, seq);
    if (exitHalfWay && slot == 0 && seq == EVENTS / 2)
      exit(7);
  }
  return NULL;
}

static void *pluginWorker(void *arg)
{
  unsigned slot = (unsigned)(uintptr_t)arg;
  for (unsigned long seq = 0; seq < EVENTS; ++seq)
    plugin(slot, seq);
  return NULL;
}

static atomic_int churnStop;
static unsigned long churned[THREADS];

static void *churnWorker(void *arg)
{
  unsigned slot = (unsigned)(uintptr_t)arg;
  unsigned long seq = 0;
  while (!atomic_load_explicit(&churnStop, memory_order_relaxed))
    EVENT_UUW(Work, 1, slot, seq++);
  churned[slot] = seq;
  return NULL;
}

/* churn -- the plugin loaded and closed while the workers emit */
static int churn(const char *countsPath, const char *pluginPath, unsigned long loads)
{
  pthread_t threads[THREADS];
  FILE *counts;
  for (unsigned i = 0; i < THREADS; ++i)
    if (pthread_create(&threads[i], NULL, churnWorker, (void *)(uintptr_t)i) != 0)
      return 3;
  for (unsigned long load = 0; load < loads; ++load) {
    void *handle = dlopen(pluginPath, RTLD_NOW);
    if (handle == NULL || (plugin = (PluginCallFunction *)dlsym(handle, PLUGIN_CALL)) == NULL) {
      fprintf(stderr, "app: %s\n", dlerror());
      return 3;
    }
    plugin(20, load);
    if (dlclose(handle) != 0)
      return 3;
  }
  atomic_store(&churnStop, 1);
  for (unsigned i = 0; i < THREADS; ++i)
    pthread_join(threads[i], NULL);
  counts = fopen(countsPath, "w");
  if (counts == NULL)
    return 3;
  fprintf(counts, "{\"loads\": %lu, \"work\": [", loads);
  for (unsigned i = 0; i < THREADS; ++i)
    fprintf(counts, "%s%lu", i > 0 ? ", " : "", churned[i]);
  fprintf(counts, "]}\n");
  fclose(counts);
  return 0;
}

static void run(void *(*fn)(void *), unsigned first, unsigned count)
{
  pthread_t threads[THREADS];
  for (unsigned i = 0; i < count; ++i)
    if (pthread_create(&threads[i], NULL, fn, (void *)(uintptr_t)(first + i)) != 0)
      exit(3);
  for (unsigned i = 0; i < count; ++i)
    pthread_join(threads[i], NULL);
}

int main(int argc, char **argv)
{
  void *handle;
  FILE *counts;
  int fd;
  if (argc == 5 && strcmp(argv[3], "churn") == 0)
    return churn(argv[1], argv[2], strtoul(argv[4], NULL, 10));
  if (argc != 4) {
    fprintf(stderr, "usage: app COUNTS PLUGIN return|kill|exit, or app COUNTS PLUGIN churn LOADS\n");
    return 2;
  }
  EventThreadNameSet("main");
  exitHalfWay = strcmp(argv[3], "exit") == 0;
  run(worker, 0, THREADS);
  handle = dlopen(argv[2], RTLD_NOW);
  if (handle == NULL || (plugin = (PluginCallFunction *)dlsym(handle, PLUGIN_CALL)) == NULL) {
    fprintf(stderr, "app: %s\n", dlerror());
    return 3;
  }
  run(pluginWorker, 10, PLUGIN_THREADS);
  if (dlclose(handle) != 0)
    return 3;
  /* Loaded again: a registry of the same name, a new number. */
  handle = dlopen(argv[2], RTLD_NOW);
  if (handle == NULL || (plugin = (PluginCallFunction *)dlsym(handle, PLUGIN_CALL)) == NULL) {
    fprintf(stderr, "app: %s\n", dlerror());
    return 3;
  }
  for (unsigned long seq = 0; seq < AGAIN; ++seq)
    plugin(12, seq);
  if (dlclose(handle) != 0)
    return 3;
  allocQuiet();
  for (unsigned long seq = 0; seq < AFTER; ++seq) {
    EVENT_UUW(Work, 1, 9, seq);
    allocWork(9, seq);
  }
  fd = open("dump.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    EventDumpTo(fd, 40);
    close(fd);
  }
  counts = fopen(argv[1], "w");
  if (counts == NULL)
    return 3;
  fprintf(counts, "{\"threads\": %u, \"events\": %u, \"plugin_threads\": %u, \"after\": %u, "
          "\"again\": %u}\n", THREADS, EVENTS, PLUGIN_THREADS, AFTER, AGAIN);
  fclose(counts);
  if (strcmp(argv[3], "kill") == 0)
    raise(SIGKILL);
  return 0;
}
