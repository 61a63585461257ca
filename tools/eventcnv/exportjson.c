/* <tools/eventcnv/exportjson.c> -- JSON lines and CSV
 *
 * .design: design/export.txt .export.json .export.csv
 *
 * Both write one record per event with the same columns: the event's
 * place and time, its thread and process, its kind and name, and its
 * fields (and labels) as a JSON object.  The README gives the schema.
 */

#include "export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_SECOND 1000000000

/* putThreadAndProcess -- the thread's columns, as JSON members (json)
 * or CSV cells (!json).  design/export.txt .export.json */
static void putThreadAndProcess(ExportOutStruct *out, uint32_t serial,
                                const ExportThreadStruct *thread, int json)
{
  ExportPutString(out, json ? ",\"thread\":" : ",");
  ExportPutUnsigned(out, serial);
  ExportPutString(out, json ? ",\"tid\":" : ",");
  if (thread != NULL && thread->started)
    ExportPutUnsigned(out, thread->osid);
  else if (json)
    ExportPutString(out, "null");
  ExportPutString(out, json ? ",\"thread_name\":" : ",");
  if (thread != NULL && thread->name != NULL)
    ExportPutJsonString(out, thread->name, thread->nameLength);
  else if (json)
    ExportPutString(out, "null");
}

static void putTimes(ExportOutStruct *out, const ExportStruct *ex, const EventRecordStruct *rec,
                     int json)
{
  int64_t elapsed = ExportElapsedNs(ex, rec->clock);
  ExportPutString(out, json ? ",\"time_ns\":" : ",");
  ExportPutSigned(out, MergeAddNs(MergeWallNs(ex->originNs), elapsed));
  ExportPutString(out, json ? ",\"elapsed_ns\":" : ",");
  ExportPutSigned(out, elapsed);
}

static const char *kindName(const ExportStruct *ex, unsigned kind)
{
  return kind < ex->registry->kindCount ? ex->registry->kinds[kind].name : "?";
}


/* JSON lines.  design/export.txt .export.json
 *
 * A line is written straight into the output buffer, room for the
 * longest it could be reserved first.  What repeats from line to line
 * is made once: each event's ,"kind":...,"event":...,"fields":{, the
 * members of the last line's thread and process, and the digits of the
 * last line's second.  design/export.txt .export.json.fast */

/* JsonlHeadStruct -- an event's members from kind to the fields' brace */
typedef struct JsonlHeadStruct {
  char *text;
  size_t length;
  size_t eventAt;               /* where ,"event": starts */
  size_t fieldsMax;             /* the most the fields take, but a string's */
} JsonlHeadStruct;

/* SecondsStruct -- the digits of the second of the last time written */
typedef struct SecondsStruct {
  uint64_t second;
  char digits[20];
  size_t length;                /* 0: none yet */
} SecondsStruct;

typedef struct JsonlStruct {
  JsonlHeadStruct **heads;      /* by log, then by index in its registry */
  int *labelled;                /* by log: a Label event has been read */
  ExportOutStruct who;          /* ,"thread":...,"program":"..." of the thread below */
  size_t whoSource;
  const ExportThreadStruct *whoThread;   /* NULL: who is not made */
  uint32_t whoSerial;
  int whoStarted;
  uint64_t whoOsid;
  const char *whoName;
  size_t whoNameLength;
  SecondsStruct time, elapsed;  /* of time_ns and of elapsed_ns */
  uint64_t seq;                 /* the last seq, whose digits are these */
  char seqDigits[21];
  size_t seqLength;             /* 0: none yet */
} JsonlStruct;

static JsonlStruct jsonl;

/* jsonlSource -- the log at hand changed: make who again */
static int jsonlSource(ExportStruct *ex)
{
  (void)ex;
  jsonl.whoThread = NULL;
  return 0;
}

