/* <tools/heap/pprof.c> -- the profile as pprof's profile.proto, gzipped
 *
 * .design: design/heap.txt .heap.pprof
 *
 * One sample a stack, with every ProfileValue as its sample types (the
 * allocation count first, as the format asks); one location a distinct
 * return address, with one line (function, file, line) when the frame
 * has a symbol; one function a distinct (name, file); one mapping a
 * module.  The messages are protobuf-c's, made from profile.proto by
 * protoc-c; the packed bytes are gzipped by zlib, as pprof writes them.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile PprofProfile;
typedef Perftools__Profiles__ValueType PprofValueType;
typedef Perftools__Profiles__Sample PprofSample;
typedef Perftools__Profiles__Mapping PprofMapping;
typedef Perftools__Profiles__Location PprofLocation;
typedef Perftools__Profiles__Line PprofLine;
typedef Perftools__Profiles__Function PprofFunction;

/* IndexStruct -- an open hash table of the ids (1 up) of things kept
 * elsewhere, found by a 64-bit hash and a comparison the caller makes */
typedef struct IndexSlotStruct {
  uint64_t hash;
  size_t id;                    /* 0: empty */
} IndexSlotStruct;

typedef struct IndexStruct {
  IndexSlotStruct *slots;
  size_t size, count;           /* size a power of 2, count < size / 2 */
} IndexStruct;

/* PprofStruct -- the profile being made */
typedef struct PprofStruct {
  const ProfileStruct *profile;
  char **strings;
  size_t stringCount;
  IndexStruct stringIndex;
  PprofMapping *mappings, **mappingPtrs;
  size_t mappingCount;
  IndexStruct mappingIndex;
  PprofLocation *locations, **locationPtrs;
  PprofLine *lines, **linePtrs;
  size_t locationCount, lineCount;
  IndexStruct locationIndex;
  const ProfileFrameStruct **locationFrames;    /* the frame each location came from */
  PprofFunction *functions, **functionPtrs;
  const ProfileFrameStruct **functionFrames;
  size_t functionCount;
  IndexStruct functionIndex;
} PprofStruct;

