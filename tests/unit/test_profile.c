/* <tests/unit/test_profile.c> -- the heap tool's writers on profiles made by hand
 *
 * .design: design/heap.txt .heap.flame .heap.pprof .heap.chart
 *
 * Covers: ProfileWriteFlame, ProfileWritePprof and ProfileWriteChart on
 * a small profile (stacks merging by function, frames without a symbol,
 * with and without a module, names holding & < > " ', a control
 * character and a byte that is not UTF-8) and on a big one (5,000
 * stacks of up to 24 frames, fixed seed: the tables grow, narrow frames
 * are left out); an empty profile; a full device (-1, ENOSPC) and a
 * value out of range (-1, EINVAL).  The pprof bytes are gunzipped and
 * unpacked here by protobuf-c, and every sample's values and leaf
 * function are checked against the profile: that is our own reading;
 * tests/tools/profile.py has pprof itself read them, and checks the SVGs in
 * Python's XML parser and headless Chromium.
 *
 * Run: build/tests/test_profile [--out DIR]: with --out, the files the
 * writers made, and DIR/expect.txt (the profiles in plain words, for
 * tests/tools/profile.py), are left in DIR.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "profile.h"
#include "profile.pb-c.h"

/* The heap tool defines these with the profile; the writers take
 * whatever names it gives. */
const char *const ProfileValueName[PROFILE_VALUE_LIMIT] = {
  "allocations", "bytes", "peak", "leaked", "temporary",
};
const char *const ProfileValueUnit[PROFILE_VALUE_LIMIT] = {
  "count", "bytes", "bytes", "bytes", "count",
};

static char outDir[4096];               /* --out, or a temporary directory */
static int keepOut;

/* The small profile.  frames[0] is the innermost frame. */
#define PROGRAM "/usr/bin/R&D<1>"
/* (Designated, so that a field added to the struct is 0 here.) */
#define FRAME(a, fn, fl, ln, m) {.address = (a), .function = (fn), .file = (fl), .line = (ln), .module = (m)}
#define F_MAIN FRAME(0x401000, "main", "src/main.c", 10, PROGRAM)
#define F_PARSE FRAME(0x401100, "parse<T>&", "src/a&b.c", 20, PROGRAM)
#define F_PARSE2 FRAME(0x401108, "parse<T>&", "src/a&b.c", 22, PROGRAM)  /* F_PARSE's function */
#define F_ALLOC FRAME(0x401200, "alloc \"x\" 'y'", NULL, 0, PROGRAM)
#define F_NO_SYMBOL FRAME(0x7f0000001234, NULL, NULL, 0, "/lib/libz&<>.so.1")
#define F_NO_MODULE FRAME(0xdead, NULL, NULL, 0, NULL)
#define F_CONTROL FRAME(0x401300, "bad\001name\377", "\"q\".c", 3, PROGRAM)

static const ProfileFrameStruct stack1[] = {F_ALLOC, F_PARSE, F_MAIN};
static const ProfileFrameStruct stack2[] = {F_ALLOC, F_PARSE2, F_MAIN};
static const ProfileFrameStruct stack3[] = {F_NO_SYMBOL, F_MAIN};
static const ProfileFrameStruct stack4[] = {F_NO_MODULE, F_CONTROL, F_MAIN};
static const ProfileFrameStruct stack5[] = {F_MAIN};

/*                            allocations  bytes  peak  leaked  temporary */
static uint64_t values1[] = {3, 300, 100, 0, 1};
static uint64_t values2[] = {2, 200, 50, 50, 0};
static uint64_t values3[] = {1, 1000, 1000, 1000, 0};
static uint64_t values4[] = {4, 40, 0, 0, 4};
static uint64_t values5[] = {1, 8, 8, 8, 0};

static const ProfileStackStruct smallStacks[] = {
  {stack1, 3, values1},
  {stack2, 3, values2},
  {stack3, 2, values3},
  {stack4, 3, values4},
  {stack5, 1, values5},
};

