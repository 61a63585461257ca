/* <src/event/eventfilter.c> -- dynamic filters: a test on an event's fields, where a block is written
 *
 * .design: design/control.txt .sol.filter
 *
 * EventFilterAdd("PoolAlloc size>=4096") keeps, of the events named,
 * only those whose field passes the test; other events are untouched.
 * The emitter knows nothing of it: blockWrite asks eventFilterBlock for
 * the events to write, which copies those kept into a scratch area and
 * ends them with EventsFiltered (kind, count, covered), so that a reader
 * sees how many went and recovery how much of the live block the block
 * covers (.sol.recover).  The text mirror keeps what the log keeps.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "eventint.h"
#include "eventdecode.h"

#define FILTER_LIMIT 16                 /* filters at once */
#define FILTER_TEXT_MAX 127             /* characters of a filter's text, and of a string value */

typedef enum { OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE } OpEnum;

typedef struct FilterStruct {
  unsigned code;                /* the event's */
  unsigned param;               /* the field's index */
  EventSourceStruct *source;    /* the event's registry (.reg.many) */
  char letter;                  /* its format letter */
  size_t offset, size;          /* where it is in the event, as the emitter stores it */
  OpEnum op;
  uint64_t u;                   /* the value: P A W U */
  double d;                     /* D */
  char s[FILTER_TEXT_MAX + 1];  /* S */
  char text[FILTER_TEXT_MAX + 1];  /* as given, for status */
} FilterStruct;

/* FilterTableStruct -- the filters, never changed once published: a
 * change makes a new table, and the old is freed only once the writer,
 * which reads it without the lock, is idle */
typedef struct FilterTableStruct {
  EventSlotSet kinds;           /* slots with a filter */
  unsigned count;
  FilterStruct filter[FILTER_LIMIT];
  unsigned char codes[EVENT_CODE_LIMIT / 8];  /* a bit per code with a filter */
} FilterTableStruct;

static FilterTableStruct *_Atomic filterTable;

static void publish(FilterTableStruct *t);

/* Scratch areas, as the compact encoder's (eventcompact.c): the lock's
 * holder, a handler that interrupted it, and the writer. */
#define SCRATCH_LIMIT 3
static struct {
  atomic_flag busy;
  unsigned char *base;
  size_t size;
} scratch[SCRATCH_LIMIT] = {{ATOMIC_FLAG_INIT, NULL, 0}, {ATOMIC_FLAG_INIT, NULL, 0},
                            {ATOMIC_FLAG_INIT, NULL, 0}};

static void errSay(char *err, size_t errSize, const char *a, const char *b, const char *c)
{
  if (err == NULL || errSize == 0)
    return;
  eventCopyString(err, errSize, a);
  eventAppend(err, errSize, b);
  eventAppend(err, errSize, c);
}

/* eventFind -- an event by name, "Name" or "REGISTRY:Name", in the
 * registries in the process, and its source; NULL, saying why in err,
 * if none has it or, unqualified, more than one does.  Lock held. */
const EventDescStruct *eventFind(const char *name, EventSourceStruct **sourceReturn,
                                 char *err, size_t errSize)
{
  const char *colon = strchr(name, ':'), *event = colon != NULL ? colon + 1 : name;
  const EventDescStruct *found = NULL;
  unsigned count = 0;
  for (unsigned s = 0; s < SOURCE_LIMIT; ++s) {
    EventSourceStruct *source = eventSources[s];
    const EventRegistryStruct *reg;
    if (source == NULL)
      continue;
    reg = source->registry;
    if (colon != NULL && !eventRegistryNamed(source, name, (size_t)(colon - name)))
      continue;
    for (unsigned i = 0; i < reg->eventCount; ++i)
      if (strcmp(reg->events[i].name, event) == 0 && !reg->events[i].retired) {
        if (found == NULL || found->code >= EVENT_CODE_RESERVED_LIMIT)
          ++count;              /* telltale's own are in more than one: the same */
        found = &reg->events[i];
        *sourceReturn = source;
        break;
      }
  }
  if (found == NULL)
    errSay(err, errSize, "unknown event '", name, "'");
  else if (count > 1 && found->code >= EVENT_CODE_RESERVED_LIMIT) {
    errSay(err, errSize, "event '", name, "' is in more than one registry: name it REGISTRY:");
    eventAppend(err, errSize, name);
    return NULL;
  }
  return found;
}

/* eventFindIn -- an event of a source's registry by name ("Name" or
 * "REGISTRY:Name"), live, or NULL */
