/* <tools/common/report.h> -- what a tool says on stderr, said one way
 *
 * .design: design/tools.txt .tools.options
 *
 * Every tool names itself at the start of each line it writes to
 * stderr, then the file the message is about, if any:
 *   TOOL: message
 *   TOOL: FILE: message
 * A usage error is said, then the way to the help, and the tool exits 2:
 *   TOOL: message
 *   Try 'TOOL --help' for more information.
 * The tool's name is set once, by OptionsParse (options.h) or
 * ReportTool.
 */

#ifndef report_h
#define report_h

#include <stdarg.h>

#define REPORT_EXIT_FAILURE 1   /* a file cannot be read or written, out of memory */
#define REPORT_EXIT_USAGE   2   /* a usage error */

#if defined(__GNUC__) || defined(__clang__)
#define REPORT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define REPORT_PRINTF(f, a)
#endif

/* ReportTool -- name the tool, as its messages begin */
extern void ReportTool(const char *tool);

/* ReportToolName -- the tool's name, for the shared code that takes it */
extern const char *ReportToolName(void);

/* Report -- "TOOL: message" on stderr */
extern void Report(const char *format, ...) REPORT_PRINTF(1, 2);

/* ReportFile -- "TOOL: FILE: message" on stderr */
extern void ReportFile(const char *file, const char *format, ...) REPORT_PRINTF(2, 3);

/* ReportUsage -- a usage error: "TOOL: message", then "Try 'TOOL
 * --help' for more information.", and exit 2 */
extern _Noreturn void ReportUsage(const char *format, ...) REPORT_PRINTF(1, 2);

/* ReportOutOfMemory -- "TOOL: out of memory", and exit 1 */
extern _Noreturn void ReportOutOfMemory(void);

#endif /* report_h */
