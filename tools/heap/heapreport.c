/* <tools/heap/heapreport.c> -- the heap tool's text reports: the
 * summary, the top call sites, the leaks, the sizes and a comparison
 * of two runs
 *
 * .design: design/heap.txt .heap
 *
 * A call site is a stack's innermost frame outside the allocator and
 * the recorder (HeapSite); stacks with the same site, by function, file
 * and line, are one row.
 */

#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "textsafe.h"
#include "heapint.h"
#include "report.h"

/* The allocator's own entry points: a frame in one of them is not a
 * call site, its caller is (strdup, operator new: by its mangled names
 * here, and any "operator new" demangled). */
static const char *const allocatorNames[] = {
  "malloc", "calloc", "realloc", "reallocarray", "free", "memalign", "aligned_alloc",
  "posix_memalign", "valloc", "pvalloc", "strdup", "strndup", "__strdup", "__strndup",
  "__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_memalign",
  "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
  "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
  "_ZnamSt11align_val_tRKSt9nothrow_t",
};

static int isAllocator(const ProfileFrameStruct *frame)
{
  if (frame->module != NULL && strstr(frame->module, "libtelltale-malloc") != NULL)
    return 1;
  if (frame->function == NULL)
    return 0;
  if (strncmp(frame->function, "operator new", 12) == 0)
    return 1;
  for (size_t i = 0; i < sizeof allocatorNames / sizeof allocatorNames[0]; ++i)
    if (strcmp(frame->function, allocatorNames[i]) == 0
        || (strncmp(frame->function, "__GI_", 5) == 0
            && strcmp(frame->function + 5, allocatorNames[i]) == 0))
      return 1;
  return 0;
}

size_t HeapSite(const ProfileStackStruct *stack)
{
  for (size_t i = 0; i < stack->depth; ++i)
    if (!isAllocator(&stack->frames[i]))
      return i;
  return 0;
}

int HeapShortTemplates;

/* shorten -- s with each outermost template argument list made "<>"
 * ("std::vector<int, std::allocator<int> >::push_back" to
 * "std::vector<>::push_back"), as heaptrack_gui shows them; an
 * operator's own < and > ("operator<", "operator<<", "operator->") are
 * kept.  .heap.short */
static void shorten(char *s)
{
  char *out = s;
  unsigned depth = 0;
  for (const char *p = s; *p != '\0'; ++p) {
    int isOperator = (p - s >= 8 && strncmp(p - 8, "operator", 8) == 0)
                     || (p - s >= 9 && strncmp(p - 9, "operator<", 9) == 0)
                     || (p - s >= 9 && strncmp(p - 9, "operator-", 9) == 0)
                     || (p - s >= 9 && strncmp(p - 9, "operator>", 9) == 0);
    if (*p == '<' && !isOperator) {
      if (depth++ == 0)
        *out++ = '<';
    } else if (*p == '>' && depth > 0 && !isOperator) {
      if (--depth == 0)
        *out++ = '>';
    } else if (depth == 0)
      *out++ = *p;
  }
  *out = '\0';
}

/* HeapFrameName -- "function  file:line", or what of it is known: a
 * frame without a symbol is named by its file and offset there
 * ("libfoo.so.1+0x1a504"), which are the same in every run */
void HeapFrameName(const ProfileFrameStruct *frame, char *buf, size_t size)
{
  const char *module = frame->module != NULL ? strrchr(frame->module, '/') : NULL;
  int n;
  module = module != NULL ? module + 1 : frame->module;
  if (frame->function != NULL) {
    n = snprintf(buf, size, "%s", frame->function);
    if (HeapShortTemplates && n >= 0 && (size_t)n < size) {
      shorten(buf);
      n = (int)strlen(buf);
    }
  }
  else if (module != NULL)
    n = snprintf(buf, size, "%s+0x%" PRIx64, module, frame->moduleOffset);
  else
    n = snprintf(buf, size, "0x%" PRIx64, frame->address);
  if (n < 0 || (size_t)n >= size)
    return;
  if (frame->file != NULL)
    snprintf(buf + n, size - (size_t)n, "  %s:%u", frame->file, frame->line);
  else if (module != NULL && frame->function != NULL
           && !(strncmp(frame->function, module, strlen(module)) == 0
                && strncmp(frame->function + strlen(module), "+0x", 3) == 0))
    snprintf(buf + n, size - (size_t)n, "  in %s", module);   /* unless it says it */
}

