/* <tools/heap/heaptree.c> -- the logs of a process tree: each process
 * read with what it inherited from its parent, and one profile of all
 *
 * .design: design/heap.txt .heap.tree
 *
 * The recorder writes a log an image: LOG, LOG.PID for a process that
 * ran meanwhile (a forked child), LOG.execN for an image that exec'd.
 * A forked child's log begins with Forked(parent, clock), the parent's
 * clock just before the fork.  The logs are read in the order they
 * began, so a parent is read before its children; while it is read, its
 * blocks live at each child's fork clock are copied, and the child is
 * read with them live from its start, so that its frees of them are
 * frees of blocks it inherited, not of blocks never seen.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heapint.h"
#include "heapreader.h"
#include "report.h"

/* endsWith -- whether name ends with suffix */
static int endsWith(const char *name, const char *suffix)
{
  size_t n = strlen(name), m = strlen(suffix);
  return n >= m && strcmp(name + n - m, suffix) == 0;
}

/* isLog -- whether the file at path begins as a telltale stream */
static int isLog(const char *path)
{
  char magic[8];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  ssize_t got;
  if (fd < 0)
    return 0;
  got = read(fd, magic, sizeof magic);
  (void)close(fd);
  return got == (ssize_t)sizeof magic && memcmp(magic, "TELLTALE", 8) == 0;
}

static int byName(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t HeapTreeLogs(const char *const *paths, size_t pathCount, char ***logsReturn)
{
  char **logs = NULL;
  size_t count = 0;
  for (size_t p = 0; p < pathCount; ++p) {
    struct stat st;
    DIR *dir;
    struct dirent *d;
    size_t first = count;
    if (stat(paths[p], &st) != 0 || !S_ISDIR(st.st_mode)) {
      logs = HeapReaderRealloc(logs, (count + 1) * sizeof *logs);
      if ((logs[count++] = strdup(paths[p])) == NULL)
        ReportOutOfMemory();
      continue;
    }
    if ((dir = opendir(paths[p])) == NULL) {
      ReportFile(paths[p], "%s", strerror(errno));
      continue;
    }
    while ((d = readdir(dir)) != NULL) {
      size_t n = strlen(paths[p]) + strlen(d->d_name) + 2;
      char *path;
      if (d->d_name[0] == '.' || endsWith(d->d_name, ".live") || endsWith(d->d_name, ".live.done"))
        continue;
      path = HeapReaderRealloc(NULL, n);
      snprintf(path, n, "%s/%s", paths[p], d->d_name);
      if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || !isLog(path)) {
        free(path);
        continue;
      }
      logs = HeapReaderRealloc(logs, (count + 1) * sizeof *logs);
      logs[count++] = path;
    }
    (void)closedir(dir);
    if (count - first > 1)
      qsort(logs + first, count - first, sizeof *logs, byName);
  }
  *logsReturn = logs;
  return count;
}

/* TreeLogStruct -- a log as peeked, before it is read */
typedef struct TreeLogStruct {
  HeapLogStruct peek;
  size_t index;                 /* in the caller's order */
  size_t parent;                /* the log of the image that forked it, or SIZE_MAX */
  HeapSnapStruct *snaps;        /* its children's, by clock */
  size_t snapCount;
  HeapSnapStruct *inherit;      /* its parent's snapshot for it */
} TreeLogStruct;

static int byStart(const void *a, const void *b)
{
  const TreeLogStruct *x = a, *y = b;
  if (x->peek.startClock != y->peek.startClock)
    return x->peek.startClock < y->peek.startClock ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int bySnapClock(const void *a, const void *b)
{
  const HeapSnapStruct *x = a, *y = b;
  return x->clock < y->clock ? -1 : x->clock > y->clock;
}

/* parentOf -- the log (of those before i, by start) of the image of
 * pid parentPid that ran at clock: the latest to begin before it */
static size_t parentOf(const TreeLogStruct *t, size_t i)
{
  size_t found = SIZE_MAX;
  for (size_t j = 0; j < i; ++j)
    if (t[j].peek.pid == t[i].peek.parentPid && t[j].peek.startClock <= t[i].peek.forkClock)
      found = j;
  return found;
}

int HeapTreeProfile(char *const *logs, size_t count, HeapProfileStruct *profiles, int sitesOnly)
{
  TreeLogStruct *t = HeapReaderRealloc(NULL, count * sizeof *t);
  int bad = 0;
  memset(t, 0, count * sizeof *t);
  for (size_t i = 0; i < count; ++i) {
    (void)HeapPeek(logs[i], &t[i].peek);      /* a bad one is said when read */
    t[i].index = i;
    t[i].parent = SIZE_MAX;
  }
  qsort(t, count, sizeof *t, byStart);
  /* each child's snapshot of its parent, made when the parent is read */
  for (size_t i = 0; i < count; ++i) {
    size_t p;
    if (!t[i].peek.forked || (p = parentOf(t, i)) == SIZE_MAX)
      continue;
    t[i].parent = p;
    t[p].snaps = HeapReaderRealloc(t[p].snaps, (t[p].snapCount + 1) * sizeof *t[p].snaps);
    t[p].snaps[t[p].snapCount++] = (HeapSnapStruct){t[i].peek.forkClock, NULL, 0, 0};
  }
  for (size_t i = 0; i < count; ++i)
    if (t[i].snapCount > 1)
      qsort(t[i].snaps, t[i].snapCount, sizeof *t[i].snaps, bySnapClock);
  for (size_t i = 0; i < count; ++i) {
    HeapReadOptionsStruct opt = {NULL, 0, t[i].snaps, t[i].snapCount, NULL, 0};
    if (t[i].parent != SIZE_MAX) {
      const TreeLogStruct *p = &t[t[i].parent];
      for (size_t k = 0; k < p->snapCount; ++k)
        if (p->snaps[k].clock == t[i].peek.forkClock && p->snaps[k].taken) {
          opt.inherit = p->snaps[k].blocks;
          opt.inheritCount = p->snaps[k].count;
          break;
        }
    }
    bad |= HeapProfile(logs[t[i].index], &profiles[i], &opt, sitesOnly);
  }
  for (size_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < t[i].snapCount; ++k)
      free(t[i].snaps[k].blocks);
    free(t[i].snaps);
  }
  free(t);
  return bad;
}

