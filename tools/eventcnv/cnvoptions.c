/* <tools/eventcnv/cnvoptions.c> -- eventcnv's command line and its help
 *
 * .design: design/tools.txt .eventcnv
 *
 * The options are a table (tools/common/options.h), which both parses
 * argv and prints --help; argsCheck then refuses the combinations that
 * cannot be, each as a usage error (exit 2).
 */

#include "cnvint.h"
#include "export.h"
#include "options.h"
#include "outpath.h"
#include "report.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usageText[] =
  "Usage: eventcnv [OPTION]... [FILE]...\n"
  "Print the events of a telltale telemetry stream in time order, one per line.\n"
  "FILE is a stream written by telltale; with no FILE, or when FILE is -, read\n"
  "standard input.  Several FILEs (the logs of a program and its children, say)\n"
  "are merged on one timeline by wall time, each line naming its process after\n"
  "the time as PROGRAM[PID]; --header, --list, --count, --summary and --spans\n"
  "print each FILE in turn.\n"
  "\n"
  "Options:\n";

#define AT(field) offsetof(CnvOptionsStruct, field)

/* options -- eventcnv's options, in the order --help gives them */
static const OptionStruct options[] = {
  /* name        alias arg             at            argName     help */
  {"--header",   NULL, OptionFlag,     AT(header),   NULL,
   "print the stream's header: version, program, pid, start\n"
   "time, clock rate, byte order, pointer and word sizes,\n"
   "and how the stream ended: clean, at an exec, or recovered\n"
   "after a crash", NULL},
  {"--list",     NULL, OptionFlag,     AT(list),     NULL,
   "print the registry the stream carries: kinds, and for each\n"
   "event its code, kind, format, doc and parameters", NULL},
  {"--count",    NULL, OptionFlag,     AT(count),    NULL,
   "print how many events there are of each name, not the events", NULL},
  {"--summary",  NULL, OptionFlag,     AT(summary),  NULL,
   "print what the stream holds, not the events: how many events\n"
   "and blocks, the first and last event's times, how many\n"
   "events were dropped, and how many events each thread, each\n"
   "kind and each event name has", NULL},
  {"--spans",    NULL, OptionFlag,     AT(spans),    NULL,
   "print, for each span the registry declares (a begin and\n"
   "an end event paired by a parameter), how many closed, how\n"
   "many were left open, and the min, median, p99 and max\n"
   "durations in seconds, not the events", NULL},
  {"--follow",   NULL, OptionFlag,     AT(follow),   NULL,
   "print the events as the program writes them, as tail -f\n"
   "does, each buffer as it reaches the file, until the\n"
   "stream's end (StreamEnd, or an exec's StreamExec) or the\n"
   "program is gone, then the rest as without --follow (a\n"
   "dead program's live file), with its messages and exit\n"
   "status; one FILE, as text or ClickHouse's rows", NULL},
  {"--insert",   NULL, OptionValue,    AT(insert),   "COMMAND",
   "with --follow and ClickHouse's rows: each batch of rows\n"
   "(a second's) goes to a new run of COMMAND\n"
   "(sh -c) on its standard input, e.g. clickhouse-client\n"
   "--query \"INSERT INTO telltale.event FORMAT\n"
   "TabSeparated\", so that they are in the table as the\n"
   "program runs", NULL},
  {"--kind",     NULL, OptionValue,    AT(kinds),    "K[,K...]",
   "only events of these kinds (names as --list shows them)", NULL},
  {"--event",    NULL, OptionValue,    AT(events),   "E[,E...]",
   "only events with these names", NULL},
  {"--resync",   NULL, OptionFlag,     AT(resync),   NULL,
   "at a corrupt block, report it and go on at the next block\n"
   "(the default is to stop there)", NULL},
  {"--format",   NULL, OptionValue,    AT(format),   "FMT",
   "write the events as FMT: text (the default, the lines\n"
   "below), jsonl (a JSON object per line), csv, chrome\n"
   "(Chrome trace-event JSON, for Perfetto UI), sqlite\n"
   "(a database file: needs -o), ctf (a CTF 1.8 trace\n"
   "directory for babeltrace2: needs -o, new or empty),\n"
   "html (a timeline to open in a browser, offline),\n"
   "clickhouse (TabSeparated rows for clickhouse-client's\n"
   "INSERT INTO telltale.event; the host is TELLTALE_HOST\n"
   "or this machine's name), clickhouse-native (the same\n"
   "rows in ClickHouse's Native format, for INSERT ...\n"
   "FORMAT Native), clickhouse-ddl (that table) or\n"
   "telltale (an archive: the stream again, its live file\n"
   "recovered into it and its raw blocks made compact,\n"
   "in stream format 4, which the tools read as they read\n"
   "the log and a program never writes: needs -o)", NULL},
  {"--zstd",     NULL, OptionOptional, AT(zstd),     "[=LEVEL]",
   "with --format telltale: each block's data compressed\n"
   "with zstd at LEVEL (1 to 22, default 3) where that is\n"
   "shorter", NULL},
  {"--output",   "-o", OptionValue,    AT(output),   "OUT",
   "write to the file OUT (replaced), not standard output;\n"
   "never a FILE given or its live file", NULL},
  {"--jobs",     NULL, OptionValue,    AT(jobs),     "N",
   "format text, or scan a large file for --count and\n"
   "--summary, on N threads (default: one a processor);\n"
   "the output is the same", NULL},
  {"--help",     NULL, OptionHelp,     0,            NULL,
   "print this help and exit", NULL},
  {"--version",  NULL, OptionVersion,  0,            NULL,
   "print telltale's version and the stream format it writes", NULL},
};

