/* <tools/eventcnv/cnvend.c> -- what eventcnv says of a log at the end
 *
 * .design: design/tools.txt .eventcnv.exit design/plinth.txt .sol.death.limits
 *
 * After a log's events (or instead of them), what went wrong with it
 * and what was lost is said on stderr, once: damage by offset,
 * warnings, how it ended (cleanly, at an exec, after a death and what
 * its live file gave back), the events the program dropped; and the
 * exit status says whether it holds everything the program emitted.
 * A clean end says nothing.
 */

#include "cnvint.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* recoveredCounts -- what a stream that did not end cleanly still holds:
 * "N events in M blocks", and how many came from the live file.  The
 * program died before it could write StreamEnd (an assertion, a fatal
 * signal, SIGKILL, the OOM killer, a power cut); this is what was
 * recovered->  design/plinth.txt .sol.death.limits design/control.txt .sol.recover */
static void recoveredCounts(char *buf, size_t size, const EventStreamInfoStruct *info,
                            const InputRecoveredStruct *recovered)
{
  int n = snprintf(buf, size, "%lu event%s in %lu block%s",
                   (unsigned long)info->eventCount, info->eventCount == 1 ? "" : "s",
                   (unsigned long)info->blockCount, info->blockCount == 1 ? "" : "s");
  if (n > 0 && (size_t)n < size && recovered->done)
    snprintf(buf + n, size - (size_t)n, ", %lu of them from %s (a live file's events carry no check)",
             (unsigned long)recovered->events, recovered->path);
}

/* CnvEnded -- the stream ended as the program meant: StreamEnd, or
 * StreamExec before an exec (.sol.exec) */
int CnvEnded(const EventStreamInfoStruct *info)
{
  return info->streamEnd || info->streamExec || info->streamSnapshot;
}

/* threadsRunning -- threads still running when the stream ended: every thread
 * started and not exited, but the one that ended it.  design/runtime.txt
 * .sol.finish */
static size_t threadsRunning(const EventStreamInfoStruct *info)
{
  size_t ended;
  if (info->streamSnapshot)
    return 0;                   /* its threads ran on: not a loss (.ctl.snapshot) */
  ended = info->threadExits + (CnvEnded(info) ? 1 : 0);
  return info->threadStarts > ended ? info->threadStarts - ended : 0;
}

/* lossless -- 1 if the log holds everything the program emitted, as far
 * as can be known: it ended with StreamEnd (or at an exec), and threads still running
 * then had a live file to keep what they emitted afterwards */
static int lossless(const EventStreamInfoStruct *info, const InputRecoveredStruct *recovered)
{
  return CnvEnded(info) && (threadsRunning(info) == 0 || recovered->done);
}

/* logInUse -- does a running process hold the log's lock, writing it?
 * (.plinth.stream.lock) */
static int logInUse(const char *path)
{
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), busy = 0;
  struct stat st;
  if (fd < 0)
    return 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_SH | LOCK_NB) != 0
      && errno == EWOULDBLOCK)
    busy = 1;
  (void)close(fd);
  return busy;
}

/* CnvEnding -- how the stream ended, after "end  " in --header */
void CnvEnding(char *buf, size_t size, const EventStreamInfoStruct *info,
               const InputRecoveredStruct *recovered)
{
  char counts[4096 + 200];
  size_t running = threadsRunning(info);
  if (info->stopped) {
    snprintf(buf, size, "not known: reading stopped at damage");
  } else if (!CnvEnded(info) && recovered->done && recovered->logFailed) {
    recoveredCounts(counts, sizeof counts, info, recovered);
    snprintf(buf, size, "no StreamEnd: the log's writes failed, so whether the program ended "
             "or died is not known (%s)", counts);
  } else if (!CnvEnded(info) && recovered->done) {
    recoveredCounts(counts, sizeof counts, info, recovered);
    snprintf(buf, size, "no StreamEnd: recovered after a crash (%s)", counts);
  } else if (!CnvEnded(info)) {
    recoveredCounts(counts, sizeof counts, info, recovered);
    snprintf(buf, size, "no StreamEnd and no live file: incomplete (%s); what the program "
             "held in its buffers when it stopped is not in the log", counts);
  } else if (info->streamSnapshot)
    snprintf(buf, size, "a snapshot (StreamSnapshot): what the program held in its buffers "
             "when it was taken, while it ran on");
  else if (running == 0)
    snprintf(buf, size, "%s", info->streamEnd ? "clean" : "at an exec: the program sent every "
             "event, then exec'd another (StreamExec)");
  else if (recovered->done)
    snprintf(buf, size, "%s; %lu thread%s still running %s, and the %lu events the log "
             "lacked (what %s emitted after it, or any block cut from the log) were recovered "
             "from %s", info->streamEnd ? "clean" : "at an exec",
             (unsigned long)running, running == 1 ? " was" : "s were",
             info->streamEnd ? "at the end" : "then", (unsigned long)recovered->events,
             running == 1 ? "it" : "they", recovered->path);
  else
    snprintf(buf, size, "%s, but %lu thread%s still running and there is no live file: what "
             "%s emitted after %s, short of a full buffer, is not in the log",
             info->streamEnd ? "StreamEnd" : "StreamExec (an exec)", (unsigned long)running,
             running == 1 ? " was" : "s were", running == 1 ? "it" : "they",
             info->streamEnd ? "the end" : "it");
}

