/* <tools/eventcnv/exportsqlite.c> -- a SQLite database of the events
 *
 * .design: design/telemetry.txt .export.sqlite
 *
 * Written through libsqlite3, on a thread of its own: prepared
 * statements, one transaction, no journal, the time index kept as the
 * rows come in time order, and the name index made at the end, when
 * the rows are in.  Each event is one row of event_row, its name as its
 * code and its fields in typed columns that every event shares; the
 * schema that readers query comes from the stream's registry: the view
 * event, and a view per event name with a column per parameter.  The
 * README shows it.  What was measured and not kept:
 * design/telemetry.txt .export.sqlite.tried
 */

#define _GNU_SOURCE 1          /* pthread_timedjoin_np */

#include "export.h"
#include "outpath.h"
#include "span.h"
#include "textsafe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>
#include <unistd.h>

#define IDENT_MAX (EVENT_NAME_MAX + 8)

/* Rows go in BATCH at a time, in one INSERT of BATCH rows: a step of
 * SQLite's machine costs about as much as the rows it inserts.
 * design/telemetry.txt .export.sqlite */
#define BATCH 64

/* The event table's columns: the common ones, then the fields.  An
 * event's P, A, W and U go in f0, f1, ... in order, its D in d0, d1,
 * ... and its S in str; as many of each as the registry's events need.
 * design/telemetry.txt .export.sqlite.row */
enum { COLUMN_SEQ, COLUMN_CODE, COLUMN_TIME, COLUMN_THREAD, COLUMN_PID, COLUMN_FIELDS };

/* WidthStruct -- field columns of each type: an event's, the table's,
 * or an INSERT's */
typedef struct WidthStruct {
  int ints, reals, strings;
} WidthStruct;

/* ShapeStruct -- an event's field columns in the table: its P A W U
 * are f0 ..., its D d0 ... and its S str */
typedef struct ShapeStruct {
  WidthStruct width;
  unsigned char column[EVENT_PARAM_MAX];  /* each parameter's column in the table */
} ShapeStruct;

/* RowStruct -- an event waiting for its INSERT */
typedef struct RowStruct {
  uint64_t seq;
  int64_t time;
  uint32_t thread;
  uint32_t pid;
  int seqNext;                  /* seq is one more than the row before's */
  const EventDescStruct *desc;
  const ShapeStruct *shape;     /* by index: desc is of the log it came from */
  EventValueUnion values[EVENT_PARAM_MAX];
  size_t stringLength;
} RowStruct;

/* BoundStruct -- what a row of an INSERT has bound, so that a row like
 * the one before it there binds only what differs: bindings stay from
 * one step to the next.  design/telemetry.txt .export.sqlite.bind */
typedef struct BoundStruct {
  uint64_t mask;                /* field columns not NULL */
  const EventDescStruct *desc;
  uint32_t thread, pid;
  int seqNull;                  /* seq is bound NULL */
  int valid;
} BoundStruct;

/* InsertStruct -- the INSERTs into event of a row, and of BATCH rows,
 * of events up to a width: SQLite leaves the columns past it NULL
 * without their being bound.  design/telemetry.txt .export.sqlite.bind */
typedef struct InsertStruct {
  WidthStruct width;
  int columns;                  /* bound per row */
  sqlite3_stmt *one, *batch;
  BoundStruct boundOne, bound[BATCH];
} InsertStruct;

/* OpStruct -- a row that the reading thread has made and the SQLite
 * thread is to insert: into event_row, string, label or span.
 * design/telemetry.txt .export.sqlite.thread */
typedef enum { OpROW, OpSTRING, OpLABEL, OpSPAN } OpKind;

typedef struct OpStruct {
  OpKind what;
  uint32_t pid;
  union {
    RowStruct row;
    struct { uint64_t seq, id; const char *text; size_t length; } string;  /* text in the log */
    struct { uint64_t seq, address, id; char *text; } label;   /* text malloc'd, or NULL */
    struct { SpanStruct span; SpanWhat what; const char *name; uint64_t start; } span;
  } u;
} OpStruct;

/* CHUNK ops go from one thread to the other at a time, through CHUNKS
 * chunks in a ring */
enum { CHUNK = 4096, CHUNKS = 4 };

