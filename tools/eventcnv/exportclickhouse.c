/* <tools/eventcnv/exportclickhouse.c> -- rows for ClickHouse
 *
 * .design: design/telemetry.txt .export.clickhouse
 *
 * eventcnv --format clickhouse writes a row per event in ClickHouse's
 * TabSeparated format, for clickhouse-client --query "INSERT INTO
 * telltale.event FORMAT TabSeparated": the host, the process (pid,
 * program, session) and the registry of its log, then the jsonl
 * members (seq, times, thread, kind, event, fields and labels as JSON
 * text).  --format clickhouse-ddl writes the table they go in.  Many
 * logs of many hosts go in one table: each row says whose it is.
 */

#include "export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* design/telemetry.txt .export.clickhouse: the columns, in row order */
static const char ddl[] =
  "CREATE DATABASE IF NOT EXISTS telltale;\n"
  "CREATE TABLE IF NOT EXISTS telltale.event (\n"
  "  host String,\n"
  "  pid UInt32,\n"
  "  program String,\n"
  "  session UInt32,\n"
  "  registry String,\n"
  "  seq UInt64,\n"
  "  time_ns Int64,\n"
  "  elapsed_ns Int64,\n"
  "  thread UInt32,\n"
  "  tid Nullable(UInt64),\n"
  "  thread_name Nullable(String),\n"
  "  kind String,\n"
  "  event String,\n"
  "  fields String,\n"
  "  labels String\n"
  ") ENGINE = MergeTree() ORDER BY (host, pid, session, time_ns, seq);\n";

typedef struct ClickhouseStruct {
  ExportOutStruct cell;         /* JSON being made, in memory */
  ExportOutStruct who;          /* host, pid, program, session: made per log */
  ExportOutStruct regs;         /* each registry's name as a cell, and a tab */
  size_t regAt[EVENT_STREAM_KIND_LIMIT], regEnd[EVENT_STREAM_KIND_LIMIT];  /* by kind */
  char host[256];
} ClickhouseStruct;

static ClickhouseStruct clickhouse;

/* PutTsv -- s (len bytes) as a TabSeparated value: backslash, tab and
 * line break escaped */
static void PutTsv(ExportOutStruct *out, const char *s, size_t len)
{
  size_t run = 0;
  for (size_t i = 0; i < len; ++i)
    if (s[i] == '\\' || s[i] == '\t' || s[i] == '\n') {
      ExportPut(out, s + run, i - run);
      ExportPutString(out, s[i] == '\\' ? "\\\\" : s[i] == '\t' ? "\\t" : "\\n");
      run = i + 1;
    }
  ExportPut(out, s + run, len - run);
}

/* PutText -- a log's string as valid UTF-8 with its control bytes
 * escaped (.export.text), as a JSON string holds it between its quotes */
static void PutText(ExportOutStruct *out, ExportOutStruct *scratch, const char *s, size_t len)
{
  scratch->used = 0;
  ExportPutJsonString(scratch, s, len);
  if (scratch->err != 0 || scratch->used < 2) {
    if (out->err == 0)
      out->err = scratch->err;
    return;
  }
  PutTsv(out, scratch->buf + 1, scratch->used - 2);
}

/* ClickhouseSource -- the log at hand's columns, made once */
static int ClickhouseSource(ExportStruct *ex)
{
  ClickhouseStruct *state = &clickhouse;
  ExportOutStruct *who = &state->who;
  who->used = 0;
  PutText(who, &state->cell, state->host, strlen(state->host));
  ExportPutChar(who, '\t');
  ExportPutUnsigned(who, ex->info->pid);
  ExportPutChar(who, '\t');
  PutText(who, &state->cell, ex->info->program, strlen(ex->info->program));
  ExportPutChar(who, '\t');
  ExportPutUnsigned(who, ex->info->session);
  ExportPutChar(who, '\t');
  /* Each kind's registry: a log holds several (.reg.many), each kind
   * of one, its number above its index as blocks carry it
   * (.stream.block.registry); before 3.0.6 all are the log's own. */
  state->regs.used = 0;
  for (unsigned k = 0; k <= ex->registry->kindCount && k < EVENT_STREAM_KIND_LIMIT; ++k) {
    const EventRegistryStruct *r = k < ex->registry->kindCount
      ? ex->info->registryOf[ex->info->kindWire[k] >> EVENT_BLOCK_REGISTRY_SHIFT] : NULL;
    const char *name = r != NULL ? r->name : ex->registry->name;   /* the last: unknown kinds */
    state->regAt[k] = state->regs.used;
    PutText(&state->regs, &state->cell, name, strlen(name));
    ExportPutChar(&state->regs, '\t');
    state->regEnd[k] = state->regs.used;
  }
  return who->err != 0 || state->regs.err != 0;
}

