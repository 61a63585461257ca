/* <tools/eventcnv/exportchrome.c> -- Chrome trace-event JSON
 *
 * .design: design/telemetry.txt .export.chrome
 *
 * The JSON Object Format of the Trace Event Format, which Perfetto UI
 * and chrome://tracing open: {"traceEvents": [...]}.  The process and
 * each thread are named by metadata events (ph "M"); every event is an
 * instant event (ph "i", scope "t") on its thread, named after the
 * event, with its kind as the category and its fields as args.  tid is
 * telltale's thread serial, ts is microseconds since the stream's start
 * with three decimals (nanoseconds).
 */

#include "export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ChromeStruct {
  ExportOutStruct process;      /* ,"pid":N made once */
  int first;                    /* no element written yet */
} ChromeStruct;

static ChromeStruct chrome;

/* Element -- start an element of traceEvents */
static void Element(ExportOutStruct *out, ChromeStruct *state)
{
  ExportPutString(out, state->first ? "\n{" : ",\n{");
  state->first = 0;
}

/* PutTs -- ns as microseconds with three decimals */
static void PutTs(ExportOutStruct *out, int64_t ns)
{
  uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  char frac[4] = {'.', (char)('0' + u / 100 % 10), (char)('0' + u / 10 % 10), (char)('0' + u % 10)};
  if (ns < 0)
    ExportPutChar(out, '-');
  ExportPutUnsigned(out, u / 1000);
  ExportPut(out, frac, sizeof frac);
}

/* ThreadName -- the metadata naming thread serial: its name, or T and
 * its serial until it has one */
static void ThreadName(ExportStruct *ex, ChromeStruct *state, uint32_t serial,
                       ExportThreadStruct *thread)
{
  ExportOutStruct *out = &ex->out;
  Element(out, state);
  ExportPutString(out, "\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0");
  ExportPut(out, state->process.buf, state->process.used);
  ExportPutString(out, ",\"tid\":");
  ExportPutUnsigned(out, serial);
  ExportPutString(out, ",\"args\":{\"name\":");
  if (thread->name != NULL) {
    ExportPutJsonString(out, thread->name, thread->nameLength);
  } else {
    ExportPutString(out, "\"T");
    ExportPutUnsigned(out, serial);
    ExportPutChar(out, '"');
  }
  ExportPutString(out, "}}");
  if (!thread->announced) {     /* threads in serial order, not by name */
    Element(out, state);
    ExportPutString(out, "\"name\":\"thread_sort_index\",\"ph\":\"M\",\"ts\":0");
    ExportPut(out, state->process.buf, state->process.used);
    ExportPutString(out, ",\"tid\":");
    ExportPutUnsigned(out, serial);
    ExportPutString(out, ",\"args\":{\"sort_index\":");
    ExportPutUnsigned(out, serial);
    ExportPutString(out, "}}");
  }
  thread->announced = 1;
}

static int ChromeBegin(ExportStruct *ex)
{
  ExportOutStruct *out = &ex->out;
  const EventStreamInfoStruct *info = ex->info;
  char version[40];
  memset(&chrome, 0, sizeof chrome);
  chrome.process.fd = -1;
  chrome.first = 1;
  ExportPutString(&chrome.process, ",\"pid\":");
  ExportPutUnsigned(&chrome.process, info->pid);
  ex->state = &chrome;

  snprintf(version, sizeof version, "%u.%u.%u", info->major, info->median, info->minor);
  ExportPutString(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"program\":");
  ExportPutJsonString(out, info->program, strlen(info->program));
  ExportPutString(out, ",\"pid\":");
  ExportPutUnsigned(out, info->pid);
  ExportPutString(out, ",\"start_ns\":");
  ExportPutUnsigned(out, info->startRealtime);
  ExportPutString(out, ",\"telltale_version\":\"");
  ExportPutString(out, version);
  ExportPutString(out, "\"},\"traceEvents\":[");
  Element(out, &chrome);
  ExportPutString(out, "\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0");
  ExportPut(out, chrome.process.buf, chrome.process.used);
  ExportPutString(out, ",\"tid\":0,\"args\":{\"name\":");
  ExportPutJsonString(out, info->program, strlen(info->program));
  ExportPutString(out, "}}");
  if (chrome.process.err != 0)
    out->err = chrome.process.err;
  return 0;
}

/* ChromeEvery -- a thread's name when ThreadName gives it, whatever
 * the filter */
static int ChromeEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  (void)seq;
  if (rec->desc == ex->threadName) {
    uint32_t serial = (uint32_t)rec->values[0].u;
    ThreadName(ex, ex->state, serial, ExportThread(ex, serial));   /* Track made it */
  }
  return 0;
}

static int ChromeEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  ExportOutStruct *out = &ex->out;
  ChromeStruct *state = ex->state;
  unsigned kind = rec->kind < EVENT_KIND_LIMIT ? rec->kind : EVENT_KIND_LIMIT - 1;
  const ExportNamesStruct *names = &ex->names[rec->desc - ex->registry->events];
  ExportThreadStruct *thread = ExportThread(ex, rec->thread);
  (void)seq;
  if (thread == NULL) {
    out->err = out->err != 0 ? out->err : ENOMEM;
    return 0;
  }
  if (!thread->announced)
    ThreadName(ex, state, rec->thread, thread);
  Element(out, state);
  ExportPutString(out, "\"name\":");
  ExportPut(out, names->event, names->eventLength);
  ExportPutString(out, ",\"cat\":");
  ExportPut(out, ex->kindNames[kind], ex->kindNameLengths[kind]);
  ExportPutString(out, ",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
  PutTs(out, ExportElapsedNs(ex, rec->clock));
  ExportPut(out, state->process.buf, state->process.used);
  ExportPutString(out, ",\"tid\":");
  ExportPutUnsigned(out, rec->thread);
  ExportPutString(out, ",\"args\":{");
  ExportPutJsonMembers(out, ex, rec);
  (void)ExportPutJsonLabels(out, ",\"labels\":", ex, rec);
  ExportPutString(out, "}}");
  return 0;
}

static int ChromeEnd(ExportStruct *ex)
{
  ChromeStruct *state = ex->state;
  if (state == NULL)
    return 0;
  ExportPutString(&ex->out, "\n]}\n");
  free(state->process.buf);
  return 0;
}

const ExportWriterStruct ExportChrome = {"chrome", 0, ChromeBegin, ChromeEvent, ChromeEvery, ChromeEnd};