#undef AT

static const char epilogue[] =
  "\n"
  "A conversion that takes more than a second says how far it is on stderr\n"
  "when stderr is a terminal.\n"
  "\n"
  "--header and --list print instead of the events; --kind and --event apply\n"
  "to the events (in every format), to --count and to --summary's kinds and\n"
  "names, and both must match.\n"
  "\n"
  "Each event is printed as\n"
  "  ELAPSED WALLCLOCK THREAD KIND EVENT name=value...\n"
  "where ELAPSED is seconds since the stream started, WALLCLOCK is the UTC time\n"
  "of day, and THREAD is T and the thread's serial number, e.g.\n"
  "    0.000001505 22:13:20.123458294 T1  Pool     PoolCreate    pool=0x7f0000001000 ...\n"
  "P and A values are hex, an A value followed by [label] if it was labelled;\n"
  "W and U are decimal, D like %.17g, S quoted with C escapes.\n"
  "\n"
  "Exit status: 0 the stream is sound and complete, or a crashed program's log\n"
  "made whole from its live file (said on stderr); 1 it is damaged (each fault\n"
  "named with its byte offset, after every sound event) or incomplete, or a file\n"
  "cannot be read or written; 2 a usage error.\n"
  "\n"
  "Examples:\n"
  "  eventcnv telltale.log                  every event, in time order\n"
  "  eventcnv --kind Pool,Object telltale.log | less\n"
  "  eventcnv --event Label,Intern - < telltale.log\n"
  "  eventcnv --header --list telltale.log  what the stream is and what it holds\n"
  "  eventcnv --count telltale.log          how many of each event\n"
  "  eventcnv --summary telltale.log        what is in it, at a glance\n"
  "  eventcnv --spans telltale.log          how long the spans took\n"
  "  eventcnv --format jsonl telltale.log | jq .fields\n"
  "  eventcnv --format sqlite -o telltale.db telltale.log\n"
  "  eventcnv --format chrome -o trace.json telltale.log   open in ui.perfetto.dev\n"
  "  eventcnv --format html -o timeline.html a.log b.log   one timeline, in a browser\n"
  "  eventcnv --format telltale --zstd -o archive.tt telltale.log   for keeping\n";


/* version -- --version.  design/build.txt .pack.version */
static void version(FILE *out)
{
  fprintf(out, "eventcnv (telltale) %s\nstream format %u.%u.%u\n", TELLTALE_VERSION_STRING,
          EVENT_VERSION_MAJOR, EVENT_VERSION_MEDIAN, EVENT_VERSION_MINOR);
}

static const OptionsSpecStruct spec = {
  "eventcnv", usageText, options, sizeof options / sizeof options[0], epilogue, 20, 0, version
};

/* CnvIsArchive -- 1 if the stream is rewritten (--format telltale).
 * design/tools.txt .zstd.writer */
int CnvIsArchive(const CnvOptionsStruct *opt)
{
  return opt->format != NULL && strcmp(opt->format, "telltale") == 0;
}

