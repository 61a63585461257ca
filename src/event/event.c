/* <src/event/event.c> -- the event runtime: buffers, blocks, streams, control
 *
 * .design: design/telemetry.txt
 *
 * The hot path is inline in event.h.  This file holds the slow path
 * (setting a thread up, writing a full buffer out, the flight-recorder
 * ring), the stream header, kind control, interning, and the session's
 * start and end.  Everything platform-specific goes through the plinth;
 * this file includes no OS headers.
 *
 * Locking: one plinth lock guards the session, the stream list, the
 * thread list and the intern table.  A thread's buffers are written only
 * by that thread, except at EventFinish (design/telemetry.txt
 * .sol.finish); the asynchronous writer reads full ones, under the queue
 * lock's rules (.sol.writer).
 */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "eventread.h"
#include "plinth.h"

/* The hot path's globals.  design/telemetry.txt .sol.control */
_Thread_local EventBufStruct EventThreadBuf[EVENT_KIND_LIMIT]
  __attribute__((tls_model("initial-exec")));
_Atomic EventKindSet EventKindRecord = (EventKindSet)-1;
_Atomic EventKindSet EventKindControl = (EventKindSet)-1;
_Atomic unsigned char EventOff[EVENT_CODE_LIMIT];

#define KIND_OWN EVENT_KIND_BIT(EventKindTelltale)  /* always on: .sol.control.own */
#define BUFFER_SIZE_DEFAULT ((size_t)64 * 1024)
#define BUFFER_SIZE_MIN ((size_t)4096)
#define BUFFER_SIZE_MAX ((size_t)64 * 1024 * 1024)
_Static_assert(BUFFER_SIZE_MAX <= EVENT_BLOCK_LENGTH_MAX, "a buffer is a block");
#define STREAM_LIMIT 8
#define TEXT_LINE_MAX 4096
#define FILE_NAME_MAX 1023      /* characters in TELLTALE_FILE */
#define THREAD_NAME_MAX 31      /* characters of a thread's name kept for the traceback */
#define MESSAGE_MAX 1023        /* characters in a line that say writes */
#define DECIMAL_MAX 20          /* digits of a uint64_t in decimal */

/* EventKindBufStruct -- the runtime's side of one thread's buffer for one kind.
 * The kind fills one slot while the other holds the events before
 * them, for the flight recorder.  .sol.ring, .sol.live */
typedef struct EventKindBufStruct {
  unsigned char *slot[2];       /* the kind's two buffers */
  size_t slotSize[2];           /* bytes in each */
  unsigned char mapped[2];      /* 1: the slot is a region of the live file */
  uint64_t seq[2];              /* live slots: the block's sequence number */
  unsigned pending[2];          /* writer jobs reading the slot (queue lock) */
  unsigned current;             /* the slot being filled */
  uintptr_t previousEnd;        /* end of the data in the other slot, or 0 */
  uintptr_t sent;               /* the current slot has been sent up to here */
  _Atomic unsigned moves;       /* times the ring moved: a traceback read
                                   without the lock checks it (.sol.traceback) */
} EventKindBufStruct;

/* Levels: a signal handler running on a thread emits into buffers of its
 * own level, so that its events never land inside an event it
 * interrupted.  Level 0 is the thread's ordinary code; handlers nested
 * deeper than LEVEL_LIMIT - 1 drop their events, counted.
 * design/telemetry.txt .sol.signal.level */
#define LEVEL_LIMIT 4

typedef struct EventThreadStruct {
  struct EventThreadStruct *next, *prev;
  uint32_t serial;
  EventBufStruct *bufs;         /* the thread's EventThreadBuf: the running level's */
  size_t bufferSize;            /* size of each of its buffers */
  void *altStack;               /* its alternate signal stack, or NULL */
  unsigned level;               /* the running level */
  unsigned deeper;              /* handlers nested past the last level */
  char name[THREAD_NAME_MAX + 1];  /* its name, for the traceback */
  EventBufStruct saved[LEVEL_LIMIT][EVENT_KIND_LIMIT];  /* levels not running: next, limit */
  EventKindBufStruct levels[LEVEL_LIMIT][EVENT_KIND_LIMIT];
  unsigned char sink[EVENT_SIZE_MAX + EVENT_END_SLACK];  /* its dropped events: .sol.dropped */
} EventThreadStruct;

/* hotBuf -- a level's next and limit: in EventThreadBuf if it is running */
static EventBufStruct *hotBuf(EventThreadStruct *thread, unsigned level, unsigned kind)
{
  if (level == thread->level && thread->deeper == 0)
    return &thread->bufs[kind];
  return &thread->saved[level][kind];
}

typedef struct EventStreamEntryStruct {
  PlinthStream stream;
  int binary;                   /* 1: the binary log; 0: a text mirror */
  int owned;                    /* 1: telltale opened it and closes it */
  EventKindSet kinds;           /* text mirror: kinds to show */
  int failed;                   /* a write failed; reported once */
  uint32_t *index;              /* the next block's index (.stream.check) */
} EventStreamEntryStruct;

/* The session.  design/telemetry.txt .sol.session */
static struct {
  int initialized;
  int started;                  /* the streams have their headers */
  int finished;                 /* EventFinish ran; no default stream now */
  int ending;                   /* it ran at exit with threads still running,
                                   whose later events still go out: .sol.finish */
  size_t bufferSize;
  uint64_t blocks;              /* blocks written: the next sequence number */
  uint32_t threadSerial;        /* serial of the last thread set up */
  EventThreadStruct *threads;
  size_t streamCount;
  EventStreamEntryStruct streams[STREAM_LIMIT];
  PlinthStream live;            /* the live file, or NULL: .sol.live */
  char liveName[FILE_NAME_MAX + sizeof ".live"];
  int liveFailed;               /* mapping failed; reported once */
  int liveKeep;                 /* the log lost writes: keep the live file */
  size_t liveHeaderLength;      /* its header, a page or more */
  uint64_t liveRegions, liveRegionsSaid;  /* regions made; the count in its header */
  PlinthStream liveLog;         /* the log the live file is beside */
  struct LiveRegionStruct *liveFree;  /* regions of the live file to reuse */
  int mapAllowed;               /* TELLTALE_MAP is not off */
  int async;                    /* the asynchronous writer: .sol.writer */
  int dropWhenBehind;           /* TELLTALE_WRITER=async,drop */
  int signals;                  /* the fatal-signal handlers are installed */
  volatile int dumped;          /* the traceback has been written */
  unsigned dumpCount;           /* events in the traceback: TELLTALE_DUMP */
  EventKindSet mirrorKinds;     /* TELLTALE_MIRROR */
  char filePattern[FILE_NAME_MAX + 1];  /* TELLTALE_FILE, or "telltale.log": %p, %t, %% */
  char fileName[FILE_NAME_MAX + 1];  /* the log: filePattern expanded */
  int noDefault;                /* TELLTALE_FILE=none */
  uint64_t startClock, startRealtime, startMonotonic;
  uint32_t id;                  /* the session id, in every block (.stream.check) */
  uint32_t streamIndex[STREAM_LIMIT];  /* each stream's next block index */
  EventClock syncClock;         /* the latest ClockSync's pair: .sol.clock */
  uint64_t syncMonotonic;
  /* the intern table: open addressing, strings owned.  inSession: the
   * string's Intern event is in this session's stream (.sol.intern) */
  struct { char *string; EventW id; int inSession; } *interns;
  size_t internCount, internSize;
} session;

/* LiveRegionStruct -- a region of the live file no thread is using */
typedef struct LiveRegionStruct {
  struct LiveRegionStruct *next;
  unsigned char *base;
  size_t size;
} LiveRegionStruct;

static _Thread_local EventThreadStruct *threadState
  __attribute__((tls_model("initial-exec")));

static void sessionStart(void);
static void internSessionEnd(void);
static void sessionClock(void);
static const char *labelLookup(void *closure, uint64_t address);
static size_t formatUnsigned(char *buf, uint64_t value);
#define DUMP_LIMIT 4096


/* Messages ---------------------------------------------------------- */

/* sayv -- write "telltale: ", the strings up to a NULL, and a newline
 * to fd; no stdio and no malloc, so it can be used anywhere, a signal
 * handler included */
static void sayv(int fd, const char *first, va_list args)
{
  char line[MESSAGE_MAX + 1];
  size_t n = 0;
  const char *s = "telltale: ";
  for (int i = 0; s != NULL; ++i) {
    size_t len = strlen(s);
    if (len > sizeof line - 1 - n)
      len = sizeof line - 1 - n;
    memcpy(line + n, s, len);
    n += len;
    s = i == 0 ? first : va_arg(args, const char *);
  }
  line[n++] = '\n';
  PlinthWriteFd(fd, line, n);
}

/* say -- sayv to stderr */
static void say(const char *first, ...)
{
  va_list args;
  va_start(args, first);
  sayv(2, first, args);
  va_end(args);
}

/* sayTo -- sayv to fd */
static void sayTo(int fd, const char *first, ...)
{
  va_list args;
  va_start(args, first);
  sayv(fd, first, args);
  va_end(args);
}

/* append -- add src to the string in dst, cut to fit size */
static void append(char *dst, size_t size, const char *src)
{
  size_t n = strlen(dst), len = strlen(src);
  if (n + 1 >= size)
    return;
  if (len > size - 1 - n)
    len = size - 1 - n;
  memcpy(dst + n, src, len);
  dst[n + len] = '\0';
}

