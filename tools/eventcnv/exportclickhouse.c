/* <tools/eventcnv/exportclickhouse.c> -- rows for ClickHouse
 *
 * .design: design/export.txt .export.clickhouse
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

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* design/export.txt .export.clickhouse: the columns, in row order */
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

/* putTsv -- s (len bytes) as a TabSeparated value: backslash, tab and
 * line break escaped */
static void putTsv(ExportOutStruct *out, const char *s, size_t len)
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

/* safe -- a log's string as valid UTF-8 with its control bytes
 * escaped (.export.text), as a JSON string holds it between its
 * quotes, in scratch; its length, or (size_t)-1 if out of memory */
static size_t safe(ExportOutStruct *scratch, const char *s, size_t len)
{
  scratch->used = 0;
  ExportPutJsonString(scratch, s, len);
  return scratch->err != 0 || scratch->used < 2 ? (size_t)-1 : scratch->used - 2;
}

/* putText -- safe's text as a TabSeparated value */
static void putText(ExportOutStruct *out, ExportOutStruct *scratch, const char *s, size_t len)
{
  size_t n = safe(scratch, s, len);
  if (n == (size_t)-1) {
    if (out->err == 0)
      out->err = scratch->err != 0 ? scratch->err : ENOMEM;
    return;
  }
  putTsv(out, scratch->buf + 1, n);
}

/* clickhouseSource -- the log at hand's columns, made once */
static int clickhouseSource(ExportStruct *ex)
{
  ClickhouseStruct *state = &clickhouse;
  ExportOutStruct *who = &state->who;
  who->used = 0;
  putText(who, &state->cell, state->host, strlen(state->host));
  ExportPutChar(who, '\t');
  ExportPutUnsigned(who, ex->info->pid);
  ExportPutChar(who, '\t');
  putText(who, &state->cell, ex->info->program, strlen(ex->info->program));
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
    putText(&state->regs, &state->cell, name, strlen(name));
    ExportPutChar(&state->regs, '\t');
    state->regEnd[k] = state->regs.used;
  }
  return who->err != 0 || state->regs.err != 0;
}

static int clickhouseBegin(ExportStruct *ex)
{
  const char *host = getenv("TELLTALE_HOST");
  memset(&clickhouse, 0, sizeof clickhouse);
  clickhouse.cell.fd = clickhouse.who.fd = clickhouse.regs.fd = -1;
  if (host != NULL && host[0] != '\0')
    snprintf(clickhouse.host, sizeof clickhouse.host, "%s", host);
  else if (gethostname(clickhouse.host, sizeof clickhouse.host - 1) != 0)
    strcpy(clickhouse.host, "localhost");
  ex->state = &clickhouse;
  return clickhouseSource(ex);
}

static int clickhouseEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
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
    putText(out, &state->cell, thread->name, thread->nameLength);
  else
    ExportPutString(out, "\\N");
  ExportPutChar(out, '\t');
  ExportPutString(out, rec->kind < ex->registry->kindCount ? ex->registry->kinds[rec->kind].name : "?");
  ExportPutChar(out, '\t');
  ExportPutString(out, rec->desc->name);
  ExportPutChar(out, '\t');
  state->cell.used = 0;
  ExportPutJsonFields(&state->cell, ex, rec);
  putTsv(out, state->cell.buf, state->cell.used);
  ExportPutChar(out, '\t');
  state->cell.used = 0;
  if (ExportPutJsonLabels(&state->cell, "", ex, rec))
    putTsv(out, state->cell.buf, state->cell.used);
  else
    ExportPut(out, "{}", 2);
  ExportPutChar(out, '\n');
  if (state->cell.err != 0 && out->err == 0)
    out->err = state->cell.err;
  return 0;
}

static int clickhouseEnd(ExportStruct *ex)
{
  ClickhouseStruct *state = ex->state;
  if (state == NULL)
    return 0;
  free(state->cell.buf);
  free(state->who.buf);
  free(state->regs.buf);
  return 0;
}

const ExportWriterStruct ExportClickhouse = {"clickhouse", 0, clickhouseBegin, clickhouseEvent, NULL,
                                             clickhouseEnd, clickhouseSource, 0};

/* clickhouse-ddl: the table alone */

static int ddlBegin(ExportStruct *ex)
{
  ExportPutString(&ex->out, ddl);
  return 0;
}