const EventDescStruct *eventFindIn(const EventSourceStruct *source, const char *name)
{
  const char *colon = strchr(name, ':'), *event = colon != NULL ? colon + 1 : name;
  const EventRegistryStruct *reg = source->registry;
  if (colon != NULL && !eventRegistryNamed(source, name, (size_t)(colon - name)))
    return NULL;
  for (unsigned i = 0; i < reg->eventCount; ++i)
    if (strcmp(reg->events[i].name, event) == 0 && !reg->events[i].retired)
      return &reg->events[i];
  return NULL;
}

/* eventFilterForget -- a registry leaves: its filters go.  Lock held. */
void eventFilterForget(EventSourceStruct *source)
{
  FilterTableStruct *now = atomic_load(&filterTable), *t;
  unsigned kept = 0;
  if (now == NULL)
    return;
  for (unsigned i = 0; i < now->count; ++i)
    kept += now->filter[i].source != source;
  if (kept == now->count)
    return;
  t = kept > 0 ? PlinthPagesAlloc(sizeof *t) : NULL;
  if (t != NULL)
    for (unsigned i = 0; i < now->count; ++i)
      if (now->filter[i].source != source)
        t->filter[t->count++] = now->filter[i];
  publish(t);
}

/* parse -- "Name field OP value" into *f; 0 or EINVAL with err */
static int parse(const char *spec, EventSourceStruct *only, FilterStruct *f, char *err,
                 size_t errSize)
{
  char name[FILTER_TEXT_MAX + 1], field[FILTER_TEXT_MAX + 1], *end;
  const EventDescStruct *desc = NULL;
  const char *p = spec, *value;
  size_t n;
  memset(f, 0, sizeof *f);
  if (strlen(spec) > FILTER_TEXT_MAX) {
    errSay(err, errSize, "a filter is at most 127 characters", "", "");
    return EINVAL;
  }
  eventCopyString(f->text, sizeof f->text, spec);
  while (*p == ' ')
    ++p;
  for (n = 0; p[n] != '\0' && p[n] != ' '; ++n)
    ;
  memcpy(name, p, n);
  name[n] = '\0';
  p += n;
  while (*p == ' ')
    ++p;
  for (n = 0; p[n] != '\0' && p[n] != ' ' && strchr("=!<>", p[n]) == NULL; ++n)
    ;
  memcpy(field, p, n);
  field[n] = '\0';
  p += n;
  while (*p == ' ')
    ++p;
  if (strncmp(p, "==", 2) == 0) f->op = OpEQ, p += 2;
  else if (strncmp(p, "!=", 2) == 0) f->op = OpNE, p += 2;
  else if (strncmp(p, "<=", 2) == 0) f->op = OpLE, p += 2;
  else if (strncmp(p, ">=", 2) == 0) f->op = OpGE, p += 2;
  else if (*p == '=') f->op = OpEQ, p += 1;
  else if (*p == '<') f->op = OpLT, p += 1;
  else if (*p == '>') f->op = OpGT, p += 1;
  else {
    errSay(err, errSize, "'", spec, "': expected EVENT FIELD OP VALUE, OP one of == != < <= > >=");
    return EINVAL;
  }
  while (*p == ' ')
    ++p;
  value = p;
  n = strlen(value);
  while (n > 0 && value[n - 1] == ' ')   /* "size>=4096 " as "size>=4096" */
    --n;
  desc = only != NULL ? eventFindIn(only, name) : eventFind(name, &f->source, err, errSize);
  if (only != NULL)
    f->source = only;
  if (desc == NULL)
    return EINVAL;
  if (desc->code < EVENT_CODE_RESERVED_LIMIT) {
    errSay(err, errSize, "telltale's own events cannot be filtered: ", name, "");
    return EINVAL;
  }
  f->code = desc->code;
  for (f->param = 0; f->param < desc->paramCount; ++f->param)
    if (strcmp(desc->paramNames[f->param], field) == 0)
      break;
  if (f->param == desc->paramCount) {
    errSay(err, errSize, name, " has no field '", field);
    eventAppend(err, errSize, "'");
    return EINVAL;
  }
  f->letter = desc->format[f->param];
  f->offset = EVENT_HEADER_LEN;
  for (unsigned i = 0; i <= f->param; ++i) {
    f->size = EventTypeSize(EventTypeOf(desc->format[i]), sizeof(EventP), sizeof(EventW));
    if (i < f->param)
      f->offset += f->size;
  }
  if (n == 0) {
    errSay(err, errSize, "'", spec, "': no value to compare with");
    return EINVAL;
  }
  if (f->letter == 'S') {
    if (f->op != OpEQ && f->op != OpNE) {
      errSay(err, errSize, "'", spec, "': a string compares only with == or !=");
      return EINVAL;
    }
    if (n >= 2 && value[0] == '"' && value[n - 1] == '"')   /* as eventcnv prints it */
      ++value, n -= 2;
    memcpy(f->s, value, n);
    f->s[n] = '\0';
    return 0;
  }
  errno = 0;
  {
    char number[FILTER_TEXT_MAX + 1];
    memcpy(number, value, n);
    number[n] = '\0';
    if (f->letter == 'D')
      f->d = strtod(number, &end);
    else
      f->u = strtoull(number, &end, 0);
    if (errno == 0 && end != number && *end == '\0' && f->letter == 'U' && f->u > UINT32_MAX)
      errno = ERANGE;           /* a U field holds 32 bits */
    value = *end == '\0' && end != number ? value : "";
  }
  if (errno != 0 || *value == '\0' || (f->letter != 'D' && *value == '-')) {
    errSay(err, errSize, "'", spec, f->letter == 'D' ? "': the value is not a number"
                                                     : "': the value is not an unsigned number");
    return EINVAL;
  }
  return 0;
}

