/* <src/event/eventsource.c> -- the registries in a process, their slots and their control
 *
 * .design: design/registry.txt .reg.many
 *
 * A process has several registries: telltale's own, the runtime's,
 * always first (number 0), and one for each program and library that
 * brings its own, each a source (event.h) that joins when its object is
 * loaded and leaves when dlclose unloads it.  Each source's kinds get
 * slots, the runtime's index for a thread's buffers of one kind of one
 * registry; a block says its registry's number and kind
 * (.stream.block.registry).  Here too: kind and event control by
 * registry, and kind names as the environment, telltale-ctl and the gdb
 * extension give them ("Pool", "alloc:Pool").
 *
 * Locking: the plinth's lock guards the sources and the slots.  The
 * emitters read only their own source's record and off.
 */

#include <string.h>

#include "eventint.h"

/* The registry that names EventRegistry: an object compiled against
 * telltale 0.1, before a registry had a source, emits through the
 * globals below, into the program's registry found by that name
 * (.reg.many.old).  Weak: none is the usual case. */
extern const EventRegistryStruct legacyRegistry __asm__("EventRegistry") __attribute__((weak));

TELLTALE_API _Thread_local EventBufStruct EventThreadBuf[EVENT_KIND_LIMIT]
  __attribute__((tls_model("initial-exec")));
TELLTALE_API _Atomic EventKindSet EventKindRecord = (EventKindSet)-1;
TELLTALE_API _Atomic EventKindSet EventKindControl = (EventKindSet)-1;
TELLTALE_API _Atomic unsigned char EventOff[EVENT_CODE_LIMIT];

static EventBufStruct *legacyBufs(void)
{
  return EventThreadBuf;
}

static EventSourceStruct legacySource = {
  .size = sizeof(EventSourceStruct), .record = &EventKindRecord, .off = EventOff,
  .offLimit = EVENT_CODE_LIMIT, .bufs = legacyBufs, .control = (EventKindSet)-1,
};

EventSlotStruct eventSlots[SLOT_LIMIT];
_Atomic unsigned eventSlotsEnd;
EventSourceStruct *eventSources[SOURCE_LIMIT];
static unsigned numberNext = 1;     /* numbers are never used twice (.reg.many) */
static unsigned kindsJoined;        /* kinds of every registry that joined (.reg.many) */

#define KIND_OWN EVENT_KIND_BIT(EventKindTelltale)  /* always on: .sol.control.own */

/* allKinds -- every kind of a source's registry */
static EventKindSet allKinds(const EventSourceStruct *source)
{
  unsigned n = source->registry->kindCount;
  return n >= 32 ? (EventKindSet)-1 : EVENT_KIND_BIT(n) - 1;
}

/* controlOf -- a source's output set: an old object's is the global */
static _Atomic EventKindSet *controlOf(EventSourceStruct *source)
{
  return source == &legacySource ? &EventKindControl : &source->control;
}

/* eventSlotsOf -- a source's kinds as slots */
EventSlotSet eventSlotsOf(const EventSourceStruct *source, EventKindSet kinds)
{
  return (EventSlotSet)(kinds & allKinds(source)) << source->base;
}

/* eventOutputNow -- the slots whose output is on now, as each source's
 * control says, which a debugger may have written.  Lock held. */
EventSlotSet eventOutputNow(void)
{
  EventSlotSet on = 0;
  for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
    if (eventSources[i] != NULL)
      on |= eventSlotsOf(eventSources[i],
                         atomic_load_explicit(controlOf(eventSources[i]), memory_order_relaxed));
  return on;
}

/* eventSlotHot -- the calling thread's next and limit for a slot: its
 * source's thread-local buffers.  Async-signal-safe. */
EventBufStruct *eventSlotHot(unsigned slot)
{
  EventSourceStruct *source = eventSlots[slot].source;
  return &source->bufs()[eventSlots[slot].kind];
}