/* jsonlHeads -- each log's events' heads */
static int jsonlHeads(ExportStruct *ex, JsonlStruct *state)
{
  state->heads = calloc(ex->sourceCount, sizeof *state->heads);
  state->labelled = calloc(ex->sourceCount, sizeof *state->labelled);
  if (state->heads == NULL || state->labelled == NULL)
    return 1;
  for (size_t s = 0; s < ex->sourceCount; ++s) {
    const ExportSourceStruct *src = &ex->sources[s];
    const EventRegistryStruct *registry = src->registry;
    state->heads[s] = calloc(registry->eventCount + 1, sizeof *state->heads[s]);
    if (state->heads[s] == NULL)
      return 1;
    for (unsigned i = 0; i < registry->eventCount; ++i) {
      unsigned kind = registry->events[i].kind < EVENT_STREAM_KIND_LIMIT ? registry->events[i].kind
        : EVENT_STREAM_KIND_LIMIT - 1;
      ExportOutStruct head = {NULL, 0, 0, -1, 0};
      ExportPutString(&head, ",\"kind\":");
      ExportPut(&head, src->kindNames[kind], src->kindNameLengths[kind]);
      state->heads[s][i].eventAt = head.used;
      ExportPutString(&head, ",\"event\":");
      ExportPut(&head, src->names[i].event, src->names[i].eventLength);
      ExportPutString(&head, ",\"fields\":{");
      for (unsigned p = 0; p < registry->events[i].paramCount; ++p)
        state->heads[s][i].fieldsMax += 1 + src->names[i].keyLengths[p] + EXPORT_JSON_VALUE_MAX;
      state->heads[s][i].text = head.buf;
      state->heads[s][i].length = head.used;
      if (head.err != 0)
        return 1;
    }
  }
  return 0;
}

static int jsonlBegin(ExportStruct *ex)
{
  memset(&jsonl, 0, sizeof jsonl);
  jsonl.who.fd = -1;
  ex->state = &jsonl;
  if (jsonlHeads(ex, &jsonl) != 0) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  return 0;
}

/* jsonlEvery -- a log's labels are looked up once it has a Label */
static int jsonlEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  (void)seq;
  if (rec->desc == ex->label)
    jsonl.labelled[ex->source] = 1;
  return 0;
}

/* jsonlWho -- the thread's and process's members, made again only when
 * the thread, or what the log has said of it, changed */
static void jsonlWho(ExportStruct *ex, JsonlStruct *state, uint32_t serial)
{
  const ExportThreadStruct *thread = ExportThreadFind(ex, serial);
  ExportOutStruct *who = &state->who;
  if (state->whoThread != NULL && thread == state->whoThread && state->whoSource == ex->source
      && state->whoSerial == serial && state->whoStarted == thread->started
      && state->whoOsid == thread->osid && state->whoName == thread->name
      && state->whoNameLength == thread->nameLength)
    return;
  who->used = 0;
  putThreadAndProcess(who, serial, thread, 1);
  ExportPutString(who, ",\"pid\":");
  ExportPutUnsigned(who, ex->info->pid);
  ExportPutString(who, ",\"program\":");
  ExportPutJsonString(who, ex->info->program, strlen(ex->info->program));
  if (who->err != 0 && ex->out.err == 0)
    ex->out.err = who->err;
  state->whoThread = thread;    /* NULL until the log names the thread: made each line */
  state->whoSource = ex->source;
  state->whoSerial = serial;
  if (thread != NULL) {
    state->whoStarted = thread->started;
    state->whoOsid = thread->osid;
    state->whoName = thread->name;
    state->whoNameLength = thread->nameLength;
  }
}

/* jsonlNs -- ns at o, its second's digits made once */
static char *jsonlNs(SecondsStruct *seconds, char *o, int64_t ns)
{
  uint64_t second;
  if (ns < NS_PER_SECOND)
    return ns < 0 ? (*o++ = '-', ExportUnsignedTo(o, (uint64_t)0 - (uint64_t)ns))
      : ExportUnsignedTo(o, (uint64_t)ns);
  second = (uint64_t)ns / NS_PER_SECOND;
  if (second != seconds->second || seconds->length == 0) {
    seconds->second = second;
    seconds->length = (size_t)(ExportUnsignedTo(seconds->digits, second) - seconds->digits);
  }
  o = ExportCopy(o, seconds->digits, seconds->length);
  return ExportZeroPaddedTo(o, (uint64_t)ns % NS_PER_SECOND, 9);
}

