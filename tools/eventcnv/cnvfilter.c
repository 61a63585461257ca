/* <tools/eventcnv/cnvfilter.c> -- eventcnv's --kind and --event
 *
 * .design: design/tools.txt .eventcnv
 *
 * --kind and --event name kinds and events of the stream's
 * registry; a name it does not have is a usage error that lists the
 * names it has.
 */

#include "cnvint.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* badName -- a usage error: the stream has no kind (kinds) or event
 * named name; the names it has are listed */
static _Noreturn void badName(const char *name, const EventRegistryStruct *registry, int kinds)
{
  unsigned n = kinds ? registry->kindCount : registry->eventCount;
  size_t size = 1;
  char *names;
  for (unsigned i = 0; i < n; ++i)
    size += 1 + strlen(kinds ? registry->kinds[i].name : registry->events[i].name);
  if ((names = malloc(size)) == NULL)
    ReportOutOfMemory();
  names[0] = '\0';
  for (unsigned i = 0; i < n; ++i) {
    strcat(names, " ");
    strcat(names, kinds ? registry->kinds[i].name : registry->events[i].name);
  }
  Report("%s: the stream has no %s named '%s'", kinds ? "--kind" : "--event",
         kinds ? "kind" : "event", name);
  ReportUsage("valid %s names are:%s", kinds ? "kind" : "event", names);
}

/* forEachName -- call match on each name of a comma-separated list;
 * returns the first name it does not match, in buf, or NULL */
static const char *forEachName(const char *list, char *buf, size_t size,
                               int (*match)(const EventRegistryStruct *, const char *,
                                            CnvFilterStruct *),
                               const EventRegistryStruct *registry, CnvFilterStruct *filter)
{
  const char *p = list;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
    if (len >= size)
      len = size - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    if (!match(registry, buf, filter))
      return buf;
    if (comma == NULL)
      return NULL;
    p = comma + 1;
  }
}

/* matchKind -- mark the kind called name; 0 if there is none */
static int matchKind(const EventRegistryStruct *registry, const char *name,
                     CnvFilterStruct *filter)
{
  unsigned i;
  int found = 0;
  /* "Pool" is every registry's kind Pool; "alloc:Pool" names one */
  for (i = 0; i < registry->kindCount; ++i) {
    const char *colon = strchr(registry->kinds[i].name, ':');
    if (colon != NULL && strchr(name, ':') == NULL && strcmp(colon + 1, name) == 0)
      found = filter->kinds[i] = 1;
  }
  for (i = 0; i < registry->kindCount; ++i)
    if (strcmp(registry->kinds[i].name, name) == 0) {
      filter->kinds[i] = 1;
      return 1;
    }
  return found;
}

/* matchEvent -- mark the events called name; 0 if there is none */
static int matchEvent(const EventRegistryStruct *registry, const char *name,
                      CnvFilterStruct *filter)
{
  unsigned i;
  int found = 0;
  for (i = 0; i < registry->eventCount; ++i)
    if (strcmp(registry->events[i].name, name) == 0) {
      filter->events[i] = 1;
      found = 1;
    }
  return found;
}

/* filterEvents -- a filter's table of events, n bytes, zeroed; kept
 * until exit, as filters are made for each log and each follow */
static unsigned char **filterTables;
static size_t filterTableCount;

static void filterTablesFree(void)
{
  for (size_t i = 0; i < filterTableCount; ++i)
    free(filterTables[i]);
  free(filterTables);
}

static unsigned char *filterEvents(size_t n)
{
  unsigned char **more = realloc(filterTables, (filterTableCount + 1) * sizeof *more);
  if (more == NULL)
    return NULL;
  if (filterTableCount == 0)
    atexit(filterTablesFree);
  filterTables = more;
  return filterTables[filterTableCount++] = calloc(n, 1);
}

/* CnvFilterInit -- a name the registry lacks is a usage error */
void CnvFilterInit(CnvFilterStruct *filter, const CnvOptionsStruct *opt,
                   const EventRegistryStruct *registry)
{
  char name[256];
  const char *bad;
  memset(filter, 0, sizeof *filter);
  filter->registry = registry;
  if (opt->events != NULL) {
    filter->events = filterEvents(registry->eventCount + 1);
    if (filter->events == NULL)
      ReportOutOfMemory();
  }
  if (opt->kinds != NULL) {
    filter->byKind = 1;
    bad = forEachName(opt->kinds, name, sizeof name, matchKind, registry, filter);
    if (bad != NULL)
      badName(bad, registry, 1);
  }
  if (opt->events != NULL) {
    filter->byEvent = 1;
    bad = forEachName(opt->events, name, sizeof name, matchEvent, registry, filter);
    if (bad != NULL)
      badName(bad, registry, 0);
  }
}

/* CnvFilterPasses -- both --kind and --event must match */
int CnvFilterPasses(const CnvFilterStruct *filter, unsigned kind, unsigned code)
{
  const EventDescStruct *desc;
  if (filter->byKind && (kind >= EVENT_STREAM_KIND_LIMIT || !filter->kinds[kind]))
    return 0;
  if (filter->byEvent && ((desc = EventRegistryLookup(filter->registry, code)) == NULL
                          || !filter->events[desc - filter->registry->events]))
    return 0;
  return 1;
}

