/* <examples/pool/main.c> -- drive the example pool allocator
 *
 * Builds a tree of nodes and some strings in two pools, from the main
 * thread and a worker thread, frees half, then tears everything down.
 * Run it, then read its log:
 *     build/examples/pool && build/eventcnv telltale.log
 * "pool crash" dies of SIGSEGV and "pool assert" of a failed assertion
 * halfway through, to show telltale's traceback.
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <telltale/event.h>
#include "pool.h"

typedef struct Node {
  struct Node *left, *right;
  int value;
} Node;

static Node *build(Pool pool, int depth)
{
  Node *node = PoolAlloc(pool);
  if (node == NULL)
    return NULL;
  node->value = depth;
  node->left = depth > 0 ? build(pool, depth - 1) : NULL;
  node->right = depth > 0 ? build(pool, depth - 1) : NULL;
  return node;
}

static void drop(Pool pool, Node *node)
{
  if (node == NULL)
    return;
  drop(pool, node->left);
  drop(pool, node->right);
  PoolFree(pool, node);
}

static void *worker(void *arg)
{
  Pool strings = arg;
  char *held[8];
  EventThreadNameSet("worker");
  EVENT_US(UserMark, 2, "worker fills the string pool");
  for (int i = 0; i < 8; ++i) {
    held[i] = PoolAlloc(strings);
    if (held[i] != NULL)
      strcpy(held[i], "telltale");
  }
  for (int i = 0; i < 8; i += 2)
    PoolFree(strings, held[i]);
  return NULL;
}

int main(int argc, char **argv)
{
  const char *die = argc > 1 ? argv[1] : "";
  if (argc > 2 || (argc == 2 && strcmp(die, "crash") != 0 && strcmp(die, "assert") != 0)) {
    int help = strcmp(die, "--help") == 0 || strcmp(die, "-h") == 0;
    fprintf(help ? stdout : stderr,
            "usage: pool [crash|assert]\n"
            "  Runs a small pool allocator instrumented with telltale and writes its\n"
            "  events to telltale.log (or TELLTALE_FILE); read them with eventcnv.\n"
            "  crash   die of SIGSEGV halfway, to show the traceback\n"
            "  assert  die of a failed EVENT_ASSERT halfway\n");
    return help ? 0 : 2;
  }
  Arena arena = ArenaCreate((size_t)1 << 20);
  Pool nodes, strings;
  pthread_t thread;
  Node *tree;
  if (arena == NULL)
    return 1;
  EventThreadNameSet("main");
  nodes = PoolCreate(arena, sizeof(Node), "nodes");
  strings = PoolCreate(arena, 32, "strings");
  EVENT_US(UserMark, 1, "build a tree");
  tree = build(nodes, 3);
  if (pthread_create(&thread, NULL, worker, strings) != 0)
    return 1;
  pthread_join(thread, NULL);
  EVENT_US(UserMark, 3, "drop the tree");
  (void)PoolVerify(nodes);
  if (strcmp(die, "assert") == 0)
    EVENT_ASSERT(PoolVerify(nodes) == 0);
  if (strcmp(die, "crash") == 0) {
    volatile Node *gone = NULL;
    gone->value = 42;                         /* SIGSEGV */
  }
  drop(nodes, tree);
  (void)PoolVerify(nodes);
  PoolDestroy(strings);
  PoolDestroy(nodes);
  ArenaDestroy(arena);
  printf("pool example: done; events are in %s\n",
         getenv("TELLTALE_FILE") != NULL ? getenv("TELLTALE_FILE") : "telltale.log");
  return 0;
}
