/* <tools/eventcnv/exportsqlite.c> -- a SQLite database of the events
 *
 * .design: design/export.txt .export.sqlite
 *
 * Written through libsqlite3, on a thread of its own: prepared
 * statements, one transaction, no journal, the time index kept as the
 * rows come in time order, and the name index made at the end, when
 * the rows are in.  Each event is one row of event_row, its name as its
 * code and its fields in typed columns that every event shares; the
 * schema that readers query comes from the stream's registry: the view
 * event, and a view per event name with a column per parameter.  The
 * README shows it.  What was measured and not kept:
 * design/export.txt .export.sqlite.tried
 *
 * This file is the writer and the reading thread's side;
 * sqliteschema.c makes the tables and views, sqliteinsert.c is the
 * SQLite thread (sqliteint.h).
 */

#include "outpath.h"
#include "sqliteint.h"
#include "textsafe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static SqliteStruct sqlite;

/* SqliteFail -- say what SQLite said, once */
int SqliteFail(ExportStruct *ex, SqliteStruct *state, const char *doing)
{
  if (!state->failed)
    fprintf(stderr, "eventcnv: %s: sqlite: %s: %s\n", ex->outPath, doing,
            state->db != NULL ? sqlite3_errmsg(state->db) : "out of memory");
  state->failed = 1;
  return 1;
}

int SqliteExec(ExportStruct *ex, SqliteStruct *state, const char *sql)
{
  char *msg = NULL;
  if (sqlite3_exec(state->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    if (!state->failed)
      fprintf(stderr, "eventcnv: %s: sqlite: %s\n  in: %.200s\n", ex->outPath,
              msg != NULL ? msg : "error", sql);
    sqlite3_free(msg);
    state->failed = 1;
    return 1;
  }
  return 0;
}

int SqlitePrepare(ExportStruct *ex, SqliteStruct *state, const char *sql, sqlite3_stmt **stmtReturn)
{
  if (sqlite3_prepare_v3(state->db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmtReturn, NULL) != SQLITE_OK)
    return SqliteFail(ex, state, sql);
  return 0;
}

/* SqliteStep -- run a statement whose values are bound, and reset it */
int SqliteStep(ExportStruct *ex, SqliteStruct *state, sqlite3_stmt *stmt)
{
  int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  if (rc != SQLITE_DONE)
    return SqliteFail(ex, state, "insert");
  return 0;
}

/* SqliteSqlAdd -- format onto sql; its text NULL when out of memory */
void SqliteSqlAdd(SqlStruct *sql, const char *format, ...)
{
  va_list ap;
  for (;;) {
    int n;
    va_start(ap, format);
    n = sql->text != NULL ? vsnprintf(sql->text + sql->used, sql->size - sql->used, format, ap) : -1;
    va_end(ap);
    if (n >= 0 && (size_t)n < sql->size - sql->used) {
      sql->used += (size_t)n;
      return;
    }
    size_t size = sql->size > 0 ? sql->size * 2 : 4096;
    if (n >= 0)
      while (size - sql->used <= (size_t)n)
        size *= 2;
    char *bigger = realloc(sql->text, size);
    if (bigger == NULL) {
      free(sql->text);
      sql->text = NULL;
      sql->used = sql->size = 0;
      return;
    }
    sql->text = bigger;
    sql->size = size;
  }
}

/* SqliteBindText -- s (len bytes, or to its NUL if len < 0) bound as TEXT
 * that is valid UTF-8: each byte of invalid UTF-8 as U+FFFD, as in
 * jsonl, so that SQLite's JSON of it (event_fields) is JSON.  s is
 * bound as it is when valid (keep: SQLITE_STATIC or _TRANSIENT), as it
 * almost always is; else a copy made valid.
 * design/export.txt .export.text */
void SqliteBindText(sqlite3_stmt *stmt, int column, const char *s, long len,
                    sqlite3_destructor_type keep)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t n = len < 0 ? strlen(s) : (size_t)len, i, bad = 0, step;
  char *fixed, *o;
  for (i = 0; i < n; i += step) {
    step = 1;
    if (p[i] >= 0x80 && (step = TextUtf8Length(p + i, n - i)) == 0) {
      step = 1;
      ++bad;
    }
  }
  if (bad == 0 || (fixed = malloc(n + 2 * bad + 1)) == NULL) {
    sqlite3_bind_text(stmt, column, s, (int)n, bad == 0 ? keep : SQLITE_TRANSIENT);
    return;
  }
  for (i = 0, o = fixed; i < n; i += step) {
    step = 1;
    if (p[i] < 0x80)
      *o++ = (char)p[i];
    else if ((step = TextUtf8Length(p + i, n - i)) > 0) {
      memcpy(o, p + i, step);
      o += step;
    } else {
      step = 1;
      memcpy(o, "\xef\xbf\xbd", 3);
      o += 3;
    }
  }
  sqlite3_bind_text(stmt, column, fixed, (int)(o - fixed), free);
}

