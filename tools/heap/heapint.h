/* <tools/heap/heapint.h> -- the heap tool's rooms, as one another sees them
 *
 * .design: design/heap.txt .heap
 *
 * heapread.c reads a recorder log and, with heaplive.c and heapstacks.c
 * (heapreader.h), attributes every allocation to its stack (.heap
 * .heap.temporary .heap.peak); symbols.c names the
 * frames with libdw (.heap.symbols); heapreport.c prints the text
 * reports; heap.c takes the options and puts them together.  The
 * profile they make is profile.h's, which the writers share.
 */

#ifndef heapint_h
#define heapint_h

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "profile.h"

#define HEAP_HISTOGRAM_LIMIT 65  /* size classes: 0, then [2^k, 2^(k+1)) */

/* HeapNodeStruct -- a frame of the log's tree of call paths: a stack
 * is its innermost frame's node, and its callers are the parents, so
 * that stacks share the frames of the paths they share
 * (.heap.bounded.stacks) */
typedef struct HeapNodeStruct {
  uint32_t parent;              /* its caller's node + 1; 0: the outermost */
  uint32_t address;             /* an index of the log's addresses */
} HeapNodeStruct;

/* HeapStackStruct -- a stack as the log gives it, before symbols */
typedef struct HeapStackStruct {
  uint32_t *pending;            /* its frames while StackFrames define them,
                                   innermost first as indexes of the log's
                                   addresses; then NULL, and node is set */
  uint32_t node;                /* its innermost frame's node + 1; 0: none */
  uint16_t depth;               /* at most 4096 */
  uint16_t defined;             /* frames defined so far by StackFrames */
  uint64_t values[PROFILE_VALUE_LIMIT];
  uint64_t live;                /* requested bytes live now */
  uint64_t liveBlocks;          /* blocks live now: at the end, leaked */
  uint64_t peakEpoch;           /* the peak whose figure peak holds (.heap.peak) */
  uint32_t mapVersion;          /* the mappings in force when it was defined */
  uint32_t used;                /* an allocation named it */
} HeapStackStruct;

/* HeapMapStruct -- an executable mapping (MapExec), in force from map
 * version born until version died (MapUnmap, or another mapped over it):
 * a stack of version v is named with the maps of born <= v < died.
 * .heap.symbols.time */
typedef struct HeapMapStruct {
  uint64_t start, end, offset;
  const char *path;
  uint64_t born, died;
} HeapMapStruct;

/* HeapBlockStruct -- a live block, as a forked child inherits it
 * (.heap.tree) */
typedef struct HeapBlockStruct {
  uint64_t address, size;
} HeapBlockStruct;

/* HeapSnapStruct -- a request to copy the blocks live at clock (a
 * child's Forked clock) into blocks (count of them, malloc'd), taken
 * when reading passes it */
typedef struct HeapSnapStruct {
  uint64_t clock;
  HeapBlockStruct *blocks;
  size_t count;
  int taken;
} HeapSnapStruct;

/* HeapSeriesStruct -- bytes live over time of some stacks, summed by
 * series (a call site's stacks), for the HTML page: rows of 2 (count +
 * 1) values (the series' bytes live, then the whole heap's; then the
 * series' allocations in the slice, then everyone's), one a time slice
 * of sliceNs, the last at the end.  .heap.html */
typedef struct HeapSeriesStruct {
  const int32_t *seriesOf;      /* by log stack: its series, or -1 */
  size_t count;                 /* series */
  uint64_t sliceClock;          /* a row's time, in clock ticks */
  uint64_t *rows;               /* made by the read: (count + 1) a row */
  size_t rowCount;
  uint64_t sliceNs;
} HeapSeriesStruct;

/* HeapReadOptionsStruct -- what reading a log of a process tree adds:
 * the blocks it inherited from its parent, live at its start, and the
 * snapshots its children want, by clock; and series to keep */
typedef struct HeapReadOptionsStruct {
  const HeapBlockStruct *inherit;
  size_t inheritCount;
  HeapSnapStruct *snaps;
  size_t snapCount;
  HeapSeriesStruct *series;
  int quiet;                    /* read before: how it ended is not said again */
} HeapReadOptionsStruct;

