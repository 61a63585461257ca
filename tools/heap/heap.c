/* <tools/heap/heap.c> -- telltale-heap: who allocates, from a recorder log
 *
 * .design: design/heap.txt .heap
 *
 * heap LOG reads a log written by libtelltale-malloc.so (with
 * TELLTALE_STACKS=N for call stacks), attributes every allocation to
 * its call stack, names the frames offline with libdw and prints the
 * text reports; --folded, --flame, --pprof and --chart write the
 * profile in another form instead (the writers of profile.h), and
 * --diff compares two runs.
 */

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "heapint.h"
#include "eventapi.h"
#include "options.h"
#include "outpath.h"
#include "report.h"

#define EXIT_BADLOG 1
#define SUPPRESS_LIMIT 1024

static const char usageText[] =
  "usage: telltale-heap [options] LOG\n"
  "       telltale-heap [options] LOG LOG... | DIR\n"
  "       telltale-heap --diff [options] OLD NEW\n"
  "Reports who allocates in LOG, a log written by libtelltale-malloc.so\n"
  "(telltale-record LOG -- PROGRAM; TELLTALE_STACKS=N records call stacks of\n"
  "up to N frames, TELLTALE_STACKS=N:dwarf through code without frame pointers).\n"
  "The report: a summary (allocations, bytes, the peak of bytes live and when,\n"
  "leaks, temporary allocations), the top call sites by allocations, by bytes,\n"
  "by bytes live at the peak and by temporary allocations, the leaks (blocks\n"
  "live at the end, by stack) and a histogram of sizes.  A call site is the\n"
  "innermost frame outside the allocator (malloc, strdup, operator new...);\n"
  "frames are named offline from the files the log's mappings name, with\n"
  "their debug information (libdw), inlined calls as frames of their own and\n"
  "C++ names demangled (a file changed since the log began is warned of).\n"
  "A frame-pointer walk (TELLTALE_STACKS=N) loses the caller of a library\n"
  "function built without frame pointers (libstdc++'s operator new, the C\n"
  "library's strdup): record C++ with N:dwarf.\n"
  "Several logs, or a directory of them, are a process tree (LOG, LOG.PID of\n"
  "a child, LOG.execN of an image that exec'd): a report a process, then the\n"
  "tree's (the sums, but the peak: the largest process's); a forked child's\n"
  "frees of the blocks it inherited are counted as such, not as frees of\n"
  "blocks never seen.  --folded, --flame and --pprof write the tree's stacks.\n"
  "LOG.live, if there, adds what a program that died left only in it.  LOG\n"
  "may be an archive of a log (eventcnv --format telltale).\n"
  "Options:\n";

/* OptionsStruct -- what the command line asked for */
typedef struct OptionsStruct {
  int stacks, diff, pprof, chart, noDefaults, html, shortTemplates;
  const char *top;              /* --top argument, or NULL */
  const char *output;           /* -o argument, or NULL: stdout */
  const char *folded;           /* --folded's value, "" for none given, or NULL */
  const char *flame;            /* --flame's value, "" for none given, or NULL */
  OptionListStruct suppress;    /* --suppress's FILEs */
  const char **paths;           /* the LOGs */
  size_t pathCount;
} OptionsStruct;

/* valueOf -- the ProfileValue named ("" the default, allocations), or
 * PROFILE_VALUE_LIMIT */
static ProfileValue valueOf(const char *name)
{
  unsigned v = 0;
  if (name[0] == '\0')
    return ProfileAllocations;
  while (v < PROFILE_VALUE_LIMIT && strcmp(name, ProfileValueName[v]) != 0)
    ++v;
  return (ProfileValue)v;
}

/* notALog -- whether argv[i] is meant as a value, not a log: no file of
 * that name, and a log still to come ("--folded nonsense LOG") */
static int notALog(int argc, char **argv, int i)
{
  struct stat st;
  if (argv[i][0] == '-' || stat(argv[i], &st) == 0)
    return 0;
  for (int j = i + 1; j < argc; ++j)
    if (argv[j][0] != '-' || strcmp(argv[j], "-") == 0)
      return 1;
  return 0;
}