/* CnvDropped -- the events of a kind that the program dropped: those its
 * EventsDropped report, and those its live file counts beyond them,
 * which it died before reporting.  design/control.txt .sol.dropped */
uint64_t CnvDropped(const EventStreamInfoStruct *info, const InputRecoveredStruct *recovered,
                    unsigned kind)
{
  return info->dropped[kind] + EventDropsUnreported(&recovered->live, info, kind);
}

/* reportProblems -- the damage the reader found, each by offset; 1 if any */
static int reportProblems(const EventStreamStruct *stream, const char *name)
{
  size_t i, n = EventStreamProblemCount(stream);
  for (i = 0; i < n; ++i)
    ReportFile(name, "%s", EventStreamProblem(stream, i));
  return n > 0;
}

/* reportWarnings -- what a reader of the events should know: what was
 * skipped, and how the stream ended if not cleanly */
static void reportWarnings(const EventStreamInfoStruct *info,
                           const InputRecoveredStruct *recovered, const char *name)
{
  if (info->unknownCount > 0)
    ReportFile(name, "warning: skipped %lu event%s with codes not in the stream's registry",
               (unsigned long)info->unknownCount, info->unknownCount == 1 ? "" : "s");
  if (info->skippedBytes > 0)
    ReportFile(name, "warning: skipped %lu corrupt bytes", (unsigned long)info->skippedBytes);
  if (info->clockBacks > 0)   /* design/stream.txt .stream.order.back */
    ReportFile(name, "warning: %lu event%s stamped before the event before %s of the same thread, "
               "kind and signal level (the first at offset %llu, thread %lu): %s given that "
               "event's time, as a thread's time never goes back", (unsigned long)info->clockBacks,
               info->clockBacks == 1 ? " was" : "s were", info->clockBacks == 1 ? "it" : "them",
               (unsigned long long)info->clockBackOffset, (unsigned long)info->clockBackThread,
               info->clockBacks == 1 ? "it is" : "each is");
  /* A clean end says nothing: stderr stays empty for a sound stream. */
  if (CnvEnded(info) && !lossless(info, recovered)) {
    char ending[8192];
    CnvEnding(ending, sizeof ending, info, recovered);
    ReportFile(name, "the stream ended with %s", ending);
  }
  if (info->holes > info->holesLost) {
    size_t n = info->holes - info->holesLost;
    ReportFile(name, "zeros where a block should be (%lu such block%s, the first hole at offset "
               "%llu): the program died before writing %s whole; %s events are among those "
               "recovered from %s", (unsigned long)n, n == 1 ? "" : "s",
               (unsigned long long)info->holeOffset, n == 1 ? "it" : "them",
               n == 1 ? "its" : "their", recovered->path);
  }
  if (recovered->rejected > 0)
    ReportFile(name, "%lu block%s of %s (the first at offset %lu) did not continue the log's "
               "blocks of the same number, so one of the files is damaged: their events were not "
               "recovered", (unsigned long)recovered->rejected, recovered->rejected == 1 ? "" : "s",
               recovered->path, (unsigned long)recovered->rejectedOffset);
  if (recovered->damaged > 0)
    ReportFile(name, "%lu region%s of %s (the first at offset %lu) %s a damaged header: %s events "
               "were not recovered", (unsigned long)recovered->damaged,
               recovered->damaged == 1 ? "" : "s", recovered->path,
               (unsigned long)recovered->damagedOffset, recovered->damaged == 1 ? "has" : "have",
               recovered->damaged == 1 ? "its" : "their");
  if (recovered->missing > 0)
    ReportFile(name, "%s holds %lu region%s fewer than the program made (cut short or zeroed): "
               "the events in %s were not recovered", recovered->path,
               (unsigned long)recovered->missing, recovered->missing == 1 ? "" : "s",
               recovered->missing == 1 ? "it" : "them");
  if (recovered->logFailed)
    ReportFile(name, "the program could not write all of its log (%s says a write failed, a full "
               "disk perhaps): the events it sent after that are lost, but for those recovered "
               "from the live file (the program counts them, and says how many on its stderr if "
               "it ends)", recovered->path);
  if (info->stopped) {
    ReportFile(name, "reading stopped at the damage said above, so whether the stream ended "
               "cleanly after it is not known (--resync reads on past damage)");
  } else if (!CnvEnded(info) && recovered->done && recovered->logFailed) {
    /* The end, if there was one, went with the failed writes: a full
     * disk is not a death.  design/control.txt .sol.writer.fail */
    char counts[4096 + 200];
    recoveredCounts(counts, sizeof counts, info, recovered);
    ReportFile(name, "the stream has no StreamEnd event, as the program's writes to its log "
               "failed (said above): whether it then ended or died is not known; the log holds %s",
               counts);
  } else if (!CnvEnded(info) && recovered->done && logInUse(name)) {
    char counts[4096 + 200];
    recoveredCounts(counts, sizeof counts, info, recovered);
    ReportFile(name, "the stream has no StreamEnd yet: a running process holds its lock and is "
               "writing it; what the log did not yet hold was read from its live file: %s", counts);
  } else if (!CnvEnded(info) && recovered->done) {
    char counts[4096 + 200];
    recoveredCounts(counts, sizeof counts, info, recovered);
    ReportFile(name, "the stream did not end cleanly (no StreamEnd event): the program died "
               "before it could end it, and the log was recovered after the crash: %s", counts);
  } else if (!CnvEnded(info) && info->recoveredUnchecked) {   /* .stream.header.check */
    char counts[4096 + 200];
    recoveredCounts(counts, sizeof counts, info, recovered);
    ReportFile(name, "the stream did not end cleanly (no StreamEnd event); offset %u: its flags "
               "say its log's live file was recovered into it when it was archived, but an "
               "archive older than %u.0.%u has no check of its flags, so whether it holds every "
               "event cannot be known (%s); archiving the log again checks them",
               EVENT_STREAM_FLAGS_AT, EVENT_VERSION_ZSTD_MAJOR, EVENT_VERSION_FLAGS_CHECKED,
               counts);
  } else if (!CnvEnded(info)) {
    char counts[4096 + 200];
    recoveredCounts(counts, sizeof counts, info, recovered);
    ReportFile(name, "the stream did not end cleanly (no StreamEnd event) and there is no live "
               "file to recover from: it is incomplete (%s; it ends at offset %llu); the events "
               "the program held in its buffers when it stopped are lost, or it is still running "
               "without one", counts, (unsigned long long)info->streamSize);
  }
}

