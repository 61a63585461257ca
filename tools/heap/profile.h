/* <tools/heap/profile.h> -- an allocation profile: symbolised call
 * stacks, each with its totals, as the heap tool's reports and pictures
 * share it
 *
 * .design: design/heap.txt .heap
 *
 * heap.c reads a recorder log and builds the profile; the writers
 * (folded stacks, the flame graph, pprof's profile.proto, the memory
 * chart) take it as it is and know nothing of the stream.
 */

#ifndef profile_h
#define profile_h

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ProfileFrameStruct -- one frame of a stack, symbolised.  function is
 * its function's name; for code without a symbol, where that function
 * begins in its file by the unwind tables ("git+0x2895f0"); NULL if
 * neither is known.  file NULL and line 0 when it has no line
 * information; module is the mapped file's path, or NULL, and
 * moduleOffset the address's offset in that file (address - start +
 * offset of its mapping: the same in every run, as addr2line -e takes
 * it, where address changes with ASLR). */
typedef struct ProfileFrameStruct {
  uint64_t address;             /* the return address, as recorded */
  const char *function;
  const char *file;
  unsigned line;
  const char *module;
  uint64_t moduleOffset;        /* 0 if module is NULL */
} ProfileFrameStruct;

/* ProfileValue -- what a stack's totals count */
typedef enum ProfileValue {
  ProfileAllocations,           /* calls that allocated */
  ProfileBytes,                 /* bytes they asked for */
  ProfilePeak,                  /* bytes live at the moment of the peak */
  ProfileLeaked,                /* bytes live at the end */
  ProfileTemporary,             /* allocations freed soon after (.heap.temporary) */
  PROFILE_VALUE_LIMIT
} ProfileValue;

extern const char *const ProfileValueName[PROFILE_VALUE_LIMIT];   /* "allocations", ... */
extern const char *const ProfileValueUnit[PROFILE_VALUE_LIMIT];   /* "count" or "bytes" */

/* ProfileStackStruct -- a call stack and its totals.  frames[0] is the
 * innermost frame (the allocator's caller), frames[depth - 1] the
 * outermost. */
typedef struct ProfileStackStruct {
  const ProfileFrameStruct *frames;
  size_t depth;
  uint64_t *values;             /* PROFILE_VALUE_LIMIT of them, the reader's own:
                                   kept once (.heap.bounded.stacks) */
} ProfileStackStruct;

/* ProfileSampleStruct -- heap in use at one moment, for the chart */
typedef struct ProfileSampleStruct {
  uint64_t ns;                  /* since the log started */
  uint64_t bytes;               /* requested bytes live */
} ProfileSampleStruct;

/* ProfileStruct -- the whole profile of one log */
typedef struct ProfileStruct {
  const char *program;          /* from the stream header */
  const ProfileStackStruct *stacks;
  size_t stackCount;
  const ProfileSampleStruct *samples;   /* in time order */
  size_t sampleCount;
  size_t peakSample;            /* the sample of the peak */
  uint64_t durationNs;
} ProfileStruct;

/* The writers.  Each returns 0, or -1 with errno set when the output
 * failed.  value chooses which total weighs the stacks. */
extern int ProfileWriteFolded(FILE *out, const ProfileStruct *profile, ProfileValue value);
extern int ProfileWriteFlame(FILE *out, const ProfileStruct *profile, ProfileValue value,
                             const char *title);
extern int ProfileWritePprof(FILE *out, const ProfileStruct *profile);
extern int ProfileWriteChart(FILE *out, const ProfileStruct *profile, const char *title);

#endif /* profile_h */
