/* <tools/eventcnv/exportchrome.c> -- Chrome trace-event JSON
 *
 * .design: design/export.txt .export.chrome
 *
 * The JSON Object Format of the Trace Event Format, which Perfetto UI
 * and chrome://tracing open: {"traceEvents": [...]}.  The process and
 * each thread are named by metadata events (ph "M"); every event is an
 * instant event (ph "i", scope "t") on its thread, named after the
 * event, with its kind as the category and its fields as args.  tid is
 * telltale's thread serial, ts is microseconds since the stream's start
 * with three decimals (nanoseconds).
 *
 * Spans (.reg.span) are written when they close: one that nests on its
 * thread as a complete slice (ph X) there, one that overlaps others or
 * crosses threads as an async slice (ph b/e) named after its span, with
 * a flow from its begin thread to its end thread (.export.span.thread);
 * a span still open at the end is closed at the last event's time with
 * "unfinished":true.  Counters are counter
 * events (ph "C"), one track per counter and key.  Both come from every
 * event, whatever the filter.  design/export.txt .export.chrome
 */

#include "export.h"
#include "span.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ChromeSourceStruct -- what chrome keeps per log (process) */
typedef struct ChromeSourceStruct {
  int announced;                /* its process_name is written */
  SpanTrackerStruct *spans;     /* NULL if its registry has none */
  int64_t lastNs;               /* its latest event's time: its open spans' end */
} ChromeSourceStruct;

typedef struct ChromeStruct {
  ExportOutStruct process;      /* ,"pid":N of the log at hand */
  int first;                    /* no element written yet */
  ExportStruct *ex;
  ChromeSourceStruct *sources;  /* by log */
  ChromeSourceStruct *source;   /* the log at hand's */
  uint64_t asyncIds;            /* async slices' ids given so far */
} ChromeStruct;

static ChromeStruct chrome;

/* elementStart -- start an element of traceEvents */
static void elementStart(ExportOutStruct *out, ChromeStruct *state)
{
  ExportPutString(out, state->first ? "\n{" : ",\n{");
  state->first = 0;
}

/* putTs -- ns as microseconds with three decimals */
static void putTs(ExportOutStruct *out, int64_t ns)
{
  uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  char frac[4] = {'.', (char)('0' + u / 100 % 10), (char)('0' + u / 10 % 10), (char)('0' + u % 10)};
  if (ns < 0)
    ExportPutChar(out, '-');
  ExportPutUnsigned(out, u / 1000);
  ExportPut(out, frac, sizeof frac);
}

/* threadMeta -- the metadata naming thread serial: its name, or T and
 * its serial until it has one */