static uint64_t hashBytes(uint64_t h, const char *s)
{
  if (s == NULL)
    return h * 31;
  for (; *s != '\0'; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;     /* FNV-1a */
  return h ^ 0xff;
}

static int stringsSame(const char *a, const char *b)
{
  return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* indexFind -- the slot where hash's entry is, or where it would go;
 * same(context, id) says whether id is the entry looked for */
static IndexSlotStruct *indexFind(IndexStruct *index, uint64_t hash,
                                  int (*same)(const PprofStruct *, size_t, const void *),
                                  const PprofStruct *pprof, const void *key)
{
  size_t mask = index->size - 1, i = (size_t)(hash ^ hash >> 31) & mask;
  while (index->slots[i].id != 0 &&
         !(index->slots[i].hash == hash && same(pprof, index->slots[i].id, key)))
    i = (i + 1) & mask;
  return &index->slots[i];
}

/* indexAdd -- enter id at slot (from indexFind), growing the table */
static int indexAdd(IndexStruct *index, IndexSlotStruct *slot, uint64_t hash, size_t id)
{
  slot->hash = hash;
  slot->id = id;
  if (++index->count * 2 >= index->size) {
    size_t i, j, size = index->size * 2;
    IndexSlotStruct *slots = calloc(size, sizeof *slots);
    if (slots == NULL)
      return -1;
    for (i = 0; i < index->size; i++) {
      if (index->slots[i].id == 0)
        continue;
      j = (size_t)(index->slots[i].hash ^ index->slots[i].hash >> 31) & (size - 1);
      while (slots[j].id != 0)
        j = (j + 1) & (size - 1);
      slots[j] = index->slots[i];
    }
    free(index->slots);
    index->slots = slots;
    index->size = size;
  }
  return 0;
}

static int indexInit(IndexStruct *index)
{
  index->size = 256;
  index->count = 0;
  index->slots = calloc(index->size, sizeof *index->slots);
  return index->slots != NULL ? 0 : -1;
}

static int stringSame(const PprofStruct *pprof, size_t id, const void *key)
{
  return strcmp(pprof->strings[id - 1], key) == 0;
}

/* intern -- the string table's index of s; -1 when out of memory */
static int64_t intern(PprofStruct *pprof, const char *s)
{
  uint64_t hash = hashBytes(0xcbf29ce484222325ULL, s);
  IndexSlotStruct *slot = indexFind(&pprof->stringIndex, hash, stringSame, pprof, s);
  if (slot->id != 0)
    return (int64_t)slot->id - 1;
  pprof->strings[pprof->stringCount++] = (char *)s;     /* packed, never changed */
  if (indexAdd(&pprof->stringIndex, slot, hash, pprof->stringCount) != 0)
    return -1;
  return (int64_t)pprof->stringCount - 1;
}

static int mappingSame(const PprofStruct *pprof, size_t id, const void *key)
{
  return strcmp(pprof->strings[pprof->mappings[id - 1].filename], key) == 0;
}

/* mappingOf -- the id of the mapping of frame's module, 0 if it has
 * none.  Only the addresses seen are known: the mapping spans them. */
static int mappingOf(PprofStruct *pprof, const ProfileFrameStruct *frame, uint64_t *id)
{
  uint64_t hash = hashBytes(0x84222325cbf29ceULL, frame->module);
  IndexSlotStruct *slot;
  PprofMapping *m;
  *id = 0;
  if (frame->module == NULL)
    return 0;
  slot = indexFind(&pprof->mappingIndex, hash, mappingSame, pprof, frame->module);
  if (slot->id == 0) {
    int64_t name = intern(pprof, frame->module);
    m = &pprof->mappings[pprof->mappingCount++];
    perftools__profiles__mapping__init(m);
    m->id = pprof->mappingCount;
    m->filename = name;
    m->memory_start = frame->address;
    m->memory_limit = frame->address + 1;
    /* The heap tool symbolised every frame it could: pprof is told not
     * to try again, with addresses it cannot place in the file. */
    m->has_functions = 1;
    if (name < 0 || indexAdd(&pprof->mappingIndex, slot, hash, pprof->mappingCount) != 0)
      return -1;
  } else
    m = &pprof->mappings[slot->id - 1];
  if (frame->address < m->memory_start)
    m->memory_start = frame->address;
  if (frame->address >= m->memory_limit)
    m->memory_limit = frame->address + 1;
  m->has_filenames |= frame->file != NULL;
  m->has_line_numbers |= frame->line > 0;
  *id = m->id;
  return 0;
}

static int functionSame(const PprofStruct *pprof, size_t id, const void *key)
{
  const ProfileFrameStruct *a = pprof->functionFrames[id - 1], *b = key;
  return strcmp(a->function, b->function) == 0 && stringsSame(a->file, b->file);
}

/* functionOf -- the id of frame's function, made if new */
static int functionOf(PprofStruct *pprof, const ProfileFrameStruct *frame, uint64_t *id)
{
  uint64_t hash = hashBytes(hashBytes(0xcbf29ce484222325ULL, frame->function), frame->file);
  IndexSlotStruct *slot = indexFind(&pprof->functionIndex, hash, functionSame, pprof, frame);
  *id = slot->id;
  if (slot->id == 0) {
    PprofFunction *f = &pprof->functions[pprof->functionCount];
    perftools__profiles__function__init(f);
    f->id = pprof->functionCount + 1;
    f->name = f->system_name = intern(pprof, frame->function);
    f->filename = frame->file != NULL ? intern(pprof, frame->file) : 0;
    pprof->functionFrames[pprof->functionCount++] = frame;
    *id = f->id;
    if (f->name < 0 || f->filename < 0 ||
        indexAdd(&pprof->functionIndex, slot, hash, pprof->functionCount) != 0)
      return -1;
  }
  return 0;
}

/* locationSame -- one address in one file, named alike: a library
 * loaded where an unloaded one was has locations of its own at the same
 * addresses (.heap.symbols.time) */
static int locationSame(const PprofStruct *pprof, size_t id, const void *key)
{
  const ProfileFrameStruct *a = pprof->locationFrames[id - 1], *b = key;
  return a->address == b->address && stringsSame(a->module, b->module)
         && stringsSame(a->function, b->function);
}

/* locationOf -- the id of the location of frames[0].address in its
 * module, made if new from the n frames there: a call's inlined
 * callees, innermost first, then the function it is in, as pprof's
 * Lines are */
static int locationOf(PprofStruct *pprof, const ProfileFrameStruct *frames, size_t n,
                      uint64_t *id)
{
  uint64_t hash = hashBytes(frames[0].address * 0x9e3779b97f4a7c15ULL, frames[0].module);
  IndexSlotStruct *slot = indexFind(&pprof->locationIndex, hash, locationSame, pprof, frames);
  *id = slot->id;
  if (slot->id == 0) {
    size_t k = pprof->locationCount++;
    PprofLocation *loc = &pprof->locations[k];
    perftools__profiles__location__init(loc);
    loc->id = k + 1;
    loc->address = frames[0].address;
    loc->line = &pprof->linePtrs[pprof->lineCount];
    pprof->locationFrames[k] = &frames[0];
    if (mappingOf(pprof, &frames[0], &loc->mapping_id) != 0)
      return -1;
    for (size_t i = 0; i < n; i++) {
      PprofLine *line = &pprof->lines[pprof->lineCount];
      if (frames[i].function == NULL)
        continue;
      perftools__profiles__line__init(line);
      if (functionOf(pprof, &frames[i], &line->function_id) != 0)
        return -1;
      line->line = frames[i].line;
      pprof->linePtrs[pprof->lineCount++] = line;
      ++loc->n_line;
    }
    *id = k + 1;
    if (indexAdd(&pprof->locationIndex, slot, hash, k + 1) != 0)
      return -1;
  }
  return 0;
}

static int framesSame(const ProfileFrameStruct *a, const ProfileFrameStruct *b)
{
  return stringsSame(a->function, b->function) && stringsSame(a->file, b->file)
    && a->line == b->line;
}

/* inlinedRun -- how many of the run of n frames at one address (the
 * heap tool gives a call's inlined levels as frames of their own) are
 * one location: the shortest period of the run, as a recursive call
 * repeats its whole run once per level */
static size_t inlinedRun(const ProfileFrameStruct *frames, size_t n)
{
  for (size_t p = 1; p < n; p++) {
    size_t i = 0;
    if (n % p != 0)
      continue;
    while (i + p < n && framesSame(&frames[i], &frames[i + p]))
      i++;
    if (i + p == n)
      return p;
  }
  return n;
}

/* stackLocations -- the locations of stack, innermost first, into ids;
 * their count, or 0 when out of memory */
static size_t stackLocations(PprofStruct *pprof, const ProfileStackStruct *stack, uint64_t *ids)
{
  size_t count = 0;
  for (size_t d = 0; d < stack->depth; ) {
    size_t run = 1, period;
    while (d + run < stack->depth && stack->frames[d + run].address == stack->frames[d].address)
      run++;
    period = inlinedRun(&stack->frames[d], run);
    for (size_t r = 0; r < run; r += period)
      if (locationOf(pprof, &stack->frames[d + r], period, &ids[count++]) != 0)
        return 0;
    d += run;
  }
  return count;
}

static const char *baseName(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

/* mainFirst -- put the program's own module first, as pprof expects of
 * mapping[0], when a module has the program's name */
static void mainFirst(PprofStruct *pprof)
{
  size_t i;
  const char *program = pprof->profile->program;
  if (program == NULL)
    return;
  for (i = 1; i < pprof->mappingCount; i++) {
    if (strcmp(baseName(pprof->strings[pprof->mappings[i].filename]), baseName(program)) == 0) {
      PprofMapping *first = pprof->mappingPtrs[0];
      pprof->mappingPtrs[0] = pprof->mappingPtrs[i];
      pprof->mappingPtrs[i] = first;
      return;
    }
  }
}

/* gzipWrite -- write bytes to out as one gzip member */
static int gzipWrite(FILE *out, const uint8_t *bytes, size_t size)
{
  unsigned char buf[65536];
  z_stream z;
  int r;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    errno = ENOMEM;
    return -1;
  }
  z.next_in = (Bytef *)bytes;
  z.avail_in = (uInt)size;              /* a profile is far below 4 GiB */
  do {
    z.next_out = buf;
    z.avail_out = sizeof buf;
    r = deflate(&z, Z_FINISH);
    if (r == Z_STREAM_ERROR || fwrite(buf, 1, sizeof buf - z.avail_out, out) != sizeof buf - z.avail_out) {
      deflateEnd(&z);
      if (r == Z_STREAM_ERROR)
        errno = EINVAL;
      return -1;
    }
  } while (r != Z_STREAM_END);
  deflateEnd(&z);
  return 0;
}

static int64_t signedValue(uint64_t v)
{
  return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

int ProfileWritePprof(FILE *out, const ProfileStruct *profile)
{
  PprofStruct pprof = {0};
  PprofProfile message = PERFTOOLS__PROFILES__PROFILE__INIT;
  PprofValueType types[PROFILE_VALUE_LIMIT], *typePtrs[PROFILE_VALUE_LIMIT];
  PprofSample *samples = NULL, **samplePtrs = NULL;
  uint64_t *locationIds = NULL;
  int64_t *values = NULL, comment = 0;
  uint8_t *packed = NULL;
  size_t frames = 0, s, v, sampleCount = 0, used = 0, size;
  char *programComment = NULL;
  int result = -1;

  errno = 0;
  for (s = 0; s < profile->stackCount; s++)
    frames += profile->stacks[s].depth;
  pprof.profile = profile;
  /* Each frame brings at most a location, a function, a mapping and
   * three strings (function, file, module). */
  pprof.strings = malloc((3 * frames + 2 * PROFILE_VALUE_LIMIT + 2) * sizeof *pprof.strings);
  pprof.mappings = malloc((frames + 1) * sizeof *pprof.mappings);
  pprof.mappingPtrs = malloc((frames + 1) * sizeof *pprof.mappingPtrs);
  pprof.locations = malloc((frames + 1) * sizeof *pprof.locations);
  pprof.locationPtrs = malloc((frames + 1) * sizeof *pprof.locationPtrs);
  pprof.locationFrames = malloc((frames + 1) * sizeof *pprof.locationFrames);
  pprof.lines = malloc((frames + 1) * sizeof *pprof.lines);
  pprof.linePtrs = malloc((frames + 1) * sizeof *pprof.linePtrs);
  pprof.functions = malloc((frames + 1) * sizeof *pprof.functions);
  pprof.functionPtrs = malloc((frames + 1) * sizeof *pprof.functionPtrs);
  pprof.functionFrames = malloc((frames + 1) * sizeof *pprof.functionFrames);
  samples = malloc((profile->stackCount + 1) * sizeof *samples);
  samplePtrs = malloc((profile->stackCount + 1) * sizeof *samplePtrs);
  locationIds = malloc((frames + 1) * sizeof *locationIds);
  values = malloc((profile->stackCount * PROFILE_VALUE_LIMIT + 1) * sizeof *values);
  if (pprof.strings == NULL || pprof.mappings == NULL || pprof.mappingPtrs == NULL ||
      pprof.locations == NULL || pprof.locationPtrs == NULL || pprof.locationFrames == NULL ||
      pprof.lines == NULL || pprof.linePtrs == NULL || pprof.functions == NULL ||
      pprof.functionPtrs == NULL || pprof.functionFrames == NULL || samples == NULL ||
      samplePtrs == NULL || locationIds == NULL || values == NULL ||
      indexInit(&pprof.stringIndex) != 0 || indexInit(&pprof.mappingIndex) != 0 ||
      indexInit(&pprof.locationIndex) != 0 || indexInit(&pprof.functionIndex) != 0)
    goto done;
  if (intern(&pprof, "") != 0)
    goto done;

  for (v = 0; v < PROFILE_VALUE_LIMIT; v++) {
    perftools__profiles__value_type__init(&types[v]);
    types[v].type = intern(&pprof, ProfileValueName[v]);
    types[v].unit = intern(&pprof, ProfileValueUnit[v]);
    if (types[v].type < 0 || types[v].unit < 0)
      goto done;
    typePtrs[v] = &types[v];
  }

  for (s = 0; s < profile->stackCount; s++) {
    const ProfileStackStruct *stack = &profile->stacks[s];
    PprofSample *sample = &samples[sampleCount];
    int any = 0;
    for (v = 0; v < PROFILE_VALUE_LIMIT; v++)
      any |= stack->values[v] != 0;
    if (!any)
      continue;
    perftools__profiles__sample__init(sample);
    sample->location_id = &locationIds[used];
    /* frames[0], the leaf, first: as pprof's */
    sample->n_location_id = stackLocations(&pprof, stack, &locationIds[used]);
    if (sample->n_location_id == 0 && stack->depth > 0)
      goto done;
    used += sample->n_location_id;
    sample->n_value = PROFILE_VALUE_LIMIT;
    sample->value = &values[sampleCount * PROFILE_VALUE_LIMIT];
    for (v = 0; v < PROFILE_VALUE_LIMIT; v++)
      sample->value[v] = signedValue(stack->values[v]);
    samplePtrs[sampleCount++] = sample;
  }

  for (s = 0; s < pprof.mappingCount; s++)
    pprof.mappingPtrs[s] = &pprof.mappings[s];
  mainFirst(&pprof);
  for (s = 0; s < pprof.locationCount; s++)
    pprof.locationPtrs[s] = &pprof.locations[s];
  for (s = 0; s < pprof.functionCount; s++)
    pprof.functionPtrs[s] = &pprof.functions[s];

  if (profile->program != NULL) {
    size = strlen(profile->program) + sizeof "program: ";
    programComment = malloc(size);
    if (programComment == NULL)
      goto done;
    snprintf(programComment, size, "program: %s", profile->program);
    comment = intern(&pprof, programComment);
    if (comment < 0)
      goto done;
    message.n_comment = 1;
    message.comment = &comment;
  }
  message.n_sample_type = PROFILE_VALUE_LIMIT;
  message.sample_type = typePtrs;
  message.default_sample_type = types[ProfileBytes].type;
  message.n_sample = sampleCount;
  message.sample = samplePtrs;
  message.n_mapping = pprof.mappingCount;
  message.mapping = pprof.mappingPtrs;
  message.n_location = pprof.locationCount;
  message.location = pprof.locationPtrs;
  message.n_function = pprof.functionCount;
  message.function = pprof.functionPtrs;
  message.n_string_table = pprof.stringCount;
  message.string_table = pprof.strings;
  message.duration_nanos = signedValue(profile->durationNs);

  size = perftools__profiles__profile__get_packed_size(&message);
  packed = malloc(size + 1);
  if (packed == NULL)
    goto done;
  perftools__profiles__profile__pack(&message, packed);
  if (gzipWrite(out, packed, size) == 0 && fflush(out) == 0 && !ferror(out))
    result = 0;

done:
  if (result != 0 && errno == 0)
    errno = ENOMEM;
  free(packed);
  free(programComment);
  free(values);
  free(locationIds);
  free(samplePtrs);
  free(samples);
  free(pprof.functionFrames);
  free(pprof.functionPtrs);
  free(pprof.functions);
  free(pprof.linePtrs);
  free(pprof.lines);
  free(pprof.locationFrames);
  free(pprof.locationPtrs);
  free(pprof.locations);
  free(pprof.mappingPtrs);
  free(pprof.mappings);
  free(pprof.strings);
  free(pprof.functionIndex.slots);
  free(pprof.locationIndex.slots);
  free(pprof.mappingIndex.slots);
  free(pprof.stringIndex.slots);
  return result;
}