/* eventSlotWire -- a slot's kind as blocks carry it: the registry's
 * number above its kind index.  .stream.block.registry */
unsigned eventSlotWire(unsigned slot)
{
  return eventSlots[slot].source->number << 8 | eventSlots[slot].kind;
}

/* eventSlotName -- a slot's kind name, for messages */
const char *eventSlotName(unsigned slot)
{
  EventSourceStruct *source = eventSlots[slot].source;
  return source != NULL ? source->registry->kinds[eventSlots[slot].kind].name : "?";
}


/* eventRegistryNamed -- is a source's registry the name name[0 .. len)?
 * ("alloc" of "alloc:Pool") */
int eventRegistryNamed(const EventSourceStruct *source, const char *name, size_t len)
{
  return strncmp(source->registry->name, name, len) == 0 && source->registry->name[len] == '\0';
}

/* eventRegistryPresent -- is a registry of the name name[0 .. len) in
 * the process?  Lock held. */
int eventRegistryPresent(const char *name, size_t len)
{
  for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
    if (eventSources[i] != NULL && eventRegistryNamed(eventSources[i], name, len))
      return 1;
  return 0;
}

/* eventKindName -- a slot's kind as tools show it and the environment
 * takes it: "Pool", or "alloc:Pool" when the process has more than one
 * registry besides telltale's (.reg.many.names) */
void eventKindName(char *buf, size_t size, unsigned slot)
{
  EventSourceStruct *source = eventSlots[slot].source;
  unsigned clients = 0;
  for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
    clients += eventSources[i] != NULL && eventSources[i]->number != 0;
  buf[0] = '\0';
  if (source == NULL)
    return;
  if (source->number != 0 && clients > 1) {
    eventAppend(buf, size, source->registry->name);
    eventAppend(buf, size, ":");
  }
  eventAppend(buf, size, source->registry->kinds[eventSlots[slot].kind].name);
}


/* Views: each source's registry with its kinds named as tools name
 * them (eventKindName), for the traceback and the text mirror, which
 * may not allocate; remade under the lock as registries join and leave.
 * Slots of a source are in a row, so a view's kinds are its slots'. */
static char viewNames[SLOT_LIMIT][2 * EVENT_NAME_MAX + 2];
static EventKindDescStruct viewKinds[SLOT_LIMIT];
static EventRegistryStruct views[SLOT_LIMIT];   /* by slot: its source's view */

static void viewsMake(void)
{
  for (unsigned slot = 0; slot < SLOT_LIMIT; ++slot) {
    EventSourceStruct *source = eventSlots[slot].source;
    if (source == NULL)
      continue;
    eventKindName(viewNames[slot], sizeof viewNames[slot], slot);
    viewKinds[slot].name = viewNames[slot];
    viewKinds[slot].doc = source->registry->kinds[eventSlots[slot].kind].doc;
    views[slot] = *source->registry;
    views[slot].kinds = &viewKinds[source->base];
  }
}

/* eventSlotView -- a slot's registry, its kinds named as tools name them */
const EventRegistryStruct *eventSlotView(unsigned slot)
{
  return &views[slot];
}


/* Joining and leaving ---------------------------------------------- */

/* trimmed -- telltale's own registry as the process has it: only the
 * kinds its events have (Telltale), so that its standard kinds, which
 * client registries bring as their own, are not listed twice */
static EventRegistryStruct trimmed;

/* slotsClaim -- count free slots in a row, or SLOT_LIMIT */
static unsigned slotsClaim(unsigned count)
{
  for (unsigned base = 0; base + count <= SLOT_LIMIT; ++base) {
    unsigned n = 0;
    while (n < count && eventSlots[base + n].source == NULL)
      ++n;
    if (n == count)
      return base;
    base += n;
  }
  return SLOT_LIMIT;
}

/* refuse -- the source records nothing, and says why on stderr; which,
 * unless NULL, gets what RegistryRefused says once the lock is released
 * (eventSourceReady), so that the log says what it lacks.  .reg.many */