/* Call sites */

typedef struct SiteStruct {
  char name[512];
  const ProfileFrameStruct *frame;      /* its frame in its first stack */
  uint64_t values[PROFILE_VALUE_LIMIT];
  size_t first, count;          /* its stacks in order[] */
} SiteStruct;

typedef struct SitesStruct {
  SiteStruct *sites;
  size_t count;
  size_t *order;                /* stack indexes, by site */
  const ProfileStruct *profile;
} SitesStruct;

static char **sortNames;         /* each stack's site's name, while sorting */

static int bySiteName(const void *a, const void *b)
{
  return strcmp(sortNames[*(const size_t *)a], sortNames[*(const size_t *)b]);
}

static void *reportAlloc(void *p, size_t size)
{
  if ((p = realloc(p, size > 0 ? size : 1)) == NULL)
    ReportOutOfMemory();
  return p;
}

/* NameSlotStruct -- a site frame's name, shared by the stacks whose
 * site frame is the same (most are: 266,000 stacks of cppcheck have a
 * few thousand) */
typedef struct NameSlotStruct {
  const ProfileFrameStruct *frame;
  char *name;
} NameSlotStruct;

static int frameSame(const ProfileFrameStruct *a, const ProfileFrameStruct *b)
{
  return a->address == b->address && a->function == b->function && a->file == b->file
         && a->line == b->line && a->module == b->module;
}

/* sitesOf -- the profile's stacks grouped by call site */
static void sitesOf(const ProfileStruct *profile, SitesStruct *sites)
{
  size_t n = profile->stackCount, slotCount = 64, named = 0, capacity = 16;
  NameSlotStruct *slots = reportAlloc(NULL, slotCount * sizeof *slots);
  sites->profile = profile;
  sites->order = reportAlloc(NULL, (n + 1) * sizeof *sites->order);
  sites->sites = reportAlloc(NULL, capacity * sizeof *sites->sites);
  sites->count = 0;
  sortNames = reportAlloc(NULL, (n + 1) * sizeof *sortNames);
  memset(slots, 0, slotCount * sizeof *slots);
  for (size_t i = 0; i < n; ++i) {
    const ProfileFrameStruct *f = &profile->stacks[i].frames[HeapSite(&profile->stacks[i])];
    size_t k;
    if ((named + 1) * 2 > slotCount) {        /* twice the slots */
      NameSlotStruct *old = slots;
      size_t oldCount = slotCount;
      slotCount *= 2;
      slots = reportAlloc(NULL, slotCount * sizeof *slots);
      memset(slots, 0, slotCount * sizeof *slots);
      for (size_t j = 0; j < oldCount; ++j)
        if (old[j].frame != NULL) {
          k = (size_t)(old[j].frame->address * 0x9E3779B97F4A7C15u >> 20) & (slotCount - 1);
          while (slots[k].frame != NULL)
            k = (k + 1) & (slotCount - 1);
          slots[k] = old[j];
        }
      free(old);
    }
    k = (size_t)(f->address * 0x9E3779B97F4A7C15u >> 20) & (slotCount - 1);
    while (slots[k].frame != NULL && !frameSame(slots[k].frame, f))
      k = (k + 1) & (slotCount - 1);
    if (slots[k].frame == NULL) {
      char name[512];
      HeapFrameName(f, name, sizeof name);
      slots[k].frame = f;
      slots[k].name = reportAlloc(NULL, strlen(name) + 1);
      memcpy(slots[k].name, name, strlen(name) + 1);
      ++named;
    }
    sites->order[i] = i;
    sortNames[i] = slots[k].name;
  }
  qsort(sites->order, n, sizeof *sites->order, bySiteName);
  for (size_t i = 0; i < n; ++i) {
    const ProfileStackStruct *s = &profile->stacks[sites->order[i]];
    const char *name = sortNames[sites->order[i]];
    SiteStruct *site = sites->count > 0 ? &sites->sites[sites->count - 1] : NULL;
    if (site == NULL || strcmp(site->name, name) != 0) {
      if (sites->count == capacity)
        sites->sites = reportAlloc(sites->sites, (capacity *= 2) * sizeof *sites->sites);
      site = &sites->sites[sites->count++];
      memset(site, 0, sizeof *site);
      snprintf(site->name, sizeof site->name, "%s", name);
      site->frame = &s->frames[HeapSite(s)];
      site->first = i;
    }
    ++site->count;
    for (unsigned v = 0; v < PROFILE_VALUE_LIMIT; ++v)
      site->values[v] += s->values[v];
  }
  for (size_t k = 0; k < slotCount; ++k)
    free(slots[k].name);
  free(slots);
  free(sortNames);
  sortNames = NULL;
}

