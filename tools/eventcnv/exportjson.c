/* <tools/eventcnv/exportjson.c> -- JSON lines and CSV
 *
 * .design: design/telemetry.txt .export.json .export.csv
 *
 * Both write one record per event with the same columns: the event's
 * place and time, its thread and process, its kind and name, and its
 * fields (and labels) as a JSON object.  The README gives the schema.
 */

#include "export.h"

#include <stdlib.h>
#include <string.h>

/* PutCommon -- the columns every record has, after seq, as JSON
 * members (json) or CSV cells (!json).  design/telemetry.txt .export.json */
static void PutThreadAndProcess(ExportOutStruct *out, const ExportStruct *ex,
                                const EventRecordStruct *rec, int json)
{
  const ExportThreadStruct *thread = ExportThreadFind(ex, rec->thread);
  ExportPutString(out, json ? ",\"thread\":" : ",");
  ExportPutUnsigned(out, rec->thread);
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

static void PutTimes(ExportOutStruct *out, const ExportStruct *ex, const EventRecordStruct *rec,
                     int json)
{
  int64_t elapsed = ExportElapsedNs(ex, rec->clock);
  ExportPutString(out, json ? ",\"time_ns\":" : ",");
  ExportPutSigned(out, (int64_t)ex->originNs + elapsed);
  ExportPutString(out, json ? ",\"elapsed_ns\":" : ",");
  ExportPutSigned(out, elapsed);
}

static const char *KindName(const ExportStruct *ex, unsigned kind)
{
  return kind < ex->registry->kindCount ? ex->registry->kinds[kind].name : "?";
}


/* JSON lines.  design/telemetry.txt .export.json */

typedef struct JsonlStruct {
  ExportOutStruct process;      /* ,"pid":N,"program":"..." made once */
} JsonlStruct;

static JsonlStruct jsonl;

/* JsonlSource -- the process's members, made once per log */
static int JsonlSource(ExportStruct *ex)
{
  jsonl.process.used = 0;
  ExportPutString(&jsonl.process, ",\"pid\":");
  ExportPutUnsigned(&jsonl.process, ex->info->pid);
  ExportPutString(&jsonl.process, ",\"program\":");
  ExportPutJsonString(&jsonl.process, ex->info->program, strlen(ex->info->program));
  if (jsonl.process.err != 0)
    ex->out.err = jsonl.process.err;
  return 0;
}

static int JsonlBegin(ExportStruct *ex)
{
  memset(&jsonl, 0, sizeof jsonl);
  jsonl.process.fd = -1;
  ex->state = &jsonl;
  return JsonlSource(ex);
}

static int JsonlEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  ExportOutStruct *out = &ex->out;
  JsonlStruct *state = ex->state;
  unsigned kind = rec->kind < EVENT_KIND_LIMIT ? rec->kind : EVENT_KIND_LIMIT - 1;
  const ExportNamesStruct *names = &ex->names[rec->desc - ex->registry->events];
  ExportPutString(out, "{\"seq\":");
  ExportPutUnsigned(out, seq);
  PutTimes(out, ex, rec, 1);
  PutThreadAndProcess(out, ex, rec, 1);
  ExportPut(out, state->process.buf, state->process.used);
  ExportPutString(out, ",\"kind\":");
  ExportPut(out, ex->kindNames[kind], ex->kindNameLengths[kind]);
  ExportPutString(out, ",\"event\":");
  ExportPut(out, names->event, names->eventLength);
  ExportPutString(out, ",\"fields\":");
  ExportPutJsonFields(out, ex, rec);
  (void)ExportPutJsonLabels(out, ",\"labels\":", ex, rec);
  ExportPut(out, "}\n", 2);
  return 0;
}

static int JsonlEnd(ExportStruct *ex)
{
  JsonlStruct *state = ex->state;
  if (state != NULL)
    free(state->process.buf);
  return 0;
}

const ExportWriterStruct ExportJsonl = {"jsonl", 0, JsonlBegin, JsonlEvent, NULL, JsonlEnd, JsonlSource, 0};


/* CSV (RFC 4180): a header row, then a row per event; a cell with a
 * comma, a quote or a line break is quoted, its quotes doubled; lines
 * end with CRLF.  design/telemetry.txt .export.csv */

static const char csvHeader[] =
  "seq,time_ns,elapsed_ns,thread,tid,thread_name,pid,program,kind,event,fields,labels\r\n";

/* PutCell -- s as a CSV cell, quoted if it needs to be */
static void PutCell(ExportOutStruct *out, const char *s, size_t len)
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

typedef struct CsvStruct {
  ExportOutStruct cell;         /* a cell being made, in memory */
  ExportOutStruct program;      /* the program's cell, made once */
} CsvStruct;

static CsvStruct csv;

/* CsvSource -- the program's cell, made once per log */
static int CsvSource(ExportStruct *ex)
{
  csv.program.used = 0;
  PutCell(&csv.program, ex->info->program, strlen(ex->info->program));
  return 0;
}

static int CsvBegin(ExportStruct *ex)
{
  memset(&csv, 0, sizeof csv);
  csv.cell.fd = csv.program.fd = -1;
  CsvSource(ex);
  ex->state = &csv;
  ExportPutString(&ex->out, csvHeader);
  return 0;
}

static int CsvEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  ExportOutStruct *out = &ex->out;
  CsvStruct *state = ex->state;
  const ExportThreadStruct *thread = ExportThreadFind(ex, rec->thread);
  ExportPutUnsigned(out, seq);
  PutTimes(out, ex, rec, 0);
  /* thread, tid and thread_name: the name is text, not JSON */
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, rec->thread);
  ExportPutChar(out, ',');
  if (thread != NULL && thread->started)
    ExportPutUnsigned(out, thread->osid);
  ExportPutChar(out, ',');
  if (thread != NULL && thread->name != NULL)
    PutCell(out, thread->name, thread->nameLength);
  ExportPutChar(out, ',');
  ExportPutUnsigned(out, ex->info->pid);
  ExportPutChar(out, ',');
  ExportPut(out, state->program.buf, state->program.used);
  ExportPutChar(out, ',');
  ExportPutString(out, KindName(ex, rec->kind));
  ExportPutChar(out, ',');
  ExportPutString(out, rec->desc->name);
  ExportPutChar(out, ',');
  state->cell.used = 0;
  ExportPutJsonFields(&state->cell, ex, rec);
  PutCell(out, state->cell.buf, state->cell.used);
  ExportPutChar(out, ',');
  state->cell.used = 0;
  if (ExportPutJsonLabels(&state->cell, "", ex, rec))
    PutCell(out, state->cell.buf, state->cell.used);
  ExportPut(out, "\r\n", 2);
  if (state->cell.err != 0 && out->err == 0)
    out->err = state->cell.err;
  return 0;
}

static int CsvEnd(ExportStruct *ex)
{
  CsvStruct *state = ex->state;
  free(state->cell.buf);
  free(state->program.buf);
  return 0;
}

const ExportWriterStruct ExportCsv = {"csv", 0, CsvBegin, CsvEvent, NULL, CsvEnd, CsvSource, 0};