/* formatUnsigned -- value in decimal; async-signal-safe */
static size_t formatUnsigned(char *buf, uint64_t value)
{
  char digits[DECIMAL_MAX];
  size_t d = 0, n = 0;
  do {
    digits[d++] = (char)('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (d > 0)
    buf[n++] = digits[--d];
  buf[n] = '\0';
  return n;
}

/* formatHex -- value in hexadecimal, without 0x */
static size_t formatHex(char *buf, uint64_t value)
{
  char digits[24];
  size_t d = 0, n = 0;
  do {
    digits[d++] = "0123456789abcdef"[value & 0xf];
    value >>= 4;
  } while (value != 0);
  while (d > 0)
    buf[n++] = digits[--d];
  buf[n] = '\0';
  return n;
}

static void copyString(char *dst, size_t size, const char *src)
{
  size_t len = strlen(src);
  if (size == 0)
    return;
  if (len >= size)
    len = size - 1;
  memcpy(dst, src, len);
  dst[len] = '\0';
}


/* Kind control ----------------------------------------------------- */

/* EventKindIndex -- a kind's index by name, or -1 */
int EventKindIndex(const char *name)
{
  for (unsigned i = 0; i < EventRegistry.kindCount; ++i)
    if (strcmp(EventRegistry.kinds[i].name, name) == 0)
      return (int)i;
  return -1;
}

static EventKindSet allKinds(void)
{
  unsigned n = EventRegistry.kindCount;
  return n >= 32 ? (EventKindSet)-1 : EVENT_KIND_BIT(n) - 1;
}

/* parseNumber -- a whole decimal number, or hexadecimal after 0x; 0,
 * or 34 (ERANGE) past UINT64_MAX, or 22 (EINVAL).  Never octal: a
 * leading 0 is decimal.  *endReturn gets where the digits stop. */
static int parseNumber(const char *p, uint64_t *valueReturn, const char **endReturn)
{
  uint64_t value = 0;
  unsigned base = 10, digits = 0;
  int res = 0;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
    base = 16, p += 2;
  for (;; ++p, ++digits) {
    unsigned d;
    if (*p >= '0' && *p <= '9')
      d = (unsigned)(*p - '0');
    else if (base == 16 && *p >= 'a' && *p <= 'f')
      d = (unsigned)(*p - 'a' + 10);
    else if (base == 16 && *p >= 'A' && *p <= 'F')
      d = (unsigned)(*p - 'A' + 10);
    else
      break;
    if (value > (UINT64_MAX - d) / base)
      res = 34; /* ERANGE */
    value = value * base + d;
  }
  *valueReturn = value;
  *endReturn = p;
  return digits == 0 ? 22 : res;
}

/* EventKindParse -- parse a kind set: "all", "none", "Arena,Pool",
 * "all,-Ref", or MPS-style masks ("0x3f", "all,-0x40").
 * design/telemetry.txt .sol.env */
int EventKindParse(const char *spec, EventKindSet *kindsReturn, char *err, size_t errSize)
{
  EventKindSet kinds = 0;
  const char *p = spec;
  if (spec == NULL || kindsReturn == NULL)
    return 22; /* EINVAL */
  /* No room for a message: write none.  (The unknown-kind message below
   * appends with strlen(err), which needs a terminated err.) */
  if (errSize == 0)
    err = NULL;
  while (*p == ' ' || *p == '\t')
    ++p;
  if (*p == '\0') {
    if (err != NULL)
      copyString(err, errSize, "no kinds given; say 'none' for no kinds");
    return 22;
  }
  while (*p != '\0') {
    char name[EVENT_NAME_MAX + 2];
    size_t len = 0;
    int remove = 0;
    while (*p == ' ' || *p == '\t')
      ++p;
    if (*p == '-' || *p == '+') {
      remove = *p == '-';
      ++p;
    }
    while (p[len] != '\0' && p[len] != ',' && p[len] != ' ' && p[len] != '\t')
      ++len;
    if (*p >= '0' && *p <= '9') {   /* a mask: kind names never start with a digit */
      uint64_t mask;
      const char *end;
      int res = parseNumber(p, &mask, &end);
      if (res != 0 || end != p + len || mask > allKinds()) {
        if (err != NULL) {
          char token[EVENT_NAME_MAX + 1], all[24] = "0x";
          size_t shown = len < sizeof token - 1 ? len : sizeof token - 1;
          memcpy(token, p, shown);
          token[shown] = '\0';
          formatHex(all + 2, allKinds());
          copyString(err, errSize, "'");
          append(err, errSize, token);
          if (res != 0 || end != p + len)
            append(err, errSize, "' is not a mask (decimal, or hexadecimal after 0x)");
          else {
            append(err, errSize, "' has bits for kinds the registry lacks: all is ");
            append(err, errSize, all);
          }
        }
        return 22;
      }
      p += len;
      while (*p == ' ' || *p == '\t')
        ++p;
      if (*p == ',')
        ++p;
      kinds = remove ? kinds & ~(EventKindSet)mask : kinds | (EventKindSet)mask;
      continue;
    }
    if (len == 0 || len > EVENT_NAME_MAX) {
      if (err != NULL)
        copyString(err, errSize, len == 0 ? "empty kind name" : "kind name too long");
      return 22;
    }
    memcpy(name, p, len);
    name[len] = '\0';
    p += len;
    while (*p == ' ' || *p == '\t')
      ++p;
    if (*p == ',')
      ++p;
    {
      EventKindSet these;
      if (strcmp(name, "all") == 0)
        these = allKinds();
      else if (strcmp(name, "none") == 0) {
        these = allKinds();
        remove = !remove;
      } else {
        int index = EventKindIndex(name);
        if (index < 0) {
          if (err != NULL) {
            size_t n;
            copyString(err, errSize, "unknown kind '");
            n = strlen(err);
            copyString(err + n, errSize - n, name);
            n = strlen(err);
            copyString(err + n, errSize - n, "'; the kinds are all, none, ");
            for (unsigned i = 0; i < EventRegistry.kindCount; ++i) {
              n = strlen(err);
              copyString(err + n, errSize - n, EventRegistry.kinds[i].name);
              n = strlen(err);
              if (i + 1 < EventRegistry.kindCount)
                copyString(err + n, errSize - n, ", ");
            }
          }
          return 22;
        }
        these = EVENT_KIND_BIT(index);
      }
      kinds = remove ? kinds & ~these : kinds | these;
    }
  }
  *kindsReturn = kinds;
  return 0;
}

static EventKindSet control(_Atomic EventKindSet *set, EventKindSet reset, EventKindSet flip)
{
  EventKindSet old = atomic_load(set), new;
  do {
    new = (((old & ~reset) ^ flip) | KIND_OWN) & allKinds();
  } while (!atomic_compare_exchange_weak(set, &old, new));
  return old;
}

/* EventControl -- change output control: new = (old & ~reset) ^ flip */
EventKindSet EventControl(EventKindSet reset, EventKindSet flip)
{
  return control(&EventKindControl, reset, flip);
}

EventKindSet EventControlSet(EventKindSet kinds)
{
  return control(&EventKindControl, kinds, kinds);
}

EventKindSet EventControlReset(EventKindSet kinds)
{
  return control(&EventKindControl, kinds, 0);
}

EventKindSet EventControlFlip(EventKindSet kinds)
{
  return control(&EventKindControl, 0, kinds);
}

/* EventRecordByName -- turn one event off or on by name.
 * design/telemetry.txt .sol.control.event */
int EventRecordByName(const char *name, int on, char *err, size_t errSize)
{
  if (errSize == 0)
    err = NULL;
  if (name == NULL)
    return 22; /* EINVAL */
  for (unsigned i = 0; i < EventRegistry.eventCount; ++i) {
    const EventDescStruct *e = &EventRegistry.events[i];
    if (strcmp(e->name, name) != 0)
      continue;
    if (e->code < EVENT_CODE_RESERVED_LIMIT) {
      if (err != NULL)
        copyString(err, errSize, "telltale's own events cannot be turned off");
      return 1; /* EPERM */
    }
    atomic_store(&EventOff[e->code], on ? 0 : 1);
    return 0;
  }
  if (err != NULL) {
    size_t n;
    copyString(err, errSize, "unknown event '");
    n = strlen(err);
    copyString(err + n, errSize - n, name);
    n = strlen(err);
    copyString(err + n, errSize - n, "'; eventcnv --list shows a log's events");
  }
  return 2; /* ENOENT */
}

/* envBad -- a setting that cannot be used: say so, naming the variable,
 * what was wrong or expected, and what is used instead, and carry on.
 * Each variable is read once, so this is said once.  Telemetry never
 * takes a program down.  design/telemetry.txt .sol.env */
static void envBad(const char *variable, const char *why, const char *instead)
{
  say(variable, ": ", why, "; using ", instead, NULL);
}

/* envBadValue -- envBad for "'VALUE' EXPECTED" */
static void envBadValue(const char *variable, const char *value, const char *expected,
                        const char *instead)
{
  char why[512] = "'";
  append(why, sizeof why, value);
  append(why, sizeof why, "' ");
  append(why, sizeof why, expected);
  envBad(variable, why, instead);
}

/* envEvents -- TELLTALE_EVENTS: "-Name,+Name,...".  On a mistake no
 * event is turned off (the default), and it is said. */
static void envEvents(void)
{
  const char *p = PlinthGetEnv("TELLTALE_EVENTS");
  char err[256];
  if (p == NULL)
    return;
  err[0] = '\0';
  while (*p != '\0' && err[0] == '\0') {
    char name[EVENT_NAME_MAX + 2];
    size_t len = 0;
    int on = 0;
    while (*p == ' ' || *p == ',')
      ++p;
    if (*p == '\0')
      break;
    if (*p == '-' || *p == '+') {
      on = *p == '+';
      ++p;
    } else {
      copyString(err, sizeof err, "'");
      append(err, sizeof err, p);
      append(err, sizeof err, "': each event needs - (off) or + (on) before its name");
      break;
    }
    while (p[len] != '\0' && p[len] != ',' && p[len] != ' ')
      ++len;
    if (len == 0 || len > EVENT_NAME_MAX) {
      copyString(err, sizeof err, "an event name is empty or too long");
      break;
    }
    memcpy(name, p, len);
    name[len] = '\0';
    p += len;
    (void)EventRecordByName(name, on, err, sizeof err);
  }
  if (err[0] != '\0') {
    for (unsigned i = 0; i < EventRegistry.eventCount; ++i)
      atomic_store(&EventOff[EventRegistry.events[i].code], 0);
    envBad("TELLTALE_EVENTS", err, "the default, every event on");
  }
}

/* EventRecord -- change recording control: kinds not recorded are not
 * even buffered.   design/telemetry.txt .sol.control */
EventKindSet EventRecord(EventKindSet reset, EventKindSet flip)
{
  return control(&EventKindRecord, reset, flip);
}


/* Initialization --------------------------------------------------- */

/* envKinds -- a kind-set variable, or otherwise (named by otherName) */
static EventKindSet envKinds(const char *variable, EventKindSet otherwise, const char *otherName)
{
  const char *value = PlinthGetEnv(variable);
  EventKindSet kinds;
  char err[512], instead[64] = "the default, ";
  if (value == NULL)
    return otherwise;
  if (EventKindParse(value, &kinds, err, sizeof err) != 0) {
    append(instead, sizeof instead, otherName);
    envBad(variable, err, instead);
    return otherwise;
  }
  return kinds;
}

/* envSwitch -- an on/off variable, or otherwise */
static int envSwitch(const char *variable, int otherwise)
{
  const char *value = PlinthGetEnv(variable);
  if (value == NULL || value[0] == '\0')
    return otherwise;
  if (strcmp(value, "on") == 0 || strcmp(value, "1") == 0)
    return 1;
  if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0)
    return 0;
  envBadValue(variable, value, "must be on or off (or 1 or 0)",
              otherwise ? "the default, on" : "the default, off");
  return otherwise;
}

/* envNumber -- a decimal count from 0 to limit, or otherwise; a larger
 * number is taken as limit, saying so */
static unsigned long envNumber(const char *variable, unsigned long otherwise, unsigned long limit)
{
  const char *value = PlinthGetEnv(variable);
  const char *end;
  uint64_t n;
  char expected[64] = "is not a number from 0 to ", instead[48];
  int res;
  if (value == NULL || value[0] == '\0')
    return otherwise;
  res = value[0] >= '0' && value[0] <= '9' ? parseNumber(value, &n, &end) : 22;
  if (res == 22 || *end != '\0' ) {
    formatUnsigned(expected + strlen(expected), limit);
    copyString(instead, sizeof instead, "the default, ");
    formatUnsigned(instead + strlen(instead), otherwise);
    envBadValue(variable, value, expected, instead);
    return otherwise;
  }
  if (res != 0 || n > limit) {
    formatUnsigned(expected + strlen(expected), limit);
    formatUnsigned(instead, limit);
    envBadValue(variable, value, expected, instead);
    return limit;
  }
  return (unsigned long)n;
}

/* envBuffer -- TELLTALE_BUFFER: a power of two from BUFFER_SIZE_MIN to
 * BUFFER_SIZE_MAX, in decimal with k or M (or G, always too large).  Too
 * small or too large is taken as the nearest bound, and a size between
 * powers as the next power up, saying so; what is not a size leaves the
 * default. */
static size_t envBuffer(void)
{
  const char *value = PlinthGetEnv("TELLTALE_BUFFER");
  const char *end;
  const char *expected = "is not a power of two from 4096 to 64M (suffixes k and M)";
  uint64_t size;
  char instead[48];
  unsigned shift = 0;
  int res;
  if (value == NULL || value[0] == '\0')
    return BUFFER_SIZE_DEFAULT;
  res = value[0] >= '0' && value[0] <= '9' ? parseNumber(value, &size, &end) : 22;
  if (res != 22 && (*end == 'k' || *end == 'K'))
    shift = 10, ++end;
  else if (res != 22 && (*end == 'm' || *end == 'M'))
    shift = 20, ++end;
  else if (res != 22 && (*end == 'g' || *end == 'G'))
    shift = 30, ++end;          /* always out of range: the nearest bound */
  if (res == 22 || *end != '\0' ) {
    envBadValue("TELLTALE_BUFFER", value, expected, "the default, 64k");
    return BUFFER_SIZE_DEFAULT;
  }
  if (res == 0 && size <= (uint64_t)BUFFER_SIZE_MAX >> shift) {
    size <<= shift;
    if (size >= BUFFER_SIZE_MIN && (size & (size - 1)) == 0)
      return (size_t)size;
    if (size < BUFFER_SIZE_MIN)
      size = BUFFER_SIZE_MIN;
    while ((size & (size - 1)) != 0)
      size = (size | (size - 1)) + 1;   /* up to the next power of two */
  } else
    size = BUFFER_SIZE_MAX;
  formatUnsigned(instead, size);
  append(instead, sizeof instead, " bytes");
  envBadValue("TELLTALE_BUFFER", value, expected, instead);
  return (size_t)size;
}

/* fileExpand -- the log's name from TELLTALE_FILE's pattern: %p the
 * process id, %t the UTC time (20261124T021500Z) of seconds since the
 * epoch, %% a %.  0, or 22 (EINVAL) for another %, or 36 (ENAMETOOLONG).
 * design/telemetry.txt .plinth.stream.file */
static int fileExpand(char *name, size_t size, const char *pattern, uint64_t pid,
                      uint64_t seconds)
{
  name[0] = '\0';
  for (const char *p = pattern; *p != '\0'; ++p) {
    char piece[24];
    if (*p != '%') {
      piece[0] = *p, piece[1] = '\0';
    } else if (p[1] == '%') {
      copyString(piece, sizeof piece, "%");
      ++p;
    } else if (p[1] == 'p') {
      formatUnsigned(piece, pid);
      ++p;
    } else if (p[1] == 't') {
      /* days to a civil date: Howard Hinnant's days_from_civil, inverted */
      uint64_t z = seconds / 86400 + 719468, era = z / 146097, doe = z - era * 146097;
      uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
      uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
      uint64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
      uint64_t year = yoe + era * 400 + (month <= 2), rest = seconds % 86400;
      uint64_t fields[6] = { year, month, day, rest / 3600, rest / 60 % 60, rest % 60 };
      size_t n = formatUnsigned(piece, year);
      for (int f = 1; f < 6; ++f) {
        if (f == 3)
          piece[n++] = 'T';
        piece[n++] = (char)('0' + fields[f] / 10);
        piece[n++] = (char)('0' + fields[f] % 10);
      }
      piece[n++] = 'Z';
      piece[n] = '\0';
      ++p;
    } else
      return 22; /* EINVAL */
    if (strlen(name) + strlen(piece) >= size)
      return 36; /* ENAMETOOLONG */
    append(name, size, piece);
  }
  return 0;
}

/* filePerProcess -- does the pattern have %p? */
static int filePerProcess(const char *pattern)
{
  for (const char *p = pattern; *p != '\0'; ++p)
    if (p[0] == '%' && p[1] != '\0') {
      if (p[1] == 'p')
        return 1;
      ++p;
    }
  return 0;
}

/* envFile -- TELLTALE_FILE: the log's name, "none", or by default
 * telltale.log.  A name that cannot be used, or an empty one, leaves
 * the default, saying so. */
static void envFile(void)
{
  const char *value = PlinthGetEnv("TELLTALE_FILE");
  int res;
  if (value != NULL && strcmp(value, "none") == 0) {
    session.noDefault = 1;
    return;
  }
  if (value != NULL && value[0] == '\0') {
    envBad("TELLTALE_FILE", "is empty (for no log it is none)", "the default, telltale.log");
    value = NULL;
  }
  if (value == NULL)
    value = "telltale.log";
  if (strlen(value) >= sizeof session.filePattern)
    res = 36;
  else {
    copyString(session.filePattern, sizeof session.filePattern, value);
    res = fileExpand(session.fileName, sizeof session.fileName, session.filePattern,
                     PlinthProcessId(), PlinthRealtimeNs() / 1000000000u);
  }
  if (res != 0) {
    envBadValue("TELLTALE_FILE", value, res == 22
                ? "has a % other than %p (the process id), %t (the start time) or %%"
                : "is too long", "the default, telltale.log");
    copyString(session.filePattern, sizeof session.filePattern, "telltale.log");
    copyString(session.fileName, sizeof session.fileName, "telltale.log");
  }
}

/* EventBufferSizeSet -- size of buffers made from now on */
int EventBufferSizeSet(size_t size)
{
  if (size < BUFFER_SIZE_MIN || size > BUFFER_SIZE_MAX || (size & (size - 1)) != 0)
    return 22; /* EINVAL */
  PlinthLockClaim();
  session.bufferSize = size;
  PlinthLockRelease();
  return 0;
}

static void finish(int atExit);

static void atExit(void)
{
  finish(1);
}

static void afterFork(void);
static int signalEnter(void);
static void signalLeave(int token);

/* EventInit -- read the environment; idempotent.  design/telemetry.txt .sol.env */
int EventInit(void)
{
  const char *value;
  PlinthLockClaim();
  if (session.initialized) {
    PlinthLockRelease();
    return 0;
  }
  session.initialized = 1;
  session.bufferSize = BUFFER_SIZE_DEFAULT;
  session.bufferSize = envBuffer();
  atomic_store(&EventKindControl, envKinds("TELLTALE_CONTROL", allKinds(), "all") | KIND_OWN);
  atomic_store(&EventKindRecord, envKinds("TELLTALE_RECORD", allKinds(), "all") | KIND_OWN);
  session.mirrorKinds = envKinds("TELLTALE_MIRROR", 0, "none");
  envEvents();
  envFile();
  session.mapAllowed = envSwitch("TELLTALE_MAP", 1);
  /* A core then holds the live file's buffers, for the gdb extension. */
  if (session.mapAllowed)
    (void)PlinthCoreSharedFiles();
  value = PlinthGetEnv("TELLTALE_WRITER");
  if (value != NULL && value[0] != '\0') {
    if (strcmp(value, "sync") == 0)
      session.async = 0;
    else if (strcmp(value, "async") == 0 || strcmp(value, "async,block") == 0)
      session.async = 1;
    else if (strcmp(value, "async,drop") == 0)
      session.async = session.dropWhenBehind = 1;
    else
      envBadValue("TELLTALE_WRITER", value, "must be sync, async (async,block) or async,drop",
                  "the default, sync");
  }
  session.dumpCount = (unsigned)envNumber("TELLTALE_DUMP", 50, DUMP_LIMIT);
  sessionClock();
  PlinthAtExit(atExit);
  PlinthAtFork(afterFork);
  PlinthSignalHooks(signalEnter, signalLeave);
  /* none: no handlers, and the program's are not wrapped (the plinth
   * reads that itself, at the program's first sigaction).  .sol.signal.none */
  value = PlinthGetEnv("TELLTALE_SIGNALS");
  if (value != NULL && strcmp(value, "none") == 0)
    ;
  else if (value != NULL && value[0] != '\0' && strcmp(value, "on") != 0 &&
           strcmp(value, "1") != 0 && strcmp(value, "off") != 0 && strcmp(value, "0") != 0) {
    envBadValue("TELLTALE_SIGNALS", value, "must be on, off (or 1 or 0) or none",
                "the default, on");
    (void)EventFatalSignals(1);
  } else if (envSwitch("TELLTALE_SIGNALS", 1))
    (void)EventFatalSignals(1);
  PlinthLockRelease();
  return 0;
}

__attribute__((constructor)) static void initAtStart(void)
{
  (void)EventInit();
}


/* The stream header ------------------------------------------------ */

/* HeaderBuf -- a growable byte buffer for building the header */
typedef struct HeaderBufStruct {
  unsigned char *base;
  size_t size, limit;
  int failed;
} HeaderBufStruct;

static void put(HeaderBufStruct *h, const void *p, size_t n)
{
  if (h->failed)
    return;
  if (h->size + n > h->limit) {
    size_t limit = h->limit == 0 ? 4096 : h->limit;
    unsigned char *base;
    while (limit < h->size + n)
      limit *= 2;
    base = PlinthAlloc(limit);
    if (base == NULL) {
      h->failed = 1;
      return;
    }
    if (h->size > 0)
      memcpy(base, h->base, h->size);
    PlinthFree(h->base);
    h->base = base;
    h->limit = limit;
  }
  memcpy(h->base + h->size, p, n);
  h->size += n;
}

static void putLE(HeaderBufStruct *h, uint64_t value, size_t n)
{
  unsigned char bytes[8];
  for (size_t i = 0; i < n; ++i)
    bytes[i] = (unsigned char)(value >> (8 * i));
  put(h, bytes, n);
}

static void putStr(HeaderBufStruct *h, const char *s)
{
  size_t len = s == NULL ? 0 : strlen(s);
  if (len > 0xFFFF)
    len = 0xFFFF;
  putLE(h, len, 2);
  put(h, s, len);
}

static size_t roundUp(size_t size, size_t to)
{
  return (size + to - 1) / to * to;
}

/* spansLength, putSpans -- the spans and counters that follow the
 * header's check, and their length.  design/telemetry.txt .stream.header.span */
static size_t spansLength(const EventRegistryStruct *reg)
{
  size_t n = 4;
  for (unsigned i = 0; i < reg->spanCount; ++i)
    n += 2 + strlen(reg->spans[i].name) + 6;
  for (unsigned i = 0; i < reg->counterCount; ++i)
    n += 2 + strlen(reg->counters[i].name) + 4;
  return n;
}

static void putSpans(HeaderBufStruct *h, const EventRegistryStruct *reg)
{
  putLE(h, reg->spanCount, 2);
  for (unsigned i = 0; i < reg->spanCount; ++i) {
    const EventSpanDescStruct *span = &reg->spans[i];
    putStr(h, span->name);
    putLE(h, span->begin, 2);
    putLE(h, span->end, 2);
    putLE(h, span->beginKey, 1);
    putLE(h, span->endKey, 1);
  }
  putLE(h, reg->counterCount, 2);
  for (unsigned i = 0; i < reg->counterCount; ++i) {
    const EventCounterDescStruct *counter = &reg->counters[i];
    putStr(h, counter->name);
    putLE(h, counter->code, 2);
    putLE(h, counter->value, 1);
    putLE(h, counter->key, 1);
  }
}

/* headerBuild -- the stream header.  design/telemetry.txt .stream.header */
static int headerBuild(HeaderBufStruct *h, size_t padTo)
{
  uint16_t bom = EVENT_BYTE_ORDER_MARK;
  char program[256];
  const EventRegistryStruct *reg = &EventRegistry;
  memset(h, 0, sizeof *h);
  put(h, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN);
  putLE(h, EVENT_VERSION_MAJOR, 2);
  putLE(h, EVENT_VERSION_MEDIAN, 2);
  putLE(h, EVENT_VERSION_MINOR, 2);
  put(h, &bom, 2);                      /* data byte order, .stream.header */
  putLE(h, sizeof(EventP), 1);
  putLE(h, sizeof(EventW), 1);
  putLE(h, 1, 1);                       /* IEEE 754 binary64 */
  putLE(h, 0, 1);
  putLE(h, 0, 4);                       /* header length, filled in below */
  putLE(h, PlinthClockFrequency(), 8);
  putLE(h, session.startClock, 8);
  putLE(h, session.startRealtime, 8);
  putLE(h, session.startMonotonic, 8);
  putLE(h, PlinthProcessId(), 4);
  putLE(h, session.id, 4);              /* .stream.check */
  if (PlinthProgramName(program, sizeof program) != 0)
    program[0] = '\0';
  putStr(h, program);
  putStr(h, reg->name);
  putLE(h, reg->kindCount, 2);
  for (unsigned i = 0; i < reg->kindCount; ++i) {
    putStr(h, reg->kinds[i].name);
    putStr(h, reg->kinds[i].doc);
  }
  putLE(h, reg->eventCount, 2);
  for (unsigned i = 0; i < reg->eventCount; ++i) {
    const EventDescStruct *e = &reg->events[i];
    putLE(h, e->code, 2);
    putLE(h, e->kind, 1);
    putLE(h, (e->always ? 1u : 0u) | (e->retired ? 2u : 0u), 1);
    putStr(h, e->format);
    putStr(h, e->name);
    putStr(h, e->doc);
    for (unsigned j = 0; j < e->paramCount; ++j) {
      putStr(h, e->paramNames[j]);
      putStr(h, e->paramDocs[j]);
    }
  }
  /* The header's length, then its check over all before it, flags
   * byte as 0 (a live file's changes), .stream.header.check; a live
   * file's header is padded to a page, its regions' count in its last
   * bytes (.sol.recover). */
  if (h->failed) {
    PlinthFree(h->base);
    return 12; /* ENOMEM */
  }
  {
    size_t varEnd = h->size, total = varEnd + 4 + spansLength(reg) + 4;
    if (padTo > 0)
      total = roundUp(total + EVENT_LIVE_REGIONS_LEN, padTo);
    for (size_t i = 0; i < 4; ++i)
      h->base[20 + i] = (unsigned char)(total >> (8 * i));
    putLE(h, EventHeaderCheck(h->base, varEnd), 4);
    putSpans(h, reg);                   /* 2.0.1, .stream.header.span */
    if (!h->failed)
      putLE(h, EventHeaderCheck(h->base, h->size), 4);
    while (h->size < total && !h->failed)
      putLE(h, 0, 1);
  }
  if (h->failed) {
    PlinthFree(h->base);
    return 12; /* ENOMEM */
  }
  return 0;
}


/* Streams ---------------------------------------------------------- */

/* Write failures.  A binary stream whose write failed is written no
 * more: a full disk fails every write, and a block after a cut one would
 * be read as damage.  The failure is said once, by whichever thread meets
 * it first (an emitter under the lock, or the writer, which never takes
 * it), and the events of every block not written whole to the stream are
 * counted, to be said when the session ends.  Indexed like
 * session.streams.  design/telemetry.txt .sol.writer.fail */
static _Atomic int streamFailure[STREAM_LIMIT];    /* the first failure's errno code, or 0 */
static _Atomic uintptr_t streamLost[STREAM_LIMIT]; /* events not written whole to it (a word:
                                                    lock-free on 32-bit platforms too) */

static void liveLogFailed(PlinthStream stream);

/* streamFail -- a write to stream i failed with code */
static void streamFail(size_t i, PlinthStream stream, int code)
{
  int none = 0;
  liveLogFailed(stream);
  if (atomic_compare_exchange_strong(&streamFailure[i], &none, code))
    say("cannot write to ", PlinthStreamDescribe(stream), ": ", PlinthStrError(code),
        "; nothing more is written to it, and the events lost are counted", NULL);
}

/* streamFailed -- streamFail for an entry of session.streams.  Lock held. */
static void streamFailed(EventStreamEntryStruct *entry, int code)
{
  entry->failed = 1;
  streamFail((size_t)(entry - session.streams), entry->stream, code);
}

/* eventsIn -- how many events a block's data hold */
static uint64_t eventsIn(const unsigned char *data, size_t size)
{
  uint64_t n = 0;
  for (size_t offset = 0; offset + EVENT_HEADER_LEN <= size; ++n) {
    uint32_t codeLength;
    memcpy(&codeLength, data + offset, sizeof codeLength);
    if (EVENT_CODE_OF(codeLength) == 0 || EVENT_LENGTH_OF(codeLength) < EVENT_HEADER_LEN)
      break;
    offset += EVENT_LENGTH_OF(codeLength);
  }
  return n;
}

/* streamLose -- a block of events is not written (whole) to stream i */
static void streamLose(size_t i, const unsigned char *data, size_t size)
{
  atomic_fetch_add(&streamLost[i], eventsIn(data, size));
}

/* lostReport -- say how many events each failed stream lost.  Lock
 * held; the writer idle. */
static void lostReport(void)
{
  for (size_t i = 0; i < session.streamCount; ++i) {
    uintptr_t n = atomic_exchange(&streamLost[i], 0);
    if (n != 0) {
      char number[24];
      formatUnsigned(number, n);
      say(number, " events were not written to ", PlinthStreamDescribe(session.streams[i].stream),
          " after its write failed (", PlinthStrError(atomic_load(&streamFailure[i])), ")", NULL);
    }
  }
}

/* streamOpenFailed -- say why the log (or its live file) at path is not
 * written.  design/telemetry.txt .plinth.stream.file */
static void streamOpenFailed(const char *path, int code, const char *consequence)
{
  if (code == 17 /* EEXIST */)
    say("not writing ", path, ": it is there and is not a telltale log;",
        " set TELLTALE_FILE to another name", consequence, NULL);
  else if (code == 40 /* ELOOP */)
    say("not writing ", path, ": it is a symbolic link, which telltale never follows",
        consequence, NULL);
  else if (code == 6 /* ENXIO */)
    say("not writing ", path, ": it is a FIFO that no process opened for reading",
        " within a second", consequence, NULL);
  else if (code == 21 /* EISDIR */)
    say("not writing ", path, ": it is a directory", consequence, NULL);
  else if (code == 19 /* ENODEV */)
    say("not writing ", path, ": it is a block device, which telltale never writes",
        consequence, NULL);
  else if (code == 95 /* ENOTSUP */)
    say("not writing ", path, ": it is a file of /proc (or of no kind a log can be),",
        " which telltale never writes", consequence, NULL);
  else
    say("cannot open ", path, ": ", PlinthStrError(code), consequence, NULL);
}

/* keepFailed -- say why the last log at path was not kept as older
 * (PATH.1, or PATH.1.live was at fault), so that this run's log is not
 * written: the last one stays where it is.  .sol.session */
static void keepFailed(const char *path, const char *older, int code)
{
  const char *why = code == 17 /* EEXIST */ ? "it is there and is not a telltale log"
                  : code == 21 /* EISDIR */ ? "it is a directory"
                  : code == 40 /* ELOOP */ ? "it is a symbolic link"
                  : PlinthStrError(code);
  say("not writing ", path, ": the last log there cannot be kept as ", older, " (", why,
      "), so it is left as it is; move ", older, " or set TELLTALE_FILE to another name",
      NULL);
}

/* streamHeader -- write the header to a binary stream */
static void streamHeader(EventStreamEntryStruct *entry)
{
  HeaderBufStruct h;
  int res = headerBuild(&h, 0);
  if (res == 0) {
    res = PlinthStreamWrite(entry->stream, h.base, h.size);
    PlinthFree(h.base);
  }
  if (res != 0)
    streamFailed(entry, res);
}

/* liveStart -- open the live file beside the first binary stream that
 * is a regular file: its header, padded to a page, then the regions
 * that the buffers of output kinds live in.  Lock held.
 * design/telemetry.txt .sol.live */
static void liveStart(void)
{
  EventStreamEntryStruct *entry = NULL;
  HeaderBufStruct h;
  const char *name;
  size_t n;
  int res;
  if (!session.mapAllowed || session.live != NULL)
    return;
  for (size_t i = 0; i < session.streamCount && entry == NULL; ++i)
    if (session.streams[i].binary && PlinthStreamMappable(session.streams[i].stream))
      entry = &session.streams[i];
  if (entry == NULL)
    return;
  name = PlinthStreamDescribe(entry->stream);
  n = strlen(name);
  if (n + sizeof ".live" > sizeof session.liveName)
    return;
  memcpy(session.liveName, name, n);
  memcpy(session.liveName + n, ".live", sizeof ".live");
  session.liveLog = entry->stream;
  res = PlinthStreamOpenLog(&session.live, session.liveName, EVENT_STREAM_MAGIC,
                            EVENT_STREAM_MAGIC_LEN);
  if (res != 0) {
    session.live = NULL;
    streamOpenFailed(session.liveName, res, "; events emitted just before a crash may be lost");
    return;
  }
  res = headerBuild(&h, PlinthPageSize());
  if (res == 0) {
    session.liveHeaderLength = h.size;
    session.liveRegions = session.liveRegionsSaid = 0;
    res = PlinthStreamWrite(session.live, h.base, h.size);
    PlinthFree(h.base);
  }
  if (res == 0 && entry->failed)
    liveLogFailed(entry->stream);
  if (res != 0) {
    say("cannot write ", session.liveName, ": ", PlinthStrError(res), NULL);
    PlinthStreamClose(session.live);
    (void)PlinthRemoveFile(session.liveName);
    session.live = NULL;
  }
}

/* liveLogFailed -- the log beside the live file lost a write: say so in
 * the live file's header (a write in place, which a full disk allows),
 * and keep the live file at the end, so that a reader knows the log is
 * incomplete.  .sol.recover */
static void liveLogFailed(PlinthStream stream)
{
  unsigned char flags = EVENT_LIVE_LOG_FAILED;
  if (session.live == NULL || stream != session.liveLog)
    return;
  session.liveKeep = 1;
  (void)PlinthStreamWriteAt(session.live, EVENT_STREAM_FLAGS_AT, &flags, 1);
}

/* liveEnd -- the session ends cleanly: every event is in the streams,
 * so the live file goes, unless the log lost writes.  Lock held. */
static void liveEnd(void)
{
  while (session.liveFree != NULL) {
    LiveRegionStruct *region = session.liveFree;
    session.liveFree = region->next;
    PlinthStreamUnmap(session.live, region->base, region->size);
    PlinthFree(region);
  }
  if (session.live != NULL) {
    PlinthStreamClose(session.live);
    if (!session.liveKeep)
      (void)PlinthRemoveFile(session.liveName);
    session.live = NULL;
  }
  session.liveFailed = 0;
  session.liveKeep = 0;
}

static int streamAdd(PlinthStream stream, int binary, int owned, EventKindSet kinds)
{
  EventStreamEntryStruct *entry;
  if (stream == NULL)
    return 22;
  (void)EventInit();
  PlinthLockClaim();
  if (session.streamCount == STREAM_LIMIT) {
    PlinthLockRelease();
    return 28; /* ENOSPC */
  }
  atomic_store(&streamFailure[session.streamCount], 0);
  atomic_store(&streamLost[session.streamCount], 0);
  entry = &session.streams[session.streamCount];
  memset(entry, 0, sizeof *entry);
  entry->index = &session.streamIndex[session.streamCount++];
  *entry->index = 0;
  entry->stream = stream;
  entry->binary = binary;
  entry->owned = owned;
  entry->kinds = kinds;
  session.finished = 0;
  sessionClock();
  if (binary && session.started)
    streamHeader(entry);
  PlinthLockRelease();
  return 0;
}

/* EventStreamAddBinary -- send the binary log to a stream too */
int EventStreamAddBinary(PlinthStream stream)
{
  return streamAdd(stream, 1, 0, 0);
}

/* EventStreamAddText -- mirror kinds to a stream as text */
int EventStreamAddText(PlinthStream stream, EventKindSet kinds)
{
  return streamAdd(stream, 0, 0, kinds);
}

static int hasBinaryStream(void)
{
  for (size_t i = 0; i < session.streamCount; ++i)
    if (session.streams[i].binary)
      return 1;
  return 0;
}

/* sessionClock -- note when the session began, if not yet noted:
 * at EventInit, or at the first event or stream after EventFinish */
static void clockPair(EventClock *clockReturn, uint64_t *monotonicReturn,
                      uint64_t *realtimeReturn);

/* sessionId -- a session's id: a hash of what tells sessions apart
 * (pid and the three start clocks), never 0.  .stream.check */
static uint32_t sessionId(void)
{
  uint64_t parts[4];
  uint32_t id;
  parts[0] = session.startClock;
  parts[1] = session.startRealtime;
  parts[2] = session.startMonotonic;
  parts[3] = PlinthProcessId();
  id = EventCheck(0, parts, sizeof parts);
  return id == 0 ? 1 : id;
}

static void sessionClock(void)
{
  if (session.startClock != 0)
    return;
  clockPair(&session.startClock, &session.startMonotonic, &session.startRealtime);
  session.id = sessionId();
}

/* clockPair -- the event clock and the system clocks at one moment.
 *
 * The clock is read between two readings of CLOCK_MONOTONIC, three
 * times, and the tightest try is kept: monotonic time is the middle of
 * its two readings, so the pair is good to half that gap (tens of ns).
 * Realtime is read next and moved back by the monotonic time that passed.
 * Pairs read any looser make the reader's clock rate wrong by the error
 * over the span between them.  design/telemetry.txt .sol.clock */
static void clockPair(EventClock *clockReturn, uint64_t *monotonicReturn,
                      uint64_t *realtimeReturn)
{
  uint64_t best = UINT64_MAX, realtime, after;
  for (int i = 0; i < 3; ++i) {
    uint64_t m0 = PlinthMonotonicNs();
    EventClock clock = PlinthClockNow();
    uint64_t m1 = PlinthMonotonicNs();
    if (m1 - m0 < best) {
      best = m1 - m0;
      *clockReturn = clock;
      *monotonicReturn = m0 + (m1 - m0) / 2;
    }
  }
  realtime = PlinthRealtimeNs();
  after = PlinthMonotonicNs();
  *realtimeReturn = realtime - (after - *monotonicReturn);
}

/* clockSync -- emit ClockSync from a pair read after the event is
 * reserved, so that a slow path taken to reserve it (setting the thread
 * up, writing a full buffer) falls outside the pair; the session keeps
 * the latest pair, for the traceback's clock rate. */
static void clockSync(void)
{
  EventClock clock = 0;
  uint64_t monotonic = 0, realtime;
#if EVENT_VARIETY != EVENT_VARIETY_OFF   /* the generated emitters' rule: .sol.variety */
  EVENT_BEGIN(ClockSync)
    clockPair(&clock, &monotonic, &realtime);
    _event->header.clock = clock;
    _event->monotonic = (EventW)monotonic;
    _event->realtime = (EventW)realtime;
  EVENT_END(ClockSync)
  if (clock != 0) {
    PlinthLockClaim();
    if (clock > session.syncClock) {
      session.syncClock = clock;
      session.syncMonotonic = monotonic;
    }
    PlinthLockRelease();
  }
#else
  (void)clock, (void)monotonic, (void)realtime;
#endif
}

/* sessionStart -- open the default streams and write the headers.
 * Called with the lock held, before the first block is claimed or sent.
 * design/telemetry.txt .sol.session */
static void sessionStart(void)
{
  if (session.started)
    return;
  sessionClock();
  if (!hasBinaryStream() && !session.noDefault && !session.finished) {
    /* The last run's log is kept as LOG.1, and a file that is not a
     * log is never overwritten.  .sol.session */
    PlinthStream stream;
    char blame[sizeof session.fileName + 16];
    int res = PlinthLogKeep(session.fileName, EVENT_STREAM_MAGIC, EVENT_STREAM_MAGIC_LEN,
                            blame, sizeof blame);
    if (res != 0 && strcmp(blame, session.fileName) != 0)
      keepFailed(session.fileName, blame, res);
    else if (res != 0)
      streamOpenFailed(session.fileName, res, "");
    else if ((res = PlinthStreamOpenLog(&stream, session.fileName, EVENT_STREAM_MAGIC,
                                        EVENT_STREAM_MAGIC_LEN)) != 0)
      streamOpenFailed(session.fileName, res, "");
    else
      (void)streamAdd(stream, 1, 1, 0);
  }
  if (session.mirrorKinds != 0 && session.streamCount < STREAM_LIMIT) {
    PlinthStream stream;
    if (PlinthStreamOpenFd(&stream, 2, 0) == 0)
      (void)streamAdd(stream, 0, 1, session.mirrorKinds);
  }
  /* Set started only now: streamAdd writes the header itself when the
   * session has started, so setting it before the default stream was
   * added wrote that stream's header twice. */
  session.started = 1;
  for (size_t i = 0; i < session.streamCount; ++i)
    if (session.streams[i].binary)
      streamHeader(&session.streams[i]);
  liveStart();
}

/* textMirror -- write events as text.  design/telemetry.txt .sol.multi */
static void textMirror(EventStreamEntryStruct *entry, const unsigned char *data, size_t size,
                       uint32_t thread, unsigned kind)
{
  EventLayoutStruct layout;
  size_t offset = 0;
  char line[TEXT_LINE_MAX];
  EventFormatContextStruct context;
  if ((entry->kinds & EVENT_KIND_BIT(kind)) == 0)
    return;
  EventLayoutNative(&layout);
  EventFormatContextInit(&context, &EventRegistry);
  context.clockHz = PlinthClockFrequency();
  context.startClock = session.startClock;
  context.startRealtime = session.startRealtime;
  while (offset + EVENT_HEADER_LEN <= size) {
    EventRecordStruct rec;
    size_t n;
    if (EventDecode(&layout, &EventRegistry, data + offset, size - offset, &rec, NULL)
        != EventDecodeOK)
      break;
    rec.thread = thread;
    rec.kind = kind;
    n = EventFormat(line, sizeof line - 1, &rec, &context);
    if (n > sizeof line - 2)
      n = sizeof line - 2;
    line[n++] = '\n';
    if (PlinthStreamWrite(entry->stream, line, n) != 0)
      break;
    offset += rec.length;
  }
}

/* blockHeader -- fill in a block header: of a live region (index
 * NONE, no check), or of a block about to be written (blockWrite adds
 * its index and check).  design/telemetry.txt .stream.block */
static void blockHeader(unsigned char *base, size_t length, uint32_t serial, unsigned kind,
                        unsigned level, uint64_t seq)
{
  EventBlockHeaderStruct h;
  memcpy(h.magic, EVENT_BLOCK_MAGIC, 4);
  h.length = (uint32_t)length;
  h.thread = serial;
  h.kind = (uint16_t)kind;
  h.flags = (uint16_t)(level & EVENT_BLOCK_LEVEL_MASK);
  h.seq = seq;
  h.session = session.id;
  h.index = EVENT_BLOCK_INDEX_NONE;
  h.check = 0;
  memcpy(base, &h, sizeof h);
}

/* blockSend -- send events of a thread's kind to the streams.  Lock held.
 *
 * The events data[0 .. size-1] go as one block numbered seq to each
 * binary stream, and as text to each mirror.
 * design/telemetry.txt .sol.block */
static void blockWrite(EventStreamEntryStruct *entry, uint32_t serial, unsigned kind,
                       unsigned level, const unsigned char *data, size_t size, uint64_t seq,
                       int *failed);
static int writerEnqueue(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned slot,
                         const unsigned char *data, size_t size, uint64_t seq);

static void blockSend(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned slot,
                      const unsigned char *data, size_t size, uint64_t seq)
{
  if (size == 0)
    return;
  sessionStart();
  if (session.async && writerEnqueue(thread, level, kind, slot, data, size, seq) == 0)
    return;
  for (size_t i = 0; i < session.streamCount; ++i) {
    EventStreamEntryStruct *entry = &session.streams[i];
    int failed = 0;
    if (entry->binary && (entry->failed || atomic_load(&streamFailure[i]) != 0)) {
      entry->failed = 1;        /* the writer may have failed it: .sol.writer.fail */
      streamLose(i, data, size);
      continue;
    }
    blockWrite(entry, thread->serial, kind, level, data, size, seq, &failed);
    if (failed != 0) {
      streamFailed(entry, failed);
      streamLose(i, data, size);
    }
  }
}

/* blockWrite -- one block to one stream: binary, or text if a mirror.
 * *failed gets the error of a failed write.  A binary block gets the
 * stream's next index and its check here, off the hot path, by
 * whichever thread writes it.  design/telemetry.txt .stream.check */
static void blockWrite(EventStreamEntryStruct *entry, uint32_t serial, unsigned kind,
                       unsigned level, const unsigned char *data, size_t size, uint64_t seq,
                       int *failed)
{
  unsigned char header[EVENT_BLOCK_HEADER_LEN];
  EventBlockHeaderStruct *h = (EventBlockHeaderStruct *)header;
  uint32_t check;
  int res;
  if (!entry->binary) {
    textMirror(entry, data, size, serial, kind);
    return;
  }
  if (entry->failed)
    return;
  blockHeader(header, EVENT_BLOCK_HEADER_LEN + size, serial, kind, level, seq);
  h->flags = (uint16_t)(h->flags | EVENT_BLOCK_CHECKED);
  h->index = __atomic_fetch_add(entry->index, 1, __ATOMIC_RELAXED);
  check = EventCheck(0, header, EVENT_BLOCK_HEADER_LEN);
  h->check = EventCheck(check, data, size);
  res = PlinthStreamWrite(entry->stream, header, sizeof header);
  if (res == 0)
    res = PlinthStreamWrite(entry->stream, data, size);
  *failed = res;
}


/* The asynchronous writer.  design/telemetry.txt .sol.writer
 *
 * In async mode a block is not written by the thread that fills it: it
 * becomes a job on a queue, and the writer thread writes it while the
 * emitter goes on in its other slot.  The job points into the slot, so
 * the slot is not reused until the job is done (pending, under the queue
 * lock).  The writer never claims the plinth lock, so an emitter may wait
 * for it while holding that lock. */

#define JOB_LIMIT 256

typedef struct JobStruct {
  EventStreamEntryStruct streams[STREAM_LIMIT];  /* the session's, when queued */
  size_t streamCount;
  const unsigned char *data;
  size_t size;
  uint64_t seq;
  uint32_t serial;
  unsigned kind, level;
  unsigned *pending;            /* the slot's count, to decrement when done */
} JobStruct;

static struct {
  JobStruct jobs[JOB_LIMIT];
  size_t head, count;           /* the queue: jobs[head .. head + count) */
  int writing;                  /* the writer holds a job it took off */
  int started;
} writer;

/* writerRun -- the writer thread: write jobs as they come */
static void writerRun(void)
{
  for (;;) {
    JobStruct job;
    PlinthQueueClaim();
    while (writer.count == 0)
      PlinthQueueWait();
    job = writer.jobs[writer.head];
    writer.head = (writer.head + 1) % JOB_LIMIT;
    --writer.count;
    writer.writing = 1;
    PlinthQueueRelease();
    for (size_t i = 0; i < job.streamCount; ++i) {
      int failed = 0;
      if (job.streams[i].binary && atomic_load(&streamFailure[i]) != 0) {
        streamLose(i, job.data, job.size);     /* failed: written no more */
        continue;
      }
      blockWrite(&job.streams[i], job.serial, job.kind, job.level, job.data, job.size, job.seq,
                 &failed);
      if (failed != 0) {
        streamFail(i, job.streams[i].stream, failed);
        streamLose(i, job.data, job.size);
      }
    }
    PlinthQueueClaim();
    --*job.pending;
    writer.writing = 0;
    PlinthQueueWake();
    PlinthQueueRelease();
  }
}

/* writerEnqueue -- queue a block for the writer.  Plinth lock held.
 * Returns nonzero if there is no writer: the caller writes it. */
static int writerEnqueue(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned slot,
                         const unsigned char *data, size_t size, uint64_t seq)
{
  JobStruct *job;
  if (!writer.started) {
    if (PlinthWriterStart(writerRun) != 0) {
      say("cannot start the writer thread: writing synchronously", NULL);
      session.async = 0;
      return 1;
    }
    writer.started = 1;
  }
  PlinthQueueClaim();
  while (writer.count == JOB_LIMIT)
    PlinthQueueWait();
  job = &writer.jobs[(writer.head + writer.count) % JOB_LIMIT];
  memcpy(job->streams, session.streams, sizeof job->streams);
  job->streamCount = session.streamCount;
  job->data = data;
  job->size = size;
  job->seq = seq;
  job->serial = thread->serial;
  job->kind = kind;
  job->level = level;
  job->pending = &thread->levels[level][kind].pending[slot];
  ++*job->pending;
  ++writer.count;
  PlinthQueueWake();
  PlinthQueueRelease();
  return 0;
}

/* writerIdle -- wait until the writer has written every queued job */
static void writerIdle(void)
{
  if (!writer.started)
    return;
  PlinthQueueClaim();
  while (writer.count > 0 || writer.writing)
    PlinthQueueWait();
  PlinthQueueRelease();
}

/* slotBusy -- does a job still read slot s?  With wait, wait until not. */
static int slotBusy(EventKindBufStruct *kb, unsigned s, int wait)
{
  int busy;
  if (!writer.started)
    return 0;
  PlinthQueueClaim();
  while (wait && kb->pending[s] > 0)
    PlinthQueueWait();
  busy = kb->pending[s] > 0;
  PlinthQueueRelease();
  return busy;
}

/* EventWriterAsync -- write blocks on the writer thread (1) or on the
 * emitting thread (0, the default).  drop: when the writer is behind,
 * drop and count events (EventsDropped) rather than wait for it. */
int EventWriterAsync(int async, int drop)
{
  PlinthLockClaim();
  if (!async)
    writerIdle();
  session.async = async != 0;
  session.dropWhenBehind = async && drop;
  PlinthLockRelease();
  return 0;
}


/* Threads and the slow path ---------------------------------------- */

static void threadExit(void *arg);

/* threadCreate -- set the calling thread up.  design/telemetry.txt .sol.thread
 * *createdReturn is 0 if a signal handler set it up meanwhile. */
static EventThreadStruct *threadCreate(int *createdReturn)
{
  EventThreadStruct *thread = PlinthPagesAlloc(sizeof *thread);   /* zeroed */
  *createdReturn = 0;
  if (thread == NULL)
    return NULL;
  thread->bufs = EventThreadBuf;
  PlinthLockClaim();
  if (threadState != NULL) {    /* a handler's event, since our first look */
    PlinthLockRelease();
    PlinthPagesFree(thread, sizeof *thread);
    return threadState;
  }
  *createdReturn = 1;
  thread->serial = ++session.threadSerial;
  sessionClock();
  thread->bufferSize = session.bufferSize;
  thread->next = session.threads;
  if (session.threads != NULL)
    session.threads->prev = thread;
  session.threads = thread;
  if (session.signals)
    thread->altStack = PlinthAltStackCreate();
  threadState = thread;
  PlinthLockRelease();
  (void)PlinthThreadOnExit(threadExit, thread);
  return thread;
}

/* threadAnnounce -- the thread's first events: ThreadStart, ThreadName */
static void threadAnnounce(EventThreadStruct *thread)
{
  char name[64];
  if (thread->serial == 1) {
    char program[256];
    if (PlinthProgramName(program, sizeof program) != 0)
      program[0] = '\0';
    EVENT_UUUS(StreamStart, EVENT_VERSION_MAJOR, EVENT_VERSION_MEDIAN, EVENT_VERSION_MINOR,
               program);
  }
  EVENT_UW(ThreadStart, thread->serial, (EventW)PlinthThreadOSId());
  if (PlinthThreadName(name, sizeof name) == 0 && name[0] != '\0') {
    copyString(thread->name, sizeof thread->name, name);
    EVENT_US(ThreadName, thread->serial, name);
  }
  if (thread->serial == 1)
    clockSync();
}

/* slotRelease -- give up a slot: a region of the live file goes on the
 * free list, marked free (magic zeroed, length kept) so that recovery
 * passes over it; memory is freed.  Lock held. */
static int slotBusy(EventKindBufStruct *kb, unsigned s, int wait);

static void slotRelease(EventKindBufStruct *kb, unsigned s)
{
  if (kb->slot[s] == NULL)
    return;
  (void)slotBusy(kb, s, 1);     /* the writer may still read it */
  if (!kb->mapped[s])
    PlinthPagesFree(kb->slot[s], kb->slotSize[s]);
  else {
    LiveRegionStruct *region = NULL;
    /* Without a live file (after EventFinish, or in the child of fork,
     * where the region is the parent's) the region is only unmapped. */
    if (session.live != NULL) {
      memset(kb->slot[s], 0, 4);
      region = PlinthAlloc(sizeof *region);
    }
    if (region == NULL)
      PlinthStreamUnmap(session.live, kb->slot[s], kb->slotSize[s]);
    else {
      region->base = kb->slot[s];
      region->size = kb->slotSize[s];
      region->next = session.liveFree;
      session.liveFree = region;
    }
  }
  kb->slot[s] = NULL;
  kb->mapped[s] = 0;
}

/* liveRegion -- a region of the live file of the given size */
static int liveRegion(size_t size, unsigned char **baseReturn)
{
  void *base;
  int res;
  for (LiveRegionStruct **p = &session.liveFree; *p != NULL; p = &(*p)->next)
    if ((*p)->size == size) {
      LiveRegionStruct *region = *p;
      *p = region->next;
      *baseReturn = region->base;
      PlinthFree(region);
      return 0;
    }
  res = PlinthStreamMap(session.live, size, &base);
  if (res == 0) {
    memset(base, 0, EVENT_BLOCK_HEADER_LEN);
    *baseReturn = base;
    ++session.liveRegions;
  }
  return res;
}

/* liveRegionsSay -- the count of regions, in the live file's header's
 * last bytes, once a new region has its header: a reader knows how many
 * to find, so a live file cut short or zeroed is not taken for a whole
 * one.  A write in place: a full disk allows it.  .sol.recover */
static void liveRegionsSay(void)
{
  unsigned char bytes[EVENT_LIVE_REGIONS_LEN];
  if (session.liveRegions == session.liveRegionsSaid)
    return;
  for (size_t i = 0; i < sizeof bytes; ++i)
    bytes[i] = (unsigned char)(session.liveRegions >> (8 * i));
  if (PlinthStreamWriteAt(session.live, session.liveHeaderLength - sizeof bytes, bytes,
                          sizeof bytes) == 0)
    session.liveRegionsSaid = session.liveRegions;
}

/* slotPrepare -- make slot s of a kind ready to fill.  Lock held.
 *
 * If the kind's output is on and the session has a live file, the slot
 * is a region of the live file (reused if the slot has one, its old
 * events, all sent, cleared) under a fresh block header: what is stored
 * there survives the program's death.  Otherwise it is memory, reused
 * if the slot has some: a ring buffer (output off), or a buffer that is
 * sent when it fills.  design/telemetry.txt .sol.live, .sol.ring */
static int slotPrepare(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned s)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  int output = (atomic_load_explicit(&EventKindControl, memory_order_relaxed)
                & EVENT_KIND_BIT(kind)) != 0;
  /* The writer may still be writing what the slot held: wait for it,
   * or, when dropping rather than waiting, say so (.sol.writer). */
  if (slotBusy(kb, s, !session.dropWhenBehind))
    return 11; /* EAGAIN */
  if (output)
    sessionStart();
  if (output && session.live != NULL && !session.liveFailed) {
    size_t size = roundUp(thread->bufferSize, PlinthPageSize());
    if (kb->mapped[s] && kb->slotSize[s] == size) {
      /* Reused: its old events were all sent.  They stay, but the data
       * end at the first zero code, which slotUse puts at the start and
       * every EVENT_END moves along.  .sol.live */
      memset(kb->slot[s], 0, 4);              /* not a block until its new header */
    } else {
      unsigned char *base;
      int res = liveRegion(size, &base);
      if (res != 0) {
        session.liveFailed = 1;
        say("cannot extend ", session.liveName, ": ", PlinthStrError(res),
            "; events emitted just before a crash may be lost", NULL);
        goto memory;
      }
      slotRelease(kb, s);
      kb->slot[s] = base;
      kb->slotSize[s] = size;
      kb->mapped[s] = 1;
    }
    kb->seq[s] = session.blocks++;
    /* The data end at once, before the header makes this a block; the
     * header's magic goes last, after its checked fields.  .sol.recover */
    memset(kb->slot[s] + EVENT_BLOCK_HEADER_LEN, 0, EVENT_END_SLACK);
    {
      unsigned char header[EVENT_BLOCK_HEADER_LEN];
      uint32_t check;
      blockHeader(header, size, thread->serial, kind, level, kb->seq[s]);
      check = EventLiveCheck(header);
      memcpy(header + offsetof(EventBlockHeaderStruct, check), &check, sizeof check);
      atomic_signal_fence(memory_order_release);
      memcpy(kb->slot[s] + 4, header + 4, EVENT_BLOCK_HEADER_LEN - 4);
      atomic_signal_fence(memory_order_release);
      memcpy(kb->slot[s], header, 4);
    }
    liveRegionsSay();
    return 0;
  }
memory:
  if (kb->mapped[s])
    slotRelease(kb, s);
  if (kb->slot[s] == NULL) {
    kb->slot[s] = PlinthPagesAlloc(thread->bufferSize);
    if (kb->slot[s] == NULL)
      return 12; /* ENOMEM */
    kb->slotSize[s] = thread->bufferSize;
  }
  return 0;
}