typedef struct ChunkStruct {
  OpStruct ops[CHUNK];
  unsigned count;
  int full;                     /* waiting for the SQLite thread */
} ChunkStruct;

typedef struct SqliteStruct {
  sqlite3 *db;
  WidthStruct width;            /* the event view's: the widest event's of each type */
  WidthStruct have;             /* event_row's so far: .export.sqlite.row */
  ShapeStruct *shapes;          /* by index in the registry */
  InsertStruct **inserts;       /* made as rows need them */
  size_t insertCount;
  RowStruct rows[BATCH];        /* waiting */
  unsigned count;
  uint64_t lastSeq;             /* of the last row, if any */
  int any;
  sqlite3_stmt *insertString, *insertLabel, *insertSpan;
  SpanTrackerStruct **spans;    /* by log: NULL where its registry declares none */
  ExportStruct *ex;
  char (*tables)[IDENT_MAX];    /* by index: the view of each event */
  int failed;                   /* SQLite failed: set by whichever thread has it */
  /* the reading thread and the SQLite thread: design/telemetry.txt .export.sqlite.thread */
  pthread_t thread;
  int threadRunning;
  pthread_mutex_t lock;
  pthread_cond_t filled, emptied;
  ChunkStruct *chunks;
  unsigned fill, drain;         /* the chunk being filled, and the next to insert */
  int quit;                     /* no more chunks */
  int stopped;                  /* under lock: the SQLite thread failed */
  int readFailed;               /* the reading thread failed, and said why */
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
  "event", "event_row", "event_fields", "event_time", "event_name", "thread", "process", "kind",
  "registry_event", "registry_param", "string", "label", "span", "registry_span", "registry_counter",
};

static const char schema[] =
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

/* BindText -- s (len bytes, or to its NUL if len < 0) bound as TEXT
 * that is valid UTF-8: each byte of invalid UTF-8 as U+FFFD, as in
 * jsonl, so that SQLite's JSON of it (event_fields) is JSON.  s is
 * bound as it is when valid (keep: SQLITE_STATIC or _TRANSIENT), as it
 * almost always is; else a copy made valid.
 * design/telemetry.txt .export.text */