/* sameRegistry -- 1 if a and b have the same kinds and events: the
 * tables of one database come from one registry */
static int sameRegistry(const EventRegistryStruct *a, const EventRegistryStruct *b)
{
  if (a->kindCount != b->kindCount || a->eventCount != b->eventCount)
    return 0;
  for (unsigned i = 0; i < a->kindCount; ++i)
    if (strcmp(a->kinds[i].name, b->kinds[i].name) != 0)
      return 0;
  for (unsigned i = 0; i < a->eventCount; ++i) {
    const EventDescStruct *x = &a->events[i], *y = &b->events[i];
    if (x->code != y->code || x->kind != y->kind || strcmp(x->name, y->name) != 0
        || strcmp(x->format, y->format) != 0)
      return 0;
    for (unsigned p = 0; p < x->paramCount; ++p)
      if (strcmp(x->paramNames[p], y->paramNames[p]) != 0)
        return 0;
  }
  return 1;
}

/* spanRow -- a span closed, or left open at the end: an op for the
 * SQLite thread */
static void spanRow(void *closure, SpanWhat what, const SpanStruct *span)
{
  SqliteStruct *state = closure;
  ExportStruct *ex = state->ex;
  OpStruct *op;
  if (what == SpanOPENED || (op = SqliteNextOp(state, OpSPAN, ex->info->pid)) == NULL)
    return;
  op->u.span.span = *span;
  op->u.span.what = what;
  op->u.span.name = ex->registry->spans[span->span].name;
  op->u.span.start = ex->originNs;
}

static int sqliteEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  SqliteStruct *state = ex->state;
  const EventDescStruct *desc = rec->desc;
  OpStruct *op = SqliteNextOp(state, OpROW, ex->info->pid);
  RowStruct *row;
  if (op == NULL)
    return 1;
  row = &op->u.row;
  row->seq = seq;
  row->seqNext = state->any && seq == state->lastSeq + 1;
  row->time = ExportTimeNs(ex, rec->clock);
  row->thread = rec->thread;
  row->pid = op->pid;
  row->desc = desc;
  row->shape = &state->shapes[desc - ex->registry->events];
  memcpy(row->values, rec->values, desc->paramCount * sizeof row->values[0]);
  row->stringLength = rec->stringLength;
  state->any = 1;
  state->lastSeq = seq;
  return 0;
}

/* sqliteEvery -- the string and label tables have every Intern and
 * Label event, whatever the filter */
static int sqliteEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  SqliteStruct *state = ex->state;
  SpanTrackerStruct *spans = state->spans[ex->source];
  OpStruct *op;
  if (spans != NULL && SpanTrackerEvent(spans, rec, ExportElapsedNs(ex, rec->clock), seq) != 0) {
    fprintf(stderr, "eventcnv: %s: out of memory\n", ex->outPath);
    return state->readFailed = 1;
  }
  if (rec->desc == ex->intern) {
    if ((op = SqliteNextOp(state, OpSTRING, ex->info->pid)) == NULL)
      return 1;
    op->u.string.seq = seq;
    op->u.string.id = rec->values[0].u;
    op->u.string.text = rec->values[1].s;
    op->u.string.length = rec->stringLength;
  } else if (rec->desc == ex->label) {
    const char *label = EventStreamLabel(ex->stream, rec->values[0].u);
    size_t length = label != NULL ? strlen(label) + 1 : 0;
    char *copy = label != NULL ? malloc(length) : NULL;
    if (label != NULL && copy == NULL) {
      fprintf(stderr, "eventcnv: %s: out of memory\n", ex->outPath);
      return state->readFailed = 1;
    }
    if (copy != NULL)
      memcpy(copy, label, length);
    if ((op = SqliteNextOp(state, OpLABEL, ex->info->pid)) == NULL)
      return free(copy), 1;
    op->u.label.seq = seq;
    op->u.label.address = rec->values[0].u;
    op->u.label.id = rec->values[1].u;
    op->u.label.text = copy;
  }
  return 0;
}