#define WHICH_SIZE 512

static void refuse(EventSourceStruct *source, const char *why, char *which)
{
  char object[256];
  const char *name = source->registry != NULL ? source->registry->name : "?";
  __atomic_store_n(&source->state, 2, __ATOMIC_RELEASE);
  atomic_store(source->record, 0);    /* its emitters take the filtered path */
  PlinthObjectName(source, object, sizeof object);
  if (object[0] == '\0')
    eventCopyString(object, sizeof object, "an unknown object");
  eventSay("registry '", name, "' of ", object, " is not recorded: ", why, NULL);
  if (which != NULL) {
    size_t n = 0;
    const char *parts[] = {"'", name, "' of ", object, ": ", why};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i)
      for (const char *p = parts[i]; *p != '\0' && n + 1 < WHICH_SIZE; ++p)
        which[n++] = *p;
    which[n] = '\0';
  }
}

/* join -- a source joins: a number, slots, the environment's settings,
 * and its tables in every stream.  Lock held.  A refusal's text goes
 * into which (WHICH_SIZE bytes), unless NULL. */
static int join(EventSourceStruct *source, char *which)
{
  unsigned i, free = SOURCE_LIMIT, base;
  const EventRegistryStruct *reg = source->registry;
  if (source->state != 0)
    return source->state == 1 ? 0 : 22;   /* (lock held: no other writer) */
  if (source->size != sizeof(EventSourceStruct) || reg == NULL) {
    refuse(source, "it was built against another telltale (its source is not this runtime's)",
           which);
    return 22;
  }
  for (i = 0; i < SOURCE_LIMIT; ++i) {
    if (eventSources[i] == NULL) {
      if (free == SOURCE_LIMIT)
        free = i;
    } else if (strcmp(eventSources[i]->registry->name, reg->name) == 0) {
      refuse(source, "another registry in this process has its name; give each its own "
                     "(EVENT_REGISTRY_NAME in its eventdef.h)", which);
      return 17; /* EEXIST */
    }
  }
  if (source == &EVENT_SOURCE) {
    unsigned kinds = 1;
    for (unsigned e = 0; e < reg->eventCount; ++e)
      if (reg->events[e].kind + 1 > kinds)
        kinds = reg->events[e].kind + 1;
    trimmed = *reg;
    trimmed.kindCount = kinds;
    source->registry = reg = &trimmed;
  }
  base = slotsClaim(reg->kindCount);
  if (free == SOURCE_LIMIT || base == SLOT_LIMIT || numberNext > REGISTRY_NUMBER_MAX
      || kindsJoined + reg->kindCount > EVENT_STREAM_KIND_LIMIT) {
    refuse(source, "there is no room for another registry in this process "
                   "(16 at once, 64 kinds in all, 254 registries and 256 kinds in a process's life)",
           which);
    return 28; /* ENOSPC */
  }
  kindsJoined += reg->kindCount;
  source->number = source == &EVENT_SOURCE ? 0 : numberNext++;
  /* Only a registry that dlopen brought leaves, at dlclose, not at
   * exit: objects loaded at start-up are never unloaded, and at exit
   * threads still running may emit into its buffers (.sol.finish). */
  source->unloadable = source != &EVENT_SOURCE && source != &legacySource
                       && PlinthLoadedByDlopenAt(source);
  if (source->unloadable)
    PlinthExitMark();
  source->base = base;
  for (unsigned k = 0; k < reg->kindCount; ++k) {
    eventSlots[base + k].source = source;
    eventSlots[base + k].kind = k;
  }
  if (base + reg->kindCount > eventSlotsEnd)
    atomic_store(&eventSlotsEnd, base + reg->kindCount);
  __atomic_store_n(&source->state, 1, __ATOMIC_RELEASE);   /* after its slots: .reg.many */
  eventSources[free] = source;
  eventEnvApply(source, controlOf(source));
  atomic_store(controlOf(source), atomic_load(controlOf(source)) & allKinds(source));
  atomic_store(source->record, atomic_load(source->record) & allKinds(source));
  eventOutputApplied |= eventSlotsOf(source, atomic_load(controlOf(source)));  /* no buffer yet */
  viewsMake();
  eventRegistryAnnounce(source);
  return 0;
}