/* keep -- does the event at p (length bytes, committed, in this
 * program's layout), of slot's registry, pass every filter on its code
 * in t?  A field is read where the emitter stored it: no decode. */
static int keep(const FilterTableStruct *t, unsigned slot, const unsigned char *p, size_t length)
{
  unsigned code;
  uint16_t c;
  memcpy(&c, p, sizeof c);
  code = c;
  if ((t->codes[code / 8] & (1u << (code % 8))) == 0)
    return 1;
  for (unsigned i = 0; i < t->count; ++i) {
    const FilterStruct *f = &t->filter[i];
    int cmp;
    if (f->code != code || f->source != eventSlots[slot].source)
      continue;
    if (f->offset + f->size + (f->letter == 'S') > length)
      return 1;                 /* not the filter's to judge: the reader will say */
    if (f->letter == 'S')       /* a committed event's string ends at its NUL */
      cmp = strcmp((const char *)p + f->offset, f->s) != 0;
    else if (f->letter == 'D') {
      double d;
      memcpy(&d, p + f->offset, sizeof d);
      cmp = d < f->d ? -1 : d > f->d;
    } else {
      uint64_t u = 0;
      if (f->size == 8)
        memcpy(&u, p + f->offset, 8);
      else {
        uint32_t v;
        memcpy(&v, p + f->offset, 4);
        u = v;
      }
      cmp = u < f->u ? -1 : u > f->u;
    }
    switch (f->op) {
    case OpEQ: if (cmp != 0) return 0; break;
    case OpNE: if (cmp == 0) return 0; break;
    case OpLT: if (cmp >= 0) return 0; break;
    case OpLE: if (cmp > 0) return 0; break;
    case OpGT: if (cmp <= 0) return 0; break;
    case OpGE: if (cmp < 0) return 0; break;
    }
  }
  return 1;
}

/* eventFilterKeep -- eventint.h: for the text mirror */
int eventFilterKeep(unsigned kind, const unsigned char *p, size_t length)
{
  const FilterTableStruct *t = atomic_load_explicit(&filterTable, memory_order_acquire);
  return t == NULL || (t->kinds & SLOT_BIT(kind)) == 0 || keep(t, kind, p, length);
}