static void BindText(sqlite3_stmt *stmt, int column, const char *s, long len,
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
    BindText(stmt, 2, info->program, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 3, (sqlite3_int64)info->startRealtime);
    sqlite3_bind_int64(stmt, 4, (sqlite3_int64)info->clockHz);
    sqlite3_bind_text(stmt, 5, version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(stmt, 6, info->session);
    BindText(stmt, 7, ex->sources[i].registry->name, -1, SQLITE_STATIC);
    if (Step(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);

  if (Prepare(ex, state, "INSERT INTO kind VALUES (?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->kindCount; ++i) {
    sqlite3_bind_int(stmt, 1, (int)i);
    sqlite3_bind_text(stmt, 2, registry->kinds[i].name, -1, SQLITE_STATIC);
    BindText(stmt, 3, registry->kinds[i].doc, -1, SQLITE_STATIC);
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
    BindText(stmt, 7, desc->doc, -1, SQLITE_STATIC);
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
      BindText(stmt, 6, desc->paramDocs[p], -1, SQLITE_STATIC);
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

/* SpanInsert -- a span closed, or left open at the end: a row of span */
static void SpanInsert(SqliteStruct *state, const OpStruct *op)
{
  sqlite3_stmt *stmt = state->insertSpan;
  const SpanStruct *span = &op->u.span.span;
  uint64_t start = op->u.span.start;
  SpanWhat what = op->u.span.what;
  sqlite3_bind_int64(stmt, 10, op->pid);
  sqlite3_bind_text(stmt, 1, op->u.span.name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 2, (sqlite3_int64)span->key);
  sqlite3_bind_int64(stmt, 3, (sqlite3_int64)span->beginSeq);
  sqlite3_bind_int64(stmt, 5, MergeAddNs(MergeWallNs(start), span->beginNs));
  sqlite3_bind_int64(stmt, 8, span->beginThread);
  if (what == SpanCLOSED) {
    sqlite3_bind_int64(stmt, 4, (sqlite3_int64)span->endSeq);
    sqlite3_bind_int64(stmt, 6, MergeAddNs(MergeWallNs(start), span->endNs));
    sqlite3_bind_int64(stmt, 7, MergeSubNs(span->endNs, span->beginNs));
    sqlite3_bind_int64(stmt, 9, span->endThread);
  } else {
    for (int column = 4; column <= 9; ++column)
      if (column != 5 && column != 8)
        sqlite3_bind_null(stmt, column);
  }
  (void)Step(state->ex, state, stmt);
}

/* SqlQuoted -- s quoted with q (" for a name, ' for a string), q doubled
 * inside: a registry read from a log may hold any bytes */
static void SqlQuoted(SqlStruct *sql, char q, const char *s)
{
  SqlAdd(sql, "%c", q);
  for (const char *p; (p = strchr(s, q)) != NULL; s = p + 1)
    SqlAdd(sql, "%.*s%c%c", (int)(p - s), s, q, q);
  SqlAdd(sql, "%s%c", s, q);
}

/* Shapes -- each event's width and field columns, and the table's
 * width: the widest event's of each type */
static int Shapes(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  WidthStruct *table = &state->width;
  state->shapes = calloc(registry->eventCount + 1, sizeof *state->shapes);
  if (state->shapes == NULL)
    return Fail(ex, state, "out of memory");
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    WidthStruct *width = &state->shapes[i].width;
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char letter = desc->format[p];
      ++*(letter == 'D' ? &width->reals : letter == 'S' ? &width->strings : &width->ints);
    }
    if (width->ints > table->ints) table->ints = width->ints;
    if (width->reals > table->reals) table->reals = width->reals;
    if (width->strings > table->strings) table->strings = width->strings;
  }
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    ShapeStruct *shape = &state->shapes[i];
    int ints = 0, reals = 0;
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char letter = desc->format[p];
      shape->column[p] = (unsigned char)(letter == 'D' ? COLUMN_FIELDS + table->ints + reals++
                                         : letter == 'S' ? COLUMN_FIELDS + table->ints + table->reals
                                         : COLUMN_FIELDS + ints++);
    }
  }
  return 0;
}

/* FieldColumn -- the name of the field column of type letter (f for P A
 * W U) and index i */
static void FieldColumn(char *buf, size_t size, char letter, int i)
{
  if (letter == 'S')
    snprintf(buf, size, "str");         /* one: a string is the last parameter */
  else
    snprintf(buf, size, "%c%d", letter == 'D' ? 'd' : 'f', i);
}

/* TableColumn -- the name of the table's column c (from COLUMN_FIELDS) */
static void TableColumn(const SqliteStruct *state, char *buf, size_t size, int c)
{
  c -= COLUMN_FIELDS;
  if (c < state->width.ints)
    FieldColumn(buf, size, 'W', c);
  else if (c < state->width.ints + state->width.reals)
    FieldColumn(buf, size, 'D', c - state->width.ints);
  else
    FieldColumn(buf, size, 'S', 0);
}

/* EventTable -- event_row, with no field columns yet: Widen adds them */
static int EventTable(ExportStruct *ex, SqliteStruct *state)
{
  return Exec(ex, state, "CREATE TABLE event_row (seq INTEGER PRIMARY KEY, code INTEGER,"
              " time_ns INTEGER, thread INTEGER, pid INTEGER)");
}

/* Widen -- event_row's field columns up to width, each added when an
 * event first needs it.  design/telemetry.txt .export.sqlite.row */
static int Widen(ExportStruct *ex, SqliteStruct *state, const WidthStruct *width)
{
  static const char letters[] = "WDS";
  int *have[3] = {&state->have.ints, &state->have.reals, &state->have.strings};
  const int want[3] = {width->ints, width->reals, width->strings};
  for (int t = 0; t < 3; ++t)
    for (; *have[t] < want[t]; ++*have[t]) {
      char column[16], sql[80];
      FieldColumn(column, sizeof column, letters[t], *have[t]);
      snprintf(sql, sizeof sql, "ALTER TABLE event_row ADD COLUMN %s %s", column,
               ColumnType(letters[t]));
      if (Exec(ex, state, sql) != 0)
        return 1;
    }
  return 0;
}

/* EventView -- the event view: event_row with each code's kind and
 * name, and every field column */
static int EventView(ExportStruct *ex, SqliteStruct *state)
{
  const WidthStruct *width = &state->width;
  SqlStruct create = {0};
  int columns = COLUMN_FIELDS + width->ints + width->reals + width->strings, res;
  SqlAdd(&create, "CREATE VIEW event AS SELECT e.seq AS seq, e.time_ns AS time_ns,"
         " e.thread AS thread, r.kind AS kind, r.name AS name, e.pid AS pid");
  for (int c = COLUMN_FIELDS; c < columns; ++c) {
    char column[16];
    TableColumn(state, column, sizeof column, c);
    SqlAdd(&create, ", e.%s AS %s", column, column);
  }
  SqlAdd(&create, " FROM event_row AS e JOIN registry_event AS r ON r.code = e.code");
  if (create.text == NULL)
    return Fail(ex, state, "out of memory");
  res = Exec(ex, state, create.text);
  free(create.text);
  return res;
}

/* Insert -- the INSERTs of events up to width, prepared when first needed */
static InsertStruct *Insert(ExportStruct *ex, SqliteStruct *state, const WidthStruct *width)
{
  SqlStruct columns = {0}, one = {0}, batch = {0};
  InsertStruct *ins, **bigger;
  int fail;
  for (size_t i = 0; i < state->insertCount; ++i) {
    ins = state->inserts[i];
    if (ins->width.ints == width->ints && ins->width.reals == width->reals
        && ins->width.strings == width->strings)
      return ins;
  }
  bigger = realloc(state->inserts, (state->insertCount + 1) * sizeof *bigger);
  if (bigger != NULL)
    state->inserts = bigger;
  ins = bigger != NULL ? calloc(1, sizeof *ins) : NULL;
  if (ins == NULL) {
    Fail(ex, state, "out of memory");
    return NULL;
  }
  ins->width = *width;
  ins->columns = COLUMN_FIELDS + width->ints + width->reals + width->strings;
  SqlAdd(&columns, "seq, code, time_ns, thread, pid");
  for (int c = COLUMN_FIELDS; c < ins->columns; ++c) {
    char column[16];
    int i = c - COLUMN_FIELDS;
    FieldColumn(column, sizeof column, i < width->ints ? 'W' : i < width->ints + width->reals ? 'D' : 'S',
                i < width->ints ? i : i - width->ints);
    SqlAdd(&columns, ", %s", column);
  }
  SqlAdd(&one, "INSERT INTO event_row (%s) VALUES (?", columns.text != NULL ? columns.text : "");
  for (int c = 1; c < ins->columns; ++c)
    SqlAdd(&one, ",?");
  SqlAdd(&one, ")");
  SqlAdd(&batch, "INSERT INTO event_row (%s) VALUES ", columns.text != NULL ? columns.text : "");
  for (int r = 0; r < BATCH; ++r) {
    SqlAdd(&batch, "%s(?", r > 0 ? "," : "");
    for (int c = 1; c < ins->columns; ++c)
      SqlAdd(&batch, ",?");
    SqlAdd(&batch, ")");
  }
  if (columns.text == NULL || one.text == NULL || batch.text == NULL)
    fail = Fail(ex, state, "out of memory");
  else
    fail = Prepare(ex, state, one.text, &ins->one) != 0
      || Prepare(ex, state, batch.text, &ins->batch) != 0;
  free(columns.text);
  free(one.text);
  free(batch.text);
  if (fail) {
    sqlite3_finalize(ins->one);
    free(ins);
    return NULL;
  }
  state->inserts[state->insertCount++] = ins;
  return ins;
}

/* Bits -- n bits from bit at */
static uint64_t Bits(int at, int n)
{
  return (((uint64_t)1 << n) - 1) << at;
}

/* BindRow -- row's values into stmt, an INSERT of ins, from parameter
 * base + 1, binding only what differs from what bound says it holds */
static void BindRow(const InsertStruct *ins, sqlite3_stmt *stmt, int base, BoundStruct *bound,
                    const RowStruct *row)
{
  const EventDescStruct *desc = row->desc;
  const WidthStruct *width = &row->shape->width;
  int ints = COLUMN_FIELDS, reals = ints + ins->width.ints, string = reals + ins->width.reals;
  uint64_t mask = Bits(ints, width->ints) | Bits(reals, width->reals) | Bits(string, width->strings);
  uint64_t nulls = (bound->valid ? bound->mask : Bits(ints, ins->columns - ints)) & ~mask;
  /* design/telemetry.txt .export.sqlite.bind: NULL makes the rowid one
   * more than the largest, which the row before has */
  if (!row->seqNext)
    sqlite3_bind_int64(stmt, base + 1, (sqlite3_int64)row->seq);
  else if (!bound->valid || !bound->seqNull)
    sqlite3_bind_null(stmt, base + 1);
  if (!bound->valid || bound->desc != desc)
    sqlite3_bind_int(stmt, base + 2, (int)desc->code);
  sqlite3_bind_int64(stmt, base + 3, row->time);
  if (!bound->valid || bound->thread != row->thread)
    sqlite3_bind_int64(stmt, base + 4, row->thread);
  if (!bound->valid || bound->pid != row->pid)
    sqlite3_bind_int64(stmt, base + 5, row->pid);
  for (; nulls != 0; nulls &= nulls - 1)
    sqlite3_bind_null(stmt, base + 1 + __builtin_ctzll(nulls));
  base += 1;
  for (unsigned p = 0; p < desc->paramCount; ++p) {
    const EventValueUnion *v = &row->values[p];
    switch (desc->format[p]) {
    case 'D':                   /* NaN is NULL in SQLite */
      sqlite3_bind_double(stmt, base + reals++, v->d);
      break;
    case 'S':                   /* the string is in the mapped log */
      BindText(stmt, base + string, v->s, (long)row->stringLength, SQLITE_STATIC);
      break;
    default:                    /* P A W U: 64 bits, above 2^63 negative */
      sqlite3_bind_int64(stmt, base + ints++, (sqlite3_int64)v->u);
    }
  }
  bound->valid = 1;
  bound->seqNull = row->seqNext;
  bound->mask = mask;
  bound->desc = desc;
  bound->thread = row->thread;
  bound->pid = row->pid;
}

/* Flush -- insert the waiting rows, by an INSERT as wide as the widest */
static int Flush(ExportStruct *ex, SqliteStruct *state)
{
  WidthStruct width = {0, 0, 0};
  InsertStruct *ins;
  for (unsigned r = 0; r < state->count; ++r) {
    const WidthStruct *w = &state->rows[r].shape->width;
    if (w->ints > width.ints) width.ints = w->ints;
    if (w->reals > width.reals) width.reals = w->reals;
    if (w->strings > width.strings) width.strings = w->strings;
  }
  if (Widen(ex, state, &width) != 0)
    return 1;
  ins = Insert(ex, state, &width);
  if (ins == NULL)
    return 1;
  if (state->count == BATCH) {
    for (unsigned r = 0; r < BATCH; ++r)
      BindRow(ins, ins->batch, (int)r * ins->columns, &ins->bound[r], &state->rows[r]);
    state->count = 0;
    return Step(ex, state, ins->batch);
  }
  for (unsigned r = 0; r < state->count; ++r) {
    BindRow(ins, ins->one, 0, &ins->boundOne, &state->rows[r]);
    if (Step(ex, state, ins->one) != 0)
      return 1;
  }
  state->count = 0;
  return 0;
}

/* Views -- a view per event name: its rows of event, with its fields
 * under their parameters' names.  design/telemetry.txt .export.sqlite.row */
static int Views(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    const ShapeStruct *shape = &state->shapes[i];
    SqlStruct create = {0};
    int res;
    SqlAdd(&create, "CREATE VIEW ");
    SqlQuoted(&create, '"', state->tables[i]);
    SqlAdd(&create, " AS SELECT seq");
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char field[16], column[IDENT_MAX];
      TableColumn(state, field, sizeof field, shape->column[p]);
      ColumnName(column, sizeof column, desc->paramNames[p]);
      SqlAdd(&create, ", %s AS ", field);
      SqlQuoted(&create, '"', column);
    }
    SqlAdd(&create, " FROM event_row WHERE code = %u", desc->code);
    if (create.text == NULL)
      return Fail(ex, state, "out of memory");
    res = Exec(ex, state, create.text);
    free(create.text);
    if (res != 0)
      return 1;
  }
  return 0;
}