/* eventSourcesJoin -- telltale's own registry and an old object's, if
 * any: the first sources.  Lock held. */
void eventSourcesJoin(void)
{
  if (EVENT_SOURCE.state == 0)
    (void)join(&EVENT_SOURCE, NULL);
  if (&legacyRegistry != NULL && legacySource.state == 0) {
    legacySource.registry = &legacyRegistry;
    (void)join(&legacySource, NULL);
  }
}

/* eventSourceReady -- the source of an event about to be reserved
 * joins if it has not (its first event came before its constructor):
 * 0 if it may record.  Lock not held. */
int eventSourceReady(EventSourceStruct *source)
{
  int res;
  char which[WHICH_SIZE] = "";
  if (source == NULL)
    return 22; /* EINVAL: a call with no registry records and changes nothing */
  if (__atomic_load_n(&source->state, __ATOMIC_ACQUIRE) == 1)
    return 0;
  (void)EventInit();
  PlinthLockClaim();
  res = join(source, which);
  PlinthLockRelease();
  if (which[0] != '\0')        /* refused now: .reg.many */
    EVENT_US(RegistryRefused, (EventU)res, which);
  return res;
}

int EventSourceRegister(EventSourceStruct *source)
{
  if (source == NULL)
    return 22; /* EINVAL */
  return eventSourceReady(source);
}

/* EventSourceUnregister -- at dlclose of an object dlopen brought; at
 * the process's exit, or for an object loaded at start-up, nothing
 * happens, as threads still running may go on emitting (.sol.finish). */
void EventSourceUnregister(EventSourceStruct *source)
{
  /* unloadable first, a plain load: at exit (a fork's child's under
   * ThreadSanitizer above all) nothing else may be touched */
  if (source == NULL || !source->unloadable
      || __atomic_load_n(&source->state, __ATOMIC_ACQUIRE) != 1 || PlinthExiting())
    return;
  PlinthLockClaim();
  if (source->state == 1) {
    eventSlotsLeave(source->base, source->registry->kindCount);
    for (unsigned i = 0; i < SOURCE_LIMIT; ++i)
      if (eventSources[i] == source)
        eventSources[i] = NULL;
    for (unsigned k = 0; k < source->registry->kindCount; ++k)
      eventSlots[source->base + k].source = NULL;
    eventLiveSlotsLeft(source->base, source->registry->kindCount);
    eventFilterForget(source);
    viewsMake();
    eventOutputApplied &= ~eventSlotsOf(source, (EventKindSet)-1);
    __atomic_store_n(&source->state, 0, __ATOMIC_RELEASE);   /* a later load joins afresh */
  }
  PlinthLockRelease();
}


/* Names ------------------------------------------------------------- */

/* kindFind -- a kind's index by name in a source's registry, or -1 */
static int kindFind(const EventSourceStruct *source, const char *name)
{
  const EventRegistryStruct *reg = source->registry;
  for (unsigned i = 0; i < reg->kindCount; ++i)
    if (strcmp(reg->kinds[i].name, name) == 0)
      return (int)i;
  return -1;
}

int EventSourceKindIndex(EventSourceStruct *source, const char *name)
{
  if (source == NULL || name == NULL || source->registry == NULL)
    return -1;
  return kindFind(source, name);
}

/* parseNumber -- a whole decimal number, or hexadecimal after 0x; 0,
 * or 34 (ERANGE) past UINT64_MAX, or 22 (EINVAL).  Never octal: a
 * leading 0 is decimal.  *endReturn gets where the digits stop. */
int eventParseNumber(const char *p, uint64_t *valueReturn, const char **endReturn)
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