static void sitesFree(SitesStruct *sites)
{
  free(sites->sites);
  free(sites->order);
}

/* plural -- "s" unless n is 1 */
static const char *plural(uint64_t n)
{
  return n == 1 ? "" : "s";
}

/* byPlace -- the order of two sites of equal value: by file, then line
 * as a number (":9" before ":10"), then name */
static int byPlace(const ProfileFrameStruct *fa, const char *na, const ProfileFrameStruct *fb,
                   const char *nb)
{
  int c = fa->file == NULL || fb->file == NULL ? (fa->file == NULL) - (fb->file == NULL)
                                               : strcmp(fa->file, fb->file);
  if (c != 0)
    return c;
  if (fa->line != fb->line)
    return fa->line < fb->line ? -1 : 1;
  return strcmp(na, nb);
}

static ProfileValue sortValue;

static int bySiteValue(const void *a, const void *b)
{
  const SiteStruct *sa = a, *sb = b;
  uint64_t va = sa->values[sortValue], vb = sb->values[sortValue];
  return va != vb ? (va < vb ? 1 : -1) : byPlace(sa->frame, sa->name, sb->frame, sb->name);
}

/* printStack -- the frames of stack i of hp from its call site outwards */
static void printStack(FILE *out, const HeapProfileStruct *hp, size_t i, const char *indent)
{
  char name[512];
  ProfileStackStruct full = HeapStackFull(hp, i);
  const ProfileStackStruct *stack = &full;
  for (size_t f = HeapSite(stack) + 1; f < stack->depth; ++f) {
    HeapFrameName(&stack->frames[f], name, sizeof name);
    fprintf(out, "%s", indent);
    TextPut(out, name);         /* the log's and files' bytes: .export.text */
    fputc('\n', out);
  }
}

/* heaviest -- the index of a site's stack with the most of value */
static size_t heaviest(const SitesStruct *sites, const SiteStruct *site, ProfileValue value)
{
  size_t best = sites->order[site->first];
  for (size_t i = site->first; i < site->first + site->count; ++i) {
    const ProfileStackStruct *s = &sites->profile->stacks[sites->order[i]];
    if (s->values[value] > sites->profile->stacks[best].values[value])
      best = sites->order[i];
  }
  return best;
}

static const char *const topTitle[PROFILE_VALUE_LIMIT] = {
  "MOST ALLOCATIONS", "MOST BYTES ALLOCATED", "MOST BYTES LIVE AT THE PEAK", "",
  "MOST TEMPORARY ALLOCATIONS"
};

/* printTop -- the top call sites by value */
static void printTop(FILE *out, const HeapProfileStruct *hp, SitesStruct *sites, ProfileValue value,
                     uint64_t total, const HeapReportOptionsStruct *opt)
{
  sortValue = value;
  qsort(sites->sites, sites->count, sizeof *sites->sites, bySiteValue);
  fprintf(out, "\n%s (%s; call site: function  file:line)\n", topTitle[value],
           ProfileValueUnit[value]);
  for (size_t i = 0; i < sites->count && i < opt->top; ++i) {
    const SiteStruct *site = &sites->sites[i];
    if (site->values[value] == 0)
      break;
    fprintf(out, "%14" PRIu64 " %5.1f%%  ", site->values[value],
            total > 0 ? 100.0 * (double)site->values[value] / (double)total : 0.0);
    TextPut(out, site->name);
    fputc('\n', out);
    if (opt->stacks) {
      printStack(out, hp, heaviest(sites, site, value), "                        ");
      if (site->count > 1)
        fprintf(out, "                        (and %zu other stack%s)\n", site->count - 1,
                plural(site->count - 1));
    }
  }
}