/* View -- event_fields: each event with its fields as a JSON object,
 * P and A as hex, D as jsonl writes them (README) */
static int View(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  SqlStruct sql = {0};
  int res;
  SqlAdd(&sql, "CREATE VIEW event_fields AS SELECT e.seq AS seq, e.time_ns AS time_ns,"
         " e.thread AS thread, r.kind AS kind, r.name AS name, ");
  if (registry->eventCount > 0)
    SqlAdd(&sql, "CASE e.code");
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    SqlAdd(&sql, " WHEN %u THEN json_object(", desc->code);
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char field[16];
      char letter = desc->format[p];
      TableColumn(state, field, sizeof field, state->shapes[i].column[p]);
      SqlAdd(&sql, "%s", p > 0 ? ", " : "");
      SqlQuoted(&sql, '\'', desc->paramNames[p]);
      if (EventTypeOf(letter)->hex)
        SqlAdd(&sql, ", printf('0x%%x', %s)", field);
      else if (letter == 'D')     /* as jsonl: 17 digits, infinities as strings */
        SqlAdd(&sql, ", CASE WHEN %s IS NULL THEN NULL WHEN %s = 9e999 THEN 'inf'"
               " WHEN %s = -9e999 THEN '-inf' ELSE json(printf('%%!.17g', %s)) END",
               field, field, field, field);
      else
        SqlAdd(&sql, ", %s", field);
    }
    SqlAdd(&sql, ")");
  }
  SqlAdd(&sql, "%s AS fields FROM event_row AS e JOIN registry_event AS r ON r.code = e.code",
         registry->eventCount > 0 ? " ELSE '{}' END" : "'{}'");
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