/* complete -- 1 if the stream holds, as far as can be known, everything
 * the program emitted: exit 0 says so.  design/tools.txt .eventcnv.exit */
static int complete(const EventStreamInfoStruct *info, const InputRecoveredStruct *recovered)
{
  if (recovered->rejected > 0 || recovered->damaged > 0 || recovered->logFailed
      || recovered->missing > 0)
    return 0;
  return CnvEnded(info) ? lossless(info, recovered) : recovered->done;
}


/* reportDropped -- events the program dropped (EventsDropped: kind,
 * count; the reader sums them) are said on stderr at the end, per kind,
 * so that no loss goes unnoticed.  design/control.txt .sol.dropped */
static void reportDropped(const EventStreamInfoStruct *info,
                          const InputRecoveredStruct *recovered, const char *name)
{
  for (unsigned kind = 0; kind < EVENT_STREAM_KIND_LIMIT; ++kind) {
    uint64_t unreported = EventDropsUnreported(&recovered->live, info, kind);
    const char *kindName = kind < info->registry->kindCount ? info->registry->kinds[kind].name
                           : "?";
    if (unreported != 0)
      ReportFile(name, "the program dropped %llu events of kind %s (%llu by EventsDropped, %llu "
                 "counted only in %s: it died before reporting them)",
                 (unsigned long long)CnvDropped(info, recovered, kind), kindName,
                 (unsigned long long)info->dropped[kind], (unsigned long long)unreported,
                 recovered->path);
    else if (info->dropped[kind] != 0)
      ReportFile(name, "the program dropped %llu events of kind %s (EventsDropped)",
                 (unsigned long long)info->dropped[kind], kindName);
  }
}

/* reportRefused -- registries the program refused (RegistryRefused):
 * their events are not in the log, which says so.  design/registry.txt
 * .reg.many */
static void reportRefused(const EventStreamInfoStruct *info, const char *name)
{
  if (info->registriesRefused == 1)
    ReportFile(name, "the program refused registry %s: its events are not in the log",
               info->registryRefused);
  else if (info->registriesRefused > 1)
    ReportFile(name, "the program refused %llu registries (the first: %s): their events are "
               "not in the log", (unsigned long long)info->registriesRefused,
               info->registryRefused);
}

/* CnvFinish -- say what went wrong with a log, and what was lost; returns
 * the exit status.  design/tools.txt .eventcnv.exit */
int CnvFinish(const CnvOptionsStruct *opt, CnvLogStruct *log, int status)
{
  const EventStreamInfoStruct *info = EventStreamInfo(log->stream);
  if (EventStreamProblemCount(log->stream) > 0 && reportProblems(log->stream, log->name))
    status = EXIT_BAD_STREAM;
  reportWarnings(info, &log->recovered, log->name);
  if (!complete(info, &log->recovered))
    status = EXIT_BAD_STREAM;
  if (opt->count || opt->summary || opt->spans || (!opt->header && !opt->list)) {
    reportDropped(info, &log->recovered, log->name);
    reportRefused(info, log->name);
  }
  return status;
}