/* inLibstdcxx -- whether frame is in the C++ library's file */
static int inLibstdcxx(const ProfileFrameStruct *frame)
{
  const char *base = frame->module != NULL ? strrchr(frame->module, '/') : NULL;
  base = base != NULL ? base + 1 : frame->module;
  return base != NULL && strncmp(base, "libstdc++", 9) == 0;
}

/* defaultSuppressed -- whether stack is a built-in suppression's: the
 * C++ library's emergency exception pool, allocated by its own
 * initialiser as the dynamic loader runs it and never freed, which
 * every C++ program would report (heaptrack hides it too).
 * .heap.suppress.default */
static int defaultSuppressed(const ProfileStackStruct *stack)
{
  if (stack->depth == 0 || !inLibstdcxx(&stack->frames[HeapSite(stack)]))
    return 0;
  for (size_t f = HeapSite(stack) + 1; f < stack->depth; ++f)
    if (stack->frames[f].function != NULL && (strcmp(stack->frames[f].function, "call_init") == 0
                                              || strcmp(stack->frames[f].function, "_dl_init") == 0))
      return 1;
  return 0;
}

/* suppressed -- whether a frame of stack matches a suppression */
static int suppressed(const ProfileStackStruct *stack, const HeapReportOptionsStruct *opt)
{
  if (opt->defaults && defaultSuppressed(stack))
    return 1;
  for (size_t f = 0; f < stack->depth; ++f)
    for (size_t p = 0; p < opt->suppressCount; ++p) {
      const ProfileFrameStruct *fr = &stack->frames[f];
      const char *pattern = opt->suppress[p];
      if (pattern[0] == '\001') {      /* LeakSanitizer's leak:TEXT: .heap.suppress.lsan */
        if ((fr->function != NULL && fnmatch(pattern + 1, fr->function, 0) == 0)
            || (fr->file != NULL && fnmatch(pattern + 1, fr->file, 0) == 0)
            || (fr->module != NULL && (fnmatch(pattern + 1, fr->module, 0) == 0
                                       || (strrchr(fr->module, '/') != NULL
                                           && fnmatch(pattern + 1, strrchr(fr->module, '/') + 1, 0) == 0))))
          return 1;
      } else if (fr->function != NULL && fnmatch(pattern, fr->function, 0) == 0)
        return 1;
    }
  return 0;
}

static const ProfileStruct *sortLeaks;

static int byLeaked(const void *a, const void *b)
{
  const ProfileStackStruct *sa = &sortLeaks->stacks[*(const size_t *)a];
  const ProfileStackStruct *sb = &sortLeaks->stacks[*(const size_t *)b];
  uint64_t va = sa->values[ProfileLeaked], vb = sb->values[ProfileLeaked];
  char na[512], nb[512];
  if (va != vb)
    return va < vb ? 1 : -1;
  HeapFrameName(&sa->frames[HeapSite(sa)], na, sizeof na);
  HeapFrameName(&sb->frames[HeapSite(sb)], nb, sizeof nb);
  return byPlace(&sa->frames[HeapSite(sa)], na, &sb->frames[HeapSite(sb)], nb);
}

