/* <tools/eventcnv/eventcnv.c> -- print a telltale stream as text
 *
 * .design: design/tools.txt .eventcnv design/stream.txt .stream
 *
 * eventcnv reads a whole stream into memory (mmap for a file, read for
 * a pipe), decodes it with the shared decoder (eventread.h,
 * design/index.txt .req.share) and prints its events in time order,
 * one line each, on stdout.  --count and --summary print what the
 * reader's index counted, with no merge (design/tools.txt
 * .eventcnv.scan).  Warnings and errors go to stderr.
 *
 * Exit status: design/tools.txt .eventcnv.exit; 2 a usage error.
 * Its rooms: cnvint.h.
 */

#include "archive.h"
#include "cnvint.h"
#include "export.h"
#include "merge.h"
#include "outpath.h"
#include "report.h"
#include "textsafe.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* openLog -- the stream at path, read once in order for --count and
 * --summary, else held whole (with its live file's events, after a
 * death); NULL after saying why */
static EventStreamStruct *openLog(const CnvOptionsStruct *opt, const char *path, const char *name,
                                  InputStruct *in, InputRecoveredStruct *recovered)
{
  EventStreamStruct *stream;
  EventStreamRes res;
  char msg[512];
  int err;

  memset(in, 0, sizeof *in);
  memset(recovered, 0, sizeof *recovered);
  if ((opt->count || opt->summary) && !opt->resync && !InputLiveExists(path)) {
    /* No events to print: read the stream once, in order, not mapped.
     * design/tools.txt .eventcnv.scan */
    res = InputScan(path, &stream, msg, sizeof msg, ReportToolName(),
                    opt->jobs != NULL ? (unsigned)atoi(opt->jobs) : 0);
  } else {
    err = InputRead(path, in);
    if (err != 0) {
      ReportFile(name, "%s", strerror(err));
      return NULL;
    }
    if (InputRecoverLive(path, in, recovered, ReportToolName()) != 0) {
      InputFree(in);
      memset(in, 0, sizeof *in);
      return NULL;
    }
    res = EventStreamOpen(&stream, in->data, in->size, opt->resync ? EVENT_STREAM_RESYNC : 0,
                          msg, sizeof msg);
  }
  if (res != EventStreamOK) {
    ReportFile(name, "%s", msg);
    InputFree(in);
    memset(in, 0, sizeof *in);
    return NULL;
  }
  return stream;
}

/* openAll -- every FILE that can be read, in the order given, at the
 * front of logs; returns how many.  One that cannot is said and left
 * out, so the others are still printed (design/tools.txt
 * .eventcnv.exit). */
static size_t openAll(const CnvOptionsStruct *opt, CnvLogStruct *logs)
{
  size_t sound = 0;
  for (size_t i = 0; i < opt->pathCount; ++i) {
    CnvLogStruct *log = &logs[sound];
    log->path = opt->paths[i];
    log->name = strcmp(log->path, "-") == 0 ? "<stdin>" : log->path;
    log->stream = openLog(opt, log->path, log->name, &log->in, &log->recovered);
    if (log->stream == NULL)
      continue;
    InputArchiveRecovered(EventStreamInfo(log->stream), &log->recovered);
    CnvFilterInit(&log->filter, opt, EventStreamInfo(log->stream)->registry);
    ++sound;
  }
  return sound;
}

/* outputText -- -o for text: standard output goes to path; 0, or 1
 * after saying why not.  design/tools.txt .tools.output */
static int outputText(const char *path)
{
  int fd;
  fflush(stdout);
  fd = OutPathOpen(ReportToolName(), path, 0);
  if (fd < 0)
    return 1;
  if (dup2(fd, STDOUT_FILENO) < 0) {
    Report("cannot write %s: %s", path, strerror(errno));
    (void)close(fd);
    return 1;
  }
  (void)close(fd);
  return 0;
}

/* printMerged -- the events of several logs on one timeline: each line
 * as ExportText's, its ELAPSED since the earliest log's start and
 * PROGRAM[PID] after WALLCLOCK.  Returns 0, or 1 if out of memory.
 * design/export.txt .export.merge */
