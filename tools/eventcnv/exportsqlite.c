/* <tools/eventcnv/exportsqlite.c> -- a SQLite database of the events
 *
 * .design: design/telemetry.txt .export.sqlite
 *
 * Written through libsqlite3: prepared statements, one transaction, no
 * journal, and the indexes made at the end, when the rows are in.  The
 * schema comes from the stream's registry: a table per event name with
 * a column per parameter.  The README shows it.
 */

#include "export.h"
#include "span.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define IDENT_MAX (EVENT_NAME_MAX + 8)

/* Rows go in BATCH at a time, in one INSERT of BATCH rows: a step of
 * SQLite's machine costs about as much as the rows it inserts, so
 * this is three times as fast as a row a step.
 * design/telemetry.txt .export.sqlite */
#define BATCH 64

/* RowStruct -- an event waiting for its INSERT */
typedef struct RowStruct {
  uint64_t seq;
  int64_t time;
  uint32_t thread;
  uint32_t pid;
  unsigned kind;
  const EventDescStruct *desc;
  EventValueUnion values[EVENT_PARAM_MAX];
  size_t stringLength;
} RowStruct;

/* TableStruct -- a table and its waiting rows */
typedef struct TableStruct {
  const char *name;
  sqlite3_stmt *one, *batch;    /* INSERT of a row, of BATCH rows: prepared
                                   for the table's first row, as a registry
                                   may have many events that never happen */
  int columns;
  int isEvent;                  /* the event table, not an event's own */
  RowStruct *rows;              /* BATCH of them, made when first needed */
  unsigned count;
} TableStruct;

typedef struct SqliteStruct {
  sqlite3 *db;
  TableStruct event;            /* the event table */
  TableStruct *fields;          /* by index in the registry: each event's table */
  sqlite3_stmt *insertString, *insertLabel, *insertSpan;
  SpanTrackerStruct **spans;    /* by log: NULL where its registry declares none */
  ExportStruct *ex;
  char (*tables)[IDENT_MAX];    /* by index: the table of each event */
  int failed;
} SqliteStruct;

static SqliteStruct sqlite;

/* Fail -- say what SQLite said, once */
static int Fail(ExportStruct *ex, SqliteStruct *state, const char *doing)
{
  if (!state->failed)
    fprintf(stderr, "eventcnv: %s: sqlite: %s: %s\n", ex->outPath, doing,
            state->db != NULL ? sqlite3_errmsg(state->db) : "out of memory");
  state->failed = 1;
  return 1;
}

static int Exec(ExportStruct *ex, SqliteStruct *state, const char *sql)
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

static int Prepare(ExportStruct *ex, SqliteStruct *state, const char *sql, sqlite3_stmt **stmtReturn)
{
  if (sqlite3_prepare_v3(state->db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmtReturn, NULL) != SQLITE_OK)
    return Fail(ex, state, sql);
  return 0;
}

/* Step -- run a statement whose values are bound, and reset it */
static int Step(ExportStruct *ex, SqliteStruct *state, sqlite3_stmt *stmt)
{
  int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  if (rc != SQLITE_DONE)
    return Fail(ex, state, "insert");
  return 0;
}

/* The fixed tables.  An event's table is named after it, unless that
 * is one of these names (SQL names ignore case), when "_" is added.
 * design/telemetry.txt .export.sqlite */
static const char *const fixedTables[] = {
  "event", "event_fields", "thread", "process", "kind", "registry_event", "registry_param",
  "string", "label", "span", "registry_span", "registry_counter",
};

