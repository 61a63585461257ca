/* <tools/common/textsafe.c> -- a log's strings made safe to print
 *
 * .design: design/export.txt .export.text
 */

#include "textsafe.h"
#include "eventread.h"

#include <string.h>

size_t TextUtf8Length(const unsigned char *s, size_t avail)
{
  return EventUtf8Length(s, avail);   /* the text line's own test */
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