/* HeapLogStruct -- what reading a log found */
typedef struct HeapLogStruct {
  const char *path;
  char *program;
  HeapStackStruct *stacks;      /* by id; [0] is the unknown stack */
  size_t stackCount;
  uint64_t *addresses;          /* the return addresses of the stacks, once each */
  size_t addressCount;
  HeapNodeStruct *nodes;        /* the tree of call paths */
  size_t nodeCount;
  HeapMapStruct *maps;          /* in the order given */
  size_t mapCount;
  uint64_t mapVersion;          /* one more at each change of the mappings */
  uint64_t allocations, bytes, frees, failed, temporary;
  uint64_t peakBytes, peakNs, leakedBytes, leakedBlocks;
  uint64_t unknownFrees;        /* frees of blocks never seen live */
  uint64_t inheritedBlocks, inheritedBytes;   /* its parent's, live at its fork */
  uint64_t inheritedFrees;      /* frees of them */
  uint32_t pid, parentPid;      /* parentPid if forked: its Forked event */
  uint64_t forkClock;           /* the parent's clock at the fork, if forked */
  uint64_t startClock, endClock;        /* the stream's, raw */
  uint64_t peakRss;             /* bytes: PeakRss, the process's, 0 if not said */
  int forked;
  uint64_t durationNs;
  uint64_t histogram[HEAP_HISTOGRAM_LIMIT][2];  /* allocations and bytes by size class */
  ProfileSampleStruct *samples;
  size_t sampleCount, peakSample;
  int stacked;                  /* the log has call stacks */
} HeapLogStruct;

/* HeapRead -- read the log at path (with path.live if the program died)
 * into log; says on stderr how it ended.  0, or 1 if the log is bad
 * (said on stderr, naming the file and the offset). */
extern int HeapRead(const char *path, HeapLogStruct *log, const HeapReadOptionsStruct *opt);
/* HeapPeek -- the pid, and whether forked (by whom, when), of the log at
 * path, from its header and first events: 0, or 1 if it is no log */
extern int HeapPeek(const char *path, HeapLogStruct *log);
extern void HeapLogFree(HeapLogStruct *log);

/* Symbols (symbols.c).  .heap.symbols */
typedef struct HeapSymbolsStruct HeapSymbolsStruct;
extern HeapSymbolsStruct *HeapSymbolsNew(const HeapMapStruct *maps, size_t mapCount);
/* HeapSymbolise -- the frames at a return address of a stack defined at
 * map version version, innermost first: the functions inlined there,
 * then the function the code is in.
 * Cached: *framesReturn is good until the next call, its strings as
 * long as symbols.  Returns their count, 0 if there is no memory. */
extern size_t HeapSymbolise(HeapSymbolsStruct *symbols, uint64_t address, uint64_t version,
                            const ProfileFrameStruct **framesReturn);
extern void HeapSymbolsFree(HeapSymbolsStruct *symbols);

/* Sorted indexes of a module's functions (symindex.c): the symbol that
 * holds pc, and the scopes that hold it as dwarf_getscopes gives them
 * (pc is the DWARF's: the address less the module's bias). */
#ifdef _LIBDWFL_H
extern const char *SymIndexName(Dwfl_Module *mod, uint64_t pc);
/* SymIndexStart -- where the function that holds pc begins, by the
 * unwind tables, for code without a symbol; 0 if they do not say */
extern uint64_t SymIndexStart(Dwfl_Module *mod, uint64_t pc);
extern int SymIndexScopes(Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopesReturn);
extern void SymIndexFree(Dwfl *dwfl);
#endif

