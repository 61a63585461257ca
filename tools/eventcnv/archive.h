/* <tools/eventcnv/archive.h> -- eventcnv --format telltale: archive.c
 *
 * .design: design/tools.txt .zstd.writer
 */

#ifndef archive_h
#define archive_h

#include <stddef.h>
#include "eventread.h"

#define ARCHIVE_NO_ZSTD (-1000)     /* level: compact only, no zstd */

/* ArchiveWrite -- the stream base[0 .. size), of header info (as
 * EventStreamOpen read it), rewritten to the file path block by block:
 * compact, and with a zstd level other than ARCHIVE_NO_ZSTD, zstd.
 * recovered: its live file was recovered into base, which the archive
 * says (.zstd.live).
 * Returns 0, or 1 having said why on stderr (tools/common/report.h). */
extern int ArchiveWrite(const unsigned char *base, size_t size, const EventStreamInfoStruct *info,
                        int recovered, const char *path, int level, const char *logName);

#endif /* archive_h */