static int ddlEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  (void)ex, (void)rec, (void)seq;
  return 0;
}

static int ddlEnd(ExportStruct *ex)
{
  (void)ex;
  return 0;
}

const ExportWriterStruct ExportClickhouseDdl = {"clickhouse-ddl", 0, ddlBegin, ddlEvent, NULL, ddlEnd,
                                                NULL, 0};


/* clickhouse-native: the same rows in ClickHouse's Native format, a
 * block of columns at a time, which clickhouse-client reads without
 * parsing text.  design/export.txt .export.clickhouse.native */

#define NATIVE_BLOCK_ROWS 65536u

enum {
  NATIVE_HOST, NATIVE_PID, NATIVE_PROGRAM, NATIVE_SESSION, NATIVE_REGISTRY, NATIVE_SEQ,
  NATIVE_TIME, NATIVE_ELAPSED, NATIVE_THREAD, NATIVE_TID, NATIVE_THREAD_NAME, NATIVE_KIND,
  NATIVE_EVENT, NATIVE_FIELDS, NATIVE_LABELS, NATIVE_COLUMNS
};

/* the table's columns (ddl), in order */
static const char *const nativeColumn[NATIVE_COLUMNS][2] = {
  {"host", "String"}, {"pid", "UInt32"}, {"program", "String"}, {"session", "UInt32"},
  {"registry", "String"}, {"seq", "UInt64"}, {"time_ns", "Int64"}, {"elapsed_ns", "Int64"},
  {"thread", "UInt32"}, {"tid", "Nullable(UInt64)"}, {"thread_name", "Nullable(String)"},
  {"kind", "String"}, {"event", "String"}, {"fields", "String"}, {"labels", "String"},
};

typedef struct NativeStruct {
  ExportOutStruct column[NATIVE_COLUMNS];  /* each column's data, this block's rows */
  ExportOutStruct nulls[2];     /* tid's and thread_name's null maps */
  ExportOutStruct cell;         /* scratch */
  uint32_t rows;
  char host[256];
} NativeStruct;

static NativeStruct native;