static const ProfileSampleStruct smallSamples[] = {
  {1000, 100}, {2000, 300}, {2500, 250}, {4000, 1300}, {4100, 1200}, {7000, 1058},
};

static const ProfileStruct smallProfile = {
  .program = "R&D<1> \"q\" 'a'",
  .stacks = smallStacks,
  .stackCount = sizeof smallStacks / sizeof smallStacks[0],
  .samples = smallSamples,
  .sampleCount = sizeof smallSamples / sizeof smallSamples[0],
  .peakSample = 3,
  .durationNs = 8000,
};

/* The big profile, made by bigMake from a fixed seed. */
#define BIG_STACKS 5000
#define BIG_DEPTH 24
#define BIG_FUNCTIONS 300
#define BIG_SAMPLES 200000
static ProfileFrameStruct bigFrames[BIG_STACKS][BIG_DEPTH];
static ProfileStackStruct bigStacks[BIG_STACKS];
static uint64_t bigValues[BIG_STACKS][PROFILE_VALUE_LIMIT];
static ProfileSampleStruct bigSamples[BIG_SAMPLES];
static char bigNames[BIG_FUNCTIONS][32];
static ProfileStruct bigProfile;

static uint64_t seed = 0x2545f4914f6cdd1dULL;

static uint64_t random64(void)
{
  seed ^= seed << 13;
  seed ^= seed >> 7;
  seed ^= seed << 17;
  return seed;
}

static void bigMake(void)
{
  size_t s, d, f, peak = 0;
  uint64_t bytes = 0;
  for (f = 0; f < BIG_FUNCTIONS; f++)
    snprintf(bigNames[f], sizeof bigNames[f], "function_%zu<&>", f);
  for (s = 0; s < BIG_STACKS; s++) {
    size_t depth = 1 + random64() % BIG_DEPTH;
    for (d = 0; d < depth; d++) {
      /* Outer frames are drawn from fewer functions, so the tree shares them. */
      size_t outer = depth - 1 - d, choices = 2 + outer * outer * 2;
      ProfileFrameStruct *frame = &bigFrames[s][d];
      f = random64() % (choices < BIG_FUNCTIONS ? choices : BIG_FUNCTIONS);
      frame->address = 0x400000 + f * 64 + random64() % 4;
      frame->function = f % 17 == 16 ? NULL : bigNames[f];
      frame->file = f % 3 == 0 ? NULL : "big.c";
      frame->line = (unsigned)f;
      frame->module = f % 5 == 4 ? NULL : "/opt/big";
    }
    bigStacks[s].frames = bigFrames[s];
    bigStacks[s].depth = depth;
    bigStacks[s].values = bigValues[s];
    bigStacks[s].values[ProfileAllocations] = 1 + random64() % 100;
    bigStacks[s].values[ProfileBytes] = random64() % 3 == 0 ? random64() % 1000000 : random64() % 100;
    bigStacks[s].values[ProfilePeak] = random64() % 5000;
    bigStacks[s].values[ProfileLeaked] = random64() % 2 ? 0 : random64() % 300;
    bigStacks[s].values[ProfileTemporary] = random64() % 7;
  }
  for (s = 0; s < BIG_SAMPLES; s++) {
    uint64_t r = random64() % 1000;     /* a walk that drifts up */
    if (r >= 490)
      bytes += r - 490;
    else
      bytes = bytes > 490 - r ? bytes - (490 - r) : 0;
    bigSamples[s].ns = 1000 * s + random64() % 1000;
    bigSamples[s].bytes = bytes;
    if (bytes > bigSamples[peak].bytes)
      peak = s;
  }
  bigProfile.program = "big";
  bigProfile.stacks = bigStacks;
  bigProfile.stackCount = BIG_STACKS;
  bigProfile.samples = bigSamples;
  bigProfile.sampleCount = BIG_SAMPLES;
  bigProfile.peakSample = peak;
  bigProfile.durationNs = 1000 * (uint64_t)BIG_SAMPLES;
}

