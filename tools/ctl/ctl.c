/* <tools/ctl/ctl.c> -- telltale-ctl: steer a running program from another shell
 *
 * .design: design/tools.txt .ctl
 *
 * Finds this user's telltale processes by their control files
 * (src/event/eventctl.h), writes a request into one and waits for the
 * program's control thread to answer.  No ptrace, no stop: the program
 * does what is asked through its own runtime, with its own registry.
 */

#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "eventctl.h"
#include "options.h"
#include "plinth.h"
#include "report.h"

static const char usageText[] =
  "usage: telltale-ctl [--dir DIR] [--timeout SECONDS] COMMAND\n"
  "       telltale-ctl --help | --version\n"
  "\n"
  "Steers a running program that uses telltale, through its control file\n"
  "(no ptrace; the program is not stopped).  Only the program's own user may.\n"
  "\n"
  "Commands:\n"
  "  list                     this user's telltale processes: pid, program, log,\n"
  "                           and each kind's record and output state\n"
  "  PID status               the same, for one process, and the events turned off\n"
  "  PID output on|off KINDS  output of kinds (\"Pool,Arena\", \"all\", \"all,-Ref\")\n"
  "  PID record on|off KINDS  recording of kinds\n"
  "  PID event on|off NAME    one event, by name\n"
  "  PID flush                every thread's recorded events to the log, now\n"
  "  PID snapshot FILE        the flight recorder (every thread's buffers, output\n"
  "                           or not) as a log of its own, in a new FILE\n"
  "  PID recent [N]           the latest N events (50), as the traceback prints them\n"
  "  PID filter add 'EVENT FIELD OP VALUE'\n"
  "                           keep, of EVENT, those whose FIELD passes (OP one of\n"
  "                           == != < <= > >=), e.g. 'PoolAlloc size>=4096'\n"
  "  PID filter clear [EVENT] remove EVENT's filters, or all\n"
  "\n"
  "Options (before the COMMAND):\n";

/* OptionsStruct -- what the command line asked for */
typedef struct OptionsStruct {
  const char *dir;              /* --dir's DIR, or NULL */
  const char *timeout;          /* --timeout's SECONDS, or NULL: 5 */
} OptionsStruct;

#define AT(field) offsetof(OptionsStruct, field)

/* options -- telltale-ctl's options, in the order --help gives them */
static const OptionStruct options[] = {
  /* name        alias arg             at            argName     help */
  {"--dir",      NULL, OptionValue,    AT(dir),      "DIR",
   "the control files' directory (else as\n"
   "TELLTALE_CTL_DIR)", NULL},
  {"--timeout",  NULL, OptionValue,    AT(timeout),  "SECONDS",
   "how long to wait for the program's answer (5)", NULL},
  {"--help",     NULL, OptionHelp,     0,            NULL,
   "print this help and exit", NULL},
  {"--version",  NULL, OptionVersion,  0,            NULL,
   "print telltale's version and exit", NULL},
};

#undef AT

static const char epilogue[] =
  "\n"
  "Each command returns once the program has done it: a change of output\n"
  "has taken effect in every thread.  Control files are in TELLTALE_CTL_DIR,\n"
  "else $XDG_RUNTIME_DIR/telltale, else /tmp/telltale-UID; a stale one (its\n"
  "process gone) is removed.  Exit 0 done, 1 refused or failed, 2 usage.\n";

/* version -- --version.  design/build.txt .pack.version */
static void version(FILE *out)
{
  fprintf(out, "telltale-ctl (telltale) %s\n", TELLTALE_VERSION_STRING);
}

/* The COMMAND and its arguments follow the options: those, such as
 * "output off -Ref", are no options. */
static const OptionsSpecStruct spec = {
  "telltale-ctl", usageText, options, sizeof options / sizeof options[0], epilogue, 27, 1,
  version
};

static double timeout = 5.0;

/* die -- a request that could not be made or was refused: exit 1 */
static _Noreturn void die(const char *message)
{
  Report("%s", message);
  exit(1);
}

/* CtlStruct -- a process's control file, open */
typedef struct CtlStruct {
  int fd;
  EventCtlPageStruct *page;
  char path[PATH_MAX];
} CtlStruct;

/* ctlOpen -- open and map pid's control file: 0, or 1 with why said
 * into why (stale files are removed) */
