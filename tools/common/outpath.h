/* <tools/common/outpath.h> -- the one rule for every output path of
 * every tool
 *
 * .design: design/tools.txt .tools.output
 *
 * A tool registers the logs it reads (OutPathInputs), then checks each
 * output it is given (OutPathRefused) and opens it (OutPathOpen): never
 * an input, by name, by descriptor or through "-", nor an input's live
 * file; never blocking on a FIFO; never a device or FIFO where a file
 * is needed.
 */

#ifndef outpath_h
#define outpath_h

#include <stddef.h>

/* OutPathInputs -- the paths the tool reads ("-": standard input); the
 * array is kept, not copied */
extern void OutPathInputs(const char *const *paths, size_t count);

/* OutPathRefused -- NULL if path (NULL or "-": standard output) may be
 * written, else why not: it is an input or an input's live file (which
 * need not exist yet) */
extern const char *OutPathRefused(const char *path);

/* OutPathOpen -- path opened for writing and emptied, or -1 after
 * saying why on stderr as program.  It never blocks: a FIFO with no
 * reader is an error.  fileOnly: it must be a regular file or new
 * (a database); otherwise a FIFO or character device is written as the
 * user asked (-o /dev/stdout).  The input check is made again on the
 * descriptor, before anything is emptied. */
extern int OutPathOpen(const char *program, const char *path, int fileOnly);

#endif /* outpath_h */
