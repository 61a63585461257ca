/* <tools/common/input.h> -- eventcnv's input: input.c
 *
 * .design: design/tools.txt .eventcnv.reader
 */

#ifndef input_h
#define input_h

#include <stddef.h>
#include <stdint.h>
#include "eventread.h"

/* InputStruct -- a log's bytes: mapped, or read into malloc'd memory */
typedef struct InputStruct {
  unsigned char *data;
  size_t size;
  int mapped;
} InputStruct;

/* InputRecoveredStruct -- what InputRecoverLive found, for --header and
 * the end-of-stream sentence */
typedef struct InputRecoveredStruct {
  int done;                     /* a live file was read and merged */
  size_t events, blocks;        /* what it added */
  size_t rejected, rejectedOffset;  /* live blocks that did not fit the log */
  size_t damaged, damagedOffset;    /* live regions with damaged headers */
  int logFailed;                /* the program could not write all of its log */
  size_t missing;               /* live regions missing (the live file cut short) */
  EventRecoverStruct live;      /* all EventRecover said: its drop counts (.sol.dropped) */
  char path[4096];              /* LOG.live */
} InputRecoveredStruct;

/* InputRead -- map path if it is a regular file, else read it (NULL or
 * "-": stdin) to its end, or until it is seen not to be a stream.
 * Returns 0 or an errno code. */
extern int InputRead(const char *path, InputStruct *in);

/* InputReadFd -- the same for an open descriptor, from its start, left
 * open: eventcnv --follow reads the file it opened, whatever its name
 * becomes (.eventcnv.follow) */
extern int InputReadFd(int fd, InputStruct *in);

/* InputFree -- what InputRead or InputRecoverLive gave */
extern void InputFree(InputStruct *in);

/* InputScan -- index the stream at path (NULL or "-": stdin) as it is
 * read, for --count and --summary, a large file on up to jobs threads
 * (0: one a processor).  design/tools.txt .eventcnv.scan .eventcnv.scan.split */
extern EventStreamRes InputScan(const char *path, EventStreamStruct **streamReturn, char *msg,
                                size_t msgSize, const char *programName, unsigned jobs);

/* InputLiveExists -- whether path has a live file, for InputRecoverLive */
extern int InputLiveExists(const char *path);

/* InputRecoverLive -- if the program that wrote the log at path died,
 * its live file (LOG.live) is still there: add the events only it has
 * to in, and say what was found in *recovered.  What goes wrong is said
 * on stderr, and the log is read alone.  Returns 0. */
extern int InputRecoverLive(const char *path, InputStruct *in, InputRecoveredStruct *recovered,
                            const char *programName);

/* InputProgramGone -- whether the program that began a log (its
 * header's pid, and its CLOCK_MONOTONIC start in ns) has ended: 1 if
 * no thread of it runs, 0 if one does or it cannot be told.  A process
 * at that pid that started after the log did is another, given the pid
 * again.  The pid is looked up in eventcnv's own pid namespace.
 * design/tools.txt .eventcnv.follow.gone */
extern int InputProgramGone(uint32_t pid, uint64_t startMonotonicNs);

/* InputFileUnheld -- 1 if no other process has the file on fd open,
 * of those whose descriptors eventcnv may read in /proc (another
 * user's are not seen), 0 if one has or there is no /proc.
 * design/tools.txt .eventcnv.follow.gone */
extern int InputFileUnheld(int fd);

/* InputArchiveRecovered -- if the stream is an archive made of a log
 * whose live file was recovered into it, say so in *recovered, as if
 * InputRecoverLive had: its blocks of no index are what was recovered.
 * design/tools.txt .zstd.live */
extern void InputArchiveRecovered(const EventStreamInfoStruct *info, InputRecoveredStruct *recovered);

#endif /* input_h */
