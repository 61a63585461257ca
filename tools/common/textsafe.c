/* <tools/common/textsafe.c> -- a log's strings made safe to print
 *
 * .design: design/telemetry.txt .export.text
 */

#include "textsafe.h"

#include <string.h>

size_t TextUtf8Length(const unsigned char *s, size_t avail)
{
  unsigned c = s[0];
  size_t n, i;
  unsigned lo = 0x80, hi = 0xBF;       /* the second byte's range */
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else
    return 0;
  if (avail < n || s[1] < lo || s[1] > hi)
    return 0;
  for (i = 2; i < n; ++i)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0;
  return n;
}

int TextUnsafe(const unsigned char *s, size_t avail, size_t *lengthReturn)
{
  size_t n;
  *lengthReturn = 1;
  if (s[0] < 0x20 || s[0] == 0x7F)
    return 1;
  if (s[0] < 0x80)
    return 0;
  n = TextUtf8Length(s, avail);
  if (n == 0 || (s[0] == 0xC2 && s[1] < 0xA0))   /* invalid, or C1 */
    return 1;
  *lengthReturn = n;
  return 0;
}

/* put -- s escaped, through put1 */
static void put(const char *s, void (*put1)(void *, const char *, size_t), void *closure)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t len = strlen(s), i = 0;
  while (i < len) {
    size_t n;
    if (TextUnsafe(p + i, len - i, &n) || p[i] == '\\') {
      char esc[5] = {'\\', '\\', 0, 0, 0};
      if (p[i] != '\\') {
        esc[1] = (char)('0' + (p[i] >> 6));
        esc[2] = (char)('0' + ((p[i] >> 3) & 7));
        esc[3] = (char)('0' + (p[i] & 7));
      }
      put1(closure, esc, strlen(esc));
    } else
      put1(closure, (const char *)p + i, n);
    i += n;
  }
}

static void putFile(void *closure, const char *s, size_t n)
{
  fwrite(s, 1, n, closure);
}

void TextPut(FILE *f, const char *s)
{
  put(s, putFile, f);
}

typedef struct BufStruct {
  char *buf;
  size_t size, used;
} BufStruct;

static void putBuf(void *closure, const char *s, size_t n)
{
  BufStruct *b = closure;
  if (b->used + n < b->size) {
    memcpy(b->buf + b->used, s, n);
    b->used += n;
  } else
    b->size = b->used + 1;      /* full: nothing more */
}

char *TextTo(char *buf, size_t size, const char *s)
{
  BufStruct b = {buf, size, 0};
  if (size == 0)
    return buf;
  put(s, putBuf, &b);
  buf[b.used] = '\0';
  return buf;
}