/* slotUse -- start filling slot s */
static void slotUse(EventThreadStruct *thread, unsigned level, unsigned kind, unsigned s)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  EventBufStruct *buf = hotBuf(thread, level, kind);
  kb->current = s;
  buf->next = (uintptr_t)kb->slot[s] + EVENT_BLOCK_HEADER_LEN;
  buf->limit = (uintptr_t)kb->slot[s] + kb->slotSize[s] - EVENT_END_SLACK;
  kb->sent = buf->next;
  memset(kb->slot[s] + EVENT_BLOCK_HEADER_LEN, 0, EVENT_END_SLACK);  /* the data end here */
}

/* eventFixedSize -- an event's size in this program's layout, but for
 * the characters of its string, if it has one (*stringReturn) */
static size_t eventFixedSize(const EventDescStruct *desc, int *stringReturn)
{
  size_t size = EVENT_HEADER_LEN;
  *stringReturn = 0;
  for (const char *f = desc->format; *f != '\0'; ++f)
    switch (*f) {
    case 'P': size += sizeof(EventP); break;
    case 'A': size += sizeof(EventA); break;
    case 'W': size += sizeof(EventW); break;
    case 'U': size += sizeof(EventU); break;
    case 'D': size += sizeof(EventD); break;
    default: *stringReturn = 1; break;   /* S: the characters and a NUL */
    }
  return size;
}

