/* <src/event/event.c> -- the event runtime: initialization, control, interning
 *
 * .design: design/runtime.txt
 *
 * The hot path is inline in event.h.  The runtime is one module in
 * several files (eventint.h lists them and says what they share): this
 * one holds the hot path's globals, messages, kind and event control,
 * the environment and the session's start (EventInit), and interned
 * strings and labels.  Everything
 * platform-specific goes through the plinth; these files include no OS
 * headers.
 *
 * Locking: one plinth lock guards the session, the stream list, the
 * thread list and the intern table.  A thread's buffers are written only
 * by that thread, except at EventFinish (design/runtime.txt
 * .sol.finish); the asynchronous writer reads full ones, under the queue
 * lock's rules (.sol.writer).
 */

#include <stdarg.h>
#include <string.h>

#include "eventint.h"

#define KIND_OWN EVENT_KIND_BIT(EventKindTelltale)  /* always on: .sol.control.own */
#define BUFFER_SIZE_DEFAULT ((size_t)64 * 1024)
#define BUFFER_SIZE_MIN ((size_t)4096)
#define BUFFER_SIZE_MAX ((size_t)64 * 1024 * 1024)
_Static_assert(BUFFER_SIZE_MAX <= EVENT_BLOCK_LENGTH_MAX, "a buffer is a block");

/* The session.  design/runtime.txt .sol.session */
EventSessionStruct eventSession;


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

/* eventSay -- sayv to stderr */
void eventSay(const char *first, ...)
{
  va_list args;
  va_start(args, first);
  sayv(2, first, args);
  va_end(args);
}

/* eventSayTo -- sayv to fd */
void eventSayTo(int fd, const char *first, ...)
{
  va_list args;
  va_start(args, first);
  sayv(fd, first, args);
  va_end(args);
}

/* eventAppend -- add src to the string in dst, cut to fit size */
void eventAppend(char *dst, size_t size, const char *src)
{
  size_t n = strlen(dst), len = strlen(src);
  if (n + 1 >= size)
    return;
  if (len > size - 1 - n)
    len = size - 1 - n;
  memcpy(dst + n, src, len);
  dst[n + len] = '\0';
}

/* eventFormatUnsigned -- value in decimal; async-signal-safe */
size_t eventFormatUnsigned(char *buf, uint64_t value)
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

/* eventCopyString -- src into dst, cut to fit size */
void eventCopyString(char *dst, size_t size, const char *src)
{
  size_t len = strlen(src);
  if (size == 0)
    return;
  if (len >= size)
    len = size - 1;
  memcpy(dst, src, len);
  dst[len] = '\0';
}


/* envBad -- a setting that cannot be used: say so, naming the variable,
 * what was wrong or expected, and what is used instead, and carry on.
 * Each variable is read once, so this is said once.  Telemetry never
 * takes a program down.  design/runtime.txt .sol.env */
static void envBad(const char *variable, const char *why, const char *instead)
{
  eventSay(variable, ": ", why, "; using ", instead, NULL);
}

/* envBadValue -- envBad for "'VALUE' EXPECTED" */
static void envBadValue(const char *variable, const char *value, const char *expected,
                        const char *instead)
{
  char why[512] = "'";
  eventAppend(why, sizeof why, value);
  eventAppend(why, sizeof why, "' ");
  eventAppend(why, sizeof why, expected);
  envBad(variable, why, instead);
}

/* Settings by registry.  design/runtime.txt .sol.env, design/registry.txt .reg.many
 * The environment's kinds and events are names ("Pool", "alloc:Pool"),
 * applied to each registry when it joins, so that a library loaded
 * later has them too; a mistake is said once, by the first registry. */

/* envEvents -- TELLTALE_EVENTS: "-Name,+Name,..." for a source.  On a
 * mistake no event is turned off (the default), and it is said. */