static int printMerged(EventStreamStruct **streams, size_t count, const CnvLogStruct *logs)
{
  MergeStruct merge;
  EventRecordStruct *rec;
  size_t source, size = 4096;
  char (*process)[80] = calloc(count, sizeof *process);
  char *line = malloc(size), times[64], elapsed[40];
  int width = 0;
  ProgressStruct progress;
  uint64_t read = 0, total = 0;
  if (process == NULL || line == NULL || MergeInit(&merge, streams, count) != 0) {
    free(process);
    free(line);
    return 1;
  }
  for (size_t i = 0; i < count; ++i) {
    const EventStreamInfoStruct *info = EventStreamInfo(streams[i]);
    total += info->eventCount;
    char program[61];
    int n = snprintf(process[i], sizeof process[i], "%s[%lu]",
                     TextTo(program, sizeof program, info->program), (unsigned long)info->pid);
    if (n > width)
      width = n < (int)sizeof process[i] ? n : (int)sizeof process[i] - 1;
  }
  ProgressStart(&progress, total);
  while (MergeNext(&merge, &source, &rec)) {
    const EventFormatContextStruct *ctx = &merge.fmt[source];
    size_t len, timesLen;
    ProgressTick(&progress, ++read);
    if (!CnvFilterPasses(&logs[source].filter, rec->kind, rec->code))
      continue;
    len = EventFormat(line, size, rec, ctx);
    if (len >= size) {
      char *bigger = realloc(line, len + 1);
      if (bigger == NULL)
        break;
      line = bigger;
      size = len + 1;
      (void)EventFormat(line, size, rec, ctx);
    }
    /* ELAPSED WALLCLOCK of this log: WALLCLOCK kept, ELAPSED since the origin */
    timesLen = EventFormatTimes(times, sizeof times, rec->clock, ctx);
    if (timesLen >= sizeof times || timesLen > len || strrchr(times, ' ') == NULL)
      timesLen = 0;
    CnvPutSeconds(elapsed, sizeof elapsed,
                  MergeAddNs(MergeWallNs(ctx->startRealtime - merge.originNs),
                             MergeClockNs(ctx, rec->clock)));
    printf("%15s%s %-*s%s\n", elapsed, timesLen > 0 ? strrchr(times, ' ') : "", width,
           process[source], line + timesLen);
  }
  ProgressEnd(&progress);
  MergeFinish(&merge);
  free(process);
  free(line);
  return 0;
}

/* logsFilter -- CnvFilterPasses of each log's filter, an ExportFilterFunction */
static int logsFilter(void *closure, size_t source, unsigned kind, unsigned code)
{
  const CnvLogStruct *logs = closure;
  return CnvFilterPasses(&logs[source].filter, kind, code);
}

/* archiveSay -- what an archive holds that its log's messages do not
 * say: blocks past damage, a program that may still be writing, and
 * drops that only the live file counts, which it lacks
 * (design/tools.txt .zstd.say) */
static void archiveSay(const EventStreamInfoStruct *info, const InputRecoveredStruct *rec,
                       const char *name, const char *output)
{
  uint64_t unreported = 0;
  for (unsigned kind = 0; kind < EVENT_STREAM_KIND_LIMIT; ++kind)
    unreported += EventDropsUnreported(&rec->live, info, kind);
  if (unreported != 0)
    ReportFile(name, "the archive %s does not count the %llu dropped events that only %s counts "
               "(the program died before reporting them)", output, (unsigned long long)unreported,
               rec->path);
  if (info->stopped)
    ReportFile(name, "the archive %s holds every block of the log, the damaged ones as they are: "
               "--resync reads on past them", output);
  if (!CnvEnded(info) && info->pid != 0 && (kill((pid_t)info->pid, 0) == 0 || errno == EPERM))
    ReportFile(name, "the log has no StreamEnd and a process %lu is running: if it is the "
               "program, it is still writing, and the archive %s holds only what it had written",
               (unsigned long)info->pid, output);
}