static void say(char *err, size_t errSize, const char *a, const char *b, const char *c)
{
  if (err == NULL)
    return;
  eventCopyString(err, errSize, a);
  eventAppend(err, errSize, b);
  eventAppend(err, errSize, c);
}

/* kindToken -- one token of a kind set, p[0 .. len-1], for a source:
 * "all", "none" (all, with *removeReturn flipped), a mask, or a kind
 * name, each perhaps after "REGISTRY:".  With strict, a token for
 * another registry, or a name the source lacks, is an error; without
 * (the environment's, for every source), it is nothing for this one.
 * 0, or 22 (EINVAL), saying why in err unless it is NULL. */
static int kindToken(const EventSourceStruct *source, const char *p, size_t len, int strict,
                     EventKindSet *setReturn, int *removeReturn, char *err, size_t errSize)
{
  char token[2 * EVENT_NAME_MAX + 4];
  const char *name, *colon;
  int index;
  *setReturn = 0;
  if (len == 0 || len >= sizeof token) {
    say(err, errSize, len == 0 ? "empty kind name" : "kind name too long", "", "");
    return 22;
  }
  memcpy(token, p, len);
  token[len] = '\0';
  name = token;
  colon = strchr(token, ':');
  if (colon != NULL) {
    token[colon - token] = '\0';
    name = colon + 1;
    if (strcmp(token, source->registry->name) != 0) {
      if (!strict)
        return 0;
      say(err, errSize, "'", token, "' is not this registry: its kinds are unqualified here");
      return 22;
    }
  }
  if (strlen(name) > EVENT_NAME_MAX || name[0] == '\0') {
    say(err, errSize, name[0] == '\0' ? "empty kind name" : "kind name too long", "", "");
    return 22;
  }
  if (strcmp(name, "all") == 0 || strcmp(name, "none") == 0) {
    *setReturn = allKinds(source);
    if (name[0] == 'n')         /* none: all of them, the other way */
      *removeReturn = !*removeReturn;
    return 0;
  }
  if (name[0] >= '0' && name[0] <= '9') {  /* a mask: kind names never start with a digit */
    uint64_t mask;
    const char *end;
    int res = eventParseNumber(name, &mask, &end);
    if (res == 0 && *end == '\0' && (mask <= allKinds(source) || !strict)) {
      *setReturn = (EventKindSet)mask & allKinds(source);   /* another registry's bits */
      return 0;
    }
    if (res != 0 || *end != '\0')
      say(err, errSize, "'", name, "' is not a mask (decimal, or hexadecimal after 0x)");
    else {
      char all[24] = "0x";
      size_t d = 2;
      EventKindSet a = allKinds(source);
      for (int shift = 28; shift >= 0; shift -= 4)
        if ((a >> shift) != 0 || shift == 0)
          all[d++] = "0123456789abcdef"[(a >> shift) & 0xf];
      all[d] = '\0';
      say(err, errSize, "'", name, "' has bits for kinds the registry lacks: all is ");
      if (err != NULL)
        eventAppend(err, errSize, all);
    }
    return 22;
  }
  index = kindFind(source, name);
  if (index >= 0) {
    *setReturn = EVENT_KIND_BIT(index);
    return 0;
  }
  if (!strict && colon == NULL)
    return 0;
  if (err != NULL) {
    say(err, errSize, "unknown kind '", name, "'; the kinds are all, none, ");
    for (unsigned i = 0; i < source->registry->kindCount; ++i) {
      eventAppend(err, errSize, source->registry->kinds[i].name);
      if (i + 1 < source->registry->kindCount)
        eventAppend(err, errSize, ", ");
    }
  }
  return 22;
}

/* eventKindSpec -- a kind set, "all", "none", "Arena,Pool", "all,-Ref",
 * MPS-style masks ("0x3f", "all,-0x40"), any token perhaps after
 * "REGISTRY:", as it applies to one source.  design/runtime.txt .sol.env */