/* weightedNext -- whether argv[i], after --folded or --flame, is its
 * VALUE: one it names, or a word that is no log with a log after it */
static int weightedNext(int argc, char **argv, int i)
{
  return argv[i][0] != '\0' && (valueOf(argv[i]) != PROFILE_VALUE_LIMIT || notALog(argc, argv, i));
}

#define AT(field) offsetof(OptionsStruct, field)

/* options -- telltale-heap's options, in the order --help gives them */
static const OptionStruct options[] = {
  /* name        alias arg             at            argName     help */
  {"--top",      NULL, OptionValue,    AT(top),      "N",
   "call sites in each list, stacks in the leaks (default 10)", NULL},
  {"--stacks",   NULL, OptionFlag,     AT(stacks),   NULL,
   "show the stack below each call site", NULL},
  {"--short-templates", NULL, OptionFlag, AT(shortTemplates), NULL,
   "C++ template arguments shown as <> (std::vector<>::push_back),\n"
   "in the report, --diff and --html", NULL},
  {"--suppress", NULL, OptionList,     AT(suppress), "FILE",
   "the stacks with a frame whose function matches a pattern\n"
   "of FILE (fnmatch, one a line, # begins a comment) leak\n"
   "nothing: left out of the leaks, the summary's leaked\n"
   "(which says how much was suppressed), --diff's, and the\n"
   "leaked value of --folded, --flame and --pprof; may be\n"
   "repeated.  LeakSanitizer's files work too: a line\n"
   "leak:TEXT suppresses the stacks with a frame whose\n"
   "function, file or module holds TEXT (* any characters;\n"
   "^ and $ anchor it)", NULL},
  {"--no-default-suppressions", NULL, OptionFlag, AT(noDefaults), NULL,
   "show the leak the built-in suppression hides: libstdc++'s\n"
   "emergency exception pool (72,704 bytes with GCC 12's),\n"
   "allocated once by its initialiser, never freed: a stack\n"
   "whose innermost frame is in libstdc++ and that runs under\n"
   "the dynamic loader's call_init or _dl_init (seen with\n"
   "N:dwarf; a frame-pointer walk stops in libstdc++)", NULL},
  {"--diff",     NULL, OptionFlag,     AT(diff),     NULL,
   "compare two logs, OLD and NEW, by call site", NULL},
  {NULL,         NULL, OptionHeading,  0,            NULL,
   "Instead of the report (one of these):", NULL},
  {"--folded",   NULL, OptionOptional, AT(folded),   "[VALUE]",
   "folded stacks (outer;...;inner value), one line a stack,\n"
   "for flame-graph tools; VALUE is allocations (the\n"
   "default), bytes, peak, leaked or temporary", weightedNext},
  {"--flame",    NULL, OptionOptional, AT(flame),    "[VALUE]",
   "a flame graph of VALUE, one SVG to open in a browser", weightedNext},
  {"--pprof",    NULL, OptionFlag,     AT(pprof),    NULL,
   "pprof's profile.proto, gzipped: pprof -top FILE", NULL},
  {"--chart",    NULL, OptionFlag,     AT(chart),    NULL,
   "the heap in use over time with its peak marked, an SVG", NULL},
  {"--html",     NULL, OptionFlag,     AT(html),     NULL,
   "one page that draws it all, as heaptrack_gui does: the\n"
   "summary, bottom-up and top-down trees (allocations\n"
   "inclusive and exclusive, bytes, peak, leaked,\n"
   "temporary), the heap over time with the top sites\n"
   "stacked, the flame graph and the sizes; reads LOG twice", NULL},
  {"--output",   "-o", OptionValue,    AT(output),   "FILE",
   "write to FILE, not the standard output (never a LOG)", NULL},
  {"--help",     NULL, OptionHelp,     0,            NULL,
   "print this help and exit", NULL},
  {"--version",  NULL, OptionVersion,  0,            NULL,
   "print telltale's version and exit", NULL},
};

#undef AT