/* print -- what opt asks for; returns EXIT_SUCCESS, or EXIT_BAD_STREAM
 * having said why */
static int print(const CnvOptionsStruct *opt, CnvLogStruct *logs, size_t count)
{
  int status = EXIT_SUCCESS;
  /* Headings and merged lines as for the FILEs given, however many of
   * them could be read, so that the output's form does not change. */
  int several = opt->pathCount > 1;
  if (opt->header || opt->list || opt->count || opt->summary || opt->spans) {
    for (size_t i = 0; i < count && status == EXIT_SUCCESS; ++i) {
      if (several)
        printf("%s==> %s <==\n", i > 0 ? "\n" : "", logs[i].name);
      status = CnvPrintEach(opt, &logs[i]);
    }
    return status;
  }
  EventStreamStruct **streams = malloc(count * sizeof *streams);
  if (streams == NULL) {
    Report("out of memory");
    return EXIT_BAD_STREAM;
  }
  for (size_t i = 0; i < count; ++i)
    streams[i] = logs[i].stream;
  if (CnvIsArchive(opt)) {
    /* design/tools.txt .zstd.writer */
    const EventStreamInfoStruct *info = EventStreamInfo(streams[0]);
    if (ArchiveWrite(logs[0].in.data, logs[0].in.size, info,
                     logs[0].recovered.done, opt->output,
                     opt->zstd == NULL ? ARCHIVE_NO_ZSTD
                     : opt->zstd[0] != '\0' ? atoi(opt->zstd) : 3, logs[0].name) != 0)
      status = EXIT_BAD_STREAM;
    else
      archiveSay(info, &logs[0].recovered, logs[0].name, opt->output);
  } else if (CnvIsExport(opt)) {
    /* design/export.txt .export */
    if (ExportRun(streams, count, opt->format, opt->output, logsFilter, logs) != 0)
      status = EXIT_BAD_STREAM;
  } else if ((!several   /* design/tools.txt .eventcnv.text */
              ? ExportText(streams[0], stdout, opt->jobs != NULL ? (unsigned)atoi(opt->jobs) : 0,
                           logsFilter, logs)
              : printMerged(streams, count, logs)) != 0) {
    Report("out of memory");
    status = EXIT_BAD_STREAM;
  }
  free(streams);
  return status;
}

int main(int argc, char **argv)
{
  CnvOptionsStruct opt;
  CnvLogStruct *logs;
  size_t sound;
  int status = EXIT_SUCCESS;

  CnvParseArgs(argc, argv, &opt);
  if (opt.follow) {
    if (opt.output != NULL && strcmp(opt.output, "-") != 0 && outputText(opt.output) != 0)
      return EXIT_BAD_STREAM;
    status = CnvFollow(&opt);
    free(opt.paths);
    return status;
  }
  logs = calloc(opt.pathCount, sizeof *logs);
  if (logs == NULL) {
    Report("out of memory");
    return EXIT_BAD_STREAM;
  }
  sound = openAll(&opt, logs);
  if (sound == 0) {
    status = EXIT_BAD_STREAM;
  } else if (!CnvIsExport(&opt) && opt.output != NULL && strcmp(opt.output, "-") != 0
             && outputText(opt.output) != 0) {
    /* -o for text: stdout goes to the file, once the streams are open */
    status = EXIT_BAD_STREAM;
  } else {
    ProgressOutput(!CnvIsExport(&opt) || opt.output == NULL || strcmp(opt.output, "-") == 0);
    status = print(&opt, logs, sound);
    if (fflush(stdout) != 0 || ferror(stdout)) {
      Report("error writing output: %s", strerror(errno));
      status = EXIT_BAD_STREAM;
    }
    for (size_t i = 0; i < sound; ++i)
      status = CnvFinish(&opt, &logs[i], status);
    if (sound < opt.pathCount)  /* each said as it was opened */
      status = EXIT_BAD_STREAM;
  }
  for (size_t i = 0; i < sound; ++i) {
    EventStreamClose(logs[i].stream);
    InputFree(&logs[i].in);
  }
  free(logs);
  free(opt.paths);
  return status;
}

