/* <tools/eventcnv/sqliteschema.c> -- the SQLite database's tables and views
 *
 * .design: design/export.txt .export.sqlite
 *
 * The schema that readers query, from the stream's registry: the fixed
 * tables and their rows (processes, kinds, the registry, its spans and
 * counters, threads), event_row, whose field columns are added as
 * events need them (.export.sqlite.row), the view event, a view per
 * event name with a column per parameter, and event_fields.  The
 * README shows it.
 */

#include "sqliteint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The fixed tables.  An event's table is named after it, unless that
 * is one of these names (SQL names ignore case), when "_" is added.
 * design/export.txt .export.sqlite */
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

static const char *columnType(char letter)
{
  return letter == 'D' ? "REAL" : letter == 'S' ? "TEXT" : "INTEGER";
}

/* columnName -- a parameter's column: its name, or name_ if it is seq */
static void columnName(char *buf, size_t size, const char *param)
{
  snprintf(buf, size, "%s%s", param, strcasecmp(param, "seq") == 0 ? "_" : "");
}

void SqliteTableName(char *buf, size_t size, const char *event)
{
  int clash = strncasecmp(event, "sqlite_", 7) == 0;
  for (size_t i = 0; i < sizeof fixedTables / sizeof fixedTables[0]; ++i)
    clash |= strcasecmp(event, fixedTables[i]) == 0;
  snprintf(buf, size, "%s%s", event, clash ? "_" : "");
}

