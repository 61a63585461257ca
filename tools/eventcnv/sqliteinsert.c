/* <tools/eventcnv/sqliteinsert.c> -- the SQLite thread: the rows inserted
 *
 * .design: design/export.txt .export.sqlite.thread
 *
 * The reading thread fills chunks of ops (rows of event_row, string,
 * label and span) and hands them to the SQLite thread, which inserts
 * them in the order they were filled: event rows BATCH at a time, by
 * prepared INSERTs as wide as the rows need, binding only what differs
 * from the row before (.export.sqlite.bind).
 */

#define _GNU_SOURCE 1          /* pthread_timedjoin_np */

#include "sqliteint.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* insertFor -- the INSERTs of events up to width, prepared when first needed */
static InsertStruct *insertFor(ExportStruct *ex, SqliteStruct *state, const WidthStruct *width)
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
    SqliteFail(ex, state, "out of memory");
    return NULL;
  }
  ins->width = *width;
  ins->columns = COLUMN_FIELDS + width->ints + width->reals + width->strings;
  SqliteSqlAdd(&columns, "seq, code, time_ns, thread, pid");
  for (int c = COLUMN_FIELDS; c < ins->columns; ++c) {
    char column[16];
    int i = c - COLUMN_FIELDS;
    SqliteFieldColumn(column, sizeof column, i < width->ints ? 'W' : i < width->ints + width->reals ? 'D' : 'S',
                      i < width->ints ? i : i - width->ints);
    SqliteSqlAdd(&columns, ", %s", column);
  }
  SqliteSqlAdd(&one, "INSERT INTO event_row (%s) VALUES (?", columns.text != NULL ? columns.text : "");
  for (int c = 1; c < ins->columns; ++c)
    SqliteSqlAdd(&one, ",?");
  SqliteSqlAdd(&one, ")");
  SqliteSqlAdd(&batch, "INSERT INTO event_row (%s) VALUES ", columns.text != NULL ? columns.text : "");
  for (int r = 0; r < BATCH; ++r) {
    SqliteSqlAdd(&batch, "%s(?", r > 0 ? "," : "");
    for (int c = 1; c < ins->columns; ++c)
      SqliteSqlAdd(&batch, ",?");
    SqliteSqlAdd(&batch, ")");
  }
  if (columns.text == NULL || one.text == NULL || batch.text == NULL)
    fail = SqliteFail(ex, state, "out of memory");
  else
    fail = SqlitePrepare(ex, state, one.text, &ins->one) != 0
      || SqlitePrepare(ex, state, batch.text, &ins->batch) != 0;
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

/* bits -- n bits from bit at */
static uint64_t bits(int at, int n)
{
  return (((uint64_t)1 << n) - 1) << at;
}

/* bindRow -- row's values into stmt, an INSERT of ins, from parameter
 * base + 1, binding only what differs from what bound says it holds */
static void bindRow(const InsertStruct *ins, sqlite3_stmt *stmt, int base, BoundStruct *bound,
                    const RowStruct *row)
{
  const EventDescStruct *desc = row->desc;
  const WidthStruct *width = &row->shape->width;
  int ints = COLUMN_FIELDS, reals = ints + ins->width.ints, string = reals + ins->width.reals;
  uint64_t mask = bits(ints, width->ints) | bits(reals, width->reals) | bits(string, width->strings);
  uint64_t nulls = (bound->valid ? bound->mask : bits(ints, ins->columns - ints)) & ~mask;
  /* design/export.txt .export.sqlite.bind: NULL makes the rowid one
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
      SqliteBindText(stmt, base + string, v->s, (long)row->stringLength, SQLITE_STATIC);
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

/* SqliteFlush -- insert the waiting rows, by an INSERT as wide as the widest */
int SqliteFlush(ExportStruct *ex, SqliteStruct *state)
{
  WidthStruct width = {0, 0, 0};
  InsertStruct *ins;
  for (unsigned r = 0; r < state->count; ++r) {
    const WidthStruct *w = &state->rows[r].shape->width;
    if (w->ints > width.ints) width.ints = w->ints;
    if (w->reals > width.reals) width.reals = w->reals;
    if (w->strings > width.strings) width.strings = w->strings;
  }
  if (SqliteWiden(ex, state, &width) != 0)
    return 1;
  ins = insertFor(ex, state, &width);
  if (ins == NULL)
    return 1;
  if (state->count == BATCH) {
    for (unsigned r = 0; r < BATCH; ++r)
      bindRow(ins, ins->batch, (int)r * ins->columns, &ins->bound[r], &state->rows[r]);
    state->count = 0;
    return SqliteStep(ex, state, ins->batch);
  }
  for (unsigned r = 0; r < state->count; ++r) {
    bindRow(ins, ins->one, 0, &ins->boundOne, &state->rows[r]);
    if (SqliteStep(ex, state, ins->one) != 0)
      return 1;
  }
  state->count = 0;
  return 0;
}

/* spanInsert -- a span closed, or left open at the end: a row of span */
static void spanInsert(SqliteStruct *state, const OpStruct *op)
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
  (void)SqliteStep(state->ex, state, stmt);
}