/* jsonlSeq -- seq at o: the last one's digits counted up where it
 * follows it */
static char *jsonlSeq(JsonlStruct *state, char *o, uint64_t seq)
{
  char *d = state->seqDigits;
  size_t i = state->seqLength;
  if (i > 0 && seq == state->seq + 1) {
    while (i > 0 && d[i - 1] == '9')
      d[--i] = '0';
    if (i > 0) {
      ++d[i - 1];
    } else {                    /* 99 to 100 */
      memmove(d + 1, d, state->seqLength++);
      d[0] = '1';
    }
  } else {
    state->seqLength = (size_t)(ExportUnsignedTo(d, seq) - d);
  }
  state->seq = seq;
  return ExportCopy(o, d, state->seqLength);
}

static int jsonlEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  ExportOutStruct *out = &ex->out;
  JsonlStruct *state = ex->state;
  const EventDescStruct *desc = rec->desc;
  const JsonlHeadStruct *head = &state->heads[ex->source][desc - ex->registry->events];
  int64_t elapsed = ExportElapsedNs(ex, rec->clock);
  size_t max;
  char *o;
  jsonlWho(ex, state, rec->thread);
  max = 128 + state->who.used + head->length + head->fieldsMax
    + EXPORT_JSON_STRING_MAX(rec->stringLength);
  o = ExportReserve(out, max);
  if (o == NULL)
    return 0;                   /* out->err says why */
  memcpy(o, "{\"seq\":", 7);
  o = jsonlSeq(state, o + 7, seq);
  memcpy(o, ",\"time_ns\":", 11);
  o = jsonlNs(&state->time, o + 11, MergeAddNs(MergeWallNs(ex->originNs), elapsed));
  memcpy(o, ",\"elapsed_ns\":", 14);
  o = jsonlNs(&state->elapsed, o + 14, elapsed);
  memcpy(o, state->who.buf, state->who.used);
  o += state->who.used;
  if (rec->kind == desc->kind) {
    memcpy(o, head->text, head->length);
    o += head->length;
  } else {                      /* the block's kind is not the event's */
    unsigned kind = rec->kind < EVENT_STREAM_KIND_LIMIT ? rec->kind : EVENT_STREAM_KIND_LIMIT - 1;
    memcpy(o, ",\"kind\":", 8);
    memcpy(o + 8, ex->kindNames[kind], ex->kindNameLengths[kind]);
    o += 8 + ex->kindNameLengths[kind];
    memcpy(o, head->text + head->eventAt, head->length - head->eventAt);
    o += head->length - head->eventAt;
  }
  o = ExportJsonMembersTo(o, ex, rec);
  *o++ = '}';
  out->used = (size_t)(o - out->buf);
  if (state->labelled[ex->source])
    (void)ExportPutJsonLabels(out, ",\"labels\":", ex, rec);
  ExportPut(out, "}\n", 2);
  return 0;
}

static int jsonlEnd(ExportStruct *ex)
{
  JsonlStruct *state = ex->state;
  if (state == NULL)
    return 0;
  for (size_t s = 0; state->heads != NULL && s < ex->sourceCount; ++s) {
    for (unsigned i = 0; state->heads[s] != NULL && i < ex->sources[s].registry->eventCount; ++i)
      free(state->heads[s][i].text);
    free(state->heads[s]);
  }
  free(state->heads);
  free(state->labelled);
  free(state->who.buf);
  return 0;
}

const ExportWriterStruct ExportJsonl = {"jsonl", 0, jsonlBegin, jsonlEvent, jsonlEvery, jsonlEnd,
                                        jsonlSource, 0};


/* CSV (RFC 4180): a header row, then a row per event; a cell with a
 * comma, a quote or a line break is quoted, its quotes doubled; lines
 * end with CRLF.  design/export.txt .export.csv */