/* eventCommitted -- is there a whole, committed event at p, ending by
 * limit?  *lengthReturn gets its length.
 *
 * For a buffer another thread may be writing as this one reads it: the
 * code is stored last, after a release fence (.sol.hot), so an event
 * whose code is seen is whole, and one being written has code 0.  The
 * code and length must also fit the runtime's own registry (a fixed
 * size, or a string's NUL at the end), so that a commit store seen half
 * done, where it straddles a cache line, is taken for what it is: not
 * yet an event.  design/telemetry.txt .sol.flush */
static int eventCommitted(const unsigned char *p, uintptr_t limit, size_t *lengthReturn)
{
  uint32_t codeLength;
  size_t length, fixed;
  unsigned code;
  int string;
  const EventDescStruct *desc;
  if ((uintptr_t)p + EVENT_HEADER_LEN > limit)
    return 0;
#ifdef EVENT_TSAN
  codeLength = __atomic_load_n((const uint32_t *)(const void *)p, __ATOMIC_ACQUIRE);
#else
  memcpy(&codeLength, p, sizeof codeLength);
  atomic_thread_fence(memory_order_acquire);
#endif
  code = EVENT_CODE_OF(codeLength);
  length = EVENT_LENGTH_OF(codeLength);
  if (code == 0 || length < EVENT_HEADER_LEN || (uintptr_t)p + length > limit)
    return 0;
  desc = EventRegistryLookup(&EventRegistry, code);
  if (desc == NULL)
    return 0;
  fixed = eventFixedSize(desc, &string);
  if (string ? length <= fixed || p[length - 1] != 0 : length != fixed)
    return 0;
  *lengthReturn = length;
  return 1;
}