static void threadMeta(ExportStruct *ex, ChromeStruct *state, uint32_t serial,
                     ExportThreadStruct *thread)
{
  ExportOutStruct *out = &ex->out;
  elementStart(out, state);
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
    elementStart(out, state);
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

/* putKey -- a span's key in its parameter's own form: P and A as
 * "0x...", U and W as numbers (W above 2^53 as a decimal string, as
 * .export.json) */
static void putKey(ExportOutStruct *out, const SpanStruct *span)
{
  if (EventTypeOf(span->keyLetter)->hex) {
    ExportPutChar(out, '"');
    ExportPutHex(out, span->key);
    ExportPutChar(out, '"');
  } else if (span->key > (UINT64_C(1) << 53)) {
    ExportPutChar(out, '"');
    ExportPutUnsigned(out, span->key);
    ExportPutChar(out, '"');
  } else {
    ExportPutUnsigned(out, span->key);
  }
}

/* spanHead -- an element's name, cat, ph and ts, pid and tid */
static void spanHead(ChromeStruct *state, const SpanStruct *span, const char *ph, int64_t ns,
                     uint32_t thread)
{
  ExportStruct *ex = state->ex;
  ExportOutStruct *out = &ex->out;
  ExportThreadStruct *t = ExportThread(ex, thread);
  if (t == NULL) {
    out->err = out->err != 0 ? out->err : ENOMEM;
    return;
  }
  if (!t->announced)
    threadMeta(ex, state, thread, t);
  elementStart(out, state);
  ExportPutString(out, "\"name\":\"");
  ExportPutString(out, ex->registry->spans[span->span].name);   /* a C identifier */
  ExportPutString(out, "\",\"cat\":\"span\",\"ph\":\"");
  ExportPutString(out, ph);
  ExportPutString(out, "\",\"ts\":");
  putTs(out, ns);
  ExportPut(out, state->process.buf, state->process.used);
  ExportPutString(out, ",\"tid\":");
  ExportPutUnsigned(out, thread);
}

/* spanSlice -- a span when it closes or at the end: on its thread, a
 * complete slice (ph X) that nests among the thread's others; else an
 * async slice (ph b and e, by id, named after the span, so that a
 * reader groups them by name), with a flow from a mark on the begin
 * thread to one on the end thread when they differ.
 * design/export.txt .export.span.thread */
static void spanSlice(void *closure, SpanWhat what, const SpanStruct *span)
{
  ChromeStruct *state = closure;
  ExportOutStruct *out = &state->ex->out;
  int64_t endNs = what == SpanCLOSED ? span->endNs : state->source->lastNs;
  if (what == SpanOPENED)
    return;
  if (span->onThread) {
    spanHead(state, span, "X", span->beginNs, span->beginThread);
    ExportPutString(out, ",\"dur\":");
    putTs(out, MergeSubNs(endNs, span->beginNs));
    ExportPutString(out, ",\"args\":{\"key\":");
    putKey(out, span);
    ExportPutString(out, ",\"seq\":");
    ExportPutUnsigned(out, span->beginSeq);
    if (what == SpanCLOSED) {
      ExportPutString(out, ",\"end_seq\":");
      ExportPutUnsigned(out, span->endSeq);
    } else {
      ExportPutString(out, ",\"unfinished\":true");
    }
    ExportPutString(out, "}}");
    return;
  }
  uint64_t id = ++state->asyncIds;
  spanHead(state, span, "b", span->beginNs, span->beginThread);
  ExportPutString(out, ",\"id\":\"");
  ExportPutHex(out, id);
  ExportPutString(out, "\",\"args\":{\"key\":");
  putKey(out, span);
  ExportPutString(out, ",\"thread\":");
  ExportPutUnsigned(out, span->beginThread);
  ExportPutString(out, ",\"seq\":");
  ExportPutUnsigned(out, span->beginSeq);
  ExportPutString(out, "}}");
  spanHead(state, span, "e", span->endNs, span->endThread);
  ExportPutString(out, ",\"id\":\"");
  ExportPutHex(out, id);
  ExportPutString(out, "\",\"args\":{\"end_thread\":");
  ExportPutUnsigned(out, span->endThread);
  ExportPutString(out, ",\"end_seq\":");
  ExportPutUnsigned(out, span->endSeq);
  ExportPutString(out, "}}");
  if (span->endThread != span->beginThread) {   /* the flow: flow events v2 */
    spanHead(state, span, "X", span->beginNs, span->beginThread);
    ExportPutString(out, ",\"dur\":0,\"bind_id\":\"");
    ExportPutHex(out, id);
    ExportPutString(out, "\",\"flow_out\":true,\"args\":{\"flow\":\"begin\"}}");
    spanHead(state, span, "X", span->endNs, span->endThread);
    ExportPutString(out, ",\"dur\":0,\"bind_id\":\"");
    ExportPutHex(out, id);
    ExportPutString(out, "\",\"flow_in\":true,\"args\":{\"flow\":\"end\"}}");
  }
}

/* counterEvent -- counter i's new value from rec: a counter event on the
 * track of its name and key.  design/export.txt .export.chrome */
static void counterEvent(ExportStruct *ex, ChromeStruct *state, const EventRecordStruct *rec, int i)
{
  ExportOutStruct *out = &ex->out;
  const EventCounterDescStruct *counter = &ex->registry->counters[i];
  const EventValueUnion *value = &rec->values[counter->value];
  char letter = rec->desc->format[counter->value];
  if (letter == 'D' && !(value->d - value->d == 0))   /* JSON has no NaN or infinity */
    return;
  elementStart(out, state);
  ExportPutString(out, "\"name\":\"");
  ExportPutString(out, counter->name);
  if (counter->key != EVENT_COUNTER_NO_KEY) {
    uint64_t key = rec->values[counter->key].u;
    const char *label = ex->fmt.label != NULL ? ex->fmt.label(ex->fmt.labelClosure, key) : NULL;
    ExportPutChar(out, '[');
    if (label != NULL) {   /* a label as a JSON string's body */
      size_t at = out->used + 1;
      ExportPutJsonString(out, label, strlen(label));
      if (out->err == 0) {
        memmove(out->buf + at - 1, out->buf + at, out->used - at - 1);
        out->used -= 2;
      }
    } else {
      ExportPutHex(out, key);
    }
    ExportPutChar(out, ']');
  }
  ExportPutString(out, "\",\"ph\":\"C\",\"ts\":");
  putTs(out, ExportElapsedNs(ex, rec->clock));
  ExportPut(out, state->process.buf, state->process.used);
  ExportPutString(out, ",\"args\":{");
  ExportPut(out, ex->names[rec->desc - ex->registry->events].keys[counter->value],
            ex->names[rec->desc - ex->registry->events].keyLengths[counter->value]);
  if (letter == 'D')
    ExportPutDouble(out, value->d);
  else
    ExportPutUnsigned(out, value->u);
  ExportPutString(out, "}}");
}

/* chromeSource -- the log at hand changed: its pid, and its process's
 * name before its first event */
static int chromeSource(ExportStruct *ex)
{
  ChromeStruct *state = ex->state;
  ExportOutStruct *out = &ex->out;
  state->source = &state->sources[ex->source];
  state->process.used = 0;
  ExportPutString(&state->process, ",\"pid\":");
  ExportPutUnsigned(&state->process, ex->info->pid);
  if (state->process.err != 0)
    out->err = state->process.err;
  if (state->source->announced)
    return 0;
  state->source->announced = 1;
  elementStart(out, state);
  ExportPutString(out, "\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0");
  ExportPut(out, state->process.buf, state->process.used);
  ExportPutString(out, ",\"tid\":0,\"args\":{\"name\":");
  ExportPutJsonString(out, ex->info->program, strlen(ex->info->program));
  ExportPutString(out, "}}");
  if (ex->registry->spanCount > 0) {
    state->source->spans = SpanTrackerCreate(ex->registry, 0, spanSlice, state);
    if (state->source->spans == NULL) {
      fprintf(stderr, "eventcnv: out of memory\n");
      return 1;
    }
  }
  return 0;
}

static int chromeBegin(ExportStruct *ex)
{
  ExportOutStruct *out = &ex->out;
  const EventStreamInfoStruct *info = ex->info;
  char version[40];
  memset(&chrome, 0, sizeof chrome);
  chrome.process.fd = -1;
  chrome.first = 1;
  chrome.ex = ex;
  ex->state = &chrome;
  chrome.sources = calloc(ex->sourceCount, sizeof *chrome.sources);
  if (chrome.sources == NULL) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }

  snprintf(version, sizeof version, "%u.%u.%u", info->major, info->median, info->minor);
  ExportPutString(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"program\":");
  ExportPutJsonString(out, info->program, strlen(info->program));
  ExportPutString(out, ",\"pid\":");
  ExportPutUnsigned(out, info->pid);
  ExportPutString(out, ",\"start_ns\":");
  ExportPutUnsigned(out, ex->originNs);
  ExportPutString(out, ",\"telltale_version\":\"");
  ExportPutString(out, version);
  ExportPutString(out, "\"},\"traceEvents\":[");
  return chromeSource(ex);
}