int eventKindSpec(const EventSourceStruct *source, const char *spec, int strict,
                  EventKindSet *kindsReturn, char *err, size_t errSize)
{
  EventKindSet kinds = 0;
  const char *p = spec;
  if (spec == NULL || kindsReturn == NULL || source == NULL || source->registry == NULL)
    return 22; /* EINVAL */
  /* No room for a message: write none.  (Messages append with
   * strlen(err), which needs a terminated err.) */
  if (errSize == 0)
    err = NULL;
  while (*p == ' ' || *p == '\t')
    ++p;
  if (*p == '\0') {
    say(err, errSize, "no kinds given; say 'none' for no kinds", "", "");
    return 22;
  }
  while (*p != '\0') {
    EventKindSet these;
    size_t len = 0;
    int remove = 0, res;
    while (*p == ' ' || *p == '\t')
      ++p;
    if (*p == '-' || *p == '+') {
      remove = *p == '-';
      ++p;
    }
    while (p[len] != '\0' && p[len] != ',' && p[len] != ' ' && p[len] != '\t')
      ++len;
    res = kindToken(source, p, len, strict, &these, &remove, err, errSize);
    if (res != 0)
      return res;
    p += len;
    while (*p == ' ' || *p == '\t')
      ++p;
    if (*p == ',')
      ++p;
    kinds = remove ? kinds & ~these : kinds | these;
  }
  *kindsReturn = kinds;
  return 0;
}

int EventSourceKindParse(EventSourceStruct *source, const char *spec, EventKindSet *kindsReturn,
                         char *err, size_t errSize)
{
  return eventKindSpec(source, spec, 1, kindsReturn, err, errSize);
}

/* kindsList -- "; the kinds are all, none, ..." of every registry */
static void kindsList(char *err, size_t errSize)
{
  eventAppend(err, errSize, "; the kinds are all, none");
  for (unsigned slot = 0; slot < eventSlotsEnd; ++slot) {
    char name[2 * EVENT_NAME_MAX + 2];
    EventSourceStruct *source = eventSlots[slot].source;
    if (source == NULL || (source->number != 0 && eventSlots[slot].kind == EventKindTelltale))
      continue;                 /* telltale's own kind, the first registry's */
    eventKindName(name, sizeof name, slot);
    eventAppend(err, errSize, ", ");
    eventAppend(err, errSize, name);
  }
}

/* eventKindsKnown -- does every kind name in spec name a kind of some
 * registry now in the process, and every mask bits of one?  The first
 * that does not goes into err.  Lock held. */
int eventKindsKnown(const char *spec, char *err, size_t errSize)
{
  const char *p = spec;
  while (p != NULL && *p != '\0') {
    size_t len = 0;
    char name[2 * EVENT_NAME_MAX + 4];
    int found = 0;
    while (*p == ' ' || *p == '\t' || *p == ',' || *p == '-' || *p == '+')
      ++p;
    while (p[len] != '\0' && p[len] != ',' && p[len] != ' ' && p[len] != '\t')
      ++len;
    if (len == 0)
      break;
    if (len < sizeof name) {
      const char *colon, *kind;
      memcpy(name, p, len);
      name[len] = '\0';
      colon = strchr(name, ':');
      kind = colon != NULL ? colon + 1 : name;
      for (unsigned i = 0; i < SOURCE_LIMIT && !found; ++i) {
        EventSourceStruct *s = eventSources[i];
        uint64_t mask;
        const char *end;
        if (s == NULL)
          continue;
        if (colon != NULL && !eventRegistryNamed(s, name, (size_t)(colon - name)))
          continue;
        if (kind[0] >= '0' && kind[0] <= '9')
          found = eventParseNumber(kind, &mask, &end) == 0 && *end == '\0'
                  && mask <= allKinds(s);
        else
          found = strcmp(kind, "all") == 0 || strcmp(kind, "none") == 0 || kindFind(s, kind) >= 0;
      }
    }
    if (!found && len < sizeof name && strchr(name, ':') != NULL
        && !eventRegistryPresent(name, (size_t)(strchr(name, ':') - name)))
      found = 1;                /* a registry that may join later: .reg.many.names */
    if (!found) {
      name[len < sizeof name ? len : 0] = '\0';
      if (name[0] >= '0' && name[0] <= '9')
        say(err, errSize, "'", name, "' has bits for kinds no registry in this process has");
      else
        say(err, errSize, "unknown kind '", name, "'");
      if (err != NULL) {
        kindsList(err, errSize);
        eventAppend(err, errSize, " (a registry that joins later is named as REGISTRY:Kind)");
      }
      return 0;
    }
    p += len;
  }
  return 1;
}