/* committedEnd -- the end of the committed events from p on, in a slot
 * that ends at limit */
static uintptr_t committedEnd(uintptr_t p, uintptr_t limit)
{
  size_t length;
  while (eventCommitted((const unsigned char *)p, limit, &length))
    p += length;
  return p;
}

/* kindFlush -- send what a kind's current slot holds and has not sent.
 * Lock held.  A live slot is always sent (its kind's output was on when
 * it was prepared); a memory slot only if the kind's output is on (else
 * it is the ring).
 *
 * own: the slot is the calling thread's, at its running level, so every
 * event below next is committed.  Otherwise another thread (or a
 * handler this one interrupted) may be writing it: only the committed
 * events after "sent" go, and "sent" moves to their end, so that each
 * event is sent exactly once, whole.  design/telemetry.txt .sol.flush */
static void kindFlush(EventThreadStruct *thread, unsigned level, unsigned kind, int own)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  unsigned s = kb->current;
  uintptr_t end;
  int output = (atomic_load_explicit(&EventKindControl, memory_order_relaxed)
                & EVENT_KIND_BIT(kind)) != 0;
  if (kb->slot[s] == NULL || !(kb->mapped[s] || output))
    return;
  if (own)
    end = hotBuf(thread, level, kind)->next;
  else
    end = committedEnd(kb->sent, (uintptr_t)kb->slot[s] + kb->slotSize[s]);
  if (end <= kb->sent)
    return;
  /* A live slot's block keeps its number through partial sends, so
   * that recovery knows how much of it the log has.  .sol.live */
  blockSend(thread, level, kind, s, (const unsigned char *)kb->sent, end - kb->sent,
            kb->mapped[s] ? kb->seq[s] : session.blocks++);
  kb->sent = end;
}