void HeapSuppress(HeapProfileStruct *hp, const HeapReportOptionsStruct *opt)
{
  HeapLogStruct *log = &hp->log;
  for (size_t i = 0; i < hp->profile.stackCount; ++i) {
    ProfileStackStruct *s = &hp->stacks[i], full;
    HeapStackStruct *ls = &log->stacks[hp->logIndex[i]];
    if (s->values[ProfileLeaked] == 0)
      continue;
    full = HeapStackFull(hp, i);
    if (!suppressed(&full, opt))
      continue;
    hp->suppressedBytes += s->values[ProfileLeaked];
    hp->suppressedBlocks += ls->liveBlocks;
    ++hp->suppressedStacks;
    log->leakedBytes -= s->values[ProfileLeaked];
    log->leakedBlocks -= ls->liveBlocks;
    s->values[ProfileLeaked] = 0;
    ls->values[ProfileLeaked] = 0;
  }
}

/* printLeaks -- the stacks of blocks live at the end, whole */
static void printLeaks(FILE *out, const HeapProfileStruct *hp, const HeapReportOptionsStruct *opt)
{
  const ProfileStruct *p = &hp->profile;
  size_t *order = calloc(p->stackCount + 1, sizeof *order), n = 0, shown = 0;
  char name[512];
  for (size_t i = 0; order != NULL && i < p->stackCount; ++i)
    if (p->stacks[i].values[ProfileLeaked] != 0)
      order[n++] = i;
  sortLeaks = p;
  qsort(order, n, sizeof *order, byLeaked);
  fprintf(out, "\nLEAKS (blocks live at the end, by stack; %" PRIu64 " bytes from %zu "
          "stack%s suppressed)\n", hp->suppressedBytes, hp->suppressedStacks,
          plural(hp->suppressedStacks));
  for (size_t i = 0; i < n && shown < opt->top; ++i, ++shown) {
    const ProfileStackStruct *s = &p->stacks[order[i]];
    size_t site = HeapSite(s);
    HeapFrameName(&s->frames[site], name, sizeof name);
    uint64_t blocks = hp->log.stacks[hp->logIndex[order[i]]].liveBlocks;
    fprintf(out, "%14" PRIu64 " bytes in %" PRIu64 " block%s from  ",
            s->values[ProfileLeaked], blocks, plural(blocks));
    TextPut(out, name);
    fputc('\n', out);
    printStack(out, hp, order[i], "                        ");
  }
  if (n > shown)
    fprintf(out, "  (%zu more stack%s: --top)\n", n - shown, plural(n - shown));
  free(order);
}

static void printHistogram(FILE *out, const HeapLogStruct *log)
{
  fprintf(out, "\nSIZES (requested, in powers of two)\n%24s %14s %16s\n", "bytes", "allocations",
          "bytes");
  for (unsigned c = 0; c < HEAP_HISTOGRAM_LIMIT; ++c) {
    char range[48];
    if (log->histogram[c][0] == 0)
      continue;
    if (c == 0)
      snprintf(range, sizeof range, "0");
    else
      snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, (uint64_t)1 << (c - 1),
               c == 64 ? UINT64_MAX : ((uint64_t)1 << c) - 1);
    fprintf(out, "%24s %14" PRIu64 " %16" PRIu64 "\n", range, log->histogram[c][0],
            log->histogram[c][1]);
  }
}

