/* <tools/eventcnv/cnvfollow.c> -- eventcnv --follow: a log as it is written
 *
 * .design: design/tools.txt .eventcnv.follow
 *
 * The events as the program writes them, buffer by buffer, as text or
 * as ClickHouse's rows (shipped by --insert in batches), until the
 * stream's end or the program is gone; then what eventcnv shows and
 * says of the log without --follow (cnvend.c).
 */

#include "cnvint.h"
#include "export.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* wholeBlocks -- the end of the last whole block in the first size
 * bytes of a stream: what a writer has written whole so far.  A block
 * after done whose check fails, or zeros where one was placed, is not
 * yet: its thread writes it after the lock (.sol.writer.at). */
static size_t wholeBlocks(const unsigned char *p, size_t size, const EventStreamInfoStruct *info,
                          size_t done)
{
  size_t pos = info->headerLength;
  while (pos <= size && size - pos >= info->blockHeaderLength) {
    EventBlockHeaderStruct h;
    EventBlockDecode(&h, p + pos, info->major, info->layout.bigEndian);
    if (memcmp(h.magic, EVENT_BLOCK_MAGIC, 4) != 0 || h.length < info->blockHeaderLength
        || h.length > size - pos)
      break;
    if (pos >= done && info->major >= 2 && (h.flags & EVENT_BLOCK_CHECKED) != 0
        && EventBlockCheck(p + pos, h.length) != h.check)
      break;
    pos += h.length;
  }
  return pos;
}

/* FollowStruct -- what --follow knows of the log it follows */
typedef struct FollowStruct {
  int fd;                       /* the file opened */
  const char *path;             /* as given */
  CnvFilterStruct filter;
  size_t done;                  /* printed up to here */
  int ended;                    /* 1 StreamEnd, 2 the stream ends at an exec */
  uint32_t pid;                 /* the header's, once read; 0 before */
  uint64_t startMonotonic;      /* the header's CLOCK_MONOTONIC start, ns */
  size_t damageAt;              /* a block all there whose check fails, */
  uint32_t damageCheck;         /* what its bytes give, */
  unsigned damageLooks;         /* and in how many looks in a row */
  EventClock startClock;        /* the header's */
  size_t rates;                 /* the clock rates times were printed at, */
  struct {
    uint64_t hz;
    EventClock latest;          /* and the latest clock printed at each */
  } rate[16];
  ExportWindowStruct window;    /* --format clickhouse: what a look ships */
  int exportFailed;             /* a write of the rows failed: said */
  FILE *insert;                 /* --insert: the batch's run of COMMAND, */
  int stdoutSaved;              /* standard output while it runs, */
  double insertSince;           /* when it began, */
  uint64_t insertRows;          /* the rows before it */
  uint64_t rowsLost;            /* rows of batches COMMAND failed */
} FollowStruct;

/* FOLLOW_DAMAGE_LOOKS -- looks (200 ms apart) that a block whose check
 * fails must stay as it is before --follow takes it for damage rather
 * than a write under way.  design/tools.txt .eventcnv.follow.damage */
#define FOLLOW_DAMAGE_LOOKS 5

/* followDamage -- note the block at whole, the first not whole, if it
 * is all in the file and fails its check: how many looks in a row it
 * has been so, its bytes the same */
static void followDamage(FollowStruct *f, const unsigned char *p, size_t size,
                         const EventStreamInfoStruct *info, size_t whole)
{
  EventBlockHeaderStruct h;
  uint32_t check;
  if (info->major < 2 || whole > size || size - whole < info->blockHeaderLength) {
    f->damageLooks = 0;
    return;
  }
  EventBlockDecode(&h, p + whole, info->major, info->layout.bigEndian);
  if (memcmp(h.magic, EVENT_BLOCK_MAGIC, 4) != 0 || h.length < info->blockHeaderLength
      || h.length > size - whole || (h.flags & EVENT_BLOCK_CHECKED) == 0) {
    f->damageLooks = 0;
    return;
  }
  /* A block whose place is taken and whose data are not written yet
   * (zeros from their start or a page boundary: .sol.writer.at) is a
   * write under way however long its thread takes, not damage. */
  if (EventBlockHole(p + whole, h.length, info->blockHeaderLength, whole)) {
    f->damageLooks = 0;
    return;
  }
  check = EventBlockCheck(p + whole, h.length);
  if (f->damageLooks > 0 && f->damageAt == whole && f->damageCheck == check)
    ++f->damageLooks;
  else {
    f->damageAt = whole;
    f->damageCheck = check;
    f->damageLooks = 1;
  }
}