static void *dropped(unsigned kind, void *sink);

/* While a traceback is taken, a thread whose buffer fills waits before
 * its ring moves on, so that the events the traceback found stay where
 * they are, even before it has the lock.  design/telemetry.txt
 * .sol.traceback */
static _Atomic int ringsFrozen;
static EventThreadStruct *_Atomic ringsFrozenBy;  /* it does not wait */

static void ringsFreeze(int on)
{
  if (on)
    atomic_store(&ringsFrozenBy, threadState);
  atomic_store(&ringsFrozen, on);
}

static void ringsWait(EventThreadStruct *thread)
{
  while (atomic_load_explicit(&ringsFrozen, memory_order_acquire)
         && atomic_load(&ringsFrozenBy) != thread)
    PlinthSleepNs(100000);
}

/* bufferFull -- make room when a kind's buffer is full: send what it
 * holds, and move to the kind's other slot, keeping this one as the
 * flight recorder's older half.  design/telemetry.txt .sol.buffer, .sol.ring */
static int bufferFull(EventThreadStruct *thread, unsigned level, unsigned kind)
{
  EventKindBufStruct *kb = &thread->levels[level][kind];
  unsigned other = 1 - kb->current;
  int res;
  ringsWait(thread);
  PlinthLockClaim();
  kindFlush(thread, level, kind, 1);
  /* The thread's own events (names, interned strings, labels) go out
   * with each full buffer, so that a log with no live file to recover
   * from still has them.  .sol.death.limits */
  if (kind != EventKindTelltale)
    kindFlush(thread, level, EventKindTelltale, 1);
  kb->previousEnd = hotBuf(thread, level, kind)->next;
  /* The ring moves on: a traceback read without the lock sees the
   * count change before the slot is overwritten.  .sol.traceback */
  atomic_fetch_add_explicit(&kb->moves, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  res = slotPrepare(thread, level, kind, other);
  if (res == 0)
    slotUse(thread, level, kind, other);
  else
    (void)dropped(kind, NULL);  /* counted under the lock: EventFinish's report sees it */
  PlinthLockRelease();
  return res;
}

/* Events with nowhere to go (memory ran out for a buffer) are counted
 * per kind, never dropped silently: EventsDropped reports them at the
 * next flush, and on stderr.  design/telemetry.txt .sol.dropped */
/* uintptr_t: a word is lock-free everywhere (an 8-byte atomic on a
 * 32-bit platform may take a lock, and this is reached from handlers) */
static _Atomic uintptr_t dropCount[EVENT_KIND_LIMIT];

static void *dropped(unsigned kind, void *sink)
{
  if (atomic_fetch_add(&dropCount[kind], 1) == 0)
    say("no buffer for kind ", EventRegistry.kinds[kind].name,
        " (memory ran out, the writer is behind with TELLTALE_WRITER=async,drop,",
        " or signal handlers nested too deep):",
        " its events are dropped and counted (EventsDropped)", NULL);
  return sink;
}

/* dropsReport -- emit EventsDropped for the kinds that lost events,
 * from a thread that has a buffer for them (or the report would be
 * lost as well; another thread, or EventFinish, reports instead) */
static void dropsReport(void)
{
  EventThreadStruct *thread = threadState;
  EventKindBufStruct *kb;
  if (thread == NULL)
    return;
  kb = &thread->levels[thread->level][EventKindTelltale];
  if (kb->slot[kb->current] == NULL)
    return;
  for (unsigned kind = 0; kind < EVENT_KIND_LIMIT; ++kind) {
    uintptr_t n = atomic_load(&dropCount[kind]);
    if (n != 0) {
      atomic_fetch_sub(&dropCount[kind], n);
      EVENT_UW(EventsDropped, kind, (EventW)n);
    }
  }
}

/* signalEnter, signalLeave -- a handler the program installed starts or
 * ends on this thread (the plinth's trampoline calls them, with every
 * signal blocked).  The running level's next and limit are put aside
 * and the next level's brought in, so that the handler's events go
 * into buffers of their own: an event it interrupted, half written,
 * is left as it was.  Past the last level, next and limit are zero,
 * and the slow path drops and counts.  design/telemetry.txt
 * .sol.signal.level */
static int signalEnter(void)
{
  EventThreadStruct *thread = threadState;
  if (thread == NULL)
    return 0;                   /* no buffers to protect */
  if (thread->deeper > 0 || thread->level == LEVEL_LIMIT - 1) {
    if (thread->deeper++ == 0) {
      memcpy(thread->saved[thread->level], EventThreadBuf, sizeof EventThreadBuf);
      memset(EventThreadBuf, 0, sizeof EventThreadBuf);
    }
    return 1;
  }
  memcpy(thread->saved[thread->level], EventThreadBuf, sizeof EventThreadBuf);
  ++thread->level;
  memcpy(EventThreadBuf, thread->saved[thread->level], sizeof EventThreadBuf);
  return 1;
}

static void signalLeave(int token)
{
  EventThreadStruct *thread = threadState;
  if (token == 0 || thread == NULL)
    return;
  if (thread->deeper > 0) {
    if (--thread->deeper == 0)
      memcpy(EventThreadBuf, thread->saved[thread->level], sizeof EventThreadBuf);
    return;
  }
  if (thread->level == 0)
    return;                     /* the session was reset in the handler */
  memcpy(thread->saved[thread->level], EventThreadBuf, sizeof EventThreadBuf);
  --thread->level;
  memcpy(EventThreadBuf, thread->saved[thread->level], sizeof EventThreadBuf);
}

/* threadEnsure -- the calling thread, set up and announced on its first
 * use; NULL if memory ran out.  design/telemetry.txt .sol.thread */
static EventThreadStruct *threadEnsure(void)
{
  EventThreadStruct *thread = threadState;
  int created;
  if (thread != NULL)
    return thread;
  (void)EventInit();
  thread = threadCreate(&created);
  if (thread != NULL && created)
    threadAnnounce(thread);
  return thread;
}

/* EventReserveSlow -- the slow path of EventReserve.  design/telemetry.txt .sol.slow
 *
 * Sets the thread up on its first event, makes the kind's buffer on its
 * first event of that kind, and makes room when the buffer is full.
 * Own events emitted here (ThreadStart) re-enter; the loop re-checks. */
void *EventReserveSlow(unsigned kind, size_t size)
{
  /* A dropped event is written into the thread's own sink, so that
   * threads that drop share no cache line and race on nothing; only
   * threads that could not be set up at all share this one.  .sol.dropped */
  static unsigned char orphanSink[EVENT_SIZE_MAX + EVENT_END_SLACK];
  EventThreadStruct *thread;
  unsigned level;
  EVENT_ASSERT(kind < EVENT_KIND_LIMIT && size >= EVENT_HEADER_LEN && size <= EVENT_SIZE_MAX);
  thread = threadEnsure();
  if (thread == NULL)
    return dropped(kind, orphanSink);
  if (thread->deeper > 0)       /* a handler nested past the last level */
    return dropped(kind, thread->sink);
  /* A handler that interrupts from here on runs on a level of its own
   * and puts this level's next and limit back as it found them
   * (.sol.signal.level); what the lock guards it does not enter. */
  level = thread->level;
  for (;;) {
    EventKindBufStruct *kb = &thread->levels[level][kind];
    EventBufStruct *buf = &thread->bufs[kind];
    if (kb->slot[kb->current] == NULL) {
      int res;
      PlinthLockClaim();
      res = slotPrepare(thread, level, kind, kb->current);
      if (res == 0) {
        slotUse(thread, level, kind, kb->current);
        kb->previousEnd = 0;
      } else
        (void)dropped(kind, NULL);
      PlinthLockRelease();
      if (res != 0)
        return thread->sink;
    }
    if (buf->limit - buf->next >= size) {
      void *p = (void *)buf->next;
      buf->next += size;
      return p;
    }
    if (bufferFull(thread, level, kind) != 0)
      return thread->sink;      /* counted by bufferFull */
  }
}

/* threadFlush -- send what a thread's buffers hold at levels from
 * "from" up.  Lock held.  A handler flushes only its own level and
 * those above: a level below may have an event half written, which it
 * interrupted.  own: the thread is the caller, and "from" its running
 * level (kindFlush).  design/telemetry.txt .sol.signal.level, .sol.flush */
static void threadFlush(EventThreadStruct *thread, unsigned from, int own)
{
  for (unsigned level = from; level < LEVEL_LIMIT; ++level)
    for (unsigned kind = 0; kind < EVENT_KIND_LIMIT; ++kind)
      kindFlush(thread, level, kind, own);
}

/* threadRelease -- give up a thread's buffers */
static void threadRelease(EventThreadStruct *thread)
{
  for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
    for (unsigned kind = 0; kind < EVENT_KIND_LIMIT; ++kind) {
      EventKindBufStruct *kb = &thread->levels[level][kind];
      slotRelease(kb, 0);
      slotRelease(kb, 1);
      kb->previousEnd = 0;
      kb->current = 0;
      memset(&thread->saved[level][kind], 0, sizeof thread->saved[level][kind]);
    }
}

static void threadFree(EventThreadStruct *thread)
{
  if (thread->prev != NULL)
    thread->prev->next = thread->next;
  else
    session.threads = thread->next;
  if (thread->next != NULL)
    thread->next->prev = thread->prev;
  threadRelease(thread);
  PlinthPagesFree(thread, sizeof *thread);
}

/* threadExit -- a thread is exiting: flush its buffers, never lose them.
 * design/telemetry.txt .sol.thread.exit */
static void threadExit(void *arg)
{
  EventThreadStruct *thread = arg;
  void *altStack;
  if (thread != threadState)
    return;
  EVENT_U(ThreadExit, thread->serial);
  dropsReport();
  PlinthLockClaim();
  threadFlush(thread, 0, thread->level == 0);
  altStack = thread->altStack;
  threadFree(thread);
  threadState = NULL;           /* before a handler can run again */
  memset(EventThreadBuf, 0, sizeof EventThreadBuf);
  PlinthLockRelease();
  PlinthAltStackDestroy(altStack);
}

/* EventFlush -- send the calling thread's buffers to the streams */
void EventFlush(void)
{
  EventThreadStruct *thread = threadState;
  if (thread == NULL)
    return;
  clockSync();
  dropsReport();
  PlinthLockClaim();
  threadFlush(thread, thread->level, 1);
  writerIdle();
  for (size_t i = 0; i < session.streamCount; ++i)
    (void)PlinthStreamFlush(session.streams[i].stream);
  PlinthLockRelease();
}

/* finish -- end the session.  design/telemetry.txt .sol.finish
 *
 * Every thread's committed events are sent, then the calling thread's
 * ClockSync and StreamEnd.  At exit, threads still running go on
 * emitting until the process ends: the session then stays open for
 * them (streams, live file, writer), so that what they emit after
 * StreamEnd follows it in the log, or is recovered from the live file.
 * Otherwise the streams close, and what threads still running emit
 * afterwards is not in this session's log. */
static void finish(int atExit)
{
  EventThreadStruct *self = threadState;
  unsigned running = 0;
  PlinthLockClaim();
  if (session.ending || (session.threads == NULL && session.streamCount == 0)) {
    PlinthLockRelease();
    return;
  }
  /* At exit, threads still running wait for the writer from here on: a
   * drop after the report below could never be reported (.sol.writer).
   * A drop before is counted under this lock, so the report sees it. */
  if (atExit)
    session.dropWhenBehind = 0;
  for (EventThreadStruct *t = session.threads; t != NULL; t = t->next)
    if (t == self)
      threadFlush(t, self->level, 1);
    else {
      threadFlush(t, 0, 0);
      ++running;
    }
  PlinthLockRelease();
  clockSync();
  dropsReport();
  PlinthLockClaim();
  EVENT_W(StreamEnd, (EventW)session.blocks);
  if (threadState != NULL) {
    self = threadState;
    kindFlush(self, self->level, EventKindTelltale, 1);
  }
  if (atExit && running > 0) {
    writerIdle();
    lostReport();
    for (size_t i = 0; i < session.streamCount; ++i)
      (void)PlinthStreamFlush(session.streams[i].stream);
    session.ending = 1;
    PlinthLockRelease();
    return;
  }
  if (threadState != NULL) {
    self = threadState;
    /* The next session starts this thread's buffers afresh. */
    threadRelease(self);
    memset(EventThreadBuf, 0, sizeof EventThreadBuf);
  }
  writerIdle();                 /* every block written before the streams close */
  lostReport();
  for (size_t i = 0; i < session.streamCount; ++i) {
    EventStreamEntryStruct *entry = &session.streams[i];
    (void)PlinthStreamFlush(entry->stream);
    if (entry->owned)
      PlinthStreamClose(entry->stream);
  }
  liveEnd();
  session.streamCount = 0;
  session.started = 0;
  session.finished = 1;
  session.startClock = 0;
  session.syncClock = 0;
  session.blocks = 0;
  internSessionEnd();
  PlinthLockRelease();
}

void EventFinish(void)
{
  finish(0);
}

/* afterFork -- in the child of fork(): the parent's buffered events are
 * the parent's to write, its regions of the live file are the parent's
 * file, and its streams are shared with the parent, so the child drops
 * all of them (unmapping affects only the child) and starts a session
 * of its own in a file named after the parent's with ".PID" added.
 * design/telemetry.txt .sol.fork */
static void afterFork(void)
{
  EventThreadStruct *t, *next;
  char name[sizeof session.fileName];
  session.finished = 0;      /* the child's own session may open its file */
  session.ending = 0;
  /* The writer thread is the parent's: the child starts its own when it
   * needs one, and the parent's queued jobs are the parent's. */
  memset(&writer, 0, sizeof writer);
  /* The parent's live file is the parent's: unmap its regions (in the
   * child only) rather than reuse them, and let go of the stream. */
  if (session.live != NULL) {
    PlinthStreamClose(session.live);
    session.live = NULL;
  }
  while (session.liveFree != NULL) {
    LiveRegionStruct *region = session.liveFree;
    session.liveFree = region->next;
    PlinthStreamUnmap(NULL, region->base, region->size);
    PlinthFree(region);
  }
  for (t = session.threads; t != NULL; t = next) {
    next = t->next;
    threadFree(t);
  }
  threadState = NULL;
  memset(EventThreadBuf, 0, sizeof EventThreadBuf);
  session.threadSerial = 0;
  for (size_t i = 0; i < session.streamCount; ++i)
    if (session.streams[i].owned)
      PlinthStreamClose(session.streams[i].stream);
  session.streamCount = 0;
  session.started = 0;
  session.blocks = 0;
  session.startClock = 0;
  session.syncClock = 0;
  internSessionEnd();
  /* A name with %p is the child's own when expanded anew; another
   * gets ".PID".  .sol.fork */
  if (session.noDefault)
    return;
  if (filePerProcess(session.filePattern) &&
      fileExpand(name, sizeof name, session.filePattern, PlinthProcessId(),
                 PlinthRealtimeNs() / 1000000000u) == 0)
    memcpy(session.fileName, name, sizeof name);
  else {
    size_t n = strlen(session.fileName);
    uint64_t pid = PlinthProcessId();
    char digits[24];
    size_t d = formatUnsigned(digits, pid);
    if (n + 1 + d < sizeof session.fileName) {
      session.fileName[n++] = '.';
      memcpy(session.fileName + n, digits, d + 1);
    }
  }
}


/* Death ------------------------------------------------------------- */

/* lockWithin -- claim the lock, waiting at most about ns for a thread
 * that holds it; 1 if claimed.  At death the lock must not be waited
 * for without end (its holder may be stuck), but a moment's wait lets
 * a thread finish writing a block.  Async-signal-safe.  .sol.death */
static int lockWithin(uint64_t ns)
{
  for (uint64_t waited = 0; ; waited += 1000000) {
    if (PlinthLockTry())
      return 1;
    if (waited >= ns)
      return 0;
    PlinthSleepNs(1000000);
  }
}

#define DEATH_LOCK_WAIT_NS ((uint64_t)200 * 1000000)

/* DumpEntryStruct -- an event found in a buffer, for the traceback */
typedef struct DumpEntryStruct {
  EventClock clock;
  const unsigned char *event;
  EventThreadStruct *thread;
  EventKindBufStruct *kb;       /* its buffer */
  unsigned moves;               /* the buffer's ring moves when it was found */
  unsigned slack;               /* moves it survives: 1 in the current slot */
  unsigned kind;
  uintptr_t limit;              /* the end of its slot's data */
} DumpEntryStruct;

/* DumpHeapStruct -- the latest events offered: a min-heap by clock */
typedef struct DumpHeapStruct {
  DumpEntryStruct *e;
  size_t n, cap;
  size_t seen;                  /* events offered */
} DumpHeapStruct;

static DumpEntryStruct dumpEntries[DUMP_LIMIT];  /* static: no malloc in a signal handler */

static void dumpSwap(DumpEntryStruct *a, DumpEntryStruct *b)
{
  DumpEntryStruct t = *a;
  *a = *b;
  *b = t;
}

/* dumpSift -- restore the heap below i; max: a max-heap, else a min-heap */
static void dumpSift(DumpEntryStruct *e, size_t i, size_t n, int max)
{
  for (;;) {
    size_t best = i, l = 2 * i + 1, r = l + 1;
    if (l < n && (max ? e[l].clock > e[best].clock : e[l].clock < e[best].clock))
      best = l;
    if (r < n && (max ? e[r].clock > e[best].clock : e[r].clock < e[best].clock))
      best = r;
    if (best == i)
      return;
    dumpSwap(&e[i], &e[best]);
    i = best;
  }
}

static void dumpOffer(DumpHeapStruct *h, const DumpEntryStruct *entry)
{
  if (h->n < h->cap) {
    size_t i = h->n++;
    h->e[i] = *entry;
    while (i > 0 && h->e[(i - 1) / 2].clock > h->e[i].clock) {
      dumpSwap(&h->e[(i - 1) / 2], &h->e[i]);
      i = (i - 1) / 2;
    }
  } else if (h->cap > 0 && entry->clock > h->e[0].clock) {
    h->e[0] = *entry;
    dumpSift(h->e, 0, h->n, 0);
  }
}

/* dumpRange -- offer the committed events from p, in a slot ending at
 * limit, that are no later than bound */
static void dumpRange(DumpHeapStruct *h, DumpEntryStruct *entry, const unsigned char *p,
                      uintptr_t limit, EventClock bound)
{
  size_t length;
  entry->limit = limit;
  while (eventCommitted(p, limit, &length)) {
    memcpy(&entry->clock, p + 4, sizeof entry->clock);
    if (entry->clock <= bound) {
      entry->event = p;
      dumpOffer(h, entry);
      ++h->seen;
    }
    p += length;
  }
}

/* dumpScan -- offer a thread's events from every level and kind: the
 * slot before the current one up to where it ended, then the current
 * one up to its first uncommitted event.  .sol.ring */
static void dumpScan(DumpHeapStruct *h, EventThreadStruct *t, EventClock bound)
{
  for (unsigned level = 0; level < LEVEL_LIMIT; ++level)
    for (unsigned kind = 0; kind < EVENT_KIND_LIMIT; ++kind) {
      EventKindBufStruct *kb = &t->levels[level][kind];
      unsigned s = kb->current, o = 1 - s;
      DumpEntryStruct entry;
      entry.thread = t;
      entry.kb = kb;
      entry.kind = kind;
      entry.moves = atomic_load_explicit(&kb->moves, memory_order_acquire);
      entry.slack = 0;
      if (kb->slot[o] != NULL && kb->previousEnd != 0)
        dumpRange(h, &entry, kb->slot[o] + EVENT_BLOCK_HEADER_LEN, kb->previousEnd, bound);
      entry.slack = 1;
      if (kb->slot[s] != NULL)
        dumpRange(h, &entry, kb->slot[s] + EVENT_BLOCK_HEADER_LEN,
                  (uintptr_t)kb->slot[s] + kb->slotSize[s], bound);
    }
}

/* dumpCopy -- copy an entry's event; 0 if it may have been overwritten
 * since it was found (its ring moved on: only without the lock) */
static int dumpCopy(const DumpEntryStruct *entry, unsigned char *copy, size_t size)
{
  size_t length;
  uintptr_t limit = (uintptr_t)entry->event + size;
  if (!eventCommitted(entry->event, limit < entry->limit ? limit : entry->limit, &length))
    return 0;
  memcpy(copy, entry->event, length);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&entry->kb->moves, memory_order_relaxed) - entry->moves
         <= entry->slack;
}

