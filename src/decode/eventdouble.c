/* <src/decode/eventdouble.c> -- the event layer: a double as "%.17g" prints it
 *
 * .design: design/index.txt .req.share design/tools.txt .eventcnv.line
 *
 * See eventdecode.h for the interface.  string.h only, as eventdecode.c:
 * the traceback formats events inside a signal handler, where printf
 * may not be called, and a D field's text is the same in every reader.
 */

#include "eventdecode.h"

#include <string.h>

/* A double's text, as printf's "%.17g" would print it, but "nan" for NaN
 *
 * A finite double is m * 2^e exactly, which is a finite decimal: with a
 * big integer in base 10^9 this finds every digit, then rounds to 17
 * significant digits half-to-even, as glibc does.  The big integer is
 * on the stack: at most 767 digits (the smallest subnormal), in 384
 * bytes; of its digits only the first 18 are kept, and whether any
 * after them is not 0.
 */

#define BIG_LIMBS   96                   /* base 10^9 limbs: 864 digits */
#define BIG_BASE    1000000000u
#define SIGNIFICANT 17

static unsigned bigMultiply(uint32_t *limbs, unsigned n, uint32_t factor)
{
  uint64_t carry = 0;
  unsigned i;
  for (i = 0; i < n; ++i) {
    uint64_t t = (uint64_t)limbs[i] * factor + carry;
    limbs[i] = (uint32_t)(t % BIG_BASE);
    carry = t / BIG_BASE;
  }
  while (carry != 0 && n < BIG_LIMBS) {
    limbs[n++] = (uint32_t)(carry % BIG_BASE);
    carry /= BIG_BASE;
  }
  return n;
}

/* doubleExact -- |m * 2^e| exactly, as a big integer in limbs (base
 * 10^9, least significant first) times 10^*decExpReturn; returns the
 * number of limbs */
static unsigned doubleExact(uint64_t mantissa, int e, uint32_t *limbs, int *decExpReturn)
{
  unsigned n;
  limbs[0] = (uint32_t)(mantissa % BIG_BASE);
  limbs[1] = (uint32_t)(mantissa / BIG_BASE % BIG_BASE);
  limbs[2] = (uint32_t)(mantissa / BIG_BASE / BIG_BASE);
  n = limbs[2] != 0 ? 3 : limbs[1] != 0 ? 2 : 1;
  *decExpReturn = 0;
  if (e > 0) {
    for (int left = e; left > 0; left -= 29)
      n = bigMultiply(limbs, n, (uint32_t)1 << (left < 29 ? left : 29));
  } else if (e < 0) {
    for (int left = -e; left > 0; left -= 13) {   /* m * 2^e = m * 5^-e / 10^-e */
      uint32_t factor = 1;
      for (int j = 0; j < (left < 13 ? left : 13); ++j)
        factor *= 5;
      n = bigMultiply(limbs, n, factor);
    }
    *decExpReturn = e;
  }
  return n;
}

/* doubleDigits -- the first SIGNIFICANT decimal digits of the big
 * integer limbs[0 .. n-1] into digits, rounded half to even; returns
 * how many (trailing zeros dropped), and the exponent of the first
 * digit in *xReturn, given the integer is times 10^decExp */
static unsigned doubleDigits(const uint32_t *limbs, unsigned n, int decExp, char *digits,
                             int *xReturn)
{
  unsigned nd = 0, i;
  int sticky = 0;                     /* a digit after the first ones is not 0 */
  for (i = n; i > 0; --i) {
    uint32_t limb = limbs[i - 1];
    char group[9];
    unsigned j, start = 0;
    for (j = 9; j > 0; --j) {
      group[j - 1] = (char)('0' + limb % 10);
      limb /= 10;
    }
    if (i == n)
      while (start < 8 && group[start] == '0')
        ++start;
    for (j = start; j < 9; ++j) {
      if (nd < SIGNIFICANT + 1)
        digits[nd] = group[j];
      else if (group[j] != '0')
        sticky = 1;
      ++nd;
    }
  }
  *xReturn = (int)nd - 1 + decExp;
  if (nd > SIGNIFICANT) {
    int up = digits[SIGNIFICANT] > '5'
             || (digits[SIGNIFICANT] == '5' && (sticky || ((digits[SIGNIFICANT - 1] - '0') & 1)));
    nd = SIGNIFICANT;
    if (up) {
      i = nd;
      while (i > 0 && digits[i - 1] == '9') {
        digits[i - 1] = '0';
        --i;
      }
      if (i > 0) {
        ++digits[i - 1];
      } else {
        digits[0] = '1';        /* 99...9 became 100...0 */
        ++*xReturn;
      }
    }
  }
  while (nd > 1 && digits[nd - 1] == '0')
    --nd;
  return nd;
}