static void envEvents(EventSourceStruct *source, int sayIt)
{
  const char *p = PlinthGetEnv("TELLTALE_EVENTS");
  const EventRegistryStruct *reg = source->registry;
  char err[256];
  if (p == NULL)
    return;
  err[0] = '\0';
  while (*p != '\0' && err[0] == '\0') {
    char name[2 * EVENT_NAME_MAX + 4];
    const char *colon, *event;
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
      eventCopyString(err, sizeof err, "'");
      eventAppend(err, sizeof err, p);
      eventAppend(err, sizeof err, "': each event needs - (off) or + (on) before its name");
      break;
    }
    while (p[len] != '\0' && p[len] != ',' && p[len] != ' ')
      ++len;
    if (len == 0 || len >= sizeof name) {
      eventCopyString(err, sizeof err, "an event name is empty or too long");
      break;
    }
    memcpy(name, p, len);
    name[len] = '\0';
    p += len;
    colon = strchr(name, ':');
    event = colon != NULL ? colon + 1 : name;
    if (colon != NULL && !eventRegistryNamed(source, name, (size_t)(colon - name)))
      continue;
    for (unsigned i = 0; i < reg->eventCount; ++i)
      if (strcmp(reg->events[i].name, event) == 0 && reg->events[i].code >= EVENT_CODE_RESERVED_LIMIT
          && reg->events[i].code < source->offLimit)
        atomic_store(&source->off[reg->events[i].code], on ? 0 : 1);
  }
  if (err[0] != '\0') {
    for (unsigned i = 0; i < reg->eventCount; ++i)
      if (reg->events[i].code < source->offLimit)
        atomic_store(&source->off[reg->events[i].code], 0);
    if (sayIt)
      envBad("TELLTALE_EVENTS", err, "the default, every event on");
  }
}

/* envKinds -- a kind-set variable for a source, or otherwise (named by
 * otherName) */
static EventKindSet envKinds(EventSourceStruct *source, const char *variable,
                             EventKindSet otherwise, const char *otherName, int sayIt)
{
  const char *value = PlinthGetEnv(variable);
  EventKindSet kinds;
  char err[512], instead[64] = "the default, ";
  if (value == NULL)
    return otherwise;
  if (eventKindSpec(source, value, 0, &kinds, err, sizeof err) != 0) {
    eventAppend(instead, sizeof instead, otherName);
    if (sayIt)
      envBad(variable, err, instead);
    return otherwise;
  }
  return kinds;
}

/* The variables found bad when the session started (eventEnvCheck):
 * their defaults are used, for registries that join later too. */
static int envBadControl, envBadRecord, envBadMirror, envBadEvents;

/* eventEnvApply -- the environment's kinds and events for a source that
 * joins (control: its output set), or again after eventEnvCheck found a
 * variable bad (NULL).  Lock held. */
void eventEnvApply(EventSourceStruct *source, _Atomic EventKindSet *control)
{
  static int said;
  static _Atomic EventKindSet *controls[SOURCE_LIMIT];   /* each source's, for again */
  EventKindSet all = (EventKindSet)-1;
  const EventRegistryStruct *reg = source->registry;
  int sayIt = !said;
  unsigned at = 0;
  said = 1;
  while (at < SOURCE_LIMIT && eventSources[at] != source)
    ++at;
  if (control != NULL && at < SOURCE_LIMIT)
    controls[at] = control;
  else if (at < SOURCE_LIMIT)
    control = controls[at];
  if (control == NULL)
    return;
  atomic_store(control, (envBadControl ? all : envKinds(source, "TELLTALE_CONTROL", all, "all", sayIt))
                        | KIND_OWN);
  atomic_store(source->record, (envBadRecord ? all : envKinds(source, "TELLTALE_RECORD", all, "all",
                                                               sayIt)) | KIND_OWN);
  if (!envBadMirror)
    eventSession.mirrorKinds |= eventSlotsOf(source, envKinds(source, "TELLTALE_MIRROR", 0, "none",
                                                              sayIt));
  else
    eventSession.mirrorKinds = 0;
  if (!envBadEvents)
    envEvents(source, sayIt);
  else
    for (unsigned i = 0; i < reg->eventCount; ++i)
      if (reg->events[i].code < source->offLimit)
        atomic_store(&source->off[reg->events[i].code], 0);
  eventFilterEnv(0);
}

/* envEventsKnown -- is every name in TELLTALE_EVENTS an event of some
 * registry now in the process?  Lock held. */
static int envEventsKnown(const char *value, char *err, size_t errSize)
{
  const char *p = value;
  while (*p != '\0') {
    char name[2 * EVENT_NAME_MAX + 4];
    size_t len = 0;
    int found;
    while (*p == ' ' || *p == ',' || *p == '-' || *p == '+')
      ++p;
    while (p[len] != '\0' && p[len] != ',' && p[len] != ' ')
      ++len;
    if (len == 0)
      break;
    if (len < sizeof name) {
      memcpy(name, p, len);
      name[len] = '\0';
    }
    if (len < sizeof name && strchr(name, ':') != NULL
        && !eventRegistryPresent(name, (size_t)(strchr(name, ':') - name))) {
      p += len;                 /* a registry that may join later: .reg.many.names */
      continue;
    }
    found = 0;
    for (unsigned i = 0; i < SOURCE_LIMIT && len < sizeof name && !found; ++i)
      found = eventSources[i] != NULL && eventFindIn(eventSources[i], name) != NULL;
    if (!found) {
      eventCopyString(err, errSize, "unknown event '");
      eventAppend(err, errSize, len < sizeof name ? name : "?");
      eventAppend(err, errSize, "'; eventcnv --list shows a log's events (a registry that joins "
                                "later is named as REGISTRY:Name)");
      return 0;
    }
    p += len;
  }
  return 1;
}