/* Insert1 -- an op, on the SQLite thread: a row waits for its batch */
static int Insert1(ExportStruct *ex, SqliteStruct *state, OpStruct *op)
{
  sqlite3_stmt *stmt;
  switch (op->what) {
  case OpROW:
    if (state->count == BATCH && Flush(ex, state) != 0)
      return 1;
    state->rows[state->count++] = op->u.row;
    return 0;
  case OpSTRING:
    stmt = state->insertString;
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->u.string.seq);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->u.string.id);
    BindText(stmt, 3, op->u.string.text, (long)op->u.string.length, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 4, op->pid);
    return Step(ex, state, stmt);
  case OpLABEL:
    stmt = state->insertLabel;
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->u.label.seq);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->u.label.address);
    sqlite3_bind_int64(stmt, 3, (sqlite3_int64)op->u.label.id);
    if (op->u.label.text != NULL)
      BindText(stmt, 4, op->u.label.text, -1, SQLITE_TRANSIENT);
    else
      sqlite3_bind_null(stmt, 4);
    sqlite3_bind_int64(stmt, 5, op->pid);
    return Step(ex, state, stmt);
  case OpSPAN:
    SpanInsert(state, op);
    return state->failed;
  }
  return 0;
}

/* FreeChunk -- what a chunk's ops own, and empty it */
static void FreeChunk(ChunkStruct *chunk)
{
  for (unsigned i = 0; i < chunk->count; ++i)
    if (chunk->ops[i].what == OpLABEL)
      free(chunk->ops[i].u.label.text);
  chunk->count = 0;
}