static int registryRows(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  const EventStreamInfoStruct *info = ex->info;
  sqlite3_stmt *stmt;
  char version[40];

  if (SqlitePrepare(ex, state, "INSERT INTO process VALUES (?,?,?,?,?,?,?)", &stmt) != 0)
    return 1;
  for (size_t i = 0; i < ex->sourceCount; ++i) {
    info = ex->sources[i].info;
    snprintf(version, sizeof version, "%u.%u.%u", info->major, info->median, info->minor);
    sqlite3_bind_int64(stmt, 1, info->pid);
    SqliteBindText(stmt, 2, info->program, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 3, (sqlite3_int64)info->startRealtime);
    sqlite3_bind_int64(stmt, 4, (sqlite3_int64)info->clockHz);
    sqlite3_bind_text(stmt, 5, version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(stmt, 6, info->session);
    SqliteBindText(stmt, 7, ex->sources[i].registry->name, -1, SQLITE_STATIC);
    if (SqliteStep(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);

  if (SqlitePrepare(ex, state, "INSERT INTO kind VALUES (?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->kindCount; ++i) {
    sqlite3_bind_int(stmt, 1, (int)i);
    sqlite3_bind_text(stmt, 2, registry->kinds[i].name, -1, SQLITE_STATIC);
    SqliteBindText(stmt, 3, registry->kinds[i].doc, -1, SQLITE_STATIC);
    if (SqliteStep(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);

  if (SqlitePrepare(ex, state, "INSERT INTO registry_event VALUES (?,?,?,?,?,?,?,?)", &stmt) != 0)
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
    SqliteBindText(stmt, 7, desc->doc, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 8, state->tables[i], -1, SQLITE_STATIC);
    if (SqliteStep(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);

  if (SqlitePrepare(ex, state, "INSERT INTO registry_param VALUES (?,?,?,?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char letter[2] = {desc->format[p], '\0'};
      sqlite3_bind_int(stmt, 1, (int)desc->code);
      sqlite3_bind_int(stmt, 2, (int)p);
      sqlite3_bind_text(stmt, 3, desc->paramNames[p], -1, SQLITE_STATIC);
      sqlite3_bind_text(stmt, 4, letter, 1, SQLITE_TRANSIENT);
      sqlite3_bind_text(stmt, 5, columnType(letter[0]), -1, SQLITE_STATIC);
      SqliteBindText(stmt, 6, desc->paramDocs[p], -1, SQLITE_STATIC);
      if (SqliteStep(ex, state, stmt) != 0)
        return sqlite3_finalize(stmt), 1;
    }
  }
  sqlite3_finalize(stmt);
  return 0;
}

/* eventName, paramName -- the name of the event of code, of its parameter i */
static const char *eventName(const EventRegistryStruct *registry, unsigned code)
{
  const EventDescStruct *desc = EventRegistryLookup(registry, code);
  return desc != NULL ? desc->name : "?";
}

static const char *paramName(const EventRegistryStruct *registry, unsigned code, unsigned i)
{
  const EventDescStruct *desc = EventRegistryLookup(registry, code);
  return desc != NULL && i < desc->paramCount ? desc->paramNames[i] : NULL;
}

/* registrySpans -- the spans and counters the registry declares.
 * design/export.txt .export.sqlite */
static int registrySpans(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  sqlite3_stmt *stmt;
  if (SqlitePrepare(ex, state, "INSERT INTO registry_span VALUES (?,?,?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->spanCount; ++i) {
    const EventSpanDescStruct *span = &registry->spans[i];
    sqlite3_bind_text(stmt, 1, span->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, eventName(registry, span->begin), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, eventName(registry, span->end), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 4, paramName(registry, span->begin, span->beginKey), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 5, paramName(registry, span->end, span->endKey), -1, SQLITE_STATIC);
    if (SqliteStep(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);
  if (SqlitePrepare(ex, state, "INSERT INTO registry_counter VALUES (?,?,?,?)", &stmt) != 0)
    return 1;
  for (unsigned i = 0; i < registry->counterCount; ++i) {
    const EventCounterDescStruct *counter = &registry->counters[i];
    sqlite3_bind_text(stmt, 1, counter->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, eventName(registry, counter->code), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, paramName(registry, counter->code, counter->value), -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 4, paramName(registry, counter->code, counter->key), -1, SQLITE_STATIC);
    if (SqliteStep(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);
  return 0;
}

/* sqlQuoted -- s quoted with q (" for a name, ' for a string), q doubled
 * inside: a registry read from a log may hold any bytes */
static void sqlQuoted(SqlStruct *sql, char q, const char *s)
{
  SqliteSqlAdd(sql, "%c", q);
  for (const char *p; (p = strchr(s, q)) != NULL; s = p + 1)
    SqliteSqlAdd(sql, "%.*s%c%c", (int)(p - s), s, q, q);
  SqliteSqlAdd(sql, "%s%c", s, q);
}

/* SqliteShapes -- each event's width and field columns, and the table's
 * width: the widest event's of each type */
int SqliteShapes(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  WidthStruct *table = &state->width;
  state->shapes = calloc(registry->eventCount + 1, sizeof *state->shapes);
  if (state->shapes == NULL)
    return SqliteFail(ex, state, "out of memory");
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

/* SqliteFieldColumn -- the name of the field column of type letter (f for P A
 * W U) and index i */
void SqliteFieldColumn(char *buf, size_t size, char letter, int i)
{
  if (letter == 'S')
    snprintf(buf, size, "str");         /* one: a string is the last parameter */
  else
    snprintf(buf, size, "%c%d", letter == 'D' ? 'd' : 'f', i);
}

/* tableColumn -- the name of the table's column c (from COLUMN_FIELDS) */
static void tableColumn(const SqliteStruct *state, char *buf, size_t size, int c)
{
  c -= COLUMN_FIELDS;
  if (c < state->width.ints)
    SqliteFieldColumn(buf, size, 'W', c);
  else if (c < state->width.ints + state->width.reals)
    SqliteFieldColumn(buf, size, 'D', c - state->width.ints);
  else
    SqliteFieldColumn(buf, size, 'S', 0);
}

/* eventTable -- event_row, with no field columns yet: SqliteWiden adds them */
static int eventTable(ExportStruct *ex, SqliteStruct *state)
{
  return SqliteExec(ex, state, "CREATE TABLE event_row (seq INTEGER PRIMARY KEY, code INTEGER,"
                    " time_ns INTEGER, thread INTEGER, pid INTEGER)");
}

/* SqliteWiden -- event_row's field columns up to width, each added when an
 * event first needs it.  design/export.txt .export.sqlite.row */
int SqliteWiden(ExportStruct *ex, SqliteStruct *state, const WidthStruct *width)
{
  static const char letters[] = "WDS";
  int *have[3] = {&state->have.ints, &state->have.reals, &state->have.strings};
  const int want[3] = {width->ints, width->reals, width->strings};
  for (int t = 0; t < 3; ++t)
    for (; *have[t] < want[t]; ++*have[t]) {
      char column[16], sql[80];
      SqliteFieldColumn(column, sizeof column, letters[t], *have[t]);
      snprintf(sql, sizeof sql, "ALTER TABLE event_row ADD COLUMN %s %s", column,
               columnType(letters[t]));
      if (SqliteExec(ex, state, sql) != 0)
        return 1;
    }
  return 0;
}

/* eventView -- the event view: event_row with each code's kind and
 * name, and every field column */
static int eventView(ExportStruct *ex, SqliteStruct *state)
{
  const WidthStruct *width = &state->width;
  SqlStruct create = {0};
  int columns = COLUMN_FIELDS + width->ints + width->reals + width->strings, res;
  SqliteSqlAdd(&create, "CREATE VIEW event AS SELECT e.seq AS seq, e.time_ns AS time_ns,"
               " e.thread AS thread, r.kind AS kind, r.name AS name, e.pid AS pid");
  for (int c = COLUMN_FIELDS; c < columns; ++c) {
    char column[16];
    tableColumn(state, column, sizeof column, c);
    SqliteSqlAdd(&create, ", e.%s AS %s", column, column);
  }
  SqliteSqlAdd(&create, " FROM event_row AS e JOIN registry_event AS r ON r.code = e.code");
  if (create.text == NULL)
    return SqliteFail(ex, state, "out of memory");
  res = SqliteExec(ex, state, create.text);
  free(create.text);
  return res;
}

/* eventViews -- a view per event name: its rows of event, with its fields
 * under their parameters' names.  design/export.txt .export.sqlite.row */
static int eventViews(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    const ShapeStruct *shape = &state->shapes[i];
    SqlStruct create = {0};
    int res;
    SqliteSqlAdd(&create, "CREATE VIEW ");
    sqlQuoted(&create, '"', state->tables[i]);
    SqliteSqlAdd(&create, " AS SELECT seq");
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char field[16], column[IDENT_MAX];
      tableColumn(state, field, sizeof field, shape->column[p]);
      columnName(column, sizeof column, desc->paramNames[p]);
      SqliteSqlAdd(&create, ", %s AS ", field);
      sqlQuoted(&create, '"', column);
    }
    SqliteSqlAdd(&create, " FROM event_row WHERE code = %u", desc->code);
    if (create.text == NULL)
      return SqliteFail(ex, state, "out of memory");
    res = SqliteExec(ex, state, create.text);
    free(create.text);
    if (res != 0)
      return 1;
  }
  return 0;
}

/* fieldsView -- event_fields: each event with its fields as a JSON object,
 * P and A as hex, D as jsonl writes them (README) */
static int fieldsView(ExportStruct *ex, SqliteStruct *state)
{
  const EventRegistryStruct *registry = ex->registry;
  SqlStruct sql = {0};
  int res;
  SqliteSqlAdd(&sql, "CREATE VIEW event_fields AS SELECT e.seq AS seq, e.time_ns AS time_ns,"
               " e.thread AS thread, r.kind AS kind, r.name AS name, ");
  if (registry->eventCount > 0)
    SqliteSqlAdd(&sql, "CASE e.code");
  for (unsigned i = 0; i < registry->eventCount; ++i) {
    const EventDescStruct *desc = &registry->events[i];
    SqliteSqlAdd(&sql, " WHEN %u THEN json_object(", desc->code);
    for (unsigned p = 0; p < desc->paramCount; ++p) {
      char field[16];
      char letter = desc->format[p];
      tableColumn(state, field, sizeof field, state->shapes[i].column[p]);
      SqliteSqlAdd(&sql, "%s", p > 0 ? ", " : "");
      sqlQuoted(&sql, '\'', desc->paramNames[p]);
      if (EventTypeOf(letter)->hex)
        SqliteSqlAdd(&sql, ", printf('0x%%x', %s)", field);
      else if (letter == 'D')     /* as jsonl: 17 digits, infinities as strings */
        SqliteSqlAdd(&sql, ", CASE WHEN %s IS NULL THEN NULL WHEN %s = 9e999 THEN 'inf'"
                     " WHEN %s = -9e999 THEN '-inf' ELSE json(printf('%%!.17g', %s)) END",
                     field, field, field, field);
      else
        SqliteSqlAdd(&sql, ", %s", field);
    }
    SqliteSqlAdd(&sql, ")");
  }
  SqliteSqlAdd(&sql, "%s AS fields FROM event_row AS e JOIN registry_event AS r ON r.code = e.code",
               registry->eventCount > 0 ? " ELSE '{}' END" : "'{}'");
  if (sql.text == NULL)
    return SqliteFail(ex, state, "out of memory");
  res = SqliteExec(ex, state, sql.text);
  free(sql.text);
  return res;
}

/* threadRows -- a row of thread per thread of each log */
static int threadRows(ExportStruct *ex, SqliteStruct *state)
{
  sqlite3_stmt *stmt;
  /* Logs of one pid (an image and the image it exec'd) are one
   * process: a thread in both is one row, its events summed. */
  if (SqlitePrepare(ex, state, "INSERT INTO thread VALUES (?,?,?,?,?) ON CONFLICT (pid, thread) DO UPDATE"
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
      SqliteBindText(stmt, 3, thread->name, (long)thread->nameLength, SQLITE_STATIC);
    else
      sqlite3_bind_null(stmt, 3);
    sqlite3_bind_int64(stmt, 4, (sqlite3_int64)events);
    sqlite3_bind_int64(stmt, 5, ex->info->pid);
    if (SqliteStep(ex, state, stmt) != 0)
      return sqlite3_finalize(stmt), 1;
  }
  sqlite3_finalize(stmt);
  return 0;
}

/* SqliteSchema -- the fixed tables, event_row and its time index, and
 * the rows that say the processes, the registry, its spans and counters */
int SqliteSchema(ExportStruct *ex, SqliteStruct *state)
{
  return SqliteExec(ex, state, schema) != 0
    || eventTable(ex, state) != 0
    /* design/export.txt .export.sqlite: each insert at its end */
    || SqliteExec(ex, state, "CREATE INDEX event_time ON event_row (time_ns)") != 0
    || registryRows(ex, state) != 0
    || registrySpans(ex, state) != 0;
}

/* SqliteSchemaEnd -- once the rows are in: the thread table, the field
 * columns no row needed, the name index and the views */
int SqliteSchemaEnd(ExportStruct *ex, SqliteStruct *state)
{
  return threadRows(ex, state) != 0
    || SqliteWiden(ex, state, &state->width) != 0
    /* design/export.txt .export.sqlite: sorted once, at the end */
    || SqliteExec(ex, state, "CREATE INDEX event_name ON event_row (code)") != 0
    || eventView(ex, state) != 0
    || eventViews(ex, state) != 0
    || fieldsView(ex, state) != 0;
}