static const char epilogue[] =
  "A free is of a temporary allocation when the event before it (of any\n"
  "thread) allocated a block of the same stack and size, as heaptrack_print\n"
  "counts them (not heaptrack's figure at the end of recording, which\n"
  "counts by address).\n"
  "How the log ended is said on stderr: a program that died (no StreamEnd)\n"
  "leaves blocks live that are not all leaks, and without LOG.live the events\n"
  "still in its buffers are lost (the recorder keeps LOG.live unless\n"
  "TELLTALE_MAP=off); a log that\n"
  "ends at an exec, or where reading stopped at damage, is said so, and so is\n"
  "a log with no allocation event (not the recorder's, or nothing allocated).\n"
  "Exit status: 0 on success; 1 if a log cannot be read or is damaged (the\n"
  "report is then of the events before the damage, which is named by file and\n"
  "offset) or the output cannot be written; 2 on bad usage (and -o naming a\n"
  "LOG).\n"
  "Examples:\n"
  "  TELLTALE_STACKS=32 telltale-record run.log -- ./program\n"
  "  telltale-heap run.log\n"
  "  telltale-heap --folded bytes run.log | flamegraph.pl >bytes.svg\n"
  "  telltale-heap --flame peak -o peak.svg run.log\n"
  "  telltale-heap --pprof -o run.pb.gz run.log && pprof -top run.pb.gz\n"
  "  telltale-heap --diff before.log after.log\n";

/* version -- --version.  design/build.txt .pack.version */
static void version(FILE *out)
{
  fprintf(out, "telltale-heap (telltale) %s\n", TELLTALE_VERSION_STRING);
}

static const OptionsSpecStruct spec = {
  "telltale-heap", usageText, options, sizeof options / sizeof options[0], epilogue, 21, 0,
  version
};

/* argsCheck -- the combinations of options that cannot be */
static void argsCheck(const OptionsStruct *opt)
{
  if (opt->diff ? opt->pathCount != 2 : opt->pathCount == 0)
    ReportUsage("%s", opt->diff ? "--diff compares two logs: OLD NEW" : "give a LOG");
  if (opt->folded != NULL && valueOf(opt->folded) == PROFILE_VALUE_LIMIT)
    ReportUsage("--folded: unknown value %s: it counts allocations, bytes, peak, leaked or "
                "temporary", opt->folded);
  if (opt->flame != NULL && valueOf(opt->flame) == PROFILE_VALUE_LIMIT)
    ReportUsage("--flame: unknown value %s: it counts allocations, bytes, peak, leaked or "
                "temporary", opt->flame);
  if ((opt->folded != NULL) + (opt->flame != NULL) + opt->pprof + opt->chart + opt->diff
      + opt->html > 1)
    ReportUsage("--folded, --flame, --pprof, --chart, --html and --diff each write instead of "
                "the report: give one");
  if (opt->top != NULL && !OptionsNumber(opt->top, 1, 999999))
    ReportUsage("--top wants a number from 1 to 999999: %s", opt->top);
}

/* parseArgs -- options before or after the logs; "--" ends them */
static void parseArgs(int argc, char **argv, OptionsStruct *opt)
{
  OptionsParse(&spec, argc, argv, opt, sizeof *opt, &opt->paths, &opt->pathCount);
  argsCheck(opt);
}

/* lsanPattern -- a pattern of a suppressions file, malloc'd: a line
 * "leak:TEXT" of LeakSanitizer's format becomes "\001" then an fnmatch
 * pattern matched against a frame's function, file and module, TEXT
 * anywhere in them unless anchored by ^ or $ (.heap.suppress.lsan); any
 * other line is a function pattern as it is */
static char *lsanPattern(const char *line)
{
  size_t n = strlen(line);
  char *p;
  if (strncmp(line, "leak:", 5) != 0)
    return strdup(line);
  line += 5, n -= 5;
  if ((p = malloc(n + 4)) == NULL)
    return NULL;
  p[0] = '\001';
  if (line[0] == '^')
    ++line, --n, p[1] = '\0';
  else
    p[1] = '*', p[2] = '\0';
  strncat(p, line, n);
  if (n > 0 && line[n - 1] == '$')
    p[strlen(p) - 1] = '\0';
  else
    strcat(p, "*");
  return p;
}

/* readSuppressions -- the patterns of path into patterns; the count.
 * A file that cannot be read is a usage error. */