/* hexString -- s's bytes in hex, "-" for NULL: expect.txt has no
 * quoting to get wrong */
static void hexString(FILE *out, const char *s)
{
  if (s == NULL) {
    fputs(" -", out);
    return;
  }
  fputs(" x", out);
  for (; *s != '\0'; s++)
    fprintf(out, "%02x", (unsigned char)*s);
}

/* expectWrite -- the profile in plain words for tests/tools/profile.py */
static void expectWrite(FILE *out, const char *name, const ProfileStruct *profile)
{
  size_t s, d, v;
  fprintf(out, "profile %s\nprogram", name);
  hexString(out, profile->program);
  fprintf(out, "\nduration %llu\npeak %zu\n", (unsigned long long)profile->durationNs,
          profile->peakSample);
  for (s = 0; s < profile->sampleCount; s++)
    fprintf(out, "sample %llu %llu\n", (unsigned long long)profile->samples[s].ns,
            (unsigned long long)profile->samples[s].bytes);
  for (s = 0; s < profile->stackCount; s++) {
    const ProfileStackStruct *stack = &profile->stacks[s];
    fputs("stack", out);
    for (v = 0; v < PROFILE_VALUE_LIMIT; v++)
      fprintf(out, " %llu", (unsigned long long)stack->values[v]);
    fputc('\n', out);
    for (d = 0; d < stack->depth; d++) {
      const ProfileFrameStruct *f = &stack->frames[d];
      fprintf(out, "frame %llx", (unsigned long long)f->address);
      hexString(out, f->function);
      hexString(out, f->file);
      fprintf(out, " %u", f->line);
      hexString(out, f->module);
      fputc('\n', out);
    }
  }
  fputs("end\n", out);
}

static char *outPath(const char *name)
{
  static char path[4200];
  snprintf(path, sizeof path, "%s/%s", outDir, name);
  return path;
}

/* writeFile -- run a writer into DIR/name and return what it wrote */
typedef int (*WriterFunction)(FILE *, const ProfileStruct *, int, const char *);

static unsigned char *slurp(const char *path, size_t *size)
{
  FILE *in = fopen(path, "rb");
  unsigned char *bytes;
  long n;
  assert_non_null(in);
  assert_int_equal(fseek(in, 0, SEEK_END), 0);
  n = ftell(in);
  rewind(in);
  bytes = malloc((size_t)n + 1);
  assert_non_null(bytes);
  assert_int_equal(fread(bytes, 1, (size_t)n, in), (size_t)n);
  bytes[n] = '\0';
  fclose(in);
  *size = (size_t)n;
  return bytes;
}

static unsigned char *flameFile(const char *name, const ProfileStruct *profile, ProfileValue value,
                                const char *title, size_t *size)
{
  FILE *out = fopen(outPath(name), "w");
  assert_non_null(out);
  assert_int_equal(ProfileWriteFlame(out, profile, value, title), 0);
  assert_int_equal(fclose(out), 0);
  return slurp(outPath(name), size);
}

static unsigned char *chartFile(const char *name, const ProfileStruct *profile, const char *title,
                                size_t *size)
{
  FILE *out = fopen(outPath(name), "w");
  assert_non_null(out);
  assert_int_equal(ProfileWriteChart(out, profile, title), 0);
  assert_int_equal(fclose(out), 0);
  return slurp(outPath(name), size);
}

/* pprofRead -- write the profile with ProfileWritePprof, gunzip and
 * unpack it */