/* nativeVarint -- v as ClickHouse's unsigned LEB128 */
static void nativeVarint(ExportOutStruct *out, uint64_t v)
{
  char b[10];
  size_t n = 0;
  do {
    b[n++] = (char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  ExportPut(out, b, n);
}

/* nativeString -- len bytes of s as a String value: length, then bytes */
static void nativeString(ExportOutStruct *out, const char *s, size_t len)
{
  nativeVarint(out, len);
  ExportPut(out, s, len);
}

/* nativeText -- safe's text of s as a String value */
static void nativeText(NativeStruct *state, ExportOutStruct *out, const char *s, size_t len)
{
  size_t n = safe(&state->cell, s, len);
  if (n == (size_t)-1) {
    if (out->err == 0)
      out->err = ENOMEM;
    return;
  }
  nativeString(out, state->cell.buf + 1, n);
}

/* nativeFixed -- v's n low bytes, little-endian, as UInt32, UInt64, Int64 are */
static void nativeFixed(ExportOutStruct *out, uint64_t v, unsigned n)
{
  unsigned char b[8];
  EventStore(b, v, n, 0);
  ExportPut(out, (const char *)b, n);
}

/* nativeFlush -- the block of rows gathered, to ex->out; 0, or 1 if
 * out of memory */
static int nativeFlush(ExportStruct *ex, NativeStruct *state)
{
  ExportOutStruct *out = &ex->out;
  int err = 0;
  if (state->rows == 0)
    return 0;
  nativeVarint(out, NATIVE_COLUMNS);
  nativeVarint(out, state->rows);
  for (unsigned c = 0; c < NATIVE_COLUMNS; ++c) {
    nativeString(out, nativeColumn[c][0], strlen(nativeColumn[c][0]));
    nativeString(out, nativeColumn[c][1], strlen(nativeColumn[c][1]));
    if (c == NATIVE_TID || c == NATIVE_THREAD_NAME) {   /* the null map first */
      ExportOutStruct *nulls = &state->nulls[c == NATIVE_THREAD_NAME];
      ExportPut(out, nulls->buf, nulls->used);
      err |= nulls->err;
      nulls->used = 0;
    }
    ExportPut(out, state->column[c].buf, state->column[c].used);
    err |= state->column[c].err;
    state->column[c].used = 0;
  }
  state->rows = 0;
  if (err != 0) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  return 0;
}

static int nativeBegin(ExportStruct *ex)
{
  const char *host = getenv("TELLTALE_HOST");
  memset(&native, 0, sizeof native);
  for (unsigned c = 0; c < NATIVE_COLUMNS; ++c)
    native.column[c].fd = -1;
  native.nulls[0].fd = native.nulls[1].fd = native.cell.fd = -1;
  if (host != NULL && host[0] != '\0')
    snprintf(native.host, sizeof native.host, "%s", host);
  else if (gethostname(native.host, sizeof native.host - 1) != 0)
    strcpy(native.host, "localhost");
  ex->state = &native;
  return 0;
}

static int nativeEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  NativeStruct *state = ex->state;
  ExportOutStruct *col = state->column;
  const ExportThreadStruct *thread = ExportThreadFind(ex, rec->thread);
  int64_t elapsed = ExportElapsedNs(ex, rec->clock);
  const EventRegistryStruct *reg = rec->kind < ex->registry->kindCount
    ? ex->info->registryOf[ex->info->kindWire[rec->kind] >> EVENT_BLOCK_REGISTRY_SHIFT] : NULL;
  const char *registry = reg != NULL ? reg->name : ex->registry->name;
  const char *kind = rec->kind < ex->registry->kindCount ? ex->registry->kinds[rec->kind].name : "?";
  nativeText(state, &col[NATIVE_HOST], state->host, strlen(state->host));
  nativeFixed(&col[NATIVE_PID], ex->info->pid, 4);
  nativeText(state, &col[NATIVE_PROGRAM], ex->info->program, strlen(ex->info->program));
  nativeFixed(&col[NATIVE_SESSION], ex->info->session, 4);
  nativeText(state, &col[NATIVE_REGISTRY], registry, strlen(registry));
  nativeFixed(&col[NATIVE_SEQ], seq, 8);
  nativeFixed(&col[NATIVE_TIME], (uint64_t)MergeAddNs(MergeWallNs(ex->originNs), elapsed), 8);
  nativeFixed(&col[NATIVE_ELAPSED], (uint64_t)elapsed, 8);
  nativeFixed(&col[NATIVE_THREAD], rec->thread, 4);
  ExportPutChar(&state->nulls[0], thread != NULL && thread->started ? 0 : 1);
  nativeFixed(&col[NATIVE_TID], thread != NULL && thread->started ? thread->osid : 0, 8);
  ExportPutChar(&state->nulls[1], thread != NULL && thread->name != NULL ? 0 : 1);
  if (thread != NULL && thread->name != NULL)
    nativeText(state, &col[NATIVE_THREAD_NAME], thread->name, thread->nameLength);
  else
    nativeString(&col[NATIVE_THREAD_NAME], "", 0);
  nativeString(&col[NATIVE_KIND], kind, strlen(kind));
  nativeString(&col[NATIVE_EVENT], rec->desc->name, strlen(rec->desc->name));
  state->cell.used = 0;
  ExportPutJsonFields(&state->cell, ex, rec);
  nativeString(&col[NATIVE_FIELDS], state->cell.buf, state->cell.used);
  state->cell.used = 0;
  if (ExportPutJsonLabels(&state->cell, "", ex, rec))
    nativeString(&col[NATIVE_LABELS], state->cell.buf, state->cell.used);
  else
    nativeString(&col[NATIVE_LABELS], "{}", 2);
  if (state->cell.err != 0) {
    fprintf(stderr, "eventcnv: out of memory\n");
    return 1;
  }
  return ++state->rows == NATIVE_BLOCK_ROWS ? nativeFlush(ex, state) : 0;
}

static int nativeEnd(ExportStruct *ex)
{
  NativeStruct *state = ex->state;
  int status;
  if (state == NULL)
    return 0;
  status = nativeFlush(ex, state);
  for (unsigned c = 0; c < NATIVE_COLUMNS; ++c)
    free(state->column[c].buf);
  free(state->nulls[0].buf);
  free(state->nulls[1].buf);
  free(state->cell.buf);
  return status;
}

const ExportWriterStruct ExportClickhouseNative = {"clickhouse-native", 0, nativeBegin, nativeEvent,
                                                   NULL, nativeEnd, NULL, 0};