/* chromeEvery -- a thread's name when ThreadName gives it, whatever
 * the filter */
static int chromeEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  ChromeStruct *state = ex->state;
  int64_t ns = ExportElapsedNs(ex, rec->clock);
  if (ns > state->source->lastNs)
    state->source->lastNs = ns;
  if (rec->desc == ex->threadName) {
    uint32_t serial = (uint32_t)rec->values[0].u;
    threadMeta(ex, ex->state, serial, ExportThread(ex, serial));   /* track made it */
  }
  if (state->source->spans != NULL && SpanTrackerEvent(state->source->spans, rec, ns, seq) != 0) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  for (int i = SpanCounterOf(ex->registry, rec->code, -1); i >= 0;
       i = SpanCounterOf(ex->registry, rec->code, i))
    counterEvent(ex, state, rec, i);
  return 0;
}

static int chromeEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  ExportOutStruct *out = &ex->out;
  ChromeStruct *state = ex->state;
  unsigned kind = rec->kind < EVENT_STREAM_KIND_LIMIT ? rec->kind : EVENT_STREAM_KIND_LIMIT - 1;
  const ExportNamesStruct *names = &ex->names[rec->desc - ex->registry->events];
  ExportThreadStruct *thread = ExportThread(ex, rec->thread);
  (void)seq;
  if (thread == NULL) {
    out->err = out->err != 0 ? out->err : ENOMEM;
    return 0;
  }
  if (!thread->announced)
    threadMeta(ex, state, rec->thread, thread);
  elementStart(out, state);
  ExportPutString(out, "\"name\":");
  ExportPut(out, names->event, names->eventLength);
  ExportPutString(out, ",\"cat\":");
  ExportPut(out, ex->kindNames[kind], ex->kindNameLengths[kind]);
  ExportPutString(out, ",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
  putTs(out, ExportElapsedNs(ex, rec->clock));
  ExportPut(out, state->process.buf, state->process.used);
  ExportPutString(out, ",\"tid\":");
  ExportPutUnsigned(out, rec->thread);
  ExportPutString(out, ",\"args\":{");
  ExportPutJsonMembers(out, ex, rec);
  (void)ExportPutJsonLabels(out, ",\"labels\":", ex, rec);
  ExportPutString(out, "}}");
  return 0;
}

static int chromeEnd(ExportStruct *ex)
{
  ChromeStruct *state = ex->state;
  if (state == NULL)
    return 0;
  for (size_t i = 0; state->sources != NULL && i < ex->sourceCount; ++i)
    if (state->sources[i].spans != NULL && ExportUse(ex, i) == 0)
      SpanTrackerFinish(state->sources[i].spans);
  ExportPutString(&ex->out, "\n]}\n");
  for (size_t i = 0; state->sources != NULL && i < ex->sourceCount; ++i) {
    SpanTrackerDestroy(state->sources[i].spans);
  }
  free(state->sources);
  free(state->process.buf);
  return 0;
}

const ExportWriterStruct ExportChrome = {"chrome", 0, chromeBegin, chromeEvent, chromeEvery, chromeEnd,
                                         chromeSource, 0};