/* eventFilterBlock -- eventint.h */
const unsigned char *eventFilterBlock(unsigned kind, const unsigned char *data, size_t *sizeIO,
                                      int *filteredReturn)
{
  const FilterTableStruct *t = atomic_load_explicit(&filterTable, memory_order_acquire);
  size_t size = *sizeIO, need = size + sizeof(EventStructEventsFiltered), at = 0, out = 0;
  uint64_t count = 0;
  EventClock last = 0;
  EventStructEventsFiltered end;
  unsigned char *base;
  *filteredReturn = 0;
  if (t == NULL || (t->kinds & SLOT_BIT(kind)) == 0 || size == 0)
    return data;
  for (unsigned i = 0; ; ++i) {
    if (i == SCRATCH_LIMIT)
      return data;              /* none free: cannot be (one a writer) */
    if (atomic_flag_test_and_set(&scratch[i].busy))
      continue;
    if (scratch[i].size < need) {
      size_t bigger = (need + 0xFFFF) & ~(size_t)0xFFFF;
      unsigned char *more = PlinthPagesAlloc(bigger);
      if (more == NULL) {
        atomic_flag_clear(&scratch[i].busy);
        eventSay("no memory to filter a block: written unfiltered", NULL);
        return data;
      }
      PlinthPagesFree(scratch[i].base, scratch[i].size);
      scratch[i].base = more;
      scratch[i].size = bigger;
    }
    base = scratch[i].base;
    break;
  }
  while (at + EVENT_HEADER_LEN <= size) {
    uint32_t codeLength;
    size_t length;
    memcpy(&codeLength, data + at, sizeof codeLength);
    length = EVENT_LENGTH_OF(codeLength);
    if (EVENT_CODE_OF(codeLength) == 0 || length < EVENT_HEADER_LEN || length > size - at)
      break;
    memcpy(&last, data + at + 4, sizeof last);
    if (keep(t, kind, data + at, length)) {
      memcpy(base + out, data + at, length);
      out += length;
    } else
      ++count;
    at += length;
  }
  memset(&end, 0, sizeof end);
  end.header.codeLength = EVENT_CODE_LENGTH(EventCodeEventsFiltered, sizeof end);
  end.header.clock = last;      /* no earlier than any event before it */
  end.kind = eventSlotWire(kind);   /* as its block's header says it */
  end.count = (EventW)count;
  end.covered = (EventW)at;
  memcpy(base + out, &end, sizeof end);
  *sizeIO = out + sizeof end;
  *filteredReturn = 1;
  return base;
}

/* eventFilterDone -- the bytes eventFilterBlock gave are written */
void eventFilterDone(const unsigned char *written)
{
  for (unsigned i = 0; i < SCRATCH_LIMIT; ++i)
    if (scratch[i].base != NULL && written == scratch[i].base)
      atomic_flag_clear(&scratch[i].busy);
}

/* publish -- t becomes the table; the old one is freed once the writer
 * is idle.  Lock held. */
static void publish(FilterTableStruct *t)
{
  FilterTableStruct *old;
  if (t != NULL) {
    t->kinds = 0;
    memset(t->codes, 0, sizeof t->codes);
    for (unsigned i = 0; i < t->count; ++i) {
      unsigned code = t->filter[i].code;
      t->codes[code / 8] = (unsigned char)(t->codes[code / 8] | (1u << (code % 8)));
      t->kinds |= eventSlotsOf(t->filter[i].source, EVENT_KIND_BIT(
        EventRegistryLookup(t->filter[i].source->registry, code)->kind));
    }
  }
  old = atomic_exchange_explicit(&filterTable, t, memory_order_acq_rel);
  if (old != NULL) {
    eventWriterIdle();
    PlinthPagesFree(old, sizeof *old);
  }
}

/* filterAdd -- EventFilterAdd with the lock held, of only's event if
 * only is not NULL */
static int filterAdd(const char *spec, EventSourceStruct *only, char *err, size_t errSize)
{
  FilterStruct f;
  FilterTableStruct *t, *now;
  int res = parse(spec, only, &f, err, errSize);
  if (res != 0)
    return res;
  if ((t = PlinthPagesAlloc(sizeof *t)) == NULL)
    return ENOMEM;
  now = atomic_load(&filterTable);
  if (now != NULL)
    memcpy(t, now, sizeof *t);
  if (t->count == FILTER_LIMIT) {
    PlinthPagesFree(t, sizeof *t);
    errSay(err, errSize, "at most 16 filters at once", "", "");
    return ENOSPC;
  }
  t->filter[t->count++] = f;
  publish(t);
  return 0;
}

/* EventFilterAdd -- event.h */
int EventFilterAdd(const char *spec, char *err, size_t errSize)
{
  int res;
  if (errSize == 0)
    err = NULL;
  if (spec == NULL)
    return EINVAL;
  (void)EventInit();
  PlinthLockClaim();
  res = filterAdd(spec, NULL, err, errSize);
  PlinthLockRelease();
  return res;
}

/* eventFilterEnv -- TELLTALE_FILTER: filters separated by ';', each
 * added for every registry in the process that has its event (a plain
 * name), or for the one it names (REGISTRY:Name), as registries join;
 * with final (the session starts), a plain name no registry has yet is
 * said.  A registry named that has not joined may join later.  Lock
 * held.  design/control.txt .sol.filter, design/registry.txt .reg.many.names */