static Perftools__Profiles__Profile *pprofRead(const char *name, const ProfileStruct *profile)
{
  FILE *out = fopen(outPath(name), "w");
  unsigned char *gz, *raw;
  size_t gzSize, rawSize = 1 << 20;
  z_stream z;
  int r;
  Perftools__Profiles__Profile *message;
  assert_non_null(out);
  assert_int_equal(ProfileWritePprof(out, profile), 0);
  assert_int_equal(fclose(out), 0);
  gz = slurp(outPath(name), &gzSize);
  assert_true(gzSize > 18);
  assert_int_equal(gz[0], 0x1f);        /* gzip's magic */
  assert_int_equal(gz[1], 0x8b);
  memset(&z, 0, sizeof z);
  assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
  raw = malloc(rawSize);
  assert_non_null(raw);
  z.next_in = gz;
  z.avail_in = (uInt)gzSize;
  for (;;) {
    z.next_out = raw + z.total_out;
    z.avail_out = (uInt)(rawSize - z.total_out);
    r = inflate(&z, Z_NO_FLUSH);
    if (r == Z_STREAM_END)
      break;
    assert_int_equal(r, Z_OK);
    rawSize *= 2;
    raw = realloc(raw, rawSize);
    assert_non_null(raw);
  }
  assert_int_equal(z.avail_in, 0);      /* one member, nothing after it */
  message = perftools__profiles__profile__unpack(NULL, z.total_out, raw);
  inflateEnd(&z);
  assert_non_null(message);
  free(raw);
  free(gz);
  return message;
}

static int contains(const unsigned char *text, const char *s)
{
  return strstr((const char *)text, s) != NULL;
}

/* profile-flame-small: the flame graph of the small profile escapes
 * every string and names unsymbolised frames by address and module */
static void flame_small(void **state)
{
  size_t size;
  unsigned char *svg = flameFile("flame-bytes.svg", &smallProfile, ProfileBytes, "Bytes & <more>", &size);
  (void)state;
  assert_true(contains(svg, "<svg "));
  assert_true(contains(svg, "</svg>\n"));
  assert_true(contains(svg, "Bytes &amp; &lt;more&gt;"));
  assert_true(contains(svg, "R&amp;D&lt;1&gt; &quot;q&quot; &apos;a&apos;"));
  assert_true(contains(svg, "parse&lt;T&gt;&amp;"));
  assert_true(contains(svg, "alloc &quot;x&quot; &apos;y&apos;"));
  assert_true(contains(svg, "bad\xef\xbf\xbdname\xef\xbf\xbd"));   /* U+FFFD twice */
  assert_true(contains(svg, "0x7f0000001234 in libz&amp;&lt;&gt;.so.1"));
  assert_true(contains(svg, "<title>0xdead\n"));
  assert_false(contains(svg, "R&D"));
  assert_false(contains(svg, "\001"));
  assert_true(contains(svg, "total 1,548 bytes in 5 stacks"));
  free(svg);
  svg = flameFile("flame-allocations.svg", &smallProfile, ProfileAllocations, NULL, &size);
  assert_true(contains(svg, "allocations, total 11 in 5 stacks"));
  free(svg);
}

/* profile-flame-big: 5,000 stacks; frames too narrow are left out and counted */
static void flame_big(void **state)
{
  size_t size;
  unsigned char *svg = flameFile("flame-big.svg", &bigProfile, ProfileBytes, "big", &size);
  (void)state;
  assert_true(contains(svg, "</svg>\n"));
  assert_true(contains(svg, "pixels left out -->"));
  free(svg);
}

/* profile-chart: the peak is the most bytes, whatever peakSample says */
static void chart_small(void **state)
{
  size_t size;
  unsigned char *svg = chartFile("chart.svg", &smallProfile, "Heap <&> of \"R&D\"", &size);
  (void)state;
  assert_true(contains(svg, "Heap &lt;&amp;&gt; of &quot;R&amp;D&quot;"));
  assert_true(contains(svg, "data-bytes=\"1300\" data-ns=\"4000\""));
  assert_true(contains(svg, "peak 1.27 KiB (1,300 bytes) at 4 \xc2\xb5s"));
  assert_true(contains(svg, "time (\xc2\xb5s)"));
  assert_true(contains(svg, "heap in use (KiB)"));
  free(svg);
}