/* threadLabel -- "T3 (worker-1)", or "T3" for a thread with no name */
static const char *threadLabel(char *buf, size_t size, const EventThreadStruct *t)
{
  char number[DECIMAL_MAX + 1];
  formatUnsigned(number, t != NULL ? t->serial : 0);
  buf[0] = '\0';
  append(buf, size, "T");
  append(buf, size, number);
  if (t != NULL && t->name[0] != '\0') {
    append(buf, size, " (");
    append(buf, size, t->name);
    append(buf, size, ")");
  }
  return buf;
}

/* dumpSelect -- find the events to show: self (the thread that failed,
 * or called) gets up to half of count, more if the other threads have
 * fewer than the rest; they get the rest.  The entries end up in
 * dumpEntries, oldest first; returns how many are self's in *mineReturn
 * and the others' in *restReturn. */
static size_t dumpSelect(unsigned count, EventThreadStruct *self, EventClock bound,
                         size_t *mineReturn, size_t *restReturn)
{
  DumpHeapStruct mine, rest;
  size_t n;
  memset(&mine, 0, sizeof mine);
  memset(&rest, 0, sizeof rest);
  if (self != NULL)
    dumpScan(&mine, self, bound);
  for (EventThreadStruct *t = session.threads; t != NULL; t = t->next)
    if (t != self)
      dumpScan(&rest, t, bound);
  mine.cap = mine.seen < (count + 1) / 2 ? mine.seen : (count + 1) / 2;
  rest.cap = rest.seen < count - mine.cap ? rest.seen : count - mine.cap;
  mine.cap = mine.seen < count - rest.cap ? mine.seen : count - rest.cap;
  mine.e = dumpEntries;
  rest.e = dumpEntries + mine.cap;
  /* (Without the lock the second count can differ from the first.) */
  if (self != NULL)
    dumpScan(&mine, self, bound);
  for (EventThreadStruct *t = session.threads; t != NULL; t = t->next)
    if (t != self)
      dumpScan(&rest, t, bound);
  n = mine.n + rest.n;
  /* Heap sort, oldest first. */
  for (size_t i = n / 2; i > 0; --i)
    dumpSift(dumpEntries, i - 1, n, 1);
  for (size_t end = n; end > 1; --end) {
    dumpSwap(&dumpEntries[0], &dumpEntries[end - 1]);
    dumpSift(dumpEntries, 0, end - 1, 1);
  }
  *mineReturn = mine.n;
  *restReturn = rest.n;
  return n;
}