static size_t readSuppressions(const char *path, char **patterns, size_t count)
{
  char line[1024];
  unsigned lineNumber = 0;
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    ReportUsage("--suppress %s: %s", path, strerror(errno));
  }
  while (fgets(line, sizeof line, f) != NULL) {
    char *p = line, *end;
    ++lineNumber;
    if (strchr(line, '\n') == NULL && !feof(f)) {
      ReportUsage("%s:%u: a pattern longer than %zu characters", path, lineNumber,
                  sizeof line - 2);
    }
    if ((end = strchr(p, '#')) != NULL)
      *end = '\0';
    p += strspn(p, " \t\r\n");
    end = p + strlen(p);
    while (end > p && strchr(" \t\r\n", end[-1]) != NULL)
      *--end = '\0';
    if (*p == '\0')
      continue;
    if (count == SUPPRESS_LIMIT) {
      ReportUsage("%s:%u: more than %d patterns", path, lineNumber, SUPPRESS_LIMIT);
    }
    patterns[count++] = lsanPattern(p);
  }
  fclose(f);
  return count;
}

/* symbolise -- the frames of stack s, appended to hp->frames (count
 * and capacity *capacityReturn); the number of frames */
static size_t symbolise(HeapProfileStruct *hp, const HeapStackStruct *s, size_t count,
                        size_t *capacityReturn)
{
  static const ProfileFrameStruct unknown = {0, "[unknown]", NULL, 0, NULL, 0};
  size_t depth = 0;
  uint32_t node = s->node;      /* innermost first: .heap.bounded.stacks */
  for (size_t a = 0; a < s->depth || (a == 0 && depth == 0); ++a) {
    const ProfileFrameStruct *frames = &unknown;  /* no stack recorded */
    size_t n = 1;
    if (node != 0) {
      const HeapNodeStruct *f = &hp->log.nodes[node - 1];
      n = HeapSymbolise(hp->symbols, hp->log.addresses[f->address], s->mapVersion, &frames);
      node = f->parent;
    }
    if (n == 0)
      ReportOutOfMemory();
    if (count + depth + n > *capacityReturn) {
      *capacityReturn = (count + depth + n) * 2;
      if ((hp->frames = realloc(hp->frames, *capacityReturn * sizeof *hp->frames)) == NULL)
        ReportOutOfMemory();
    }
    memcpy(&hp->frames[count + depth], frames, n * sizeof *frames);
    depth += n;
  }
  return depth;
}

/* allocatorStrip -- take the allocator's frames (malloc, operator new,
 * strdup...) off the inner end of a stack's depth frames, so that its
 * call site is its innermost frame in every report and writer, as in
 * the text report (.heap.site); the count taken */
static size_t allocatorStrip(ProfileFrameStruct *frames, size_t depth)
{
  ProfileStackStruct stack = {frames, depth, NULL};
  size_t site = HeapSite(&stack);
  memmove(frames, frames + site, (depth - site) * sizeof *frames);
  return site;
}

/* SitesStruct -- the call sites' frames kept so far, by hash: index +
 * 1 in hp->frames, 0 empty */
typedef struct SitesStruct {
  uint32_t *slots;
  size_t mask;
} SitesStruct;

static int frameSame(const ProfileFrameStruct *a, const ProfileFrameStruct *b)
{
  return a->address == b->address && a->function == b->function && a->file == b->file
    && a->line == b->line && a->module == b->module && a->moduleOffset == b->moduleOffset;
}

/* siteShared -- where a frame as the one at hp->frames[at] is kept
 * already, or at, kept from now on */
static size_t siteShared(SitesStruct *sites, const HeapProfileStruct *hp, size_t at)
{
  const ProfileFrameStruct *f = &hp->frames[at];
  uint64_t h = (f->address ^ (uint64_t)(uintptr_t)f->function ^ f->line) * 0x9E3779B97F4A7C15u;
  size_t i = (size_t)(h >> 29) & sites->mask;
  while (sites->slots[i] != 0) {
    if (frameSame(&hp->frames[sites->slots[i] - 1], f))
      return sites->slots[i] - 1;
    i = (i + 1) & sites->mask;
  }
  sites->slots[i] = (uint32_t)at + 1;
  return at;
}