static void chart_big(void **state)
{
  size_t size;
  unsigned char *svg = chartFile("chart-big.svg", &bigProfile, NULL, &size);
  char peak[64];
  (void)state;
  snprintf(peak, sizeof peak, "data-bytes=\"%llu\"",
           (unsigned long long)bigSamples[bigProfile.peakSample].bytes);
  assert_true(contains(svg, peak));
  assert_true(contains(svg, "time (ms)"));
  /* a point or four a pixel column, not a point a sample */
  assert_true(size < 200000);
  free(svg);
}

/* checkPprof -- each sample has the stack's values and its leaf's
 * function; the string table starts with "" */
static void checkPprof(const Perftools__Profiles__Profile *p, const ProfileStruct *profile)
{
  size_t s, n = 0, v;
  assert_true(p->n_string_table > 0);
  assert_string_equal(p->string_table[0], "");
  assert_int_equal(p->n_sample_type, PROFILE_VALUE_LIMIT);
  for (v = 0; v < PROFILE_VALUE_LIMIT; v++) {
    assert_string_equal(p->string_table[p->sample_type[v]->type], ProfileValueName[v]);
    assert_string_equal(p->string_table[p->sample_type[v]->unit], ProfileValueUnit[v]);
  }
  for (s = 0; s < profile->stackCount; s++) {
    const ProfileStackStruct *stack = &profile->stacks[s];
    const Perftools__Profiles__Sample *sample;
    const Perftools__Profiles__Location *leaf;
    int any = 0;
    for (v = 0; v < PROFILE_VALUE_LIMIT; v++)
      any |= stack->values[v] != 0;
    if (!any)
      continue;
    assert_true(n < p->n_sample);
    sample = p->sample[n++];
    assert_int_equal(sample->n_value, PROFILE_VALUE_LIMIT);
    for (v = 0; v < PROFILE_VALUE_LIMIT; v++)
      assert_int_equal(sample->value[v], stack->values[v]);
    assert_int_equal(sample->n_location_id, stack->depth);
    if (stack->depth == 0)
      continue;
    assert_true(sample->location_id[0] >= 1 && sample->location_id[0] <= p->n_location);
    leaf = p->location[sample->location_id[0] - 1];
    assert_int_equal(leaf->id, sample->location_id[0]);
    assert_int_equal(leaf->address, stack->frames[0].address);
    if (stack->frames[0].function == NULL)
      assert_int_equal(leaf->n_line, 0);
    else {
      const Perftools__Profiles__Function *f;
      assert_int_equal(leaf->n_line, 1);
      f = p->function[leaf->line[0]->function_id - 1];
      assert_int_equal(f->id, leaf->line[0]->function_id);
      assert_string_equal(p->string_table[f->name], stack->frames[0].function);
    }
  }
  assert_int_equal(n, p->n_sample);
}

