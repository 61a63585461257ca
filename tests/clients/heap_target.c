/* tests/clients/heap_target.c -- a program whose allocation sites are known, for
 * tests/tools/heap.sh (design/heap.txt .heap)
 *
 * heap_target [K] makes, from named functions (the lines marked SITE):
 *   manySmall    100K mallocs of 24 bytes, all freed later (one temporary,
 *                as heaptrack_print counts: the first free, after the last malloc)
 *   temporaries  50K mallocs of 100 bytes, each freed at once (all temporary)
 *   bigBlocks    5 callocs of 10 x 1000 bytes, live together at the peak
 *   growRealloc  10 reallocs of one block, 64 to 640 bytes, then freed
 *   plantedLeak  3 mallocs of 77 bytes, never freed (a leak)
 * It uses no stdio, so that the C library allocates nothing of its own
 * between them.  Built with -O0 -g -fno-omit-frame-pointer: each site's
 * line is its call's.
 */

#include <stdlib.h>

void *volatile sink;

__attribute__((noinline)) static void manySmall(int n)
{
  static void *blocks[1000];
  for (int i = 0; i < n; ++i)
    blocks[i] = malloc(24);     /* SITE manySmall */
  for (int i = 0; i < n; ++i)
    free(blocks[i]);
}

__attribute__((noinline)) static void temporaries(int n)
{
  for (int i = 0; i < n; ++i) {
    sink = malloc(100);         /* SITE temporaries */
    free(sink);
  }
}

__attribute__((noinline)) static void bigBlocks(void)
{
  void *blocks[5];
  for (int i = 0; i < 5; ++i)
    blocks[i] = calloc(10, 1000);       /* SITE bigBlocks */
  for (int i = 0; i < 5; ++i)
    free(blocks[i]);
}

__attribute__((noinline)) static void growRealloc(void)
{
  void *p = NULL;
  for (int i = 1; i <= 10; ++i)
    p = realloc(p, (size_t)i * 64);     /* SITE growRealloc */
  free(p);
}

__attribute__((noinline)) void plantedLeak(void)
{
  for (int i = 0; i < 3; ++i)
    sink = malloc(77);          /* SITE plantedLeak */
}

int main(int argc, char **argv)
{
  int k = argc > 1 ? atoi(argv[1]) : 1;
  if (k < 1 || k > 10)
    return 2;
  manySmall(100 * k);
  temporaries(50 * k);
  plantedLeak();
  bigBlocks();
  growRealloc();
  return 0;
}