/* eventEnvCheck -- the environment's names that no registry in the
 * process has, said once, when the session starts (a registry that
 * joins before may have them), and the variable's default used
 * instead, as for any bad setting.  Lock held. */
void eventEnvCheck(void)
{
  static int said;
  const char *value;
  char err[1024];
  if (said)
    return;
  said = 1;
  eventFilterEnv(1);
  if ((value = PlinthGetEnv("TELLTALE_CONTROL")) != NULL && !eventKindsKnown(value, err, sizeof err)) {
    envBad("TELLTALE_CONTROL", err, "the default, all");
    envBadControl = 1;
  }
  if ((value = PlinthGetEnv("TELLTALE_RECORD")) != NULL && !eventKindsKnown(value, err, sizeof err)) {
    envBad("TELLTALE_RECORD", err, "the default, all");
    envBadRecord = 1;
  }
  if ((value = PlinthGetEnv("TELLTALE_MIRROR")) != NULL && !eventKindsKnown(value, err, sizeof err)) {
    envBad("TELLTALE_MIRROR", err, "the default, none");
    envBadMirror = 1;
  }
  if ((value = PlinthGetEnv("TELLTALE_EVENTS")) != NULL && !envEventsKnown(value, err, sizeof err)) {
    envBad("TELLTALE_EVENTS", err, "the default, every event on");
    envBadEvents = 1;
  }
  if (envBadControl || envBadRecord || envBadMirror || envBadEvents) {
    for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
      if (eventSources[i] != NULL)
        eventEnvApply(eventSources[i], NULL);
    eventOutputCut();
  }
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
  res = value[0] >= '0' && value[0] <= '9' ? eventParseNumber(value, &n, &end) : 22;
  if (res == 22 || *end != '\0' ) {
    eventFormatUnsigned(expected + strlen(expected), limit);
    eventCopyString(instead, sizeof instead, "the default, ");
    eventFormatUnsigned(instead + strlen(instead), otherwise);
    envBadValue(variable, value, expected, instead);
    return otherwise;
  }
  if (res != 0 || n > limit) {
    eventFormatUnsigned(expected + strlen(expected), limit);
    eventFormatUnsigned(instead, limit);
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
  const char *expected = "must be a power of two from 4096 to 64M (suffixes k and M)";
  uint64_t size;
  char instead[48];
  unsigned shift = 0;
  int res;
  if (value == NULL || value[0] == '\0')
    return BUFFER_SIZE_DEFAULT;
  res = value[0] >= '0' && value[0] <= '9' ? eventParseNumber(value, &size, &end) : 22;
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
  eventFormatUnsigned(instead, size);
  eventAppend(instead, sizeof instead, " bytes");
  envBadValue("TELLTALE_BUFFER", value, expected, instead);
  return (size_t)size;
}

/* fileExpand -- the log's name from TELLTALE_FILE's pattern: %p the
 * process id, %t the UTC time (20261124T021500Z) of seconds since the
 * epoch, %% a %.  0, or 22 (EINVAL) for another %, or 36 (ENAMETOOLONG).
 * design/plinth.txt .plinth.stream.file */
static int fileExpand(char *name, size_t size, const char *pattern, uint64_t pid,
                      uint64_t seconds)
{
  name[0] = '\0';
  for (const char *p = pattern; *p != '\0'; ++p) {
    char piece[24];
    if (*p != '%') {
      piece[0] = *p, piece[1] = '\0';
    } else if (p[1] == '%') {
      eventCopyString(piece, sizeof piece, "%");
      ++p;
    } else if (p[1] == 'p') {
      eventFormatUnsigned(piece, pid);
      ++p;
    } else if (p[1] == 't') {
      /* days to a civil date: Howard Hinnant's days_from_civil, inverted */
      uint64_t z = seconds / 86400 + 719468, era = z / 146097, doe = z - era * 146097;
      uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
      uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
      uint64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
      uint64_t year = yoe + era * 400 + (month <= 2), rest = seconds % 86400;
      uint64_t fields[6] = { year, month, day, rest / 3600, rest / 60 % 60, rest % 60 };
      size_t n = eventFormatUnsigned(piece, year);
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
    eventAppend(name, size, piece);
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
    eventSession.noDefault = 1;
    return;
  }
  if (value != NULL && value[0] == '\0') {
    envBad("TELLTALE_FILE", "is empty (for no log it is none)", "the default, telltale.log");
    value = NULL;
  }
  if (value == NULL)
    value = "telltale.log";
  if (strlen(value) >= sizeof eventSession.filePattern)
    res = 36;
  else {
    eventCopyString(eventSession.filePattern, sizeof eventSession.filePattern, value);
    res = fileExpand(eventSession.fileName, sizeof eventSession.fileName, eventSession.filePattern,
                     PlinthProcessId(), PlinthRealtimeNs() / 1000000000u);
  }
  if (res != 0) {
    envBadValue("TELLTALE_FILE", value, res == 22
                ? "has a % other than %p (the process id), %t (the start time) or %%"
                : "is too long", "the default, telltale.log");
    eventCopyString(eventSession.filePattern, sizeof eventSession.filePattern, "telltale.log");
    eventCopyString(eventSession.fileName, sizeof eventSession.fileName, "telltale.log");
  }
}

/* eventFileAfterFork -- the log's name in the child of fork(): a name
 * with %p is the child's own when expanded anew; another gets ".PID".
 * design/plinth.txt .sol.fork */
void eventFileAfterFork(void)
{
  char name[sizeof eventSession.fileName];
  if (eventSession.noDefault)
    return;
  if (filePerProcess(eventSession.filePattern) &&
      fileExpand(name, sizeof name, eventSession.filePattern, PlinthProcessId(),
                 PlinthRealtimeNs() / 1000000000u) == 0)
    memcpy(eventSession.fileName, name, sizeof name);
  else {
    size_t n = strlen(eventSession.fileName);
    uint64_t pid = PlinthProcessId();
    char digits[24];
    size_t d = eventFormatUnsigned(digits, pid);
    if (n + 1 + d < sizeof eventSession.fileName) {
      eventSession.fileName[n++] = '.';
      memcpy(eventSession.fileName + n, digits, d + 1);
    }
  }
}

/* EventBufferSizeSet -- size of buffers made from now on */
int EventBufferSizeSet(size_t size)
{
  if (size < BUFFER_SIZE_MIN || size > BUFFER_SIZE_MAX || (size & (size - 1)) != 0)
    return 22; /* EINVAL */
  PlinthLockClaim();
  eventSession.bufferSize = size;
  PlinthLockRelease();
  return 0;
}

/* EventInit -- read the environment; idempotent.  design/runtime.txt .sol.env */
int EventInit(void)
{
  const char *value;
  int mapAllowed;
  PlinthLockClaim();
  if (eventSession.initialized) {
    PlinthLockRelease();
    return 0;
  }
  eventSession.initialized = 1;
  eventSession.bufferSize = BUFFER_SIZE_DEFAULT;
  eventSession.bufferSize = envBuffer();
  eventSourcesJoin();           /* telltale's registry's kinds, first: .reg.many */
  envFile();
  mapAllowed = envSwitch("TELLTALE_MAP", 1);
  eventLiveAllow(mapAllowed);
  (void)EventCompact(envSwitch("TELLTALE_COMPACT", 0));   /* .compact.choice */
  /* A core then holds the live file's buffers, for the gdb extension. */
  if (mapAllowed)
    (void)PlinthCoreSharedFiles();
  value = PlinthGetEnv("TELLTALE_WRITER");
  if (value != NULL && value[0] != '\0') {
    if (strcmp(value, "sync") == 0)
      eventWriterAsyncSet(0);
    else if (strcmp(value, "async") == 0 || strcmp(value, "async,block") == 0)
      eventWriterAsyncSet(1);
    else if (strcmp(value, "async,drop") == 0) {
      eventWriterAsyncSet(1);
      eventWriterDropsSet(1);
    }
    else
      envBadValue("TELLTALE_WRITER", value, "must be sync, async (async,block) or async,drop",
                  "the default, sync");
  }
  eventSession.dumpCount = (unsigned)envNumber("TELLTALE_DUMP", 50, DUMP_LIMIT);
  eventSessionClock();
  PlinthAtExit(eventAtExit);
  PlinthAtFork(eventAfterFork);
  PlinthSignalHooks(eventSignalEnter, eventSignalLeave, eventSignalJump);
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
  eventCtlStart(0);
  return 0;
}

/* loadedByDlopen -- the shared library (EVENT_UNLOADABLE) was loaded
 * by dlopen, and dlclose may unload it.  .sol.unload */
static int loadedByDlopen;

__attribute__((constructor)) static void initAtStart(void)
{
  (void)EventInit();
#ifdef EVENT_UNLOADABLE
  loadedByDlopen = PlinthLoadedByDlopen();
#endif
}

/* A library that dlclose unloads leaves nothing behind that would call
 * into it.  At the process's exit this does nothing: threads still
 * running go on emitting until the end (.sol.finish).  .sol.unload */
__attribute__((destructor)) static void unloadAtEnd(void)
{
  if (loadedByDlopen && eventSession.initialized && !PlinthExiting())
    eventUnload();
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
 * memory runs out.  design/runtime.txt .sol.intern */
EventW EventInternString(const char *string)
{
  char copy[EVENT_STRING_MAX + 1];
  size_t len = EventStringLength(string), i;
  EventW id;
  EventStringCopy(copy, string, len);
  PlinthLockClaim();
  if (eventSession.internCount * 2 >= eventSession.internSize) {
    size_t size = eventSession.internSize == 0 ? 64 : eventSession.internSize * 2;
    void *table = PlinthAlloc(size * sizeof *eventSession.interns);
    if (table == NULL) {
      PlinthLockRelease();
      return 0;
    }
    memset(table, 0, size * sizeof *eventSession.interns);
    {
      __typeof__(eventSession.interns) old = eventSession.interns;
      size_t oldSize = eventSession.internSize;
      eventSession.interns = table;
      eventSession.internSize = size;
      for (size_t j = 0; j < oldSize; ++j)
        if (old[j].string != NULL) {
          size_t k = hashString(old[j].string) & (size - 1);
          while (eventSession.interns[k].string != NULL)
            k = (k + 1) & (size - 1);
          eventSession.interns[k] = old[j];
        }
      PlinthFree(old);
    }
  }
  for (i = hashString(copy) & (eventSession.internSize - 1);
       eventSession.interns[i].string != NULL;
       i = (i + 1) & (eventSession.internSize - 1))
    if (strcmp(eventSession.interns[i].string, copy) == 0) {
      id = eventSession.interns[i].id;
      /* Seen in an earlier session only: the new stream needs its own
       * Intern event, or its labels cannot be read.  .sol.intern */
      if (!eventSession.interns[i].inSession) {
        eventSession.interns[i].inSession = 1;
        EVENT_WS(Intern, id, copy);
      }
      PlinthLockRelease();
      return id;
    }
  eventSession.interns[i].string = PlinthAlloc(len + 1);
  if (eventSession.interns[i].string == NULL) {
    PlinthLockRelease();
    return 0;
  }
  memcpy(eventSession.interns[i].string, copy, len + 1);
  eventSession.interns[i].inSession = 1;
  id = eventSession.interns[i].id = ++eventSession.internCount;
  /* Emitted under the lock so that no thread labels with id before
   * the Intern event is in a buffer. */
  EVENT_WS(Intern, id, copy);
  PlinthLockRelease();
  return id;
}

/* eventInternSessionEnd -- the session ended: strings keep their ids, but
 * each is interned again (Intern emitted) on its first use in the next
 * session, whose stream would otherwise lack it.  Lock held. */
void eventInternSessionEnd(void)
{
  for (size_t i = 0; i < eventSession.internSize; ++i)
    eventSession.interns[i].inSession = 0;
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
    for (size_t i = labelSlot(address), n = 0; n < LABEL_LIMIT;
         i = (i + 1) & (LABEL_LIMIT - 1), ++n)
      if (labels[i].address == 0 || labels[i].address == address) {
        labels[i].address = address;
        labels[i].id = id;
        break;
      }
    PlinthLockRelease();
  }
  EVENT_AW(Label, address, id);
}

/* eventLabelLookup -- an EventLabelFunction over the runtime's labels; no
 * malloc and no lock, for the traceback */
const char *eventLabelLookup(void *closure, uint64_t address)
{
  (void)closure;
  if (address == 0)
    return NULL;
  for (size_t i = labelSlot((EventA)address), n = 0; n < LABEL_LIMIT;
       i = (i + 1) & (LABEL_LIMIT - 1), ++n) {
    if (labels[i].address == 0)
      return NULL;
    if (labels[i].address == (EventA)address) {
      for (size_t j = 0; j < eventSession.internSize; ++j)
        if (eventSession.interns[j].string != NULL && eventSession.interns[j].id == labels[i].id)
          return eventSession.interns[j].string;
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
  EventThreadStruct *thread = eventThreadEnsure();
  if (thread != NULL) {
    eventCopyString(thread->name, sizeof thread->name, name != NULL ? name : "");
    EVENT_US(ThreadName, thread->serial, name);
  }
}