/* Control ----------------------------------------------------------- */

static EventKindSet control(_Atomic EventKindSet *set, EventKindSet all, EventKindSet reset,
                            EventKindSet flip)
{
  EventKindSet old = atomic_load(set), new;
  do {
    new = (((old & ~reset) ^ flip) | KIND_OWN) & all;
  } while (!atomic_compare_exchange_weak(set, &old, new));
  return old;
}

/* EventSourceControl -- change a registry's output control: new = (old
 * & ~reset) ^ flip, in effect for every thread when it returns
 * (.sol.control.cut) */
EventKindSet EventSourceControl(EventSourceStruct *source, EventKindSet reset, EventKindSet flip)
{
  EventKindSet all, old, new;
  if (eventSourceReady(source) != 0)
    return 0;
  all = allKinds(source);
  PlinthLockClaim();
  old = atomic_load(controlOf(source));
  new = (((old & ~reset) ^ flip) | KIND_OWN) & all;
  atomic_store(controlOf(source), new);
  eventOutputCut();
  PlinthLockRelease();
  return old;
}

/* EventSourceRecord -- change a registry's recording: kinds not
 * recorded are not even buffered.  design/control.txt .sol.control */
EventKindSet EventSourceRecord(EventSourceStruct *source, EventKindSet reset, EventKindSet flip)
{
  if (eventSourceReady(source) != 0)
    return 0;
  return control(source->record, allKinds(source), reset, flip);
}

/* What objects compiled against telltale 0.1 call: the registry that
 * names EventRegistry, or telltale's own. */
TELLTALE_API EventKindSet (EventControl)(EventKindSet reset, EventKindSet flip);
TELLTALE_API EventKindSet (EventControlSet)(EventKindSet kinds);
TELLTALE_API EventKindSet (EventControlReset)(EventKindSet kinds);
TELLTALE_API EventKindSet (EventControlFlip)(EventKindSet kinds);
TELLTALE_API EventKindSet (EventRecord)(EventKindSet reset, EventKindSet flip);
TELLTALE_API EventKindSet (EventRecordSet)(EventKindSet kinds);
TELLTALE_API EventKindSet (EventRecordReset)(EventKindSet kinds);
TELLTALE_API void *EventReserveSlow(unsigned kind, size_t size);
TELLTALE_API int (EventKindParse)(const char *spec, EventKindSet *kindsReturn, char *err,
                                  size_t errSize);
TELLTALE_API int (EventKindIndex)(const char *name);
TELLTALE_API int (EventStreamAddText)(PlinthStream stream, EventKindSet kinds);

static EventSourceStruct *legacy(void)
{
  return &legacyRegistry != NULL ? &legacySource : &EVENT_SOURCE;
}

EventKindSet (EventControl)(EventKindSet reset, EventKindSet flip)
{
  return EventSourceControl(legacy(), reset, flip);
}

EventKindSet (EventControlSet)(EventKindSet kinds)
{
  return EventSourceControl(legacy(), kinds, kinds);
}

EventKindSet (EventControlReset)(EventKindSet kinds)
{
  return EventSourceControl(legacy(), kinds, 0);
}

EventKindSet (EventControlFlip)(EventKindSet kinds)
{
  return EventSourceControl(legacy(), 0, kinds);
}

