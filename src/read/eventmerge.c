/* <src/read/eventmerge.c> -- the stream layer: the merge of a stream's registries
 *
 * .design: design/stream.txt .stream.header.registries .stream.block.registry
 *
 * A stream carries telltale's registry and those of the libraries and
 * program that joined the process (eventheader.c parses each); a
 * reader sees one registry, their merge: each event keeps its code and
 * name unless an earlier registry has it.
 */

#include "eventstreamint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* eventKindWires -- each kind of the stream's registry as blocks carry it
 * (a kind several registries share, telltale's own, as the first's) */
void eventKindWires(EventStreamStruct *stream)
{
  for (unsigned i = 0; i < stream->regCount; ++i)
    stream->info.registryOf[stream->regs[i].number] = &stream->regs[i].reg;
  for (unsigned i = stream->regCount; i-- > 0;)
    for (unsigned k = 0; k < stream->regs[i].reg.kindCount; ++k)
      stream->info.kindWire[stream->regs[i].kindMap[k]] =
        (uint16_t)(stream->regs[i].number << EVENT_BLOCK_REGISTRY_SHIFT | k);
}

/* MergeEventStruct -- an event of the merge, and whose it is */
typedef struct MergeEventStruct {
  EventDescStruct desc;
  unsigned reg, own;            /* its registry's index, and its own index there */
  int same;                     /* telltale's own, which the first registry has: its */
} MergeEventStruct;

static int mergeEventCompare(const void *a, const void *b)
{
  const MergeEventStruct *x = a, *y = b;
  if (x->desc.code != y->desc.code)
    return x->desc.code < y->desc.code ? -1 : 1;
  return x->same - y->same;
}

/* taken -- is name the name of one of the first n kinds or events? */
static int kindTaken(const EventKindDescStruct *kinds, unsigned n, const char *name)
{
  for (unsigned i = 0; i < n; ++i)
    if (strcmp(kinds[i].name, name) == 0)
      return 1;
  return 0;
}

static int eventTaken(const MergeEventStruct *events, unsigned n, const char *name)
{
  for (unsigned i = 0; i < n; ++i)
    if (!events[i].same && strcmp(events[i].desc.name, name) == 0)
      return 1;
  return 0;
}

/* mergedCode -- the code in the merge of registry i's event of code */
static unsigned mergedCode(const MergeEventStruct *events, unsigned n, unsigned i, unsigned code)
{
  for (unsigned e = 0; e < n; ++e)
    if (events[e].reg == i && (events[e].desc.code & 0xFFFF) == code)
      return events[e].desc.code;
  return code;
}

/* qualify -- "registry:name" in names, at *atIO */
static const char *qualify(char *names, size_t *atIO, const char *reg, const char *name)
{
  char *q = names + *atIO;
  size_t a = strlen(reg), b = strlen(name);
  memcpy(q, reg, a);
  q[a] = ':';
  memcpy(q + a + 1, name, b + 1);
  *atIO += a + b + 2;
  return q;
}

/* eventMergeBuild -- the stream's registry, the merge of its registries, by
 * the rule .stream.header.registries gives: the first registry's as it
 * is; then each other registry's kinds and events, in number order,
 * telltale's own kind and events taken as the first's; an event keeps
 * its code unless an earlier registry has that code, when its number
 * goes above it, and its name unless an earlier one has it, when
 * "registry:" goes before it; kinds are "registry:Kind" when more than
 * one registry besides the first has kinds.  A merge it replaces is
 * kept, as tools may hold its descriptors.  0 if memory ran out, or
 * there are more kinds than a stream may have. */