/* insertOp -- an op, on the SQLite thread: a row waits for its batch */
static int insertOp(ExportStruct *ex, SqliteStruct *state, OpStruct *op)
{
  sqlite3_stmt *stmt;
  switch (op->what) {
  case OpROW:
    if (state->count == BATCH && SqliteFlush(ex, state) != 0)
      return 1;
    state->rows[state->count++] = op->u.row;
    return 0;
  case OpSTRING:
    stmt = state->insertString;
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->u.string.seq);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->u.string.id);
    SqliteBindText(stmt, 3, op->u.string.text, (long)op->u.string.length, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 4, op->pid);
    return SqliteStep(ex, state, stmt);
  case OpLABEL:
    stmt = state->insertLabel;
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->u.label.seq);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->u.label.address);
    sqlite3_bind_int64(stmt, 3, (sqlite3_int64)op->u.label.id);
    if (op->u.label.text != NULL)
      SqliteBindText(stmt, 4, op->u.label.text, -1, SQLITE_TRANSIENT);
    else
      sqlite3_bind_null(stmt, 4);
    sqlite3_bind_int64(stmt, 5, op->pid);
    return SqliteStep(ex, state, stmt);
  case OpSPAN:
    spanInsert(state, op);
    return state->failed;
  }
  return 0;
}

/* freeChunk -- what a chunk's ops own, and empty it */
static void freeChunk(ChunkStruct *chunk)
{
  for (unsigned i = 0; i < chunk->count; ++i)
    if (chunk->ops[i].what == OpLABEL)
      free(chunk->ops[i].u.label.text);
  chunk->count = 0;
}

/* inserter -- the SQLite thread: the chunks' ops in the order they were
 * filled.  After a failure it empties them unread, so that the reading
 * thread never waits for it. */
static void *inserter(void *arg)
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
      stopped = insertOp(ex, state, &chunk->ops[i]);
    freeChunk(chunk);
    pthread_mutex_lock(&state->lock);
    state->stopped |= stopped;
    chunk->full = 0;
    state->drain = (state->drain + 1) % CHUNKS;
    pthread_cond_signal(&state->emptied);
  }
  pthread_mutex_unlock(&state->lock);
  return NULL;
}

/* submit -- hand the chunk being filled to the SQLite thread, and wait
 * for the next to be empty.  1 if the SQLite thread has failed. */
static int submit(SqliteStruct *state)
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

/* SqliteNextOp -- room for an op in the chunk being filled, or NULL if the
 * SQLite thread has failed */
OpStruct *SqliteNextOp(SqliteStruct *state, OpKind what, uint32_t pid)
{
  ChunkStruct *chunk = &state->chunks[state->fill];
  if (chunk->count == CHUNK) {
    if (submit(state) != 0)
      return NULL;
    chunk = &state->chunks[state->fill];
  }
  OpStruct *op = &chunk->ops[chunk->count++];
  op->what = what;
  op->pid = pid;
  return op;
}

/* SqliteInserterStart -- the chunks, and the SQLite thread to empty them */
int SqliteInserterStart(ExportStruct *ex, SqliteStruct *state)
{
  state->chunks = calloc(CHUNKS, sizeof *state->chunks);
  if (state->chunks == NULL)
    return SqliteFail(ex, state, "out of memory");
  pthread_mutex_init(&state->lock, NULL);
  pthread_cond_init(&state->filled, NULL);
  pthread_cond_init(&state->emptied, NULL);
  if (pthread_create(&state->thread, NULL, inserter, state) != 0)
    return SqliteFail(ex, state, "cannot start a thread");
  state->threadRunning = 1;
  return 0;
}

/* SqliteInserterStop -- hand over the last chunk, and wait for the
 * SQLite thread to insert what it was given and end */
void SqliteInserterStop(SqliteStruct *state)
{
  if (!state->threadRunning)
    return;
  (void)submit(state);
  pthread_mutex_lock(&state->lock);
  state->quit = 1;
  pthread_cond_signal(&state->filled);
  pthread_mutex_unlock(&state->lock);
  for (;;) {                    /* saying how far, if it takes a while */
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
  state->threadRunning = 0;
}

/* SqliteInserterFree -- the INSERTs and the chunks, once the thread is done */
void SqliteInserterFree(SqliteStruct *state)
{
  for (size_t i = 0; i < state->insertCount; ++i) {
    sqlite3_finalize(state->inserts[i]->one);
    sqlite3_finalize(state->inserts[i]->batch);
    free(state->inserts[i]);
  }
  free(state->inserts);
  state->inserts = NULL;
  state->insertCount = 0;
  for (unsigned i = 0; state->chunks != NULL && i < CHUNKS; ++i)
    freeChunk(&state->chunks[i]);
  free(state->chunks);
  state->chunks = NULL;
}