/* HeapProfile -- the log's used stacks, symbolised; sitesOnly, each
 * keeps its call site's frame alone (the text reports need no more but
 * for the few stacks they print, which HeapStackFull names again), and
 * the stacks of one call site share its frame: 48 bytes a site, not 48
 * a frame, for a log of 266,000 stacks of 35 frames.  .heap.bounded */
int HeapProfile(const char *path, HeapProfileStruct *hp, const HeapReadOptionsStruct *opt,
                int sitesOnly)
{
  HeapLogStruct *log = &hp->log;
  size_t frames = 0, capacity = 0, n = 0, used = 0, *first;
  SitesStruct sites = {NULL, 0};
  int bad = HeapRead(path, log, opt);
  hp->sitesOnly = sitesOnly;
  for (size_t i = 0; i < log->stackCount; ++i)
    used += log->stacks[i].used != 0;
  if (sitesOnly) {
    size_t slots = 1024;
    while (slots < 2 * (used + 1))
      slots *= 2;
    if ((sites.slots = calloc(slots, sizeof *sites.slots)) == NULL)
      ReportOutOfMemory();
    sites.mask = slots - 1;
  }
  hp->stacks = calloc(used + 1, sizeof *hp->stacks);
  hp->logIndex = calloc(used + 1, sizeof *hp->logIndex);
  first = calloc(used + 1, sizeof *first);    /* each stack's frames, until they stay put */
  hp->symbols = HeapSymbolsNew(log->maps, log->mapCount);
  if (hp->stacks == NULL || hp->logIndex == NULL || first == NULL || hp->symbols == NULL)
    ReportOutOfMemory();
  for (size_t i = 0; i < log->stackCount; ++i) {
    ProfileStackStruct *p = &hp->stacks[n];
    size_t at;
    if (!log->stacks[i].used)
      continue;
    first[n] = frames;
    hp->logIndex[n++] = i;
    p->values = log->stacks[i].values;
    p->depth = symbolise(hp, &log->stacks[i], frames, &capacity);
    p->depth -= allocatorStrip(&hp->frames[frames], p->depth);
    if (sitesOnly && p->depth > 1)
      p->depth = 1;
    at = sitesOnly && p->depth == 1 ? siteShared(&sites, hp, frames) : frames;
    if (at != frames)
      first[n - 1] = at;        /* its site's frame is kept: the one written goes */
    else
      frames += p->depth;
  }
  free(sites.slots);
  /* symbolise grew the buffer to twice what it held, and sitesOnly
   * keeps a frame a stack of it: no room to spare kept (.heap.bounded) */
  if (frames > 0 && (hp->frames = realloc(hp->frames, frames * sizeof *hp->frames)) == NULL)
    ReportOutOfMemory();
  for (size_t i = 0; i < n; ++i)
    hp->stacks[i].frames = &hp->frames[first[i]];
  free(first);
  hp->profile = (ProfileStruct){log->program, hp->stacks, n, log->samples, log->sampleCount,
                                log->peakSample, log->durationNs};
  return bad;
}

ProfileStackStruct HeapStackFull(const HeapProfileStruct *hp, size_t i)
{
  static HeapProfileStruct scratch;     /* its frames: the buffer */
  static size_t capacity;
  ProfileStackStruct full = hp->stacks[i];
  const HeapStackStruct *s;
  if (hp->origin != NULL)
    return HeapStackFull(hp->origin[i], hp->originIndex[i]);
  if (!hp->sitesOnly)
    return full;
  s = &hp->log.stacks[hp->logIndex[i]];
  scratch.symbols = hp->symbols;
  scratch.log.addresses = hp->log.addresses;
  scratch.log.nodes = hp->log.nodes;
  full.depth = symbolise(&scratch, s, 0, &capacity);
  full.depth -= allocatorStrip(scratch.frames, full.depth);
  full.frames = scratch.frames;
  return full;
}

void HeapProfileFree(HeapProfileStruct *hp)
{
  HeapSymbolsFree(hp->symbols);
  free(hp->stacks);
  free(hp->frames);
  free(hp->logIndex);
  HeapLogFree(&hp->log);
}