static int ctlOpen(const char *dir, const char *pid, CtlStruct *ctl, char *why, size_t whySize)
{
  struct stat st;
  void *base;
  (void)snprintf(ctl->path, sizeof ctl->path, "%s/%s%s", dir, pid, EVENT_CTL_SUFFIX);
  ctl->fd = open(ctl->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  /* A process makes its file on its control thread, just after it
   * starts: a live one is given a second.  .ctl.thread */
  for (int looks = 0; ctl->fd < 0 && errno == ENOENT && looks < 100
                      && (kill((pid_t)atol(pid), 0) == 0 || errno == EPERM); ++looks) {
    PlinthSleepNs(10000000);
    ctl->fd = open(ctl->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  }
  if (ctl->fd < 0) {
    int e = errno;
    if (e == ENOENT && (kill((pid_t)atol(pid), 0) == 0 || errno == EPERM))
      (void)snprintf(why, whySize, "process %s has no control file in %s: it is not a telltale "
                     "program of this user's, or it runs with TELLTALE_CTL=off", pid, dir);
    else
      (void)snprintf(why, whySize, "no telltale process %s that this user may steer (%s: %s)",
                     pid, ctl->path, strerror(e));
    return 1;
  }
  if (PlinthCtlFileCheck(ctl->fd) != 0 || fstat(ctl->fd, &st) != 0
      || (size_t)st.st_size < sizeof(EventCtlPageStruct)) {
    (void)snprintf(why, whySize, "%s is not a control file of this user's (mode 0600, %zu bytes)",
                   ctl->path, sizeof(EventCtlPageStruct));
    (void)close(ctl->fd);
    return 1;
  }
  if (PlinthCtlStale(ctl->fd)) {
    (void)unlink(ctl->path);
    (void)snprintf(why, whySize, "no telltale process %s: its control file was stale (removed)",
                   pid);
    (void)close(ctl->fd);
    return 1;
  }
  base = mmap(NULL, sizeof(EventCtlPageStruct), PROT_READ | PROT_WRITE, MAP_SHARED, ctl->fd, 0);
  if (base == MAP_FAILED) {
    (void)snprintf(why, whySize, "%s: %s", ctl->path, strerror(errno));
    (void)close(ctl->fd);
    return 1;
  }
  ctl->page = base;
  if (memcmp(ctl->page->magic, EVENT_CTL_MAGIC, sizeof ctl->page->magic) != 0
      || ctl->page->version != EVENT_CTL_VERSION) {
    (void)snprintf(why, whySize, "%s is not a control file of this telltale's (version %u)",
                   ctl->path, EVENT_CTL_VERSION);
    (void)munmap(base, sizeof(EventCtlPageStruct));
    (void)close(ctl->fd);
    return 1;
  }
  return 0;
}

static void ctlClose(CtlStruct *ctl)
{
  (void)munmap(ctl->page, sizeof(EventCtlPageStruct));
  (void)close(ctl->fd);
}

static double now(void)
{
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The answer to the last request, copied while its client's turn lasts,
 * and why there was none (ask's result AskNone). */
static char answer[EVENT_CTL_ANSWER_MAX];
static const char *noAnswer = "";

enum { AskNone = -1 };

/* waitDone -- wait until the page's done word is number, at most until
 * the monotonic time until: 1 if it is */
static int waitDone(EventCtlPageStruct *page, uint32_t number, double until)
{
  for (;;) {
    uint32_t done = __atomic_load_n(&page->done, __ATOMIC_ACQUIRE);
    double left = until - now();
    if (done == number)
      return 1;
    if (left <= 0)
      return 0;
    (void)PlinthFutexWait(&page->done, done, left < 0.1 ? (uint64_t)(left * 1e9) + 1 : 100000000u);
  }
}

/* ask -- one request, answered: the program's result (0 or an errno
 * code), with its answer in answer[]; or AskNone, with why in noAnswer.
 * Clients take turns by an OFD lock on the file's first byte, held
 * until the answer is copied.  A request not taken within the time is
 * taken back, so that it is never done later; one being done when the
 * time runs out is waited for as long again.  .ctl */
static int ask(CtlStruct *ctl, unsigned op, unsigned on, unsigned count, const char *arg,
               double within)
{
  EventCtlPageStruct *page = ctl->page;
  struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  double until = now() + within;
  uint32_t word, number;
  int res = AskNone;
  answer[0] = '\0';
  while (fcntl(ctl->fd, F_OFD_SETLK, &lock) != 0) {
    if ((errno != EAGAIN && errno != EACCES) || now() > until) {
      noAnswer = "other telltale-ctl commands held the process's turn all that time";
      return AskNone;
    }
    PlinthSleepNs(1000000);
  }
  word = __atomic_load_n(&page->state, __ATOMIC_ACQUIRE);
  /* A request a client left (it died, or gave up while it was being
   * done): one not taken is taken back; one being done is waited for. */
  if (EVENT_CTL_STATE(word) == EventCtlAsked)
    (void)__atomic_compare_exchange_n(&page->state, &word,
                                      EVENT_CTL_WORD(EVENT_CTL_NUMBER(word), EventCtlWithdrawn),
                                      0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  if (EVENT_CTL_STATE(word) == EventCtlServing && !waitDone(page, EVENT_CTL_NUMBER(word), until)) {
    noAnswer = "it was still doing an earlier request, which another command left";
    goto out;
  }
  page->op = op;
  page->on = on;
  page->count = count;
  page->result = 0;
  (void)snprintf(page->arg, sizeof page->arg, "%s", arg != NULL ? arg : "");
  number = (EVENT_CTL_NUMBER(__atomic_load_n(&page->state, __ATOMIC_ACQUIRE)) + 1) & 0x3FFFFFFFu;
  __atomic_store_n(&page->state, EVENT_CTL_WORD(number, EventCtlAsked), __ATOMIC_RELEASE);
  PlinthFutexWake(&page->state);
  if (!waitDone(page, number, until)) {
    word = EVENT_CTL_WORD(number, EventCtlAsked);
    if (__atomic_compare_exchange_n(&page->state, &word,
                                    EVENT_CTL_WORD(number, EventCtlWithdrawn), 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      noAnswer = "the request was taken back: nothing was changed (is the process stopped?)";
      goto out;
    }
    if (!waitDone(page, number, now() + within)) {
      noAnswer = "it was doing the request when the time ran out, and had not finished after as "
                 "long again: it may yet take effect";
      goto out;
    }
  }
  res = page->result;
  memcpy(answer, page->answer, sizeof answer);
  answer[sizeof answer - 1] = '\0';
out:
  lock.l_type = F_UNLCK;
  (void)fcntl(ctl->fd, F_OFD_SETLK, &lock);
  return res;
}

/* outputDone -- every write to standard output checked: a failed one
 * is exit 1, said */
static int outputDone(int status)
{
  if (fflush(stdout) != 0 || ferror(stdout)) {
    Report("writing to standard output: %s", strerror(errno));
    return 1;
  }
  return status;
}

/* answered -- print the answer: on standard output if the program did
 * the request, else on standard error as telltale-ctl's, and exit 1 */
static void answered(const CtlStruct *ctl, int res, const char *pid)
{
  size_t n = strlen(answer);
  (void)ctl;
  if (res == AskNone) {
    Report("process %s did not answer within %g s: %s", pid, timeout, noAnswer);
    exit(outputDone(1));
  }
  while (n > 0 && answer[n - 1] == '\n')
    --n;
  if (res != 0) {
    Report("process %s: %.*s", pid, (int)n, answer);
    exit(outputDone(1));
  }
  if (n > 0)
    printf("%.*s\n", (int)n, answer);
}

/* list -- a line per live process, the first of its status answer,
 * then its kinds on one line; stale files removed and said */
static int list(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  int any = 0;
  if (d == NULL) {
    if (errno == ENOENT)
      return 0;
    ReportFile(dir, "%s", strerror(errno));
    return 1;
  }
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name), s = strlen(EVENT_CTL_SUFFIX);
    char pid[64], why[PATH_MAX + 200];
    CtlStruct ctl;
    int res;
    if (n <= s || n - s >= sizeof pid || strcmp(e->d_name + n - s, EVENT_CTL_SUFFIX) != 0)
      continue;
    memcpy(pid, e->d_name, n - s);
    pid[n - s] = '\0';
    if (strspn(pid, "0123456789") != n - s)
      continue;
    if (ctlOpen(dir, pid, &ctl, why, sizeof why) != 0) {
      Report("%s", why);
      continue;
    }
    res = ask(&ctl, EventCtlStatus, 0, 0, NULL, timeout < 1 ? timeout : 1);
    if (res == AskNone)
      printf("pid %s (not answering: stopped?)\n", pid);
    else {
      /* "pid P program X log L writer W" then "kind K record R output O" lines */
      const char *p = answer;
      const char *nl = strchr(p, '\n');
      printf("%.*s\n ", nl != NULL ? (int)(nl - p) : (int)strlen(p), p);
      while (nl != NULL && strncmp(nl + 1, "kind ", 5) == 0) {
        char name[128], rec[8], out[8];
        if (sscanf(nl + 1, "kind %127s record %7s output %7s", name, rec, out) == 3)
          printf(" %s=%s%s", name, strcmp(rec, "on") == 0 ? "R" : "-",
                 strcmp(out, "on") == 0 ? "O" : "-");
        nl = strchr(nl + 1, '\n');
      }
      printf("\n");
    }
    any = 1;
    ctlClose(&ctl);
  }
  (void)closedir(d);
  if (!any)
    Report("no telltale process of this user's in %s", dir);
  return 0;
}

/* recent -- the program writes its traceback into a file made here */
static void recent(CtlStruct *ctl, const char *dir, const char *pid, unsigned count)
{
  char path[PATH_MAX + 16], buf[65536];
  int fd, res;
  ssize_t got;
  (void)snprintf(path, sizeof path, "%s/recent.XXXXXX", dir);
  fd = mkstemp(path);
  if (fd < 0)
    die("cannot make a file for the answer in the control directory");
  res = ask(ctl, EventCtlRecent, 0, count, path, timeout);
  while (res == 0 && (got = read(fd, buf, sizeof buf)) > 0)
    if (fwrite(buf, 1, (size_t)got, stdout) != (size_t)got)
      break;                    /* said at the end: outputDone */
  (void)close(fd);
  (void)unlink(path);
  answered(ctl, res, pid);
}

int main(int argc, char **argv)
{
  char dir[PATH_MAX], why[PATH_MAX + 200];
  const char *pid, *cmd;
  OptionsStruct opt;
  CtlStruct ctl;
  const char **args;
  size_t argCount;
  int i = 0;
  OptionsParse(&spec, argc, argv, &opt, sizeof opt, &args, &argCount);
  if (opt.dir != NULL)
    (void)setenv("TELLTALE_CTL_DIR", opt.dir, 1);
  if (opt.timeout != NULL) {
    char *end;
    timeout = strtod(opt.timeout, &end);
    if (*end != '\0' || !(timeout > 0))
      ReportUsage("--timeout takes seconds, more than 0: %s", opt.timeout);
  }
  /* From here argv is the operands: the COMMAND and its arguments. */
  argc = (int)argCount;
  argv = (char **)args;
  if (i >= argc)
    ReportUsage("give a COMMAND: 'list', or a PID and a command");
  if (PlinthCtlDir(dir, sizeof dir, why, sizeof why) != 0)
    die(why);
  if (strcmp(argv[i], "list") == 0 && i + 1 == argc)
    return outputDone(list(dir));
  pid = argv[i];
  if (strspn(pid, "0123456789") != strlen(pid) || i + 1 >= argc)
    ReportUsage("expected 'list' or a PID and a command");
  cmd = argv[i + 1];
  i += 2;
  if (ctlOpen(dir, pid, &ctl, why, sizeof why) != 0)
    die(why);
  if (strcmp(cmd, "status") == 0 && i == argc)
    answered(&ctl, ask(&ctl, EventCtlStatus, 0, 0, NULL, timeout), pid);
  else if ((strcmp(cmd, "output") == 0 || strcmp(cmd, "record") == 0
            || strcmp(cmd, "event") == 0)
           && i + 2 == argc && (strcmp(argv[i], "on") == 0 || strcmp(argv[i], "off") == 0)) {
    unsigned op = cmd[0] == 'o' ? EventCtlOutput : cmd[0] == 'r' ? EventCtlRecord : EventCtlEvent;
    answered(&ctl, ask(&ctl, op, strcmp(argv[i], "on") == 0, 0, argv[i + 1], timeout), pid);
  } else if (strcmp(cmd, "filter") == 0 && i + 2 == argc && strcmp(argv[i], "add") == 0)
    answered(&ctl, ask(&ctl, EventCtlFilter, 1, 0, argv[i + 1], timeout), pid);
  else if (strcmp(cmd, "filter") == 0 && (i + 1 == argc || i + 2 == argc)
           && strcmp(argv[i], "clear") == 0)
    answered(&ctl, ask(&ctl, EventCtlFilter, 0, 0, i + 1 < argc ? argv[i + 1] : "all", timeout),
             pid);
  else if (strcmp(cmd, "flush") == 0 && i == argc)
    answered(&ctl, ask(&ctl, EventCtlFlush, 0, 0, NULL, timeout), pid);
  else if (strcmp(cmd, "snapshot") == 0 && i + 1 == argc) {
    char path[PATH_MAX];
    if (argv[i][0] == '/')
      (void)snprintf(path, sizeof path, "%s", argv[i]);
    else if (getcwd(path, sizeof path) == NULL
             || strlen(path) + 1 + strlen(argv[i]) >= sizeof path)
      die("cannot name the snapshot's file from here");
    else {
      strcat(path, "/");
      strcat(path, argv[i]);
    }
    answered(&ctl, ask(&ctl, EventCtlSnapshot, 0, 0, path, timeout), pid);
  } else if (strcmp(cmd, "recent") == 0 && i + 1 >= argc) {
    unsigned long n = 50;
    if (i < argc) {
      char *end;
      n = strtoul(argv[i], &end, 10);
      if (*end != '\0' || n == 0 || n > 4096)
        ReportUsage("recent takes a count of 1 to 4096: %s", argv[i]);
    }
    recent(&ctl, dir, pid, (unsigned)n);
  } else
    ReportUsage("unknown command or arguments: %s", cmd);
  ctlClose(&ctl);
  return outputDone(0);
}