/* profile-pprof-small, -big: our own reading of the bytes */
static void pprof_small(void **state)
{
  Perftools__Profiles__Profile *p = pprofRead("profile.pb.gz", &smallProfile);
  (void)state;
  checkPprof(p, &smallProfile);
  assert_int_equal(p->n_location, 7);   /* distinct addresses */
  assert_int_equal(p->n_function, 4);   /* main, parse<T>&, alloc, bad.name. */
  assert_int_equal(p->n_mapping, 2);    /* the program, libz; 0xdead has none */
  assert_string_equal(p->string_table[p->mapping[0]->filename], PROGRAM);
  assert_int_equal(p->duration_nanos, 8000);
  assert_int_equal(p->n_comment, 1);
  assert_string_equal(p->string_table[p->comment[0]], "program: R&D<1> \"q\" 'a'");
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void pprof_big(void **state)
{
  Perftools__Profiles__Profile *p = pprofRead("profile-big.pb.gz", &bigProfile);
  (void)state;
  checkPprof(p, &bigProfile);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* profile-empty: no stacks, no samples */
static void empty(void **state)
{
  static const ProfileStruct none = {.program = NULL};
  size_t size;
  unsigned char *svg = flameFile("flame-empty.svg", &none, ProfileLeaked, NULL, &size);
  Perftools__Profiles__Profile *p;
  (void)state;
  assert_true(contains(svg, "total 0 bytes in 0 stacks"));
  free(svg);
  svg = chartFile("chart-empty.svg", &none, NULL, &size);
  assert_true(contains(svg, ">no samples<"));
  free(svg);
  p = pprofRead("profile-empty.pb.gz", &none);
  assert_int_equal(p->n_sample, 0);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* profile-full: a device with no room: -1 and ENOSPC from each writer */
static void full(void **state)
{
  FILE *out = fopen("/dev/full", "w");
  (void)state;
  if (out == NULL)
    skip();
  errno = 0;
  assert_int_equal(ProfileWriteFlame(out, &smallProfile, ProfileBytes, NULL), -1);
  assert_int_equal(errno, ENOSPC);
  clearerr(out);
  errno = 0;
  assert_int_equal(ProfileWritePprof(out, &smallProfile), -1);
  assert_int_equal(errno, ENOSPC);
  clearerr(out);
  errno = 0;
  assert_int_equal(ProfileWriteChart(out, &smallProfile, NULL), -1);
  assert_int_equal(errno, ENOSPC);
  fclose(out);
}

/* profile-bad-value: a value that is not one */
static void bad_value(void **state)
{
  FILE *out = fopen(outPath("bad.svg"), "w");
  (void)state;
  assert_non_null(out);
  errno = 0;
  assert_int_equal(ProfileWriteFlame(out, &smallProfile, PROFILE_VALUE_LIMIT, NULL), -1);
  assert_int_equal(errno, EINVAL);
  fclose(out);
  unlink(outPath("bad.svg"));
}

static void removeOut(void)
{
  static const char *const names[] = {
    "flame-bytes.svg", "flame-allocations.svg", "flame-big.svg", "chart.svg", "chart-big.svg",
    "profile.pb.gz", "profile-big.pb.gz", "flame-empty.svg", "chart-empty.svg",
    "profile-empty.pb.gz", "expect.txt",
  };
  size_t i;
  for (i = 0; i < sizeof names / sizeof names[0]; i++)
    unlink(outPath(names[i]));
  rmdir(outDir);
}

int main(int argc, char **argv)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(flame_small),
    cmocka_unit_test(flame_big),
    cmocka_unit_test(chart_small),
    cmocka_unit_test(chart_big),
    cmocka_unit_test(pprof_small),
    cmocka_unit_test(pprof_big),
    cmocka_unit_test(empty),
    cmocka_unit_test(full),
    cmocka_unit_test(bad_value),
  };
  FILE *expect;
  int failed;

  if (argc == 3 && strcmp(argv[1], "--out") == 0) {
    snprintf(outDir, sizeof outDir, "%s", argv[2]);
    keepOut = 1;
    mkdir(outDir, 0777);
  } else if (argc == 1) {
    snprintf(outDir, sizeof outDir, "%s/test_profile.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(outDir) == NULL) {
      perror("mkdtemp");
      return 1;
    }
  } else {
    fprintf(stderr, "usage: %s [--out DIR]\n", argv[0]);
    return 2;
  }
  bigMake();
  failed = cmocka_run_group_tests(tests, NULL, NULL);
  expect = fopen(outPath("expect.txt"), "w");
  if (expect == NULL) {
    perror(outPath("expect.txt"));
    return 1;
  }
  expectWrite(expect, "small", &smallProfile);
  expectWrite(expect, "big", &bigProfile);
  fclose(expect);
  if (!keepOut)
    removeOut();
  return failed != 0;
}