static double pct(uint64_t part, uint64_t whole)
{
  return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

static void printSummary(FILE *out, const HeapProfileStruct *hp, size_t stacks)
{
  const HeapLogStruct *log = &hp->log;
  fprintf(out, "heap profile of %s (", log->path);
  TextPut(out, log->program[0] != '\0' ? log->program : "program unknown");
  fprintf(out, ")\n\nSUMMARY\n");
  fprintf(out, "  allocations  %" PRIu64 " call%s, %" PRIu64 " bytes (%" PRIu64 " failed)\n",
          log->allocations, plural(log->allocations), log->bytes, log->failed);
  fprintf(out, "  frees        %" PRIu64 " (%" PRIu64 " of blocks never seen allocated)\n",
          log->frees, log->unknownFrees);
  if (log->inheritedBlocks > 0 || log->inheritedFrees > 0)      /* .heap.tree */
    fprintf(out, "  inherited    %" PRIu64 " block%s, %" PRIu64 " bytes, live in its parent at "
            "the fork; %" PRIu64 " of the frees were of them\n",
            log->inheritedBlocks, plural(log->inheritedBlocks), log->inheritedBytes,
            log->inheritedFrees);
  else if (log->forked)
    fprintf(out, "  forked       by pid %" PRIu32 ": its frees of blocks its parent allocated "
            "are among those never seen, unless its parent's log is read with it\n",
            log->parentPid);
  fprintf(out, "  peak heap    %" PRIu64 " bytes live at %.6f s of %.6f s\n", log->peakBytes,
          (double)log->peakNs / 1e9, (double)log->durationNs / 1e9);
  if (log->peakRss > 0)         /* .heap.rss */
    fprintf(out, "  max RSS      %" PRIu64 " bytes, the process's (the recorder's buffers "
            "included)\n", log->peakRss);
  fprintf(out, "  leaked       %" PRIu64 " bytes in %" PRIu64 " block%s", log->leakedBytes,
          log->leakedBlocks, plural(log->leakedBlocks));
  if (hp->suppressedStacks > 0)
    fprintf(out, " (and %" PRIu64 " bytes in %" PRIu64 " block%s suppressed)",
            hp->suppressedBytes, hp->suppressedBlocks, plural(hp->suppressedBlocks));
  fputc('\n', out);
  fprintf(out, "  temporary    %" PRIu64 " allocation%s (%.1f%%)\n", log->temporary,
          plural(log->temporary), pct(log->temporary, log->allocations));
  if (log->stacked)
    fprintf(out, "  stacks       %zu\n", stacks);
  else if (log->allocations + log->frees + log->failed == 0)
    fprintf(out, "  stacks       none: the log holds no allocation events\n");
  else
    fprintf(out, "  stacks       none recorded (TELLTALE_STACKS=N records them): one unknown "
            "site\n");
}

size_t HeapTopSites(const HeapProfileStruct *hp, ProfileValue value, size_t top,
                    int32_t *seriesOf, char **names)
{
  SitesStruct sites;
  size_t n = 0;
  sitesOf(&hp->profile, &sites);
  sortValue = value;
  qsort(sites.sites, sites.count, sizeof *sites.sites, bySiteValue);
  for (size_t i = 0; i < hp->log.stackCount; ++i)
    seriesOf[i] = -1;
  for (size_t i = 0; i < sites.count && n < top && sites.sites[i].values[value] > 0; ++i, ++n) {
    const SiteStruct *site = &sites.sites[i];
    names[n] = reportAlloc(NULL, strlen(site->name) + 1);
    memcpy(names[n], site->name, strlen(site->name) + 1);
    for (size_t k = site->first; k < site->first + site->count; ++k)
      seriesOf[hp->logIndex[sites.order[k]]] = (int32_t)n;
  }
  sitesFree(&sites);
  return n;
}

void HeapReport(FILE *out, const HeapProfileStruct *hp, const HeapReportOptionsStruct *opt)
{
  const HeapLogStruct *log = &hp->log;
  SitesStruct sites;
  printSummary(out, hp, hp->profile.stackCount);
  sitesOf(&hp->profile, &sites);
  printTop(out, hp, &sites, ProfileAllocations, log->allocations, opt);
  printTop(out, hp, &sites, ProfileBytes, log->bytes, opt);
  printTop(out, hp, &sites, ProfilePeak, log->peakBytes, opt);
  printTop(out, hp, &sites, ProfileTemporary, log->temporary, opt);
  sitesFree(&sites);
  printLeaks(out, hp, opt);
  printHistogram(out, log);
}

/* The comparison of two runs, by call site */

typedef struct DiffRowStruct {
  const char *name;
  const ProfileFrameStruct *frame;
  uint64_t old[2], new[2];      /* allocations, bytes */
} DiffRowStruct;

static int byChange(const void *a, const void *b)
{
  const DiffRowStruct *ra = a, *rb = b;
  int64_t ca = (int64_t)(ra->new[1] - ra->old[1]), cb = (int64_t)(rb->new[1] - rb->old[1]);
  int64_t na = (int64_t)(ra->new[0] - ra->old[0]), nb = (int64_t)(rb->new[0] - rb->old[0]);
  ca = ca < 0 ? -ca : ca, cb = cb < 0 ? -cb : cb;
  na = na < 0 ? -na : na, nb = nb < 0 ? -nb : nb;
  if (ca != cb)
    return ca < cb ? 1 : -1;
  if (na != nb)
    return na < nb ? 1 : -1;
  return byPlace(ra->frame, ra->name, rb->frame, rb->name);
}

/* diffRows -- one row a site of either run, merged by name (both
 * lists are sorted by name) */
static size_t diffRows(const SitesStruct *o, const SitesStruct *n, DiffRowStruct *rows)
{
  size_t i = 0, j = 0, count = 0;
  while (i < o->count || j < n->count) {
    int c = i == o->count ? 1 : j == n->count ? -1 : strcmp(o->sites[i].name, n->sites[j].name);
    DiffRowStruct *r = &rows[count++];
    memset(r, 0, sizeof *r);
    if (c <= 0) {
      r->name = o->sites[i].name;
      r->frame = o->sites[i].frame;
      r->old[0] = o->sites[i].values[ProfileAllocations];
      r->old[1] = o->sites[i++].values[ProfileBytes];
    }
    if (c >= 0) {
      r->name = n->sites[j].name;
      r->frame = n->sites[j].frame;
      r->new[0] = n->sites[j].values[ProfileAllocations];
      r->new[1] = n->sites[j++].values[ProfileBytes];
    }
  }
  return count;
}

void HeapDiff(FILE *out, const HeapProfileStruct *old, const HeapProfileStruct *new,
              const HeapReportOptionsStruct *opt)
{
  SitesStruct o, n;
  DiffRowStruct *rows;
  size_t count, shown = 0;
  sitesOf(&old->profile, &o);
  sitesOf(&new->profile, &n);
  rows = calloc(o.count + n.count + 1, sizeof *rows);
  if (rows == NULL)
    ReportOutOfMemory();
  count = diffRows(&o, &n, rows);
  qsort(rows, count, sizeof *rows, byChange);
  fprintf(out, "heap comparison: %s (old) against %s (new)\n\n", old->log.path, new->log.path);
  fprintf(out, "%-12s %14s %14s %14s\n", "", "old", "new", "change");
  fprintf(out, "%-12s %14" PRIu64 " %14" PRIu64 " %+14" PRId64 "\n", "allocations",
          old->log.allocations, new->log.allocations,
          (int64_t)(new->log.allocations - old->log.allocations));
  fprintf(out, "%-12s %14" PRIu64 " %14" PRIu64 " %+14" PRId64 "\n", "bytes", old->log.bytes,
          new->log.bytes, (int64_t)(new->log.bytes - old->log.bytes));
  fprintf(out, "%-12s %14" PRIu64 " %14" PRIu64 " %+14" PRId64 "\n", "peak", old->log.peakBytes,
          new->log.peakBytes, (int64_t)(new->log.peakBytes - old->log.peakBytes));
  fprintf(out, "%-12s %14" PRIu64 " %14" PRIu64 " %+14" PRId64 "\n", "leaked",
          old->log.leakedBytes, new->log.leakedBytes,
          (int64_t)(new->log.leakedBytes - old->log.leakedBytes));
  fprintf(out, "\nCALL SITES THAT CHANGED (allocations old new change, bytes old new change)\n");
  for (size_t i = 0; i < count && shown < opt->top; ++i) {
    const DiffRowStruct *r = &rows[i];
    if (r->old[0] == r->new[0] && r->old[1] == r->new[1])
      continue;
    fprintf(out, "%10" PRIu64 " %10" PRIu64 " %+10" PRId64 "  %12" PRIu64 " %12" PRIu64
            " %+12" PRId64 "  %s\n", r->old[0], r->new[0], (int64_t)(r->new[0] - r->old[0]),
            r->old[1], r->new[1], (int64_t)(r->new[1] - r->old[1]), r->name);
    ++shown;
  }
  if (shown == 0)
    fprintf(out, "  (none: every call site allocated as often and as much)\n");
  free(rows);
  sitesFree(&o);
  sitesFree(&n);
}