static int sqliteBegin(ExportStruct *ex)
{
  SqliteStruct *state = &sqlite;
  const EventRegistryStruct *registry = ex->registry;
  int fd;

  memset(state, 0, sizeof *state);
  ex->state = state;
  for (size_t i = 1; i < ex->sourceCount; ++i)
    if (!sameRegistry(ex->sources[0].registry, ex->sources[i].registry)) {
      fprintf(stderr, "eventcnv: %s: the logs carry different registries (the first and log %zu):"
              " one database holds the tables of one registry\n", ex->outPath, i + 1);
      state->failed = 1;
      return 1;
    }
  /* Replace OUT, and say clearly if it cannot be written. */
  fd = OutPathOpen("eventcnv", ex->outPath, 1);   /* a file: .tools.output */
  if (fd < 0) {
    state->failed = 1;
    return 1;
  }
  close(fd);
  state->ex = ex;
  state->tables = calloc(registry->eventCount + 1, sizeof *state->tables);
  if (state->tables == NULL || SqliteShapes(ex, state) != 0)
    return SqliteFail(ex, state, "out of memory");
  for (unsigned i = 0; i < registry->eventCount; ++i)
    SqliteTableName(state->tables[i], IDENT_MAX, registry->events[i].name);
  /* One thread uses SQLite here: no mutexes, no memory statistics. */
  sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  if (sqlite3_open_v2(ex->outPath, &state->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                      | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
    return SqliteFail(ex, state, "open");
  /* design/export.txt .export.sqlite: a new file, written once */
  if (SqliteExec(ex, state, "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF;"
                 " PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;"
                 " PRAGMA cache_size = -65536; BEGIN") != 0
      || SqliteSchema(ex, state) != 0
      || SqlitePrepare(ex, state, "INSERT INTO string VALUES (?,?,?,?)", &state->insertString) != 0
      || SqlitePrepare(ex, state, "INSERT INTO label VALUES (?,?,?,?,?)", &state->insertLabel) != 0
      || SqlitePrepare(ex, state, "INSERT INTO span VALUES (?,?,?,?,?,?,?,?,?,?)", &state->insertSpan) != 0)
    return 1;
  state->spans = calloc(ex->sourceCount, sizeof *state->spans);
  if (state->spans == NULL)
    return SqliteFail(ex, state, "out of memory");
  for (size_t i = 0; i < ex->sourceCount; ++i)
    if (ex->sources[i].registry->spanCount > 0) {
      state->spans[i] = SpanTrackerCreate(ex->sources[i].registry, 0, spanRow, state);
      if (state->spans[i] == NULL)
        return SqliteFail(ex, state, "out of memory");
    }
  /* design/export.txt .export.sqlite.thread: from here to sqliteEnd's
   * join, only the SQLite thread calls SQLite */
  return SqliteInserterStart(ex, state);
}

/* stillWorking -- SQLite's progress handler at the end: go on */
static int stillWorking(void *unused)
{
  (void)unused;
  ProgressWaiting();
  return 0;
}

static int sqliteEnd(ExportStruct *ex)
{
  SqliteStruct *state = ex->state;
  int failed;
  if (state->threadRunning) {
    for (size_t i = 0; !state->readFailed && state->spans != NULL && i < ex->sourceCount; ++i)
      if (state->spans[i] != NULL && ExportUse(ex, i) == 0)
        SpanTrackerFinish(state->spans[i]);
  }
  SqliteInserterStop(state);
  /* the index and the commit take a while on a big log: say so */
  if (state->db != NULL)
    sqlite3_progress_handler(state->db, 100000, stillWorking, NULL);
  failed = state->failed || state->readFailed;
  if (!failed && state->shapes != NULL)
    failed = SqliteFlush(ex, state);
  if (!failed)
    failed = SqliteSchemaEnd(ex, state) != 0 || SqliteExec(ex, state, "COMMIT") != 0;
  SqliteInserterFree(state);
  sqlite3_finalize(state->insertString);
  sqlite3_finalize(state->insertLabel);
  sqlite3_finalize(state->insertSpan);
  for (size_t i = 0; state->spans != NULL && i < ex->sourceCount; ++i)
    SpanTrackerDestroy(state->spans[i]);
  free(state->spans);
  if (state->db != NULL && sqlite3_close(state->db) != SQLITE_OK && !failed)
    failed = SqliteFail(ex, state, "close");
  free(state->shapes);
  free(state->tables);
  return failed;
}

const ExportWriterStruct ExportSqlite = {"sqlite", 1, sqliteBegin, sqliteEvent, sqliteEvery, sqliteEnd,
                                         NULL, 0};