static int followErrno;         /* the first failed write of --follow's output */

/* followRate -- note that a time was printed for clock at rate hz: the
 * latest clock printed at each rate, for followRateSay */
static void followRate(FollowStruct *f, uint64_t hz, EventClock clock)
{
  size_t i;
  for (i = 0; i < f->rates && f->rate[i].hz != hz; ++i)
    ;
  if (i == f->rates) {
    if (f->rates == sizeof f->rate / sizeof f->rate[0])
      i = f->rates - 1;         /* the last stands for the rest: said as "at least" */
    else
      ++f->rates;
    f->rate[i].hz = hz;
    f->rate[i].latest = 0;
  }
  if (clock > f->rate[i].latest)
    f->rate[i].latest = clock;
}

/* FOLLOW_BATCH_SECONDS -- how long --insert's batch of rows gathers
 * before its COMMAND is ended, so that its rows are in the table:
 * ClickHouse makes a part of each INSERT, and wants few a second.
 * design/export.txt .export.clickhouse.follow */
#define FOLLOW_BATCH_SECONDS 1.0

static double followNow(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* followInsertEnd -- end --insert's batch: COMMAND's input closed and
 * its exit awaited; one that fails loses its batch's rows, which are
 * counted and said, and --follow goes on with the next batch */
static void followInsertEnd(FollowStruct *f, const char *command)
{
  int status;
  if (f->insert == NULL)
    return;
  fflush(stdout);
  (void)dup2(f->stdoutSaved, STDOUT_FILENO);
  (void)close(f->stdoutSaved);
  status = pclose(f->insert);
  f->insert = NULL;
  if (status != 0) {
    uint64_t rows = f->window.rows - f->insertRows;
    f->rowsLost += rows;
    ReportFile(f->path, "--insert's %s %s %d: %llu rows not shipped", command,
               status > 0 && WIFEXITED(status) ? "exited" : "failed, status",
               status > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : status,
               (unsigned long long)rows);
  }
}

/* followInsertBegin -- a batch for --insert: COMMAND run, standard
 * output its input until followInsertEnd; 0, or 1 said */
static int followInsertBegin(FollowStruct *f, const char *command)
{
  if (f->insert != NULL)
    return 0;
  fflush(stdout);
  f->insert = popen(command, "w");
  if (f->insert == NULL || (f->stdoutSaved = dup(STDOUT_FILENO)) < 0
      || dup2(fileno(f->insert), STDOUT_FILENO) < 0) {
    Report("--insert %s: %s", command, strerror(errno));
    if (f->insert != NULL)
      (void)pclose(f->insert);
    f->insert = NULL;
    return 1;
  }
  f->insertSince = followNow();
  f->insertRows = f->window.rows;
  return 0;
}

/* followFilter -- f's filter, an ExportFilterFunction */
static int followFilter(void *closure, size_t source, unsigned kind, unsigned code)
{
  (void)source;
  return CnvFilterPasses(&((FollowStruct *)closure)->filter, kind, code);
}

/* followExport -- followPrint's events as the format's rows (clickhouse):
 * a window of the stream, so the threads' ids and names and the labels
 * of what came before are known.  design/export.txt
 * .export.clickhouse.follow */
static void followExport(const CnvOptionsStruct *opt, FollowStruct *f, EventStreamStruct *stream,
                         size_t from, size_t to, int *endedReturn)
{
  uint64_t rows = f->window.rows;
  EventFormatContextStruct ctx;
  f->window.from = from;
  f->window.to = to;
  f->window.streamEnd = 0;
  if (opt->insert != NULL && followInsertBegin(f, opt->insert) != 0) {
    f->exportFailed = 1;
    return;
  }
  if (ExportRunWindow(&stream, 1, opt->format, NULL, followFilter, f, &f->window) != 0)
    f->exportFailed = 1;        /* said */
  if (f->window.streamEnd)
    *endedReturn = 1;
  /* Times as the text's (.eventcnv.follow.time), the stream's latest
   * clock standing for the window's. */
  EventStreamFormatContext(stream, &ctx);
  if (f->window.rows > rows)
    followRate(f, ctx.clockHz, EventStreamInfo(stream)->lastClock);
  if (f->insert != NULL && followNow() - f->insertSince >= FOLLOW_BATCH_SECONDS)
    followInsertEnd(f, opt->insert);
}

/* followPrint -- the events of stream from offset from, up to (not
 * at) to, that pass f's filter, in time order, each time reckoned at the
 * clock rate the stream gives now; *endedReturn 1 at StreamEnd; as rows
 * with --format (followExport) */
static void followPrint(const CnvOptionsStruct *opt, FollowStruct *f, EventStreamStruct *stream,
                        size_t from, size_t to, int *endedReturn)
{
  EventFormatContextStruct ctx;
  EventRecordStruct rec;
  char line[8192];
  if (opt->format != NULL && strcmp(opt->format, "text") != 0) {
    followExport(opt, f, stream, from, to, endedReturn);
    return;
  }
  EventStreamFormatContext(stream, &ctx);
  while (EventStreamNext(stream, &rec) == EventStreamOK) {
    if (rec.offset < from || rec.offset >= to)
      continue;         /* printed before, or in a block not yet whole */
    if (rec.code == EVENT_CODE_STREAM_END)
      *endedReturn = 1;
    if (CnvFilterPasses(&f->filter, rec.kind, rec.code)) {
      (void)EventFormat(line, sizeof line, &rec, &ctx);
      printf("%s\n", line);
      followRate(f, ctx.clockHz, rec.clock);
    }
  }
  if (fflush(stdout) != 0 && followErrno == 0)
    followErrno = errno;        /* said at the end: .tools.output */
}


/* FOLLOW_RATE_GRACE_NS -- how long past the second at which the
 * control thread sends the stream's ClockRate --follow waits for it
 * before it prints at the rate known then (a program without the
 * control thread sends it at a flush or its end).  design/tools.txt
 * .eventcnv.follow.time */
#define FOLLOW_RATE_GRACE_NS ((uint64_t)2000000000)

/* followHeld -- whether --follow waits to print: the stream (3.0.10 on)
 * has no ClockRate in the file yet, and its program may still send it
 * soon, so that a time printed is the time a later read prints.  A start
 * after now is another clock's (a log written on another machine, or
 * forged): never waited on. */
static int followHeld(const EventStreamInfoStruct *info)
{
  struct timespec t;
  uint64_t now;
  if (info->clockRated || info->major < 3 || info->minor < EVENT_VERSION_RATE)
    return 0;
  clock_gettime(CLOCK_MONOTONIC, &t);
  now = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
  return info->startMonotonic <= now
         && now - info->startMonotonic < EVENT_RATE_SPAN_NS + FOLLOW_RATE_GRACE_NS;
}

/* followOnce -- the events of the whole blocks that follow f->done in
 * the stream as it is now, in time order; moves f->done on, and sets
 * f->ended to 1 at StreamEnd, 2 if the stream now ends at an exec
 * (.sol.exec).  Returns 0, or 1 if the file is not a stream, having
 * said so. */
static int followOnce(const CnvOptionsStruct *opt, FollowStruct *f)
{
  InputStruct in;
  EventStreamStruct *stream;
  const EventStreamInfoStruct *info;
  char msg[512];
  size_t whole;
  int err;
  memset(&in, 0, sizeof in);
  err = InputReadFd(f->fd, &in);
  if (err != 0) {
    ReportFile(f->path, "%s", strerror(err));
    return 1;
  }
  if (EventStreamOpen(&stream, in.data, in.size, 0, msg, sizeof msg) != EventStreamOK) {
    /* A header not written whole yet is waited for; a file that is not a stream is said. */
    int waiting = in.size < EVENT_STREAM_FIXED_LEN
      || (memcmp(in.data, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN) == 0
          && EventLoad(in.data + 20, 4, 0) > in.size);
    InputFree(&in);
    if (!waiting)
      ReportFile(f->path, "%s", msg);
    return !waiting;
  }
  info = EventStreamInfo(stream);
  f->pid = info->pid;
  f->startMonotonic = info->startMonotonic;
  if (f->done == 0)
    CnvFilterInit(&f->filter, opt, info->registry);
  whole = wholeBlocks(in.data, in.size, info, f->done);
  followDamage(f, in.data, in.size, info, whole);
  if (info->streamExec)
    f->ended = 2;
  f->startClock = info->startClock;
  if (followHeld(info))
    whole = f->done;            /* printed once the rate is known */
  else
    followPrint(opt, f, stream, f->done, whole, &f->ended);
  EventStreamClose(stream);
  InputFree(&in);
  if (whole > f->done)
    f->done = whole;
  return 0;
}

/* followLiveName -- the log's name now, for its live file (NAME.live):
 * an exec'd image moves the log and its live file aside (.malloc.file);
 * NULL if the file has no name */
static const char *followLiveName(const FollowStruct *f, char *buf, size_t size)
{
  struct stat opened, named;
  char link[64];
  ssize_t n;
  if (fstat(f->fd, &opened) != 0)
    return NULL;
  if (stat(f->path, &named) == 0 && named.st_dev == opened.st_dev && named.st_ino == opened.st_ino)
    return f->path;
  snprintf(link, sizeof link, "/proc/self/fd/%d", f->fd);
  n = readlink(link, buf, size - 1);
  if (n <= 0 || opened.st_nlink == 0)
    return NULL;
  buf[n] = '\0';
  return buf;
}

/* followNs -- clock's ns after the start at rate hz (0: the clock counts ns) */
static double followNs(const FollowStruct *f, EventClock clock, uint64_t hz)
{
  double ticks = clock > f->startClock ? (double)(clock - f->startClock) : 0.0;
  return hz == 0 ? ticks : ticks * 1e9 / (double)hz;
}

/* followRateSay -- say how far the times printed are from a later
 * read's, which reckons every time at the rate the whole log gives
 * (hz): a ClockRate that reached the file after --follow stopped waiting
 * for it (or, before 3.0.10, a later ClockSync) changed it.  A time once
 * printed cannot change, and one that differs is not passed over in
 * silence.  design/tools.txt .eventcnv.follow.time */
static void followRateSay(const FollowStruct *f, uint64_t hz)
{
  double worst = 0.0;
  for (size_t i = 0; i < f->rates; ++i) {
    double d = followNs(f, f->rate[i].latest, f->rate[i].hz) - followNs(f, f->rate[i].latest, hz);
    if (f->rate[i].hz != hz && fabs(d) > fabs(worst))
      worst = d;
  }
  /* Rounded up: two times each rounded down to a ns differ by at most that. */
  unsigned long long up = (unsigned long long)fabs(worst);
  if ((double)up < fabs(worst))
    ++up;
  if (worst != 0.0)
    ReportFile(f->path, "times printed before the clock's rate reached the file (its ClockRate) "
               "were reckoned at the rate known then; a read of the log now puts them up to "
               "%llu ns %s%s", up,
               worst > 0 ? "earlier" : "later",
               f->rates == sizeof f->rate / sizeof f->rate[0] ? " (at least)" : "");
}

/* followEnd -- the end of --follow: the file as eventcnv reads it
 * without --follow, its live file recovered, and the events not printed
 * yet (at or after f->done: what the program wrote at its end, a last
 * block cut short, what only the live file holds) in time order; then
 * what eventcnv says of that log, and its exit status */
static int followEnd(const CnvOptionsStruct *opt, FollowStruct *f)
{
  CnvLogStruct log;
  char msg[512], name[4096];
  int err, ended = 0, status;
  memset(&log, 0, sizeof log);
  log.path = log.name = f->path;
  err = InputReadFd(f->fd, &log.in);
  if (err != 0) {
    ReportFile(f->path, "%s", strerror(err));
    return EXIT_BAD_STREAM;
  }
  (void)InputRecoverLive(followLiveName(f, name, sizeof name), &log.in, &log.recovered,
                         ReportToolName());
  if (EventStreamOpen(&log.stream, log.in.data, log.in.size, opt->resync ? EVENT_STREAM_RESYNC : 0,
                      msg, sizeof msg) != EventStreamOK) {
    ReportFile(f->path, "%s", msg);
    InputFree(&log.in);
    return EXIT_BAD_STREAM;
  }
  InputArchiveRecovered(EventStreamInfo(log.stream), &log.recovered);
  if (f->done == 0)
    CnvFilterInit(&f->filter, opt, EventStreamInfo(log.stream)->registry);
  followPrint(opt, f, log.stream, f->done, (size_t)-1, &ended);
  followInsertEnd(f, opt->insert);
  status = CnvFinish(opt, &log, EXIT_SUCCESS);
  if (f->exportFailed || f->rowsLost > 0)
    status = EXIT_BAD_STREAM;
  if (f->rowsLost > 0)
    ReportFile(f->path, "%llu rows were not shipped, as said", (unsigned long long)f->rowsLost);
  followRateSay(f, EventStreamInfo(log.stream)->clockHz);
  EventStreamClose(log.stream);
  InputFree(&log.in);
  return status;
}

/* followGone -- the program is gone, so nothing more will be written:
 * no thread of the header's pid runs, and no process has the file open
 * (one that writes a copy of a log, or a program in another pid
 * namespace, keeps --follow going).  With no header yet, a second after
 * the first look, no process has the file open.  design/tools.txt
 * .eventcnv.follow.gone */
static int followGone(const FollowStruct *f, unsigned looks)
{
  if (f->pid != 0)
    return InputProgramGone(f->pid, f->startMonotonic) && InputFileUnheld(f->fd);
  return looks >= 5 && InputFileUnheld(f->fd);
}

/* follow -- --follow: the events as the program writes them, buffer by
 * buffer, until StreamEnd, or a StreamExec that a look later still ends
 * the stream (a failed exec writes its own at once), or the program is
 * gone; then what eventcnv shows and says of the log without --follow.
 * Each look reads the file afresh; what it printed is known by offset.
 * The file is opened once and read through its descriptor: the image an
 * exec starts moves the log aside (LOG.execN) and writes a new one at
 * its path, which a look by name would take for the same stream.
 * design/tools.txt .eventcnv.follow */
static int follow(const CnvOptionsStruct *opt)
{
  FollowStruct *f = calloc(1, sizeof *f);
  int exec = 0, status = EXIT_BAD_STREAM;
  if (f == NULL) {
    Report("out of memory");
    return EXIT_BAD_STREAM;
  }
  f->path = opt->paths[0];
  if (opt->insert != NULL)
    signal(SIGPIPE, SIG_IGN);   /* a COMMAND that fails is said, not our death */
  f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) {
    ReportFile(f->path, "%s", strerror(errno));
    free(f);
    return EXIT_BAD_STREAM;
  }
  for (unsigned looks = 0; ; ++looks) {
    struct timespec pause = {0, 200000000};
    size_t was = f->done;
    /* Asked before the look, so that the look sees all a program that
     * is gone wrote. */
    int gone = followGone(f, looks);
    f->ended = 0;
    if (followOnce(opt, f) != 0)
      break;
    /* A block that fails its check look after look is damage: said,
     * and the end, as eventcnv without --follow (.eventcnv.follow.damage) */
    if (f->ended == 1 || (f->ended == 2 && exec && f->done == was) || gone
        || f->damageLooks >= FOLLOW_DAMAGE_LOOKS) {
      status = followEnd(opt, f);   /* exec'd: nothing came after its StreamExec */
      break;
    }
    exec = f->ended == 2;
    nanosleep(&pause, NULL);
  }
  followInsertEnd(f, opt->insert);
  (void)close(f->fd);
  free(f);
  return status;
}

/* CnvFollow -- follow, then every write of the output checked
 * (design/tools.txt .tools.output) */
int CnvFollow(const CnvOptionsStruct *opt)
{
  int status = follow(opt);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    Report("error writing output: %s", strerror(followErrno != 0 ? followErrno : errno));
    status = EXIT_BAD_STREAM;
  }
  return status;
}