void HeapTreeMerge(const HeapProfileStruct *profiles, size_t count, HeapProfileStruct *tree)
{
  HeapLogStruct *log = &tree->log;
  size_t stacks = 0, n = 0;
  char path[64];
  memset(tree, 0, sizeof *tree);
  for (size_t i = 0; i < count; ++i)
    stacks += profiles[i].profile.stackCount;
  tree->stacks = HeapReaderRealloc(NULL, stacks * sizeof *tree->stacks);
  tree->logIndex = HeapReaderRealloc(NULL, stacks * sizeof *tree->logIndex);
  tree->origin = HeapReaderRealloc(NULL, stacks * sizeof *tree->origin);
  tree->originIndex = HeapReaderRealloc(NULL, stacks * sizeof *tree->originIndex);
  tree->sitesOnly = count > 0 && profiles[0].sitesOnly;
  log->stacks = HeapReaderRealloc(NULL, stacks * sizeof *log->stacks);
  snprintf(path, sizeof path, "the tree of %zu log%s", count, count == 1 ? "" : "s");
  log->path = NULL;
  log->program = strdup(count > 0 && profiles[0].log.program != NULL ? profiles[0].log.program : "");
  for (size_t i = 0; i < count; ++i) {
    const HeapProfileStruct *hp = &profiles[i];
    const HeapLogStruct *l = &hp->log;
    for (size_t s = 0; s < hp->profile.stackCount; ++s, ++n) {
      tree->stacks[n] = hp->stacks[s];
      log->stacks[n] = l->stacks[hp->logIndex[s]];
      log->stacks[n].pending = NULL;
      log->stacks[n].node = 0;   /* the origin's log names it */
      tree->stacks[n].values = log->stacks[n].values;
      tree->logIndex[n] = n;
      tree->origin[n] = hp;
      tree->originIndex[n] = s;
    }
    log->allocations += l->allocations, log->bytes += l->bytes, log->frees += l->frees;
    log->failed += l->failed, log->temporary += l->temporary;
    log->leakedBytes += l->leakedBytes, log->leakedBlocks += l->leakedBlocks;
    log->unknownFrees += l->unknownFrees, log->inheritedFrees += l->inheritedFrees;
    log->inheritedBlocks += l->inheritedBlocks, log->inheritedBytes += l->inheritedBytes;
    log->stacked |= l->stacked;
    if (l->peakBytes > log->peakBytes)
      log->peakBytes = l->peakBytes, log->peakNs = l->peakNs;
    if (l->peakRss > log->peakRss)
      log->peakRss = l->peakRss;
    if (l->durationNs > log->durationNs)
      log->durationNs = l->durationNs;
    for (size_t c = 0; c < HEAP_HISTOGRAM_LIMIT; ++c)
      log->histogram[c][0] += l->histogram[c][0], log->histogram[c][1] += l->histogram[c][1];
    tree->suppressedBytes += hp->suppressedBytes, tree->suppressedBlocks += hp->suppressedBlocks;
    tree->suppressedStacks += hp->suppressedStacks;
  }
  log->stackCount = n;
  log->path = strdup(path);
  tree->profile = (ProfileStruct){log->program, tree->stacks, n, NULL, 0, 0, log->durationNs};
}

void HeapTreeMergeFree(HeapProfileStruct *tree)
{
  free(tree->stacks);
  free(tree->logIndex);
  free(tree->origin);
  free(tree->originIndex);
  free(tree->log.stacks);
  free(tree->log.program);
  free((char *)tree->log.path);
  memset(tree, 0, sizeof *tree);
}