#define ENV_FILTER_LIMIT 32
void eventFilterEnv(int final)
{
  static uint32_t said;         /* a bit per filter said to be wrong */
  static unsigned char applied[ENV_FILTER_LIMIT][256 / 8];  /* by registry number */
  const char *value = PlinthGetEnv("TELLTALE_FILTER"), *p = value;
  for (unsigned i = 0; p != NULL && *p != '\0' && i < ENV_FILTER_LIMIT; ++i) {
    char spec[256], err[256], name[FILTER_TEXT_MAX + 1];
    size_t n = strcspn(p, ";"), len;
    const char *colon;
    int any = 0;
    if (n == 0 || (said & (UINT32_C(1) << i)) != 0)
      goto next;
    if (n >= sizeof spec) {
      said |= UINT32_C(1) << i;
      eventSay("TELLTALE_FILTER: a filter is at most 127 characters; using the others", NULL);
      goto next;
    }
    memcpy(spec, p, n);
    spec[n] = '\0';
    for (len = 0; spec[len] == ' '; ++len)
      ;
    {
      const char *start = spec + len;
      len = strcspn(start, " ");
      if (len >= sizeof name)
        len = sizeof name - 1;
      memcpy(name, start, len);
      name[len] = '\0';
    }
    colon = strchr(name, ':');
    for (unsigned s = 0; s < SOURCE_LIMIT; ++s) {
      EventSourceStruct *source = eventSources[s];
      unsigned number;
      if (source == NULL)
        continue;
      number = source->number;
      if (colon != NULL ? !eventRegistryNamed(source, name, (size_t)(colon - name))
                        : eventFindIn(source, name) == NULL)
        continue;
      any = 1;
      if (applied[i][number / 8] & (1u << (number % 8)))
        continue;
      applied[i][number / 8] = (unsigned char)(applied[i][number / 8] | (1u << (number % 8)));
      err[0] = '\0';
      if (filterAdd(spec, source, err, sizeof err) != 0) {
        said |= UINT32_C(1) << i;
        eventSay("TELLTALE_FILTER: ", err, "; using the others", NULL);
        break;
      }
    }
    if (final && !any && colon == NULL && (said & (UINT32_C(1) << i)) == 0) {
      said |= UINT32_C(1) << i;
      eventSay("TELLTALE_FILTER: no registry in this process has an event '", name,
               "' (one that joins later is named as REGISTRY:", name, "); using the others", NULL);
    }
  next:
    p += n;
    if (*p == ';')
      ++p;
  }
}

/* EventFilterClear -- event.h */
int EventFilterClear(const char *name)
{
  EventSourceStruct *source = NULL;
  const EventDescStruct *named = NULL;
  if (name != NULL && name[0] != '\0' && strcmp(name, "all") != 0) {
    PlinthLockClaim();
    named = eventFind(name, &source, NULL, 0);
    PlinthLockRelease();
    if (named == NULL)
      return EINVAL;            /* no such event */
  }
  {
  FilterTableStruct *t = NULL, *now;
  int all = name == NULL || name[0] == '\0' || strcmp(name, "all") == 0, found = 0;
  PlinthLockClaim();
  now = atomic_load(&filterTable);
  if (now != NULL && !all) {
    if ((t = PlinthPagesAlloc(sizeof *t)) == NULL) {
      PlinthLockRelease();
      return ENOMEM;
    }
    for (unsigned i = 0; i < now->count; ++i) {
      if (now->filter[i].source == source && now->filter[i].code == named->code)
        found = 1;
      else
        t->filter[t->count++] = now->filter[i];
    }
    if (t->count == 0) {
      PlinthPagesFree(t, sizeof *t);
      t = NULL;
    }
  } else
    found = now != NULL;
  if (found)
    publish(t);
  else if (t != NULL)
    PlinthPagesFree(t, sizeof *t);
  PlinthLockRelease();
  return found || all ? 0 : ENOENT;
  }
}

/* eventFilterSay -- "filters: A; B" and a newline, into buf, if any */
void eventFilterSay(char *buf, size_t size)
{
  const FilterTableStruct *t;
  PlinthLockClaim();
  t = atomic_load(&filterTable);
  for (unsigned i = 0; t != NULL && i < t->count; ++i) {
    eventAppend(buf, size, i == 0 ? "filters " : "; ");
    eventAppend(buf, size, t->filter[i].text);
  }
  eventAppend(buf, size, t != NULL && t->count > 0 ? "\n" : "filters (none)\n");
  PlinthLockRelease();
}