/* outputCheck -- refuse an output that is an input (a log or its live
 * file), which opening it for writing would empty before it is read.
 * design/tools.txt .tools.output */
static void outputCheck(const OptionsStruct *opt, char *const *logs, size_t logCount)
{
  const char *why;
  OutPathInputs((const char *const *)logs, logCount);
  if ((why = OutPathRefused(opt->output)) != NULL)
    ReportUsage("%s%s: %s: writing it would destroy the log",
                opt->output != NULL && strcmp(opt->output, "-") != 0 ? "-o " : "",
                opt->output != NULL && strcmp(opt->output, "-") != 0 ? opt->output
                : "standard output", why);
}

/* finishOutput -- close out; 1 if what was written did not all get there */
static int finishOutput(FILE *out, const char *path)
{
  int failed = fflush(out) != 0 || ferror(out);
  if (out != stdout && fclose(out) != 0)
    failed = 1;
  if (failed)
    ReportFile(path != NULL ? path : "standard output", "%s", strerror(errno));
  return failed;
}

/* writeOutput -- what was asked for, to out; 1 if a writer failed.
 * profiles[0] is the profile written, but for the report and --diff. */
static int writeOutput(FILE *out, const OptionsStruct *opt, const HeapProfileStruct *profiles,
                       const HeapReportOptionsStruct *report)
{
  const ProfileStruct *profile = &profiles[0].profile;
  char title[512];
  int res = 0;
  snprintf(title, sizeof title, "%s (%s)", profile->program[0] != '\0' ? profile->program : "?",
           opt->paths[0]);
  if (opt->diff)
    HeapDiff(out, &profiles[0], &profiles[1], report);
  else if (opt->folded != NULL)
    res = ProfileWriteFolded(out, profile, valueOf(opt->folded));
  else if (opt->flame != NULL)
    res = ProfileWriteFlame(out, profile, valueOf(opt->flame), title);
  else if (opt->pprof)
    res = ProfileWritePprof(out, profile);
  else if (opt->chart)
    res = ProfileWriteChart(out, profile, title);
  else
    HeapReport(out, &profiles[0], report);
  return res != 0;
}

#define HTML_SERIES 6           /* call sites drawn over time */
#define HTML_ROWS 400           /* time slices */

/* writeHtml -- --html: the log read again for the top sites' bytes live
 * over time, then the page.  .heap.html */
static int writeHtml(FILE *out, const OptionsStruct *opt, const HeapProfileStruct *hp)
{
  HeapSeriesStruct series;
  HeapReadOptionsStruct readOpt = {NULL, 0, NULL, 0, &series, 1};
  HeapLogStruct again;
  char *names[HTML_SERIES], title[512];
  int32_t *seriesOf = calloc(hp->log.stackCount + 1, sizeof *seriesOf);
  int res;
  if (seriesOf == NULL)
    ReportOutOfMemory();
  memset(&series, 0, sizeof series);
  series.seriesOf = seriesOf;
  series.count = HeapTopSites(hp, ProfilePeak, HTML_SERIES, seriesOf, names);
  series.sliceClock = (hp->log.endClock - hp->log.startClock) / HTML_ROWS + 1;
  (void)HeapRead(opt->paths[0], &again, &readOpt);    /* said the first time */
  HeapLogFree(&again);
  snprintf(title, sizeof title, "%s (%s)", hp->log.program[0] != '\0' ? hp->log.program : "?",
           opt->paths[0]);
  res = HeapWriteHtml(out, hp, &series, names, title);
  for (size_t k = 0; k < series.count; ++k)
    free(names[k]);
  free(series.rows);
  free(seriesOf);
  return res != 0;
}

/* treeReport -- a report a process (each image's log), parents before
 * their children, then the tree's.  .heap.tree */
static void treeReport(FILE *out, const HeapProfileStruct *profiles, size_t count,
                       const HeapProfileStruct *tree, const HeapReportOptionsStruct *report)
{
  for (size_t i = 0; i < count; ++i) {
    const HeapLogStruct *log = &profiles[i].log;
    fprintf(out, "PROCESS %" PRIu32, log->pid);
    if (log->forked)
      fprintf(out, ", forked by %" PRIu32, log->parentPid);
    fprintf(out, "\n");
    HeapReport(out, &profiles[i], report);
    fprintf(out, "\n");
  }
  fprintf(out, "TREE: %zu log%s; the sums of the processes' figures, but the peak, which is "
          "the largest process's\n", count, count == 1 ? "" : "s");
  HeapReport(out, tree, report);
}

