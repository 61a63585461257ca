/* <tools/common/report.c> -- what a tool says on stderr, said one way
 *
 * .design: design/tools.txt .tools.options
 *
 * See report.h.
 */

#include "report.h"

#include <stdio.h>
#include <stdlib.h>

static const char *reportTool = "telltale";

void ReportTool(const char *tool)
{
  reportTool = tool;
}

const char *ReportToolName(void)
{
  return reportTool;
}

/* reportLine -- "TOOL: [FILE: ]message\n", the message formatted */
static void reportLine(const char *file, const char *format, va_list args)
{
  if (file != NULL)
    (void)fprintf(stderr, "%s: %s: ", reportTool, file);
  else
    (void)fprintf(stderr, "%s: ", reportTool);
  (void)vfprintf(stderr, format, args);
  (void)fputc('\n', stderr);
}

void Report(const char *format, ...)
{
  va_list args;
  va_start(args, format);
  reportLine(NULL, format, args);
  va_end(args);
}

void ReportFile(const char *file, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  reportLine(file, format, args);
  va_end(args);
}

void ReportUsage(const char *format, ...)
{
  va_list args;
  va_start(args, format);
  reportLine(NULL, format, args);
  va_end(args);
  (void)fprintf(stderr, "Try '%s --help' for more information.\n", reportTool);
  exit(REPORT_EXIT_USAGE);
}

void ReportOutOfMemory(void)
{
  Report("out of memory");
  exit(REPORT_EXIT_FAILURE);
}