/* CnvIsRows -- 1 if the format is ClickHouse's rows, which --follow ships
 * (design/export.txt .export.clickhouse.follow) */
int CnvIsRows(const CnvOptionsStruct *opt)
{
  return opt->format != NULL && (strcmp(opt->format, "clickhouse") == 0
                                 || strcmp(opt->format, "clickhouse-native") == 0);
}

/* CnvIsExport -- 1 if the events go to a writer of export.c */
int CnvIsExport(const CnvOptionsStruct *opt)
{
  return opt->format != NULL && strcmp(opt->format, "text") != 0;
}

/* argsCheck -- the combinations of options that cannot be */
static void argsCheck(CnvOptionsStruct *opt)
{
  const char *why;
  if (opt->pathCount == 0)
    opt->paths[opt->pathCount++] = "-";
  for (size_t p = 0, stdins = 0; p < opt->pathCount; ++p)
    if (strcmp(opt->paths[p], "-") == 0 && ++stdins > 1)
      ReportUsage("standard input (-) can be read once");
  if (opt->format != NULL && opt->pathCount > 1 && ExportOneLog(opt->format))
    ReportUsage("this --format takes one FILE: %s", opt->format);
  if (opt->jobs != NULL && !OptionsNumber(opt->jobs, 1, 999))
    ReportUsage("--jobs wants a number from 1 to 999: %s", opt->jobs);
  if (opt->format != NULL && strcmp(opt->format, "text") != 0 && !CnvIsArchive(opt)
      && !ExportFormatKnown(opt->format))
    ReportUsage("unknown --format (text, jsonl, csv, chrome, sqlite, ctf, html, clickhouse, "
                "clickhouse-native, clickhouse-ddl or telltale): %s", opt->format);
  if (opt->zstd != NULL && !CnvIsArchive(opt))
    ReportUsage("--zstd compresses the blocks of --format telltale, and nothing else");
  if (opt->zstd != NULL && opt->zstd[0] != '\0' && !OptionsNumber(opt->zstd, 1, 22))
    ReportUsage("--zstd wants a level from 1 to 22: %s", opt->zstd);
  if (CnvIsArchive(opt) && opt->pathCount > 1)
    ReportUsage("--format telltale rewrites one FILE, not several (a level goes as "
                "--zstd=LEVEL): %s", opt->paths[1]);
  if (CnvIsArchive(opt) && (opt->kinds != NULL || opt->events != NULL))
    ReportUsage("--format telltale rewrites one FILE whole: not with --kind or --event");
  if (opt->format != NULL && (ExportNeedsFile(opt->format) || CnvIsArchive(opt))
      && (opt->output == NULL || strcmp(opt->output, "-") == 0))
    ReportUsage("this --format writes a file: give it with -o FILE: %s", opt->format);
  if (opt->format != NULL && strcmp(opt->format, "text") != 0
      && (opt->header || opt->list || opt->count || opt->summary || opt->spans))
    ReportUsage("--format writes the events: not with --header, --list, --count, --summary "
                "or --spans");
  if (opt->follow && (opt->pathCount != 1 || strcmp(opt->paths[0], "-") == 0
                      || (opt->format != NULL && strcmp(opt->format, "text") != 0
                          && !CnvIsRows(opt))
                      || opt->header || opt->list || opt->count || opt->summary || opt->spans))
    ReportUsage("--follow prints the events of one FILE (not -) as text or clickhouse rows, "
                "and nothing else");
  if (opt->insert != NULL && (!opt->follow || !CnvIsRows(opt) || opt->output != NULL))
    ReportUsage("--insert ships --follow --format clickhouse's rows, not with -o");
  if (opt->spans && (opt->count || opt->summary))
    ReportUsage("--spans prints instead of the events: not with --count or --summary");
  /* design/tools.txt .tools.output */
  OutPathInputs(opt->paths, opt->pathCount);
  if ((why = OutPathRefused(opt->output)) != NULL)
    ReportUsage("%s: %s, which writing would replace",
                opt->output != NULL && strcmp(opt->output, "-") != 0 ? opt->output
                : "standard output", why);
}

/* CnvParseArgs -- options before or after the FILEs; "--" ends them */
void CnvParseArgs(int argc, char **argv, CnvOptionsStruct *opt)
{
  OptionsParse(&spec, argc, argv, opt, sizeof *opt, &opt->paths, &opt->pathCount);
  argsCheck(opt);
}