int eventMergeBuild(EventStreamStruct *stream, char *msg, size_t msgSize)
{
  unsigned kinds = 0, events = 0, spans = 0, counters = 0, clients = 0, k = 0, n = 0;
  unsigned sp = 0, c = 0;
  size_t nameSize = 2, nameAt = 0;
  EventKindDescStruct *mk;
  MergeEventStruct *me;
  EventDescStruct *md;
  EventSpanDescStruct *ms;
  EventCounterDescStruct *mc;
  unsigned char *used;
  char *names;
  void **retired;
  const RegStruct *first = &stream->regs[0];
  for (unsigned i = 0; i < stream->regCount; ++i) {
    const RegStruct *r = &stream->regs[i];
    size_t q = strlen(r->reg.name) + 2 + 4;   /* and "#NNN": shownName */
    kinds += r->reg.kindCount;
    events += r->reg.eventCount;
    spans += r->reg.spanCount;
    counters += r->reg.counterCount;
    clients += r->number != 0;
    nameSize += q;
    for (unsigned j = 0; j < r->reg.kindCount; ++j)
      nameSize += q + strlen(r->reg.kinds[j].name);
    for (unsigned j = 0; j < r->reg.eventCount; ++j)
      nameSize += q + strlen(r->reg.events[j].name);
  }
  if (kinds > EVENT_STREAM_KIND_LIMIT) {
    eventFormatMessage(msg, msgSize, "the stream's registries have %" PRIu64 " kinds, more than a "
                       "reader takes (%" PRIu64 ")", (uint64_t)kinds, (uint64_t)EVENT_STREAM_KIND_LIMIT);
    return 0;
  }
  mk = calloc(kinds + 1, sizeof *mk);
  me = calloc(events + 1, sizeof *me);
  md = calloc(events + 1, sizeof *md);
  ms = calloc(spans + 1, sizeof *ms);
  mc = calloc(counters + 1, sizeof *mc);
  used = calloc(EVENT_CODE_LIMIT / 8, 1);
  names = malloc(nameSize);
  retired = realloc(stream->retired, (stream->retiredCount + 6) * sizeof *retired);
  if (retired != NULL)
    stream->retired = retired;
  for (unsigned i = 0; i < stream->regCount && retired != NULL; ++i) {
    unsigned *map = realloc(stream->regs[i].eventMap,
                            (stream->regs[i].reg.eventCount + 1) * sizeof *map);
    if (map == NULL)
      retired = NULL;
    else
      stream->regs[i].eventMap = map;
  }
  if (mk == NULL || me == NULL || md == NULL || ms == NULL || mc == NULL || used == NULL
      || names == NULL || retired == NULL) {
    free(mk), free(me), free(md), free(ms), free(mc), free(used), free(names);
    eventFormatMessage(msg, msgSize, "out of memory merging the stream's registries");
    return 0;
  }
  names[0] = '\0';
  for (unsigned i = 0; i < stream->regCount; ++i) {
    RegStruct *r = &stream->regs[i];
    const EventRegistryStruct *reg = &r->reg;
    if (r->number != 0 || clients == 0) {   /* the merge's name: the clients' */
      if (nameAt > 0) {
        memcpy(names + nameAt, ", ", 2);
        nameAt += 2;
      }
      memcpy(names + nameAt, reg->name, strlen(reg->name) + 1);
      nameAt += strlen(reg->name);
    }
  }
  ++nameAt;
  for (unsigned i = 0; i < stream->regCount; ++i) {
    RegStruct *r = &stream->regs[i];
    const EventRegistryStruct *reg = &r->reg;
    unsigned mine = n, again = 1;
    /* shown -- the registry's name in qualified names: "plug#2" for
     * the second registry of its name (a library loaded again) */
    const char *shown = reg->name;
    for (unsigned e = 0; e < i; ++e)
      again += strcmp(stream->regs[e].reg.name, reg->name) == 0;
    if (again > 1) {
      char *q = names + nameAt;
      nameAt += (size_t)snprintf(q, nameSize - nameAt, "%s#%u", reg->name, again) + 1;
      shown = q;
    }
    for (unsigned j = 0; j < reg->kindCount; ++j) {
      const char *name = reg->kinds[j].name;
      int shared = -1;
      if (i > 0 && first->number == 0)
        for (unsigned f = 0; f < first->reg.kindCount; ++f)
          if (strcmp(first->reg.kinds[f].name, name) == 0)
            shared = (int)first->kindMap[f];
      if (shared >= 0) {
        r->kindMap[j] = (unsigned)shared;
        continue;
      }
      mk[k] = reg->kinds[j];
      if (i > 0 && (clients > 1 || kindTaken(mk, k, name) || again > 1))   /* .reg.many.names */
        mk[k].name = qualify(names, &nameAt, shown, name);
      r->kindMap[j] = k++;
    }
    for (unsigned j = 0; j < reg->eventCount; ++j) {
      const EventDescStruct *e = &reg->events[j];
      unsigned code = e->code & 0xFFFF;
      MergeEventStruct *m = &me[n++];
      m->desc = *e;
      m->reg = i;
      m->own = j;
      if (i > 0 && code < EVENT_CODE_RESERVED_LIMIT && first->number == 0) {
        const EventDescStruct *f = EventRegistryLookup(&first->reg, code);
        if (f != NULL && strcmp(f->name, e->name) == 0) {
          m->same = 1;          /* telltale's own: the first registry's */
          continue;
        }
      }
      if (used[code / 8] & (1u << (code % 8)))
        m->desc.code = r->number << 16 | code;
      used[code / 8] = (unsigned char)(used[code / 8] | (1u << (code % 8)));
      m->desc.kind = r->kindMap[e->kind];
      if (eventTaken(me, mine, e->name))
        m->desc.name = qualify(names, &nameAt, shown, e->name);
    }
    for (unsigned j = 0; j < reg->spanCount; ++j, ++sp) {
      ms[sp] = reg->spans[j];
      ms[sp].begin = mergedCode(me, n, i, reg->spans[j].begin);
      ms[sp].end = mergedCode(me, n, i, reg->spans[j].end);
    }
    for (unsigned j = 0; j < reg->counterCount; ++j, ++c) {
      mc[c] = reg->counters[j];
      mc[c].code = mergedCode(me, n, i, reg->counters[j].code);
    }
  }
  /* In code order, for EventRegistryLookup; each registry's events
   * found in it by their own index. */
  qsort(me, n, sizeof *me, mergeEventCompare);
  events = 0;
  for (unsigned i = 0; i < n; ++i)
    if (!me[i].same) {
      stream->regs[me[i].reg].eventMap[me[i].own] = events;
      md[events++] = me[i].desc;
    }
  for (unsigned i = 0; i < n; ++i)
    if (me[i].same) {
      const EventDescStruct *f = EventRegistryLookup(&first->reg, me[i].desc.code);
      stream->regs[me[i].reg].eventMap[me[i].own] = first->eventMap[f - first->reg.events];
    }
  free(me);
  free(used);
  /* The old merge is kept; the first registry's arrays are its own. */
  retired = stream->retired + stream->retiredCount;
  if (stream->regs[0].owned[0] == NULL) {
    stream->regs[0].owned[0] = stream->kinds;
    stream->regs[0].owned[1] = stream->events;
    stream->regs[0].owned[2] = (void *)stream->paramStrings;
    stream->regs[0].owned[3] = stream->spans;
    stream->regs[0].owned[4] = stream->counters;
    stream->paramStrings = NULL;
  } else {
    retired[0] = stream->kinds;
    retired[1] = stream->events;
    retired[2] = stream->spans;
    retired[3] = stream->counters;
    retired[4] = (void *)stream->registry.name;
    stream->retiredCount += 5;
  }
  stream->kinds = mk;
  stream->events = md;
  stream->spans = ms;
  stream->counters = mc;
  stream->registry.name = names;
  stream->registry.kindCount = k;
  stream->registry.kinds = mk;
  stream->registry.eventCount = events;
  stream->registry.events = md;
  stream->registry.spanCount = sp;
  stream->registry.spans = ms;
  stream->registry.counterCount = c;
  stream->registry.counters = mc;
  eventKindWires(stream);
  return 1;
}