/* Inserter -- the SQLite thread: the chunks' ops in the order they were
 * filled.  After a failure it empties them unread, so that the reading
 * thread never waits for it. */
static void *Inserter(void *arg)
{
  SqliteStruct *state = arg;
  ExportStruct *ex = state->ex;
  pthread_mutex_lock(&state->lock);
  for (;;) {
    ChunkStruct *chunk = &state->chunks[state->drain];
    if (!chunk->full) {
      if (state->quit)
        break;
      pthread_cond_wait(&state->filled, &state->lock);
      continue;
    }
    int stopped = state->stopped;
    pthread_mutex_unlock(&state->lock);
    for (unsigned i = 0; i < chunk->count && !stopped; ++i)
      stopped = Insert1(ex, state, &chunk->ops[i]);
    FreeChunk(chunk);
    pthread_mutex_lock(&state->lock);
    state->stopped |= stopped;
    chunk->full = 0;
    state->drain = (state->drain + 1) % CHUNKS;
    pthread_cond_signal(&state->emptied);
  }
  pthread_mutex_unlock(&state->lock);
  return NULL;
}

/* Submit -- hand the chunk being filled to the SQLite thread, and wait
 * for the next to be empty.  1 if the SQLite thread has failed. */
static int Submit(SqliteStruct *state)
{
  int stopped;
  pthread_mutex_lock(&state->lock);
  state->chunks[state->fill].full = 1;
  pthread_cond_signal(&state->filled);
  state->fill = (state->fill + 1) % CHUNKS;
  while (state->chunks[state->fill].full)
    pthread_cond_wait(&state->emptied, &state->lock);
  stopped = state->stopped;
  pthread_mutex_unlock(&state->lock);
  return stopped;
}