static const char schema[] =
  "CREATE TABLE event (seq INTEGER PRIMARY KEY, time_ns INTEGER NOT NULL,"
  " thread INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, pid INTEGER NOT NULL);\n"
  "CREATE TABLE thread (thread INTEGER, tid INTEGER, name TEXT, events INTEGER, pid INTEGER,"
  " PRIMARY KEY (pid, thread));\n"
  "CREATE TABLE process (pid INTEGER, program TEXT, start_ns INTEGER, clock_hz INTEGER,"
  " version TEXT, session INTEGER, registry TEXT);\n"
  "CREATE TABLE kind (kind INTEGER PRIMARY KEY, name TEXT, doc TEXT);\n"
  "CREATE TABLE registry_event (code INTEGER PRIMARY KEY, name TEXT, kind TEXT, format TEXT,"
  " always INTEGER, retired INTEGER, doc TEXT, tbl TEXT);\n"
  "CREATE TABLE registry_param (code INTEGER, position INTEGER, name TEXT, letter TEXT,"
  " type TEXT, doc TEXT, PRIMARY KEY (code, position));\n"
  "CREATE TABLE string (seq INTEGER PRIMARY KEY, id INTEGER, text TEXT, pid INTEGER);\n"
  "CREATE TABLE label (seq INTEGER PRIMARY KEY, address INTEGER, id INTEGER, text TEXT,"
  " pid INTEGER);\n"
  "CREATE TABLE span (name TEXT NOT NULL, key INTEGER, begin_seq INTEGER, end_seq INTEGER,"
  " begin_ns INTEGER, end_ns INTEGER, duration_ns INTEGER, begin_thread INTEGER,"
  " end_thread INTEGER, pid INTEGER);\n"
  "CREATE TABLE registry_span (name TEXT PRIMARY KEY, begin TEXT, end TEXT, begin_key TEXT,"
  " end_key TEXT);\n"
  "CREATE TABLE registry_counter (name TEXT PRIMARY KEY, event TEXT, value TEXT, key TEXT);\n";

static const char *ColumnType(char letter)
{
  return letter == 'D' ? "REAL" : letter == 'S' ? "TEXT" : "INTEGER";
}

/* ColumnName -- a parameter's column: its name, or name_ if it is seq */
static void ColumnName(char *buf, size_t size, const char *param)
{
  snprintf(buf, size, "%s%s", param, strcasecmp(param, "seq") == 0 ? "_" : "");
}

static void TableName(char *buf, size_t size, const char *event)
{
  int clash = strncasecmp(event, "sqlite_", 7) == 0;
  for (size_t i = 0; i < sizeof fixedTables / sizeof fixedTables[0]; ++i)
    clash |= strcasecmp(event, fixedTables[i]) == 0;
  snprintf(buf, size, "%s%s", event, clash ? "_" : "");
}

/* Sql -- a growing SQL text */
typedef struct SqlStruct {
  char *text;
  size_t used, size;
} SqlStruct;