/* HeapProfileStruct -- a log and its profile, symbolised */
typedef struct HeapProfileStruct {
  HeapLogStruct log;
  ProfileStruct profile;
  ProfileStackStruct *stacks;
  ProfileFrameStruct *frames;
  size_t *logIndex;             /* each profile stack's in log.stacks */
  HeapSymbolsStruct *symbols;
  uint64_t suppressedBytes, suppressedBlocks;   /* leaks left out by HeapSuppress */
  size_t suppressedStacks;
  int sitesOnly;                /* each stack holds its call site's frame alone;
                                   HeapStackFull gives the rest (.heap.bounded) */
  const struct HeapProfileStruct **origin;      /* a tree's: each stack's process */
  size_t *originIndex;          /* and its index there */
} HeapProfileStruct;

/* HeapStackFull -- stack i of hp with all its frames: hp's own, or,
 * for a profile made sitesOnly, named again into a buffer good until
 * the next call */
extern ProfileStackStruct HeapStackFull(const HeapProfileStruct *hp, size_t i);

/* HeapProfile -- read and symbolise the log at path.  0 or 1 as HeapRead. */
extern int HeapProfile(const char *path, HeapProfileStruct *hp, const HeapReadOptionsStruct *opt,
                       int sitesOnly);

/* Process trees (heaptree.c).  .heap.tree */
/* HeapTreeLogs -- the logs of paths, a directory standing for its
 * logs (files that begin as a telltale stream, not live files), into
 * *logsReturn (malloc'd strings); their count */
extern size_t HeapTreeLogs(const char *const *paths, size_t pathCount, char ***logsReturn);
/* HeapTreeProfile -- read and symbolise every log, parents before the
 * children they forked, each child given its parent's blocks live at
 * the fork: profiles[count]; 1 if a log was bad (said) */
extern int HeapTreeProfile(char *const *logs, size_t count, HeapProfileStruct *profiles,
                           int sitesOnly);
/* HeapTreeMerge -- one profile of them all: their stacks, their sums;
 * the peak is the largest process's.  Free with HeapTreeMergeFree. */
extern void HeapTreeMerge(const HeapProfileStruct *profiles, size_t count, HeapProfileStruct *tree);
extern void HeapTreeMergeFree(HeapProfileStruct *tree);
extern void HeapProfileFree(HeapProfileStruct *hp);

/* The text reports (heapreport.c) */
typedef struct HeapReportOptionsStruct {
  size_t top;                   /* call sites in each list */
  int stacks;                   /* show the stack below each site */
  const char *const *suppress;  /* function-name patterns (fnmatch) */
  size_t suppressCount;
  int defaults;                 /* the built-in suppressions too (.heap.suppress.default) */
} HeapReportOptionsStruct;

/* HeapSite -- the call site of a stack: the index of its innermost
 * frame outside the allocator and the recorder (.heap) */
extern size_t HeapSite(const ProfileStackStruct *stack);
extern void HeapFrameName(const ProfileFrameStruct *frame, char *buf, size_t size);
/* HeapShortTemplates -- HeapFrameName makes each template argument list
 * "<>" (--short-templates) */
extern int HeapShortTemplates;

/* HeapSuppress -- the leaks of the stacks opt suppresses are no leaks:
 * taken out of their stacks' leaked figure and the log's, and counted
 * in hp's suppressed figures, so every report and writer leaves them out */
extern void HeapSuppress(HeapProfileStruct *hp, const HeapReportOptionsStruct *opt);

extern void HeapReport(FILE *out, const HeapProfileStruct *hp, const HeapReportOptionsStruct *opt);

/* HeapTopSites -- the top call sites by value: seriesOf (by log stack)
 * gets each stack's site's rank, or -1 past top; names (top of them)
 * each site's name, malloc'd; the count.  .heap.html */
extern size_t HeapTopSites(const HeapProfileStruct *hp, ProfileValue value, size_t top,
                           int32_t *seriesOf, char **names);

/* HeapWriteHtml -- the page (html.c); 0, or -1 with errno set */
extern int HeapWriteHtml(FILE *out, const HeapProfileStruct *hp, const HeapSeriesStruct *series,
                         char *const *seriesNames, const char *title);
extern void HeapDiff(FILE *out, const HeapProfileStruct *old, const HeapProfileStruct *new,
                     const HeapReportOptionsStruct *opt);

#endif /* heapint_h */