/* NextOp -- room for an op in the chunk being filled, or NULL if the
 * SQLite thread has failed */
static OpStruct *NextOp(SqliteStruct *state, OpKind what, uint32_t pid)
{
  ChunkStruct *chunk = &state->chunks[state->fill];
  if (chunk->count == CHUNK) {
    if (Submit(state) != 0)
      return NULL;
    chunk = &state->chunks[state->fill];
  }
  OpStruct *op = &chunk->ops[chunk->count++];
  op->what = what;
  op->pid = pid;
  return op;
}

/* SpanRow -- a span closed, or left open at the end: an op for the
 * SQLite thread */
static void SpanRow(void *closure, SpanWhat what, const SpanStruct *span)
{
  SqliteStruct *state = closure;
  ExportStruct *ex = state->ex;
  OpStruct *op;
  if (what == SpanOPENED || (op = NextOp(state, OpSPAN, ex->info->pid)) == NULL)
    return;
  op->u.span.span = *span;
  op->u.span.what = what;
  op->u.span.name = ex->registry->spans[span->span].name;
  op->u.span.start = ex->originNs;
}

static int SqliteEvent(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  SqliteStruct *state = ex->state;
  const EventDescStruct *desc = rec->desc;
  OpStruct *op = NextOp(state, OpROW, ex->info->pid);
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

/* SqliteEvery -- the string and label tables have every Intern and
 * Label event, whatever the filter */
static int SqliteEvery(ExportStruct *ex, const EventRecordStruct *rec, uint64_t seq)
{
  SqliteStruct *state = ex->state;
  SpanTrackerStruct *spans = state->spans[ex->source];
  OpStruct *op;
  if (spans != NULL && SpanTrackerEvent(spans, rec, ExportElapsedNs(ex, rec->clock), seq) != 0) {
    fprintf(stderr, "eventcnv: %s: out of memory\n", ex->outPath);
    return state->readFailed = 1;
  }
  if (rec->desc == ex->intern) {
    if ((op = NextOp(state, OpSTRING, ex->info->pid)) == NULL)
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
    if ((op = NextOp(state, OpLABEL, ex->info->pid)) == NULL)
      return free(copy), 1;
    op->u.label.seq = seq;
    op->u.label.address = rec->values[0].u;
    op->u.label.id = rec->values[1].u;
    op->u.label.text = copy;
  }
  return 0;
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
  fd = OutPathOpen("eventcnv", ex->outPath, 1);   /* a file: .tools.output */
  if (fd < 0) {
    state->failed = 1;
    return 1;
  }
  close(fd);
  state->ex = ex;
  state->tables = calloc(registry->eventCount + 1, sizeof *state->tables);
  if (state->tables == NULL || Shapes(ex, state) != 0)
    return Fail(ex, state, "out of memory");
  for (unsigned i = 0; i < registry->eventCount; ++i)
    TableName(state->tables[i], IDENT_MAX, registry->events[i].name);
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
      || EventTable(ex, state) != 0
      /* design/telemetry.txt .export.sqlite: each insert at its end */
      || Exec(ex, state, "CREATE INDEX event_time ON event_row (time_ns)") != 0
      || Registry(ex, state) != 0
      || Prepare(ex, state, "INSERT INTO string VALUES (?,?,?,?)", &state->insertString) != 0
      || Prepare(ex, state, "INSERT INTO label VALUES (?,?,?,?,?)", &state->insertLabel) != 0
      || RegistrySpans(ex, state) != 0
      || Prepare(ex, state, "INSERT INTO span VALUES (?,?,?,?,?,?,?,?,?,?)", &state->insertSpan) != 0)
    return 1;
  state->spans = calloc(ex->sourceCount, sizeof *state->spans);
  if (state->spans == NULL)
    return Fail(ex, state, "out of memory");
  for (size_t i = 0; i < ex->sourceCount; ++i)
    if (ex->sources[i].registry->spanCount > 0) {
      state->spans[i] = SpanTrackerCreate(ex->sources[i].registry, 0, SpanRow, state);
      if (state->spans[i] == NULL)
        return Fail(ex, state, "out of memory");
    }
  /* design/telemetry.txt .export.sqlite.thread: from here to SqliteEnd's
   * join, only the SQLite thread calls SQLite */
  state->chunks = calloc(CHUNKS, sizeof *state->chunks);
  if (state->chunks == NULL)
    return Fail(ex, state, "out of memory");
  pthread_mutex_init(&state->lock, NULL);
  pthread_cond_init(&state->filled, NULL);
  pthread_cond_init(&state->emptied, NULL);
  if (pthread_create(&state->thread, NULL, Inserter, state) != 0)
    return Fail(ex, state, "cannot start a thread");
  state->threadRunning = 1;
  return 0;
}