/* digitsText -- nd digits whose first has exponent x, as %g writes
 * them, at o: scientific if the exponent is below -4 or at least the
 * precision.  Returns the end. */
static char *digitsText(char *o, const char *digits, unsigned nd, int x)
{
  unsigned i;
  if (x < -4 || x >= SIGNIFICANT) {
    unsigned e = (unsigned)(x < 0 ? -x : x);   /* at most 324: 2 or 3 digits */
    *o++ = digits[0];
    if (nd > 1) {
      *o++ = '.';
      memcpy(o, digits + 1, nd - 1);
      o += nd - 1;
    }
    *o++ = 'e';
    *o++ = x < 0 ? '-' : '+';
    if (e >= 100)
      *o++ = (char)('0' + e / 100);
    *o++ = (char)('0' + e / 10 % 10);
    *o++ = (char)('0' + e % 10);
  } else if (x >= 0) {
    for (i = 0; i <= (unsigned)x; ++i)
      *o++ = i < nd ? digits[i] : '0';
    if (nd > (unsigned)x + 1) {
      *o++ = '.';
      memcpy(o, digits + x + 1, nd - (unsigned)x - 1);
      o += nd - (unsigned)x - 1;
    }
  } else {
    *o++ = '0';
    *o++ = '.';
    for (i = 0; i < (unsigned)(-x - 1); ++i)
      *o++ = '0';
    memcpy(o, digits, nd);
    o += nd;
  }
  return o;
}

/* doubleText -- d's text at o, at most EVENT_DOUBLE_TEXT_MAX - 1
 * characters; returns the end */
static char *doubleText(char *o, double d)
{
  uint64_t bits, mantissa;
  unsigned expField, n, nd;
  int e, decExp, x;
  uint32_t limbs[BIG_LIMBS];
  char digits[SIGNIFICANT + 1];
  const char *word;

  memcpy(&bits, &d, sizeof bits);
  expField = (unsigned)(bits >> 52 & 0x7FF);
  mantissa = bits & (((uint64_t)1 << 52) - 1);
  if (expField == 0x7FF) {
    word = mantissa != 0 ? "nan" : bits >> 63 ? "-inf" : "inf";
    memcpy(o, word, strlen(word));
    return o + strlen(word);
  }
  if (bits >> 63)
    *o++ = '-';
  if (expField == 0) {
    e = -1074;
  } else {
    mantissa |= (uint64_t)1 << 52;
    e = (int)expField - 1075;
  }
  if (mantissa == 0) {
    *o++ = '0';
    return o;
  }
  n = doubleExact(mantissa, e, limbs, &decExp);
  nd = doubleDigits(limbs, n, decExp, digits, &x);
  return digitsText(o, digits, nd, x);
}

/* EventFormatDouble -- d's text into buf, as much as fits with a NUL */
size_t EventFormatDouble(char *buf, size_t size, double d)
{
  char text[EVENT_DOUBLE_TEXT_MAX];
  size_t n = (size_t)(doubleText(text, d) - text);
  if (size > 0) {               /* as much as fits with a NUL, as snprintf */
    size_t keep = n < size ? n : size - 1;
    memcpy(buf, text, keep);
    buf[keep] = '\0';
  }
  return n;
}