static const char csvHeader[] =
  "seq,time_ns,elapsed_ns,thread,tid,thread_name,pid,program,kind,event,fields,labels\r\n";

/* putCell -- s as a CSV cell, quoted if it needs to be */
static void putCell(ExportOutStruct *out, const char *s, size_t len)
{
  size_t i, run = 0;
  for (i = 0; i < len; ++i)
    if (s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n')
      break;
  if (i == len) {
    ExportPut(out, s, len);
    return;
  }
  ExportPutChar(out, '"');
  for (i = 0; i < len; ++i)
    if (s[i] == '"') {
      ExportPut(out, s + run, i + 1 - run);
      ExportPutChar(out, '"');
      run = i + 1;
    }
  ExportPut(out, s + run, len - run);
  ExportPutChar(out, '"');
}

/* putTextCell -- s (len bytes) as a cell of text: what a JSON string of
 * it holds between its quotes, so valid UTF-8 with control bytes
 * escaped (.export.text), then quoted as a cell; scratch is memory */
static void putTextCell(ExportOutStruct *out, ExportOutStruct *scratch, const char *s, size_t len)
{
  scratch->used = 0;
  ExportPutJsonString(scratch, s, len);
  if (scratch->err != 0 || scratch->used < 2) {
    if (out->err == 0)
      out->err = scratch->err;
    return;
  }
  putCell(out, scratch->buf + 1, scratch->used - 2);
}

typedef struct CsvStruct {
  ExportOutStruct cell;         /* a cell being made, in memory */
  ExportOutStruct program;      /* the program's cell, made once */
} CsvStruct;

static CsvStruct csv;

/* csvSource -- the program's cell, made once per log */
static int csvSource(ExportStruct *ex)
{
  csv.program.used = 0;
  putTextCell(&csv.program, &csv.cell, ex->info->program, strlen(ex->info->program));
  return 0;
}

static int csvBegin(ExportStruct *ex)
{
  memset(&csv, 0, sizeof csv);
  csv.cell.fd = csv.program.fd = -1;
  csvSource(ex);
  ex->state = &csv;
  ExportPutString(&ex->out, csvHeader);
  return 0;
}

static int csvEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  ExportOutStruct *out = &ex->out;
  CsvStruct *state = ex->state;
  const ExportThreadStruct *thread = ExportThreadFind(ex, rec->thread);
  ExportPutUnsigned(out, seq);
  putTimes(out, ex, rec, 0);
  /* thread, tid and thread_name: the name is text, not JSON */
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, rec->thread);
  ExportPutChar(out, ',');
  if (thread != NULL && thread->started)
    ExportPutUnsigned(out, thread->osid);
  ExportPutChar(out, ',');
  if (thread != NULL && thread->name != NULL)
    putTextCell(out, &state->cell, thread->name, thread->nameLength);
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, ex->info->pid);
  ExportPutChar(out, ',');
  ExportPut(out, state->program.buf, state->program.used);
  ExportPutChar(out, ',');
  ExportPutString(out, kindName(ex, rec->kind));
  ExportPutChar(out, ',');
  ExportPutString(out, rec->desc->name);
  ExportPutChar(out, ',');
  state->cell.used = 0;
  ExportPutJsonFields(&state->cell, ex, rec);
  putCell(out, state->cell.buf, state->cell.used);
  ExportPutChar(out, ',');
  state->cell.used = 0;
  if (ExportPutJsonLabels(&state->cell, "", ex, rec))
    putCell(out, state->cell.buf, state->cell.used);
  ExportPut(out, "\r\n", 2);
  if (state->cell.err != 0 && out->err == 0)
    out->err = state->cell.err;
  return 0;
}

static int csvEnd(ExportStruct *ex)
{
  CsvStruct *state = ex->state;
  free(state->cell.buf);
  free(state->program.buf);
  return 0;
}

const ExportWriterStruct ExportCsv = {"csv", 0, csvBegin, csvEvent, NULL, csvEnd, csvSource, 0};
