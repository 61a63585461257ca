/* <tools/eventcnv/exporttext.c> -- eventcnv's text, formatted on every core
 *
 * .design: design/tools.txt .eventcnv.text .eventcnv.text.split
 *
 * The merge (EventStreamNextHead) is one sequence of decisions and stays
 * on the calling thread; decoding and formatting, most of the cost, are
 * shared.  The caller fills batches of events' places in time order,
 * noting each P or A field's label as the stream stands at that event (a
 * later Label must not rename an earlier address); worker threads decode
 * and format whole batches into buffers of their own; the caller writes
 * the batches in the order it filled them.  So the output is byte for
 * byte what one thread makes.
 */

#include "eventread.h"
#include "export.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
  BATCH_EVENTS = 4096,          /* events a batch: the work a thread takes */
  BATCHES = 8,                  /* batches in flight: enough to keep every core busy */
  JOBS_MAX = 16,
  LINE_MIN = 4096               /* room a line is formatted into before it is measured */
};

typedef enum { BatchEMPTY, BatchFULL, BatchFORMATTING, BatchDONE } BatchState;

typedef struct LabelStruct {    /* a P or A value and its label at that event */
  uint64_t address;
  const char *label;
} LabelStruct;

typedef struct EntryStruct {
  EventStreamHeadStruct head;   /* decoded by the worker (.eventcnv.text.split) */
  uint32_t labelStart, labelCount;   /* its labels in the batch's array */
} EntryStruct;

typedef struct BatchStruct {
  BatchState state;
  size_t count;
  EntryStruct entries[BATCH_EVENTS];
  LabelStruct *labels;
  size_t labelCount, labelCapacity;
  char *out;                    /* the formatted lines */
  size_t outLen, outCapacity;
  int failed;                   /* out of memory while formatting */
} BatchStruct;

typedef struct TextStruct {
  pthread_mutex_t lock;
  pthread_cond_t work;          /* a batch is FULL, or quit */
  pthread_cond_t done;          /* a batch is DONE */
  BatchStruct *batches;
  int quit;
  EventFormatContextStruct ctx; /* each worker copies it, with a cache of its own */
  const EventStreamStruct *stream;   /* for EventStreamDecode */
} TextStruct;

static inline int lineAppend(BatchStruct *b, const EventRecordStruct *rec,
                             const EventFormatContextStruct *ctx);

/* labelOf -- a closure for EventFormat's label: the entry's own labels */
typedef struct LabelClosureStruct {
  const LabelStruct *labels;
  size_t count;
} LabelClosureStruct;

static const char *labelOf(void *closure, uint64_t address)
{
  const LabelClosureStruct *c = closure;
  for (size_t i = 0; i < c->count; ++i)
    if (c->labels[i].address == address)
      return c->labels[i].label;
  return NULL;
}

/* batchFormat -- every entry's line and a newline, into b->out */
static void batchFormat(BatchStruct *b, const TextStruct *t)
{
  EventFormatContextStruct ctx = t->ctx;
  EventFormatCacheStruct cache;
  LabelClosureStruct closure;
  EventRecordStruct rec;
  memset(&cache, 0, sizeof cache);
  ctx.cache = &cache;
  ctx.labelClosure = &closure;
  b->outLen = 0;
  for (size_t i = 0; i < b->count && !b->failed; ++i) {
    const EntryStruct *e = &b->entries[i];
    EventStreamDecode(t->stream, &e->head, &rec);
    ctx.label = NULL;
    if (e->labelCount > 0) {
      closure.labels = b->labels + e->labelStart;
      closure.count = e->labelCount;
      ctx.label = labelOf;
    }
    b->failed = lineAppend(b, &rec, &ctx);
  }
}

/* nextFull -- the FULL batch to format, or NULL; under the lock */
static BatchStruct *nextFull(TextStruct *t)
{
  for (size_t i = 0; i < BATCHES; ++i)
    if (t->batches[i].state == BatchFULL)
      return &t->batches[i];
  return NULL;
}

