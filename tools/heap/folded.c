/* <tools/heap/folded.c> -- folded stacks: one line a stack, its frames
 * outermost first separated by semicolons, then a space and its value,
 * as every flame-graph tool reads them ("main;parse;strdup 42")
 *
 * .design: design/heap.txt .heap
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "textsafe.h"
#include "profile.h"

const char *const ProfileValueName[PROFILE_VALUE_LIMIT] = {
  "allocations", "bytes", "peak", "leaked", "temporary"
};

const char *const ProfileValueUnit[PROFILE_VALUE_LIMIT] = {
  "count", "bytes", "bytes", "bytes", "count"
};

/* putFrame -- a frame's name, with the characters that would break the
 * line (the separator, a newline) made underscores */
static void putFrame(FILE *out, const ProfileFrameStruct *frame)
{
  const char *name = frame->function;
  char hex[32];
  if (name == NULL) {
    snprintf(hex, sizeof hex, "0x%" PRIx64, frame->address);
    name = hex;
  }
  for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; ) {
    size_t n;                   /* a control or a byte of bad UTF-8 too: .export.text */
    if (TextUnsafe(p, strlen((const char *)p), &n) || *p == ';')
      putc('_', out);
    else
      fwrite(p, 1, n, out);
    p += n;
  }
}

/* ProfileWriteFolded -- the stacks whose value is not 0 */
int ProfileWriteFolded(FILE *out, const ProfileStruct *profile, ProfileValue value)
{
  for (size_t i = 0; i < profile->stackCount; ++i) {
    const ProfileStackStruct *s = &profile->stacks[i];
    if (s->values[value] == 0)
      continue;
    for (size_t f = s->depth; f > 0; --f) {
      putFrame(out, &s->frames[f - 1]);
      if (f > 1)
        putc(';', out);
    }
    if (s->depth == 0)
      fputs("[unknown]", out);
    fprintf(out, " %" PRIu64 "\n", s->values[value]);
  }
  if (fflush(out) != 0 || ferror(out)) {
    if (errno == 0)
      errno = EIO;
    return -1;
  }
  return 0;
}