int main(int argc, char **argv)
{
  OptionsStruct opt;
  HeapReportOptionsStruct report = {10, 0, NULL, 0, 1};
  static char *patterns[SUPPRESS_LIMIT];
  HeapProfileStruct *profiles, tree;
  FILE *out = stdout;
  char **logs;
  size_t logCount;
  struct stat st;
  int bad = 0, treeMode, sitesOnly;
  parseArgs(argc, argv, &opt);
  sitesOnly = opt.folded == NULL && opt.flame == NULL && !opt.pprof && !opt.chart && !opt.html;
  treeMode = !opt.diff && (opt.pathCount > 1
                           || (stat(opt.paths[0], &st) == 0 && S_ISDIR(st.st_mode)));
  if (treeMode && (opt.chart || opt.html))
    ReportUsage("--chart and --html draw one log's heap: give one LOG");
  if (treeMode)
    logCount = HeapTreeLogs(opt.paths, opt.pathCount, &logs);
  else {
    logs = calloc(opt.pathCount, sizeof *logs);
    for (size_t i = 0; logs != NULL && i < opt.pathCount; ++i)
      logs[i] = (char *)opt.paths[i];
    logCount = opt.pathCount;
  }
  if (logCount == 0) {
    ReportFile(opt.paths[0], "no log there");
    return EXIT_BADLOG;
  }
  if (logs == NULL || (profiles = calloc(logCount, sizeof *profiles)) == NULL)
    ReportOutOfMemory();
  outputCheck(&opt, logs, logCount);
  report.top = opt.top != NULL ? (size_t)atoi(opt.top) : 10;
  report.stacks = opt.stacks;
  report.defaults = !opt.noDefaults;
  HeapShortTemplates = opt.shortTemplates;
  for (size_t i = 0; i < opt.suppress.count; ++i)
    report.suppressCount = readSuppressions(opt.suppress.value[i], patterns, report.suppressCount);
  report.suppress = (const char *const *)patterns;
  if (treeMode)
    bad |= HeapTreeProfile(logs, logCount, profiles, sitesOnly);
  else
    for (size_t i = 0; i < logCount; ++i)
      bad |= HeapProfile(logs[i], &profiles[i], NULL, sitesOnly);
  for (size_t i = 0; i < logCount; ++i)
    if (profiles[i].log.program == NULL)
      return EXIT_BADLOG;       /* unreadable: said */
  for (size_t i = 0; i < logCount; ++i)
    HeapSuppress(&profiles[i], &report);
  if (treeMode)
    HeapTreeMerge(profiles, logCount, &tree);
  if (opt.output != NULL && strcmp(opt.output, "-") != 0) {
    int fd = OutPathOpen(ReportToolName(), opt.output, 0);   /* .tools.output */
    if (fd < 0 || (out = fdopen(fd, "w")) == NULL) {
      if (fd >= 0)
        ReportFile(opt.output, "%s", strerror(errno));
      return EXIT_BADLOG;
    }
  }
  if (treeMode && opt.folded == NULL && opt.flame == NULL && !opt.pprof)
    treeReport(out, profiles, logCount, &tree, &report);
  else if (opt.html)
    bad |= writeHtml(out, &opt, &profiles[0]);
  else
    bad |= writeOutput(out, &opt, treeMode ? &tree : profiles, &report);
  bad |= finishOutput(out, opt.output);
  if (treeMode)
    HeapTreeMergeFree(&tree);
  for (size_t i = 0; i < logCount; ++i)
    HeapProfileFree(&profiles[i]);
  for (size_t i = 0; treeMode && i < logCount; ++i)
    free(logs[i]);
  free(logs);
  free(profiles);
  free(opt.paths);
  for (size_t i = 0; i < report.suppressCount; ++i)
    free(patterns[i]);
  return bad ? EXIT_BADLOG : EXIT_SUCCESS;
}
