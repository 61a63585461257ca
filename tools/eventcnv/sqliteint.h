/* <tools/eventcnv/sqliteint.h> -- the SQLite writer's rooms, as one another sees them
 *
 * .design: design/export.txt .export.sqlite
 *
 * exportsqlite.c is the writer: the reading thread's side, which makes
 * rows for the SQLite thread, and the calls of SQLite every room makes;
 * sqliteschema.c the tables and views, made from the stream's registry;
 * sqliteinsert.c the SQLite thread, which inserts the rows.
 */

#ifndef sqliteint_h
#define sqliteint_h

#include "export.h"
#include "span.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define IDENT_MAX (EVENT_NAME_MAX + 8)

/* Rows go in BATCH at a time, in one INSERT of BATCH rows: a step of
 * SQLite's machine costs about as much as the rows it inserts.
 * design/export.txt .export.sqlite */
#define BATCH 64

/* The event table's columns: the common ones, then the fields.  An
 * event's P, A, W and U go in f0, f1, ... in order, its D in d0, d1,
 * ... and its S in str; as many of each as the registry's events need.
 * design/export.txt .export.sqlite.row */
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
 * one step to the next.  design/export.txt .export.sqlite.bind */
typedef struct BoundStruct {
  uint64_t mask;                /* field columns not NULL */
  const EventDescStruct *desc;
  uint32_t thread, pid;
  int seqNull;                  /* seq is bound NULL */
  int valid;
} BoundStruct;

/* InsertStruct -- the INSERTs into event of a row, and of BATCH rows,
 * of events up to a width: SQLite leaves the columns past it NULL
 * without their being bound.  design/export.txt .export.sqlite.bind */
typedef struct InsertStruct {
  WidthStruct width;
  int columns;                  /* bound per row */
  sqlite3_stmt *one, *batch;
  BoundStruct boundOne, bound[BATCH];
} InsertStruct;

/* OpStruct -- a row that the reading thread has made and the SQLite
 * thread is to insert: into event_row, string, label or span.
 * design/export.txt .export.sqlite.thread */
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
  /* the reading thread and the SQLite thread: design/export.txt .export.sqlite.thread */
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

/* SqlStruct -- a growing SQL text */
typedef struct SqlStruct {
  char *text;
  size_t used, size;
} SqlStruct;

/* The calls of SQLite (exportsqlite.c).  Each returns 0, or 1 once it
 * has said what SQLite said (SqliteFail says it once). */
extern int SqliteFail(ExportStruct *ex, SqliteStruct *state, const char *doing);
extern int SqliteExec(ExportStruct *ex, SqliteStruct *state, const char *sql);
extern int SqlitePrepare(ExportStruct *ex, SqliteStruct *state, const char *sql,
                         sqlite3_stmt **stmtReturn);
extern int SqliteStep(ExportStruct *ex, SqliteStruct *state, sqlite3_stmt *stmt);
extern void SqliteBindText(sqlite3_stmt *stmt, int column, const char *s, long len,
                           sqlite3_destructor_type keep);
extern void SqliteSqlAdd(SqlStruct *sql, const char *format, ...)
  __attribute__((format(printf, 2, 3)));

/* The tables and views (sqliteschema.c) */
extern void SqliteTableName(char *buf, size_t size, const char *event);
extern int SqliteShapes(ExportStruct *ex, SqliteStruct *state);
extern void SqliteFieldColumn(char *buf, size_t size, char letter, int i);
extern int SqliteWiden(ExportStruct *ex, SqliteStruct *state, const WidthStruct *width);
/* SqliteSchema -- the tables, and the rows that say the logs and the
 * registry, before the events */
extern int SqliteSchema(ExportStruct *ex, SqliteStruct *state);
/* SqliteSchemaEnd -- the thread table, the rest of the field columns,
 * the name index and the views, after the events */
extern int SqliteSchemaEnd(ExportStruct *ex, SqliteStruct *state);

/* The SQLite thread (sqliteinsert.c).  design/export.txt .export.sqlite.thread */
extern int SqliteInserterStart(ExportStruct *ex, SqliteStruct *state);
extern OpStruct *SqliteNextOp(SqliteStruct *state, OpKind what, uint32_t pid);
extern void SqliteInserterStop(SqliteStruct *state);
extern int SqliteFlush(ExportStruct *ex, SqliteStruct *state);
extern void SqliteInserterFree(SqliteStruct *state);

#endif /* sqliteint_h */