EventKindSet (EventRecord)(EventKindSet reset, EventKindSet flip)
{
  return EventSourceRecord(legacy(), reset, flip);
}

EventKindSet (EventRecordSet)(EventKindSet kinds)
{
  return EventSourceRecord(legacy(), kinds, kinds);
}

EventKindSet (EventRecordReset)(EventKindSet kinds)
{
  return EventSourceRecord(legacy(), kinds, 0);
}

void *EventReserveSlow(unsigned kind, size_t size)
{
  return EventReserveIn(legacy(), kind, size);
}

int (EventKindParse)(const char *spec, EventKindSet *kindsReturn, char *err, size_t errSize)
{
  return EventSourceKindParse(legacy(), spec, kindsReturn, err, errSize);
}

int (EventKindIndex)(const char *name)
{
  return EventSourceKindIndex(legacy(), name);
}

int (EventStreamAddText)(PlinthStream stream, EventKindSet kinds)
{
  return EventSourceStreamAddText(legacy(), stream, kinds);
}

/* EventKindsSwitch -- output or recording on or off, by names.
 * Every registry the names reach changes; none changes on a mistake. */
int EventKindsSwitch(const char *names, int output, int on, char *err, size_t errSize)
{
  EventKindSet sets[SOURCE_LIMIT];
  EventSourceStruct *sources[SOURCE_LIMIT];
  unsigned n = 0;
  int res = 0;
  if (errSize == 0)
    err = NULL;
  if (names == NULL)
    return 22; /* EINVAL */
  (void)EventInit();
  PlinthLockClaim();
  if (!eventKindsKnown(names, err, errSize))
    res = 22;
  for (unsigned i = 0; i < SOURCE_LIMIT && res == 0; ++i)
    if (eventSources[i] != NULL) {
      res = eventKindSpec(eventSources[i], names, 0, &sets[n], err, errSize);
      sources[n++] = eventSources[i];
    }
  PlinthLockRelease();
  for (unsigned i = 0; i < n && res == 0; ++i) {
    if (sets[i] == 0)
      continue;
    if (output)
      (void)EventSourceControl(sources[i], sets[i], on ? sets[i] : 0);
    else
      (void)EventSourceRecord(sources[i], sets[i], on ? sets[i] : 0);
  }
  return res;
}

/* EventRecordByName -- turn events off or on by name, "Name" in every
 * registry, "REGISTRY:Name" in one.  design/control.txt .sol.control.event */
int EventRecordByName(const char *name, int on, char *err, size_t errSize)
{
  const char *colon, *event;
  size_t regLen = 0;
  unsigned found = 0;
  if (errSize == 0)
    err = NULL;
  if (name == NULL)
    return 22; /* EINVAL */
  (void)EventInit();
  colon = strchr(name, ':');
  event = colon != NULL ? colon + 1 : name;
  if (colon != NULL)
    regLen = (size_t)(colon - name);
  PlinthLockClaim();
  for (unsigned s = 0; s < SOURCE_LIMIT; ++s) {
    EventSourceStruct *source = eventSources[s];
    const EventRegistryStruct *reg;
    if (source == NULL)
      continue;
    reg = source->registry;
    if (colon != NULL && !eventRegistryNamed(source, name, regLen))
      continue;
    for (unsigned i = 0; i < reg->eventCount; ++i) {
      const EventDescStruct *e = &reg->events[i];
      if (strcmp(e->name, event) != 0)
        continue;
      if (e->code < EVENT_CODE_RESERVED_LIMIT) {
        PlinthLockRelease();
        say(err, errSize, "telltale's own events cannot be turned off", "", "");
        return 1; /* EPERM */
      }
      if (e->code < source->offLimit)
        atomic_store(&source->off[e->code], on ? 0 : 1);
      ++found;
    }
  }
  PlinthLockRelease();
  if (found > 0)
    return 0;
  say(err, errSize, "unknown event '", name, "'; eventcnv --list shows a log's events");
  return 2; /* ENOENT */
}
