/* <tests/clients/idioms/host.c> -- a host that loads a telltale plugin by dlopen
 *
 * .design: design/tests.txt .test.trust design/runtime.txt .sol.session design/plinth.txt .sol.signal
 *
 * A program that does not link telltale loads a plugin that does
 * (plugin.c, linked with libtelltale.so) ROUNDS times: each round the
 * main thread and a new thread emit through it, the plugin is closed
 * with dlclose while that thread is still alive, and only then does the
 * thread exit.  After the last round the host calls abort(): it must
 * die of SIGABRT (status 134), whatever the plugin left behind.
 *
 * Usage: IDIOMS_PAGE=FILE idioms_host PLUGIN [ROUNDS]     SIGABRT
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDIOMS_PAGE_FUNCTIONS
#include "page.h"

typedef int EmitFunction(IdiomsPage *page, unsigned slot, unsigned n, const char *name);

static IdiomsPage *page;
static EmitFunction *emitThrough;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int emitted, closed;

static void *thread(void *arg)
{
  char name[32];
  unsigned slot;
  snprintf(name, sizeof name, "plugin-thread-%d", (int)(intptr_t)arg);
  slot = idiomsSlotNew(page, name);
  emitThrough(page, slot, 5000, name);
  pthread_mutex_lock(&lock);
  emitted = 1;
  pthread_cond_broadcast(&changed);
  while (!closed)                       /* exits only after the dlclose */
    pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
  return NULL;
}

int main(int argc, char **argv)
{
  int rounds = argc > 2 ? atoi(argv[2]) : 3;
  if (argc < 2) {
    fprintf(stderr, "usage: IDIOMS_PAGE=FILE idioms_host PLUGIN [ROUNDS]\n");
    return 2;
  }
  page = idiomsPageOpen(1);
  for (int r = 0; r < rounds; ++r) {
    char name[32];
    pthread_t t;
    void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (plugin == NULL) {
      fprintf(stderr, "idioms_host: %s\n", dlerror());
      return 99;
    }
    emitThrough = (EmitFunction *)dlsym(plugin, "idiomsPluginEmit");
    if (emitThrough == NULL) {
      fprintf(stderr, "idioms_host: %s\n", dlerror());
      return 99;
    }
    snprintf(name, sizeof name, "host-main-%d", r);
    emitThrough(page, idiomsSlotNew(page, name), 5000, "host-main");
    emitted = closed = 0;
    if (pthread_create(&t, NULL, thread, (void *)(intptr_t)r) != 0) {
      perror("pthread_create");
      return 99;
    }
    pthread_mutex_lock(&lock);
    while (!emitted)
      pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    if (dlclose(plugin) != 0) {
      fprintf(stderr, "idioms_host: dlclose: %s\n", dlerror());
      return 99;
    }
    emitThrough = NULL;
    pthread_mutex_lock(&lock);
    closed = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    (void)pthread_join(t, NULL);
  }
  abort();
}