static void SqlAdd(SqlStruct *sql, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void SqlAdd(SqlStruct *sql, const char *format, ...)
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

static int Registry(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  const EventStreamInfoStruct *info = ex->info;
  sqlite3_stmt *stmt;
  char version[40];

  if (Prepare(ex, state, "INSERT INTO process VALUES (?,?,?,?,?,?,?)", &stmt) != 0)
    return 1;
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    info = ex->sources[i].info;
    snprintf(version, sizeof version, "%u.%u.%u", info->major, info->median, info->minor);
    sqlite3_bind_int64(stmt, 1, info->pid);
    sqlite3_bind_text(stmt, 2, info->program, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 3, (sqlite3_int64)info->startRealtime);
    sqlite3_bind_int64(stmt, 4, (sqlite3_int64)info->clockHz);
    sqlite3_bind_text(stmt, 5, version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(stmt, 6, info->session);
    sqlite3_bind_text(stmt, 7, ex->sources[i].registry->name, -1, SQLITE_STATIC);
    if (Step(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);

  if (Prepare(ex, state, "INSERT INTO kind VALUES (?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->kindCount; ++i) {
    sqlite3_bind_int(stmt, 1, (int)i);
    sqlite3_bind_text(stmt, 2, registry->kinds[i].name, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, registry->kinds[i].doc, -1, SQLITE_STATIC);
    if (Step(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);

  if (Prepare(ex, state, "INSERT INTO registry_event VALUES (?,?,?,?,?,?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    sqlite3_bind_int(stmt, 1, (int)desc->code);
    sqlite3_bind_text(stmt, 2, desc->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, desc->kind < registry->kindCount ? registry->kinds[desc->kind].name : "?",
                      -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 4, desc->format[0] != '\0' ? desc->format : "0", -1, SQLITE_STATIC);
    sqlite3_bind_int(stmt, 5, (int)desc->always);
    sqlite3_bind_int(stmt, 6, (int)desc->retired);
    sqlite3_bind_text(stmt, 7, desc->doc, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 8, state->tables[i], -1, SQLITE_STATIC);
    if (Step(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);

  if (Prepare(ex, state, "INSERT INTO registry_param VALUES (?,?,?,?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char letter[2] = {desc->format[p], '\0'};
      sqlite3_bind_int(stmt, 1, (int)desc->code);
      sqlite3_bind_int(stmt, 2, (int)p);
      sqlite3_bind_text(stmt, 3, desc->paramNames[p], -1, SQLITE_STATIC);
      sqlite3_bind_text(stmt, 4, letter, 1, SQLITE_TRANSIENT);
      sqlite3_bind_text(stmt, 5, ColumnType(letter[0]), -1, SQLITE_STATIC);
      sqlite3_bind_text(stmt, 6, desc->paramDocs[p], -1, SQLITE_STATIC);
      if (Step(ex, state, stmt) != 0)
        return sqlite3_finalize(stmt), 1;
    }
  }
  sqlite3_finalize(stmt);
  return 0;
}

/* Name, Param -- the name of the event of code, of its parameter i */
static const char *Name(const EventRegistryStruct *registry, unsigned code)
{
  const EventDescStruct *desc = EventRegistryLookup(registry, code);
  return desc != NULL ? desc->name : "?";
}

static const char *Param(const EventRegistryStruct *registry, unsigned code, unsigned i)
{
  const EventDescStruct *desc = EventRegistryLookup(registry, code);
  return desc != NULL && i < desc->paramCount ? desc->paramNames[i] : NULL;
}

/* RegistrySpans -- the spans and counters the registry declares.
 * design/telemetry.txt .export.sqlite */
static int RegistrySpans(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  sqlite3_stmt *stmt;
  if (Prepare(ex, state, "INSERT INTO registry_span VALUES (?,?,?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->spanCount; ++i) {
    const EventSpanDescStruct *span = &registry->spans[i];
    sqlite3_bind_text(stmt, 1, span->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, Name(registry, span->begin), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, Name(registry, span->end), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 4, Param(registry, span->begin, span->beginKey), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 5, Param(registry, span->end, span->endKey), -1, SQLITE_STATIC);
    if (Step(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);
  if (Prepare(ex, state, "INSERT INTO registry_counter VALUES (?,?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->counterCount; ++i) {
    const EventCounterDescStruct *counter = &registry->counters[i];
    sqlite3_bind_text(stmt, 1, counter->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, Name(registry, counter->code), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, Param(registry, counter->code, counter->value), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 4, Param(registry, counter->code, counter->key), -1, SQLITE_STATIC);
    if (Step(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);
  return 0;
}

/* SpanRow -- a span closed, or left open at the end: a row of span */
static void SpanRow(void *closure, SpanWhat what, const SpanStruct *span)
{
  SqliteStruct *state = closure;
  sqlite3_stmt *stmt = state->insertSpan;
  uint64_t start = state->ex->originNs;
  if (what == SpanOPENED || state->failed)
    return;
  sqlite3_bind_int64(stmt, 10, state->ex->info->pid);
  sqlite3_bind_text(stmt, 1, state->ex->registry->spans[span->span].name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 2, (sqlite3_int64)span->key);
  sqlite3_bind_int64(stmt, 3, (sqlite3_int64)span->beginSeq);
  sqlite3_bind_int64(stmt, 5, (sqlite3_int64)(start + (uint64_t)span->beginNs));
  sqlite3_bind_int64(stmt, 8, span->beginThread);
  if (what == SpanCLOSED) {
    sqlite3_bind_int64(stmt, 4, (sqlite3_int64)span->endSeq);
    sqlite3_bind_int64(stmt, 6, (sqlite3_int64)(start + (uint64_t)span->endNs));
    sqlite3_bind_int64(stmt, 7, span->endNs - span->beginNs);
    sqlite3_bind_int64(stmt, 9, span->endThread);
  } else {
    for (int column = 4; column <= 9; ++column)
      if (column != 5 && column != 8)
        sqlite3_bind_null(stmt, column);
  }
  (void)Step(state->ex, state, stmt);
}

/* TableInit -- a table of columns columns */
static void TableInit(TableStruct *table, const char *name, int columns, int isEvent)
{
  table->name = name;
  table->columns = columns;
  table->isEvent = isEvent;
}

/* TablePrepare -- its inserts */
static int TablePrepare(ExportStruct *ex, SqliteStruct *state, TableStruct *table)
{
  SqlStruct one = {0}, batch = {0};
  const char *name = table->name;
  int columns = table->columns;
  int res;
  SqlAdd(&one, "INSERT INTO \"%s\" VALUES (?", name);
  for (int c = 1; c < columns; ++c)
    SqlAdd(&one, ",?");
  SqlAdd(&one, ")");
  SqlAdd(&batch, "INSERT INTO \"%s\" VALUES ", name);
  for (int r = 0; r < BATCH; ++r) {
    SqlAdd(&batch, "%s(?", r > 0 ? "," : "");
    for (int c = 1; c < columns; ++c)
      SqlAdd(&batch, ",?");
    SqlAdd(&batch, ")");
  }
  if (one.text == NULL || batch.text == NULL)
    res = Fail(ex, state, "out of memory");
  else
    res = Prepare(ex, state, one.text, &table->one) != 0
      || Prepare(ex, state, batch.text, &table->batch) != 0;
  free(one.text);
  free(batch.text);
  return res;
}

/* BindRow -- row's values into stmt from parameter base + 1 */
static void BindRow(sqlite3_stmt *stmt, int base, const TableStruct *table, const RowStruct *row,
                    const ExportStruct *ex)
{
  const EventDescStruct *desc = row->desc;
  sqlite3_bind_int64(stmt, base + 1, (sqlite3_int64)row->seq);
  if (table->isEvent) {
    unsigned kind = row->kind;
    sqlite3_bind_int64(stmt, base + 2, row->time);
    sqlite3_bind_int64(stmt, base + 3, row->thread);
    sqlite3_bind_text(stmt, base + 4, kind < ex->registry->kindCount
                      ? ex->registry->kinds[kind].name : "?", -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, base + 5, desc->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, base + 6, row->pid);
    return;
  }
  for (unsigned p = 0; p < desc->paramCount; ++p) {
    const EventValueUnion *v = &row->values[p];
    int col = base + (int)p + 2;
    switch (desc->format[p]) {
    case 'D':
      sqlite3_bind_double(stmt, col, v->d);     /* NaN is NULL in SQLite */
      break;
    case 'S':                   /* the string is in the mapped log */
      sqlite3_bind_text(stmt, col, v->s, (int)row->stringLength, SQLITE_STATIC);
      break;
    default:                    /* P A W U: 64 bits, above 2^63 negative */
      sqlite3_bind_int64(stmt, col, (sqlite3_int64)v->u);
    }
  }
}

/* Flush -- insert table's waiting rows */
static int Flush(ExportStruct *ex, SqliteStruct *state, TableStruct *table)
{
  if (table->count == BATCH) {
    for (unsigned r = 0; r < BATCH; ++r)
      BindRow(table->batch, (int)r * table->columns, table, &table->rows[r], ex);
    table->count = 0;
    return Step(ex, state, table->batch);
  }
  for (unsigned r = 0; r < table->count; ++r) {
    BindRow(table->one, 0, table, &table->rows[r], ex);
    if (Step(ex, state, table->one) != 0)
      return 1;
  }
  table->count = 0;
  return 0;
}

/* Add -- a row for table, inserted when BATCH are waiting */
static RowStruct *Add(ExportStruct *ex, SqliteStruct *state, TableStruct *table)
{
  if (table->rows == NULL) {
    if (TablePrepare(ex, state, table) != 0)
      return NULL;
    table->rows = malloc(BATCH * sizeof *table->rows);
    if (table->rows == NULL) {
      Fail(ex, state, "out of memory");
      return NULL;
    }
  }
  if (table->count == BATCH && Flush(ex, state, table) != 0)
    return NULL;
  return &table->rows[table->count++];
}

static void TableFree(TableStruct *table)
{
  sqlite3_finalize(table->one);
  sqlite3_finalize(table->batch);
  free(table->rows);
}

/* EventTables -- a table per event name, and its insert */
static int EventTables(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    SqlStruct create = {0};
    char column[IDENT_MAX];
    int res;
    SqlAdd(&create, "CREATE TABLE \"%s\" (seq INTEGER PRIMARY KEY", state->tables[i]);
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      ColumnName(column, sizeof column, desc->paramNames[p]);
      SqlAdd(&create, ", \"%s\" %s", column, ColumnType(desc->format[p]));
    }
    SqlAdd(&create, ")");
    if (create.text == NULL)
      return Fail(ex, state, "out of memory");
    res = Exec(ex, state, create.text);
    free(create.text);
    if (res != 0)
      return 1;
    TableInit(&state->fields[i], state->tables[i], 1 + (int)desc->paramCount, 0);
  }
  return 0;
}

/* View -- event_fields: each event with its fields as a JSON object,
 * P and A as hex.  SQLite allows 500 terms in a compound SELECT, so the
 * view is a UNION ALL of subqueries of at most 100 each. */
static int View(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  SqlStruct sql = {0};
  int res;
  SqlAdd(&sql, "CREATE VIEW event_fields AS SELECT * FROM (");
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    if (i > 0)
      SqlAdd(&sql, i % 100 == 0 ? ") UNION ALL SELECT * FROM (" : " UNION ALL ");
    SqlAdd(&sql, "SELECT e.seq, e.time_ns, e.thread, e.kind, e.name, json_object(");
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char column[IDENT_MAX];
      char letter = desc->format[p];
      ColumnName(column, sizeof column, desc->paramNames[p]);
      SqlAdd(&sql, "%s'%s', %s\"%s\"%s", p > 0 ? ", " : "", desc->paramNames[p],
             letter == 'P' || letter == 'A' ? "printf('0x%x', t." : "t.", column,
             letter == 'P' || letter == 'A' ? ")" : "");
    }
    SqlAdd(&sql, ") AS fields FROM event e JOIN \"%s\" t ON t.seq = e.seq", state->tables[i]);
  }
  if (registry->eventCount == 0)
    SqlAdd(&sql, "SELECT seq, time_ns, thread, kind, name, '{}' AS fields FROM event");
  SqlAdd(&sql, ")");
  if (sql.text == NULL)
    return Fail(ex, state, "out of memory");
  res = Exec(ex, state, sql.text);
  free(sql.text);
  return res;
}

/* SameRegistry -- 1 if a and b have the same kinds and events: the
 * tables of one database come from one registry */
static int SameRegistry(const EventRegistryStruct *a, const EventRegistryStruct *b)
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

static int SqliteBegin(ExportStruct *ex)
{
  SqliteStruct *state = &sqlite;
  const EventRegistryStruct *registry = ex->registry;
  int fd;

  memset(state, 0, sizeof *state);
  ex->state = state;
  for (size_t i = 1; i < ex->sourceCount; ++i)
    if (!SameRegistry(ex->sources[0].registry, ex->sources[i].registry)) {
      fprintf(stderr, "eventcnv: %s: the logs carry different registries (the first and log %zu):"
              " one database holds the tables of one registry\n", ex->outPath, i + 1);
      state->failed = 1;
      return 1;
    }
  /* Replace OUT, and say clearly if it cannot be written. */
  fd = open(ex->outPath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    fprintf(stderr, "eventcnv: cannot write %s: %s\n", ex->outPath, strerror(errno));
    state->failed = 1;
    return 1;
  }
  close(fd);
  state->fields = calloc(registry->eventCount + 1, sizeof *state->fields);
  state->tables = calloc(registry->eventCount + 1, sizeof *state->tables);
  if (state->fields == NULL || state->tables == NULL)
    return Fail(ex, state, "out of memory");
  for (unsigned i = 0; i < registry->eventCount; ++i)
    TableName(state->tables[i], IDENT_MAX, registry->events[i].name);
  TableInit(&state->event, "event", 6, 1);
  /* One thread uses SQLite here: no mutexes, no memory statistics. */
  sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  if (sqlite3_open_v2(ex->outPath, &state->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                      | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
    return Fail(ex, state, "open");
  /* design/telemetry.txt .export.sqlite: a new file, written once */
  if (Exec(ex, state, "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF;"
           " PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;"
           " PRAGMA cache_size = -65536; BEGIN") != 0
      || Exec(ex, state, schema) != 0
      || EventTables(ex, state) != 0
      || Registry(ex, state) != 0
      || Prepare(ex, state, "INSERT INTO string VALUES (?,?,?,?)", &state->insertString) != 0
      || Prepare(ex, state, "INSERT INTO label VALUES (?,?,?,?,?)", &state->insertLabel) != 0
      || RegistrySpans(ex, state) != 0
      || Prepare(ex, state, "INSERT INTO span VALUES (?,?,?,?,?,?,?,?,?,?)", &state->insertSpan) != 0)
    return 1;
  state->ex = ex;
  state->spans = calloc(ex->sourceCount, sizeof *state->spans);
  if (state->spans == NULL)
    return Fail(ex, state, "out of memory");
  for (size_t i = 0; i < ex->sourceCount; ++i)
    if (ex->sources[i].registry->spanCount > 0) {
      state->spans[i] = SpanTrackerCreate(ex->sources[i].registry, 0, SpanRow, state);
      if (state->spans[i] == NULL)
        return Fail(ex, state, "out of memory");
    }
  return 0;
}

static int SqliteEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  SqliteStruct *state = ex->state;
  const EventDescStruct *desc = rec->desc;
  TableStruct *table = &state->fields[desc - ex->registry->events];
  RowStruct *row = Add(ex, state, &state->event);
  if (row == NULL)
    return 1;
  row->seq = seq;
  row->time = ExportTimeNs(ex, rec->clock);
  row->thread = rec->thread;
  row->pid = ex->info->pid;
  row->kind = rec->kind;
  row->desc = desc;
  row = Add(ex, state, table);
  if (row == NULL)
    return 1;
  row->seq = seq;
  row->desc = desc;
  memcpy(row->values, rec->values, desc->paramCount * sizeof row->values[0]);
  row->stringLength = rec->stringLength;
  return 0;
}

/* SqliteEvery -- the string and label tables have every Intern and
 * Label event, whatever the filter */
static int SqliteEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  SqliteStruct *state = ex->state;
  sqlite3_stmt *stmt;
  SpanTrackerStruct *spans = state->spans[ex->source];
  if (spans != NULL && (SpanTrackerEvent(spans, rec, ExportElapsedNs(ex, rec->clock), seq) != 0
                        || state->failed))
    return state->failed ? 1 : Fail(ex, state, "out of memory");
  if (rec->desc == ex->intern) {
    stmt = state->insertString;
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)seq);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)rec->values[0].u);
    sqlite3_bind_text(stmt, 3, rec->values[1].s, (int)rec->stringLength, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 4, ex->info->pid);
    return Step(ex, state, stmt);
  }
  if (rec->desc == ex->label) {
    const char *label = EventStreamLabel(ex->stream, rec->values[0].u);
    stmt = state->insertLabel;
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)seq);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)rec->values[0].u);
    sqlite3_bind_int64(stmt, 3, (sqlite3_int64)rec->values[1].u);
    if (label != NULL)
      sqlite3_bind_text(stmt, 4, label, -1, SQLITE_TRANSIENT);
    else
      sqlite3_bind_null(stmt, 4);
    sqlite3_bind_int64(stmt, 5, ex->info->pid);
    return Step(ex, state, stmt);
  }
  return 0;
}

static int Threads(ExportStruct *ex, SqliteStruct *state)
{
  sqlite3_stmt *stmt;
  if (Prepare(ex, state, "INSERT INTO thread VALUES (?,?,?,?,?)", &stmt) != 0)
    return 1;
  for (size_t s = 0; s < ex->sourceCount; ++s)
  for (size_t i = 0; ExportUse(ex, s) == 0 && i < EventStreamThreadCount(ex->stream); ++i) {
    uint32_t serial;
    size_t events;
    EventStreamThread(ex->stream, i, &serial, &events);
    const ExportThreadStruct *thread = ExportThreadFind(ex, serial);
    sqlite3_bind_int64(stmt, 1, serial);
    if (thread != NULL && thread->started)
      sqlite3_bind_int64(stmt, 2, (sqlite3_int64)thread->osid);
    else
      sqlite3_bind_null(stmt, 2);
    if (thread != NULL && thread->name != NULL)
      sqlite3_bind_text(stmt, 3, thread->name, (int)thread->nameLength, SQLITE_STATIC);
    else
      sqlite3_bind_null(stmt, 3);
    sqlite3_bind_int64(stmt, 4, (sqlite3_int64)events);
    sqlite3_bind_int64(stmt, 5, ex->info->pid);
    if (Step(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);
  return 0;
}

static int SqliteEnd(ExportStruct *ex)
{
  SqliteStruct *state = ex->state;
  int failed = state->failed;
  if (!failed && state->fields != NULL) {
    failed = Flush(ex, state, &state->event);
    for (unsigned i = 0; i < ex->registry->eventCount && !failed; ++i)
      failed = Flush(ex, state, &state->fields[i]);
  }
  for (size_t i = 0; !failed && state->spans != NULL && i < ex->sourceCount; ++i)
    if (state->spans[i] != NULL && ExportUse(ex, i) == 0) {
      SpanTrackerFinish(state->spans[i]);
      failed = state->failed;
    }
  if (!failed)
    failed = Threads(ex, state) != 0
      /* design/telemetry.txt .export.sqlite: sorted once, at the end */
      || Exec(ex, state, "CREATE INDEX event_time ON event (time_ns);"
              " CREATE INDEX event_name ON event (name)") != 0
      || View(ex, state) != 0
      || Exec(ex, state, "COMMIT") != 0;
  TableFree(&state->event);
  sqlite3_finalize(state->insertString);
  sqlite3_finalize(state->insertLabel);
  sqlite3_finalize(state->insertSpan);
  for (size_t i = 0; state->spans != NULL && i < ex->sourceCount; ++i)
    SpanTrackerDestroy(state->spans[i]);
  free(state->spans);
  if (state->fields != NULL)
    for (unsigned i = 0; i < ex->registry->eventCount; ++i)
      TableFree(&state->fields[i]);
  if (state->db != NULL && sqlite3_close(state->db) != SQLITE_OK && !failed)
    failed = Fail(ex, state, "close");
  free(state->fields);
  free(state->tables);
  return failed;
}

const ExportWriterStruct ExportSqlite = {"sqlite", 1, SqliteBegin, SqliteEvent, SqliteEvery, SqliteEnd,
                                         NULL, 0};