static void *worker(void *arg)
{
  TextStruct *t = arg;
  pthread_mutex_lock(&t->lock);
  for (;;) {
    BatchStruct *b = nextFull(t);
    if (b == NULL) {
      if (t->quit)
        break;
      pthread_cond_wait(&t->work, &t->lock);
      continue;
    }
    b->state = BatchFORMATTING;
    pthread_mutex_unlock(&t->lock);
    batchFormat(b, t);
    pthread_mutex_lock(&t->lock);
    b->state = BatchDONE;
    pthread_cond_broadcast(&t->done);
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

/* labelNote -- note the labels of e's P and A fields in b, if the
 * stream has any labels; 0, or 1 if out of memory */
static int labelNote(BatchStruct *b, EntryStruct *e, EventStreamStruct *stream)
{
  const char *format = e->head.desc->format;
  EventRecordStruct rec;
  e->labelStart = (uint32_t)b->labelCount;
  e->labelCount = 0;
  if (EventStreamLabelCount(stream) == 0)
    return 0;
  EventStreamDecode(stream, &e->head, &rec);
  for (unsigned i = 0; format != NULL && format[i] != '\0' && i < EVENT_PARAM_MAX; ++i) {
    const char *label;
    if (!EventTypeOf(format[i])->hex)
      continue;
    label = EventStreamLabel(stream, rec.values[i].u);
    if (label == NULL)
      continue;
    if (b->labelCount == b->labelCapacity) {
      size_t capacity = b->labelCapacity * 2 + 64;
      LabelStruct *bigger = realloc(b->labels, capacity * sizeof *bigger);
      if (bigger == NULL)
        return 1;
      b->labels = bigger;
      b->labelCapacity = capacity;
    }
    b->labels[b->labelCount++] = (LabelStruct){rec.values[i].u, label};
    ++e->labelCount;
  }
  return 0;
}

/* batchFill -- the next events that pass the filter into b; returns 1 if
 * the stream has more, 0 at its end; *failed on running out of memory */
static int batchFill(BatchStruct *b, EventStreamStruct *stream, ExportFilterFunction filter,
                     void *closure, int *failed, ProgressStruct *progress, uint64_t *read)
{
  b->count = 0;
  b->labelCount = 0;
  while (b->count < BATCH_EVENTS) {
    EntryStruct *e = &b->entries[b->count];
    if (EventStreamNextHead(stream, &e->head) != EventStreamOK)
      return 0;
    ProgressTick(progress, ++*read);
    if (!filter(closure, 0, e->head.kind, e->head.desc != NULL ? e->head.desc->code : e->head.code))
      continue;
    if (labelNote(b, e, stream) != 0) {
      *failed = 1;
      return 0;
    }
    ++b->count;
  }
  return 1;
}

/* batchWrite -- wait for the batch to be formatted, and write it */
static int batchWrite(TextStruct *t, BatchStruct *b, FILE *out)
{
  int failed;
  pthread_mutex_lock(&t->lock);
  while (b->state != BatchDONE)
    pthread_cond_wait(&t->done, &t->lock);
  pthread_mutex_unlock(&t->lock);
  failed = b->failed;
  if (!failed)
    fwrite(b->out, 1, b->outLen, out);
  pthread_mutex_lock(&t->lock);     /* workers look at every batch's state */
  b->state = BatchEMPTY;
  pthread_mutex_unlock(&t->lock);
  return failed;
}

/* textJobs -- worker threads: jobs if given, else one a processor */
static unsigned textJobs(unsigned jobs)
{
  long cpus;
  if (jobs != 0)
    return jobs < JOBS_MAX ? jobs : JOBS_MAX;
  cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus < 1 ? 1 : cpus > JOBS_MAX ? JOBS_MAX : (unsigned)cpus;
}

/* lineAppend -- rec's line and a newline at the end of b->out; 0, or 1
 * if out of memory */
static inline int lineAppend(BatchStruct *b, const EventRecordStruct *rec,
                             const EventFormatContextStruct *ctx)
{
  for (;;) {
    size_t room = b->outCapacity - b->outLen, len = 0;
    if (room >= LINE_MIN) {
      len = EventFormat(b->out + b->outLen, room, rec, ctx);
      if (len < room) {
        b->out[b->outLen + len] = '\n';   /* where the NUL was */
        b->outLen += len + 1;
        return 0;
      }
    }
    {                           /* room for the longest line so far, and more */
      size_t capacity = b->outCapacity * 2 + len + LINE_MIN;
      char *bigger = realloc(b->out, capacity);
      if (bigger == NULL)
        return 1;
      b->out = bigger;
      b->outCapacity = capacity;
    }
  }
}

/* textSerial -- one thread: each event formatted as it comes, written
 * a buffer at a time */
static int textSerial(EventStreamStruct *stream, FILE *out, ExportFilterFunction filter,
                      void *closure, BatchStruct *b, ProgressStruct *progress)
{
  EventFormatContextStruct ctx;
  EventFormatCacheStruct cache;
  EventRecordStruct rec;
  uint64_t read = 0;
  memset(&cache, 0, sizeof cache);
  EventStreamFormatContext(stream, &ctx);
  ctx.cache = &cache;
  while (EventStreamNext(stream, &rec) == EventStreamOK) {
    ProgressTick(progress, ++read);
    if (!filter(closure, 0, rec.kind, rec.code))
      continue;
    if (lineAppend(b, &rec, &ctx) != 0)
      return 1;
    if (b->outLen >= BATCH_EVENTS * 64) {
      fwrite(b->out, 1, b->outLen, out);
      b->outLen = 0;
    }
  }
  fwrite(b->out, 1, b->outLen, out);
  return 0;
}

int ExportText(EventStreamStruct *stream, FILE *out, unsigned jobs, ExportFilterFunction filter,
               void *closure)
{
  TextStruct t;
  pthread_t threads[JOBS_MAX];
  unsigned started = 0, n = textJobs(jobs);
  size_t filled = 0, written = 0;
  int more = 1, failed = 0;
  ProgressStruct progress;      /* .export.progress */
  uint64_t read = 0;

  memset(&t, 0, sizeof t);
  EventStreamFormatContext(stream, &t.ctx);
  t.stream = stream;
  t.batches = calloc(n > 1 ? BATCHES : 1, sizeof *t.batches);
  if (t.batches == NULL)
    return 1;
  if (n > 1) {
    pthread_mutex_init(&t.lock, NULL);
    pthread_cond_init(&t.work, NULL);
    pthread_cond_init(&t.done, NULL);
    while (started < n && pthread_create(&threads[started], NULL, worker, &t) == 0)
      ++started;
  }
  ProgressStart(&progress, EventStreamInfo(stream)->eventCount);
  if (started == 0) {           /* one processor, or no thread could start */
    failed = textSerial(stream, out, filter, closure, &t.batches[0], &progress);
  } else {
    while (more && !failed) {
      BatchStruct *b = &t.batches[filled % BATCHES];
      if (filled - written == BATCHES)
        failed |= batchWrite(&t, &t.batches[written++ % BATCHES], out);
      more = batchFill(b, stream, filter, closure, &failed, &progress, &read);
      pthread_mutex_lock(&t.lock);
      b->state = BatchFULL;
      pthread_cond_signal(&t.work);
      pthread_mutex_unlock(&t.lock);
      ++filled;
    }
    while (written < filled)
      failed |= batchWrite(&t, &t.batches[written++ % BATCHES], out);
    pthread_mutex_lock(&t.lock);
    t.quit = 1;
    pthread_cond_broadcast(&t.work);
    pthread_mutex_unlock(&t.lock);
    for (unsigned i = 0; i < started; ++i)
      pthread_join(threads[i], NULL);
  }
  ProgressEnd(&progress);
  if (n > 1) {
    pthread_mutex_destroy(&t.lock);
    pthread_cond_destroy(&t.work);
    pthread_cond_destroy(&t.done);
  }
  for (size_t i = 0; i < (n > 1 ? BATCHES : 1); ++i) {
    free(t.batches[i].labels);
    free(t.batches[i].out);
  }
  free(t.batches);
  return failed;
}