static int ClickhouseBegin(ExportStruct *ex)
{
  const char *host = getenv("TELLTALE_HOST");
  memset(&clickhouse, 0, sizeof clickhouse);
  clickhouse.cell.fd = clickhouse.who.fd = clickhouse.regs.fd = -1;
  if (host != NULL && host[0] != '\0')
    snprintf(clickhouse.host, sizeof clickhouse.host, "%s", host);
  else if (gethostname(clickhouse.host, sizeof clickhouse.host - 1) != 0)
    strcpy(clickhouse.host, "localhost");
  ex->state = &clickhouse;
  return ClickhouseSource(ex);
}

static int ClickhouseEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  ExportOutStruct *out = &ex->out;
  ClickhouseStruct *state = ex->state;
  const ExportThreadStruct *thread = ExportThreadFind(ex, rec->thread);
  int64_t elapsed = ExportElapsedNs(ex, rec->clock);
  unsigned k = rec->kind < ex->registry->kindCount ? rec->kind : ex->registry->kindCount;
  if (k >= EVENT_STREAM_KIND_LIMIT)
    k = EVENT_STREAM_KIND_LIMIT - 1;
  ExportPut(out, state->who.buf, state->who.used);
  ExportPut(out, state->regs.buf + state->regAt[k], state->regEnd[k] - state->regAt[k]);
  ExportPutUnsigned(out, seq);
  ExportPutChar(out, '\t');
  ExportPutSigned(out, MergeAddNs(MergeWallNs(ex->originNs), elapsed));
  ExportPutChar(out, '\t');
  ExportPutSigned(out, elapsed);
  ExportPutChar(out, '\t');
  ExportPutUnsigned(out, rec->thread);
  ExportPutChar(out, '\t');
  if (thread != NULL && thread->started)
    ExportPutUnsigned(out, thread->osid);
  else
    ExportPutString(out, "\\N");
  ExportPutChar(out, '\t');
  if (thread != NULL && thread->name != NULL)
    PutText(out, &state->cell, thread->name, thread->nameLength);
  else
    ExportPutString(out, "\\N");
  ExportPutChar(out, '\t');
  ExportPutString(out, rec->kind < ex->registry->kindCount ? ex->registry->kinds[rec->kind].name : "?");
  ExportPutChar(out, '\t');
  ExportPutString(out, rec->desc->name);
  ExportPutChar(out, '\t');
  state->cell.used = 0;
  ExportPutJsonFields(&state->cell, ex, rec);
  PutTsv(out, state->cell.buf, state->cell.used);
  ExportPutChar(out, '\t');
  state->cell.used = 0;
  if (ExportPutJsonLabels(&state->cell, "", ex, rec))
    PutTsv(out, state->cell.buf, state->cell.used);
  else
    ExportPut(out, "{}", 2);
  ExportPutChar(out, '\n');
  if (state->cell.err != 0 && out->err == 0)
    out->err = state->cell.err;
  return 0;
}

static int ClickhouseEnd(ExportStruct *ex)
{
  ClickhouseStruct *state = ex->state;
  if (state == NULL)
    return 0;
  free(state->cell.buf);
  free(state->who.buf);
  free(state->regs.buf);
  return 0;
}

const ExportWriterStruct ExportClickhouse = {"clickhouse", 0, ClickhouseBegin, ClickhouseEvent, NULL,
                                             ClickhouseEnd, ClickhouseSource, 0};

/* clickhouse-ddl: the table alone */

static int DdlBegin(ExportStruct *ex)
{
  ExportPutString(&ex->out, ddl);
  return 0;
}

static int DdlEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  (void)ex, (void)rec, (void)seq;
  return 0;
}

static int DdlEnd(ExportStruct *ex)
{
  (void)ex;
  return 0;
}

const ExportWriterStruct ExportClickhouseDdl = {"clickhouse-ddl", 0, DdlBegin, DdlEvent, NULL, DdlEnd,
                                                NULL, 0};