static int Threads(ExportStruct *ex, SqliteStruct *state)
{
  sqlite3_stmt *stmt;
  /* Logs of one pid (an image and the image it exec'd) are one
   * process: a thread in both is one row, its events summed. */
  if (Prepare(ex, state, "INSERT INTO thread VALUES (?,?,?,?,?) ON CONFLICT (pid, thread) DO UPDATE"
              " SET events = events + excluded.events, tid = coalesce(excluded.tid, tid),"
              " name = coalesce(excluded.name, name)", &stmt) != 0)
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
      BindText(stmt, 3, thread->name, (long)thread->nameLength, SQLITE_STATIC);
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
  int failed;
  if (state->threadRunning) {
    for (size_t i = 0; !state->readFailed && state->spans != NULL && i < ex->sourceCount; ++i)
      if (state->spans[i] != NULL && ExportUse(ex, i) == 0)
        SpanTrackerFinish(state->spans[i]);
    (void)Submit(state);
    pthread_mutex_lock(&state->lock);
    state->quit = 1;
    pthread_cond_signal(&state->filled);
    pthread_mutex_unlock(&state->lock);
    for (;;) {                  /* saying how far, if it takes a while */
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 200000000;
      if (until.tv_nsec >= 1000000000) {
        until.tv_nsec -= 1000000000;
        ++until.tv_sec;
      }
      if (pthread_timedjoin_np(state->thread, NULL, &until) != ETIMEDOUT)
        break;
      ProgressWaiting();
    }
    pthread_mutex_destroy(&state->lock);
    pthread_cond_destroy(&state->filled);
    pthread_cond_destroy(&state->emptied);
  }
  failed = state->failed || state->readFailed;
  if (!failed && state->shapes != NULL)
    failed = Flush(ex, state);
  if (!failed)
    failed = Threads(ex, state) != 0
      || Widen(ex, state, &state->width) != 0
      /* design/telemetry.txt .export.sqlite: sorted once, at the end */
      || Exec(ex, state, "CREATE INDEX event_name ON event_row (code)") != 0
      || EventView(ex, state) != 0
      || Views(ex, state) != 0
      || View(ex, state) != 0
      || Exec(ex, state, "COMMIT") != 0;
  for (size_t i = 0; i < state->insertCount; ++i) {
    sqlite3_finalize(state->inserts[i]->one);
    sqlite3_finalize(state->inserts[i]->batch);
    free(state->inserts[i]);
  }
  free(state->inserts);
  sqlite3_finalize(state->insertString);
  sqlite3_finalize(state->insertLabel);
  sqlite3_finalize(state->insertSpan);
  for (size_t i = 0; state->spans != NULL && i < ex->sourceCount; ++i)
    SpanTrackerDestroy(state->spans[i]);
  free(state->spans);
  if (state->db != NULL && sqlite3_close(state->db) != SQLITE_OK && !failed)
    failed = Fail(ex, state, "close");
  free(state->shapes);
  free(state->tables);
  for (unsigned i = 0; state->chunks != NULL && i < CHUNKS; ++i)
    FreeChunk(&state->chunks[i]);
  free(state->chunks);
  return failed;
}

const ExportWriterStruct ExportSqlite = {"sqlite", 1, SqliteBegin, SqliteEvent, SqliteEvery, SqliteEnd,
                                         NULL, 0};