/* dumpHeading -- what the traceback holds, and the threads it names */
static void dumpHeading(int fd, size_t n, EventThreadStruct *self, const char *why,
                        size_t mine, size_t rest)
{
  char line[TEXT_LINE_MAX], label[64];
  char number[DECIMAL_MAX + 1], ofSelf[DECIMAL_MAX + 1], ofRest[DECIMAL_MAX + 1];
  formatUnsigned(number, n);
  if (self != NULL) {
    formatUnsigned(ofSelf, mine);
    formatUnsigned(ofRest, rest);
    sayTo(fd, "the last ", number, " events in the flight recorder, oldest first: ", ofSelf,
          " of ", threadLabel(label, sizeof label, self), ", which ", why, ", and ", ofRest,
          " of the other threads", NULL);
  } else
    sayTo(fd, "the last ", number, " events in the flight recorder, oldest first", NULL);
  line[0] = '\0';
  for (EventThreadStruct *t = session.threads; t != NULL; t = t->next)
    for (size_t i = 0; i < n; ++i)
      if (dumpEntries[i].thread == t) {
        append(line, sizeof line, line[0] == '\0' ? "threads: " : ", ");
        append(line, sizeof line, threadLabel(label, sizeof label, t));
        break;
      }
  if (line[0] != '\0')
    sayTo(fd, line, NULL);
  sayTo(fd, "(seconds since start, UTC time, thread, kind, event, its fields):", NULL);
}

/* dump -- the traceback: the latest count events, oldest first, to fd.
 * design/telemetry.txt .sol.traceback
 *
 * Only events no later than bound (the moment of failure) are shown.
 * With the lock held no ring moves, so what was found stays; without
 * it, an event whose ring moved on is counted as unreadable rather than
 * shown torn.  Async-signal-safe. */
static void dump(int fd, unsigned count, EventThreadStruct *self, const char *why,
                 EventClock bound, int locked, int dying)
{
  size_t n, mine, rest, unreadable = 0;
  EventLayoutStruct layout;
  EventFormatContextStruct context;
  char line[TEXT_LINE_MAX], number[DECIMAL_MAX + 1];
  if (count > DUMP_LIMIT)
    count = DUMP_LIMIT;
  /* The clock's rate by the reader's rule (.sol.clock), from the
   * latest ClockSync in the stream: at death, one emitted now, at a
   * level of its own (.sol.signal.level). */
  if (dying && locked && threadState != NULL) {
    int token = signalEnter();
    clockSync();
    signalLeave(token);
  }
  n = dumpSelect(count, self, bound, &mine, &rest);
  dumpHeading(fd, n, self, why, mine, rest);
  EventLayoutNative(&layout);
  EventFormatContextInit(&context, &EventRegistry);
  context.label = labelLookup;
  context.clockHz = EventClockRate(PlinthClockFrequency(), session.startClock,
                                   session.startMonotonic, session.syncClock,
                                   session.syncMonotonic);
  context.startClock = session.startClock;
  context.startRealtime = session.startRealtime;
  for (size_t i = 0; i < n; ++i) {
    DumpEntryStruct *e = &dumpEntries[i];
    unsigned char copy[EVENT_SIZE_MAX];
    EventRecordStruct rec;
    size_t len;
    if (!dumpCopy(e, copy, sizeof copy)
        || EventDecode(&layout, &EventRegistry, copy, sizeof copy, &rec, NULL) != EventDecodeOK) {
      ++unreadable;
      continue;
    }
    rec.thread = e->thread->serial;
    rec.kind = e->kind;
    len = EventFormat(line, sizeof line - 1, &rec, &context);
    if (len > sizeof line - 2)
      len = sizeof line - 2;
    line[len++] = '\n';
    PlinthWriteFd(fd, line, len);
  }
  if (unreadable > 0) {
    formatUnsigned(number, unreadable);
    sayTo(fd, number, " of them could not be read: other threads overwrote them"
          " while the traceback was taken, without the lock", NULL);
  }
}

/* dumpNow -- a traceback asked for, not a death: self is given a share */
static void dumpNow(int fd, unsigned count, EventThreadStruct *self)
{
  EventClock bound;
  int locked;
  ringsFreeze(1);
  bound = PlinthClockNow();
  locked = lockWithin(DEATH_LOCK_WAIT_NS);
  if (!locked)
    sayTo(fd, "another thread holds telltale's lock: reading buffers without it", NULL);
  dump(fd, count, self, "called", bound, locked, 0);
  if (locked)
    PlinthLockRelease();
  ringsFreeze(0);
}

/* EventDumpTo -- the traceback of the calling thread and the others, to
 * fd: for a program's own fatal-signal handler and logger */
void EventDumpTo(int fd, unsigned count)
{
  dumpNow(fd, count, threadState);
}

/* EventDump -- the latest events of every thread, to stderr: what a
 * debugger calls (the thread it calls from is no more than any other) */
void EventDump(unsigned count)
{
  dumpNow(2, count, NULL);
}

/* flushAll -- send every thread's committed events.  Lock held.  With
 * the asynchronous writer nothing is written here: the writer may be
 * mid-write in the same stream; it goes on until the process ends, and
 * the live file keeps the rest.  .sol.death, .sol.writer */
static int flushAll(void)
{
  if (session.async)
    return 16; /* EBUSY */
  for (EventThreadStruct *t = session.threads; t != NULL; t = t->next)
    threadFlush(t, 0, 0);
  for (size_t i = 0; i < session.streamCount; ++i)
    (void)PlinthStreamFlush(session.streams[i].stream);
  return 0;
}

/* EventFlushAll -- send every thread's committed events to the streams,
 * from anywhere, a fatal-signal handler included.  .sol.death */
int EventFlushAll(void)
{
  int res;
  if (!lockWithin(DEATH_LOCK_WAIT_NS))
    return 11; /* EAGAIN */
  res = flushAll();
  PlinthLockRelease();
  return res;
}

/* death -- telltale's part of a death: say what happened, the
 * traceback (of events up to since, if not 0, else now), and the flush,
 * under the lock if it can be had.  .sol.death */
static void death(const char *what, const char *detail, EventClock since)
{
  EventClock bound;
  EventThreadStruct *self = threadState;
  int locked;
  char label[64];
  ringsFreeze(1);
  bound = PlinthClockNow();
  if (since != 0 && since < bound)
    bound = since;
  locked = lockWithin(DEATH_LOCK_WAIT_NS);
  if (!session.dumped) {
    session.dumped = 1;
    say(what, detail, " in thread ", threadLabel(label, sizeof label, self), NULL);
    if (!locked)
      say("another thread holds telltale's lock: reading buffers without it", NULL);
    dump(2, session.dumpCount, self, "failed", bound, locked, 1);
  }
  if (!locked)
    say("another thread holds telltale's lock: buffers are not flushed; eventcnv recovers them from ",
        session.live != NULL ? session.liveName : "(no live file)", NULL);
  else {
    (void)flushAll();
    PlinthLockRelease();
  }
  ringsFreeze(0);
}

/* fatalSignal -- telltale's part of a fatal signal.  The plinth then
 * passes the signal on.  .sol.signal */
static void fatalSignal(int sig, const char *name)
{
  (void)sig;
  /* A fault the program's handler tried first came earlier. */
  death("fatal signal ", name, PlinthFaultClock());
}

/* EventAssertFail -- an assertion failed: say so, dump, flush, abort.
 * design/telemetry.txt .sol.assert */
void EventAssertFail(const char *condition, const char *file, unsigned line)
{
  char number[DECIMAL_MAX + 1], detail[MESSAGE_MAX + 1] = ": ";
  formatUnsigned(number, line);
  append(detail, sizeof detail, condition);
  append(detail, sizeof detail, " at ");
  append(detail, sizeof detail, file);
  append(detail, sizeof detail, ":");
  append(detail, sizeof detail, number);
  death("assertion failed", detail, 0);
  PlinthAbort();
}

/* EventFatalSignals -- install (on) or remove (off) telltale's handlers
 * for fatal signals.  Installed at start unless TELLTALE_SIGNALS=off. */
int EventFatalSignals(int on)
{
  int res = 0;
  PlinthLockClaim();
  if (on && !session.signals) {
    res = PlinthFatalSignalsInstall(fatalSignal);
    session.signals = res == 0;
  } else if (!on && session.signals) {
    PlinthFatalSignalsRemove();
    session.signals = 0;
  }
  PlinthLockRelease();
  return res;
}


/* Strings and labels ------------------------------------------------ */

static uint64_t hashString(const char *s)
{
  uint64_t h = 1469598103934665603u;        /* FNV-1a */
  while (*s != '\0')
    h = (h ^ (unsigned char)*s++) * 1099511628211u;
  return h;
}

/* EventInternString -- the id of a string, emitting Intern the first
 * time.  The string is truncated to EVENT_STRING_MAX.  Returns 0 if
 * memory runs out.  design/telemetry.txt .sol.intern */
EventW EventInternString(const char *string)
{
  char copy[EVENT_STRING_MAX + 1];
  size_t len = EventStringLength(string), i;
  EventW id;
  EventStringCopy(copy, string, len);
  PlinthLockClaim();
  if (session.internCount * 2 >= session.internSize) {
    size_t size = session.internSize == 0 ? 64 : session.internSize * 2;
    void *table = PlinthAlloc(size * sizeof *session.interns);
    if (table == NULL) {
      PlinthLockRelease();
      return 0;
    }
    memset(table, 0, size * sizeof *session.interns);
    {
      __typeof__(session.interns) old = session.interns;
      size_t oldSize = session.internSize;
      session.interns = table;
      session.internSize = size;
      for (size_t j = 0; j < oldSize; ++j)
        if (old[j].string != NULL) {
          size_t k = hashString(old[j].string) & (size - 1);
          while (session.interns[k].string != NULL)
            k = (k + 1) & (size - 1);
          session.interns[k] = old[j];
        }
      PlinthFree(old);
    }
  }
  for (i = hashString(copy) & (session.internSize - 1);
       session.interns[i].string != NULL;
       i = (i + 1) & (session.internSize - 1))
    if (strcmp(session.interns[i].string, copy) == 0) {
      id = session.interns[i].id;
      /* Seen in an earlier session only: the new stream needs its own
       * Intern event, or its labels cannot be read.  .sol.intern */
      if (!session.interns[i].inSession) {
        session.interns[i].inSession = 1;
        EVENT_WS(Intern, id, copy);
      }
      PlinthLockRelease();
      return id;
    }
  session.interns[i].string = PlinthAlloc(len + 1);
  if (session.interns[i].string == NULL) {
    PlinthLockRelease();
    return 0;
  }
  memcpy(session.interns[i].string, copy, len + 1);
  session.interns[i].inSession = 1;
  id = session.interns[i].id = ++session.internCount;
  /* Emitted under the lock so that no thread labels with id before
   * the Intern event is in a buffer. */
  EVENT_WS(Intern, id, copy);
  PlinthLockRelease();
  return id;
}

/* internSessionEnd -- the session ended: strings keep their ids, but
 * each is interned again (Intern emitted) on its first use in the next
 * session, whose stream would otherwise lack it.  Lock held. */
static void internSessionEnd(void)
{
  for (size_t i = 0; i < session.internSize; ++i)
    session.interns[i].inSession = 0;
}

/* The runtime's labels, for the traceback: open addressing on the
 * address, static so that EventDump can read it without malloc.  When
 * it is full, a new label goes to the stream but not here.  .sol.intern */
#define LABEL_LIMIT 1024
static struct { EventA address; EventW id; } labels[LABEL_LIMIT];

static size_t labelSlot(EventA address)
{
  return (size_t)((address >> 3) * 0x9E3779B97F4A7C15u >> 54) & (LABEL_LIMIT - 1);
}

/* EventLabel -- label an address with an interned string */
void EventLabel(EventA address, EventW id)
{
  if (address != 0) {
    PlinthLockClaim();
    for (size_t i = labelSlot(address), n = 0; n < LABEL_LIMIT; i = (i + 1) & (LABEL_LIMIT - 1), ++n)
      if (labels[i].address == 0 || labels[i].address == address) {
        labels[i].address = address;
        labels[i].id = id;
        break;
      }
    PlinthLockRelease();
  }
  EVENT_AW(Label, address, id);
}

/* labelLookup -- an EventLabelFunction over the runtime's labels; no
 * malloc and no lock, for the traceback */
static const char *labelLookup(void *closure, uint64_t address)
{
  (void)closure;
  if (address == 0)
    return NULL;
  for (size_t i = labelSlot((EventA)address), n = 0; n < LABEL_LIMIT;
       i = (i + 1) & (LABEL_LIMIT - 1), ++n) {
    if (labels[i].address == 0)
      return NULL;
    if (labels[i].address == (EventA)address) {
      for (size_t j = 0; j < session.internSize; ++j)
        if (session.interns[j].string != NULL && session.interns[j].id == labels[i].id)
          return session.interns[j].string;
      return NULL;
    }
  }
  return NULL;
}

void EventLabelString(EventA address, const char *label)
{
  EventW id = EventInternString(label);
  if (id != 0)
    EventLabel(address, id);
}

/* EventThreadNameSet -- name the calling thread in the stream */
void EventThreadNameSet(const char *name)
{
  EventThreadStruct *thread = threadEnsure();
  if (thread != NULL) {
    copyString(thread->name, sizeof thread->name, name != NULL ? name : "");
    EVENT_US(ThreadName, thread->serial, name);
  }
}
