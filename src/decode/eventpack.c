/* <src/decode/eventpack.c> -- the compact form of a block's events: encoder and decoder
 *
 * .design: design/runtime.txt .compact
 *
 * The data of a compact block (.compact.encoding):
 *
 *   varint  the length of the raw events it expands to
 *   then, per event:
 *     tag     1 byte: a code the block has defined (0, 1, ...), or
 *             0xFF: a definition follows, and it is the next index:
 *               varint code, 1 byte field count, 1 byte per field type
 *     clock   varint, zigzag of the difference from the block's
 *             previous event's clock (the first: from 0)
 *     fields  by type: INT4, INT8  varint, zigzag of the difference from
 *                                  the same field of the code's previous
 *                                  event in the block (the first: from 0)
 *                      RAW8        8 bytes as they are (a double)
 *                      STRING      varint n, n bytes (the NUL is not kept)
 *
 * Every difference wraps (modulo 2^32 or 2^64), so any value
 * round-trips.  Depends on string.h only (eventread.h's event layer).
 */

#include <string.h>

#include "eventpack.h"
#include "eventdecode.h"

enum { TYPE_INT4 = 1, TYPE_INT8, TYPE_RAW8, TYPE_STRING };

#define TAG_DEFINE 0xFFu
#define VARINT_MAX 10                   /* bytes in a 64-bit varint */

/* Room an event may need beyond its raw length: tag, a definition,
 * the clock and every field's varint */
#define EVENT_PACK_SLACK (1 + VARINT_MAX + 1 + EVENT_PARAM_MAX + VARINT_MAX * (2 + EVENT_PARAM_MAX))

static inline unsigned char *putVarint(unsigned char *o, uint64_t v)
{
  if (v < 0x4000) {                     /* one or two bytes, most of them */
    if (v < 0x80) {
      *o = (unsigned char)v;
      return o + 1;
    }
    o[0] = (unsigned char)(v | 0x80);
    o[1] = (unsigned char)(v >> 7);
    return o + 2;
  }
  while (v >= 0x80) {
    *o++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *o++ = (unsigned char)v;
  return o;
}

/* varintLong -- getVarint's varints of more than one byte */
static int varintLong(const unsigned char *in, size_t size, size_t *pos, uint64_t *vReturn)
{
  uint64_t v = 0;
  unsigned shift = 0;
  size_t p = *pos;
  for (;;) {
    unsigned b;
    if (p >= size || shift >= 64)
      return 0;
    b = in[p++];
    if (shift == 63 && b > 1)
      return 0;
    v |= (uint64_t)(b & 0x7F) << shift;
    if (b < 0x80)
      break;
    shift += 7;
  }
  *pos = p;
  *vReturn = v;
  return 1;
}

/* getVarint -- a varint at in[*pos .. size); 0 if cut short or too
 * long.  Most are one byte, taken here without a loop or a call. */
static inline int getVarint(const unsigned char *in, size_t size, size_t *pos, uint64_t *vReturn)
{
  if (*pos < size && in[*pos] < 0x80) {
    *vReturn = in[(*pos)++];
    return 1;
  }
  return varintLong(in, size, pos, vReturn);
}

static uint64_t zig64(uint64_t d) { return d << 1 ^ (0 - (d >> 63)); }
static uint64_t unzig64(uint64_t z) { return z >> 1 ^ (0 - (z & 1)); }
static uint32_t zig32(uint32_t d) { return d << 1 ^ (0 - (d >> 31)); }
static uint32_t unzig32(uint32_t z) { return z >> 1 ^ (0 - (z & 1)); }

/* typeWidth -- raw bytes of a field type (a string's: 0 here) */
static unsigned typeWidth(unsigned type)
{
  return type == TYPE_INT4 ? 4 : type == TYPE_INT8 || type == TYPE_RAW8 ? 8 : 0;
}

/* codeFixed -- a code's raw length without its string's characters
 * (its NUL included), or 0 if its types are not sound */
static unsigned codeFixed(const EventPackCodeStruct *c)
{
  unsigned fixed = EVENT_HEADER_LEN;
  for (unsigned i = 0; i < c->fieldCount; ++i) {
    if (c->types[i] < TYPE_INT4 || c->types[i] > TYPE_STRING
        || (c->types[i] == TYPE_STRING && i + 1 != c->fieldCount))
      return 0;
    fixed += c->types[i] == TYPE_STRING ? 1 : typeWidth(c->types[i]);
  }
  return fixed;
}

static unsigned codeHash(unsigned code)
{
  return (code * 0x9E37u) >> 8 & 0xFFu;
}

/* encodeCode -- the block's entry for code, found by its hash, or made
 * if it is new, with its definition at *oIO; NULL if the registry does
 * not have it or the block is full */
static __attribute__((noinline)) EventPackCodeStruct *encodeCode(EventPackStateStruct *state,
                                                                  const EventRegistryStruct *registry,
                                                                  unsigned code, unsigned char **oIO)
{
  static const unsigned char widthType[9] = {0, 0, 0, 0, TYPE_INT4, 0, 0, 0, TYPE_INT8};
  unsigned h = codeHash(code);
  const EventDescStruct *desc;
  EventPackCodeStruct *c;
  unsigned char *o = *oIO;
  while (state->hash[h] != 0) {
    c = &state->codes[state->hash[h] - 1];
    if (c->code == code) {
      *o++ = (unsigned char)c->tag;
      *oIO = o;
      return c;
    }
    h = (h + 1) & 0xFFu;
  }
  desc = EventRegistryLookup(registry, code);
  if (desc == NULL || state->count == EVENT_PACK_CODES)
    return NULL;
  c = &state->codes[state->count];
  c->code = code;
  c->tag = state->count;
  c->fieldCount = desc->paramCount;
  for (unsigned i = 0; i < c->fieldCount; ++i) {
    const EventTypeStruct *type = EventTypeOf(desc->format[i]);
    if (type == NULL)
      return NULL;
    c->types[i] = type->form == EventTypeSTRING ? TYPE_STRING
                  : type->form == EventTypeDOUBLE ? TYPE_RAW8
                  : widthType[EventTypeSize(type, sizeof(EventP), sizeof(EventW))];
    c->last[i] = 0;
  }
  c->fixed = codeFixed(c);
  if (c->fixed == 0)
    return NULL;
  c->string = c->fieldCount > 0 && c->types[c->fieldCount - 1] == TYPE_STRING;
  c->words = c->ints = 1;
  for (unsigned i = 0; i < c->fieldCount; ++i) {
    c->words = c->words && c->types[i] == TYPE_INT8;
    c->ints = c->ints && (c->types[i] == TYPE_INT4 || c->types[i] == TYPE_INT8);
  }
  state->hash[h] = (uint8_t)(++state->count);
  *o++ = TAG_DEFINE;
  o = putVarint(o, code);
  *o++ = (unsigned char)c->fieldCount;
  memcpy(o, c->types, c->fieldCount);
  *oIO = o + c->fieldCount;
  return c;
}

/* putDelta -- at o, the varint of the zigzag of the difference of v
 * from *lastIO, which becomes v.  *lastIO is stored before the bytes,
 * which may alias anything, so that it is not loaded again. */
static inline unsigned char *putDelta(unsigned char *o, uint64_t v, uint64_t *lastIO)
{
  uint64_t d = v - *lastIO;
  *lastIO = v;
  return putVarint(o, zig64(d));
}

/* putDelta32 -- putDelta of a 4-byte field, modulo 2^32 */
static inline unsigned char *putDelta32(unsigned char *o, uint32_t v, uint64_t *lastIO)
{
  uint32_t d = v - (uint32_t)*lastIO;
  *lastIO = v;
  return putVarint(o, zig32(d));
}

/* encodeFields -- the fields after its header, at q, of an event that
 * has fields other than integers, each by its type's rule
 * (.compact.encoding), at o; returns the end of what it wrote.  Kept
 * out of the encoder's loop, which would otherwise hold more registers
 * than the machine has. */
static __attribute__((noinline)) unsigned char *encodeFields(EventPackCodeStruct *c,
                                                             const unsigned char *q,
                                                             size_t length, unsigned char *o)
{
  uint64_t *last = c->last;
  for (unsigned i = 0; i < c->fieldCount; ++i) {
    switch (c->types[i]) {
    case TYPE_INT4: {
      uint32_t v;
      memcpy(&v, q, 4);
      o = putDelta32(o, v, &last[i]);
      q += 4;
      break;
    }
    case TYPE_INT8: {
      uint64_t v;
      memcpy(&v, q, 8);
      o = putDelta(o, v, &last[i]);
      q += 8;
      break;
    }
    case TYPE_RAW8:
      memcpy(o, q, 8);
      o += 8;
      q += 8;
      break;
    default: {                          /* TYPE_STRING, last */
      size_t n = length - c->fixed;
      o = putVarint(o, n);
      memcpy(o, q, n);
      o += n;
      break;
    }
    }
  }
  return o;
}

#define NEAR_LIMIT 16                   /* codes at hand, by their low bits */

/* EventPackEncode -- eventpack.h.  design/stream.txt .compact.encoding
 * A block's events have few codes, usually numbered close together, so
 * the codes met are kept at hand by their low bits, and the hash is
 * searched only when two share them (.compact.encode.cost). */
size_t EventPackEncode(EventPackStateStruct *state, const EventRegistryStruct *registry,
                       const unsigned char *raw, size_t rawSize,
                       unsigned char *out, size_t outLimit)
{
  unsigned char *o = out;
  const unsigned char *room;            /* o past which an event may not fit */
  const unsigned char *p = raw, *rawEnd = raw + rawSize;
  uint64_t prevClock = 0;
  EventPackCodeStruct *near[NEAR_LIMIT] = {NULL};

  state->count = 0;
  memset(state->hash, 0, sizeof state->hash);
  if (outLimit < VARINT_MAX + EVENT_PACK_SLACK || rawSize > EVENT_BLOCK_LENGTH_MAX)
    return 0;
  room = out + outLimit - EVENT_PACK_SLACK;
  o = putVarint(o, rawSize);
  while ((size_t)(rawEnd - p) >= EVENT_HEADER_LEN) {
    EventPackCodeStruct *c;
    uint32_t codeLength;
    uint64_t clock;
    unsigned code, length;
    memcpy(&codeLength, p, 4);
    length = EVENT_LENGTH_OF(codeLength);
    if (length > (size_t)(rawEnd - p) || (ptrdiff_t)length > room - o)
      return 0;
    code = EVENT_CODE_OF(codeLength);
    c = near[code % NEAR_LIMIT];
    if (c != NULL && c->code == code) {
      *o++ = (unsigned char)c->tag;
    } else {
      unsigned char *at = o;            /* not o's address: o stays in a register */
      c = encodeCode(state, registry, code, &at);
      if (c == NULL)
        return 0;
      o = at;
      near[code % NEAR_LIMIT] = c;
    }
    memcpy(&clock, p + 4, 8);
    o = putVarint(o, zig64(clock - prevClock));
    prevClock = clock;
    if (length == c->fixed && c->words) {       /* the usual event: words only */
      const unsigned char *q = p + EVENT_HEADER_LEN;
      uint64_t *last = c->last;
      for (unsigned i = 0, n = c->fieldCount; i < n; ++i) {
        uint64_t v;
        memcpy(&v, q + 8 * i, 8);
        o = putDelta(o, v, &last[i]);
      }
    } else if (length == c->fixed && c->ints) { /* words and 4-byte integers */
      const unsigned char *q = p + EVENT_HEADER_LEN;
      uint64_t *last = c->last;
      for (unsigned i = 0, n = c->fieldCount; i < n; ++i) {
        if (c->types[i] == TYPE_INT8) {
          uint64_t v;
          memcpy(&v, q, 8);
          o = putDelta(o, v, &last[i]);
          q += 8;
        } else {
          uint32_t v;
          memcpy(&v, q, 4);
          o = putDelta32(o, v, &last[i]);
          q += 4;
        }
      }
    } else {
      if (c->string ? length < c->fixed || p[length - 1] != 0 : length != c->fixed)
        return 0;
      o = encodeFields(c, p + EVENT_HEADER_LEN, length, o);
    }
    p += length;
  }
  if (p != rawEnd)
    return 0;
  return (size_t)(o - out) < rawSize ? (size_t)(o - out) : 0;
}

/* store -- n bytes (2, 4 or 8) of v at p in the byte order big: a
 * plain store where that is the machine's */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NATIVE_BIG 1u
#else
#define NATIVE_BIG 0u
#endif
static void store(unsigned char *p, uint64_t v, unsigned n, unsigned big)
{
  if (big != NATIVE_BIG) {
    EventStore(p, v, n, big);
  } else if (n == 8) {
    memcpy(p, &v, 8);
  } else if (n == 4) {
    uint32_t u = (uint32_t)v;
    memcpy(p, &u, 4);
  } else {
    uint16_t u = (uint16_t)v;
    memcpy(p, &u, 2);
  }
}

/* EventPackRawSize -- eventpack.h */
int EventPackRawSize(const unsigned char *in, size_t inSize, size_t *rawSizeReturn)
{
  size_t pos = 0;
  uint64_t raw;
  if (!getVarint(in, inSize, &pos, &raw) || raw > EVENT_BLOCK_LENGTH_MAX)
    return 0;
  *rawSizeReturn = (size_t)raw;
  return 1;
}

/* decodeDefine -- a definition at in[*pos ..): the next code of the block */
static int decodeDefine(EventPackStateStruct *state, const unsigned char *in, size_t size,
                        size_t *pos, const char **whyReturn)
{
  EventPackCodeStruct *c = &state->codes[state->count];
  uint64_t code;
  if (!getVarint(in, size, pos, &code) || size - *pos < 1)
    return *whyReturn = "compact block cut short in a code's definition", 0;
  if (state->count == EVENT_PACK_CODES)
    return *whyReturn = "compact block defines more codes than a block may", 0;
  if (code == 0 || code >= EVENT_CODE_LIMIT)
    return *whyReturn = "compact block defines code 0 or one of more than 16 bits", 0;
  c->code = (unsigned)code;
  c->fieldCount = in[(*pos)++];
  if (c->fieldCount > EVENT_PARAM_MAX)
    return *whyReturn = "compact block defines a code with more than 16 fields", 0;
  if (size - *pos < c->fieldCount)
    return *whyReturn = "compact block cut short in a code's definition", 0;
  memcpy(c->types, in + *pos, c->fieldCount);
  *pos += c->fieldCount;
  memset(c->last, 0, sizeof c->last);
  c->fixed = codeFixed(c);
  if (c->fixed == 0)
    return *whyReturn = "compact block defines a code with an unknown field type", 0;
  ++state->count;
  return 1;
}

/* EventPackDecode -- eventpack.h.  Every read is checked against the
 * input's end and every write against the raw size, so any input is
 * safe.  design/stream.txt .compact.encoding */
int EventPackDecode(EventPackStateStruct *state, const unsigned char *in, size_t inSize,
                    unsigned big, unsigned char *out, size_t outLimit, size_t *outSizeReturn,
                    const char **whyReturn)
{
  size_t pos = 0, o = 0, rawSize, room;
  uint64_t prevClock = 0, v;
  const char *cut = "compact block's data end inside an event";

  *outSizeReturn = 0;
  state->count = 0;
  if (!EventPackRawSize(in, inSize, &rawSize))
    return *whyReturn = "compact block's raw size is unreadable or more than a block's", 0;
  (void)getVarint(in, inSize, &pos, &v);
  room = rawSize < outLimit ? rawSize : outLimit;
  while (pos < inSize) {
    unsigned tag = in[pos++];
    EventPackCodeStruct *c;
    size_t q, length;
    if (tag == TAG_DEFINE) {
      if (!decodeDefine(state, in, inSize, &pos, whyReturn))
        return 0;
      tag = state->count - 1;
    } else if (tag >= state->count) {
      return *whyReturn = "compact block uses a code it has not defined", 0;
    }
    c = &state->codes[tag];
    if (!getVarint(in, inSize, &pos, &v))
      return *whyReturn = cut, 0;
    prevClock += unzig64(v);
    if (room - o < c->fixed)
      return *whyReturn = "compact block expands past the raw size it gives", 0;
    q = o + EVENT_HEADER_LEN;
    length = c->fixed;
    for (unsigned i = 0; i < c->fieldCount; ++i) {
      switch (c->types[i]) {
      case TYPE_INT4:
        if (!getVarint(in, inSize, &pos, &v))
          return *whyReturn = cut, 0;
        if (v > 0xFFFFFFFFu)
          return *whyReturn = "compact block has a 4-byte field of more than 32 bits", 0;
        c->last[i] = (uint32_t)(c->last[i] + unzig32((uint32_t)v));
        store(out + q, c->last[i], 4, big);
        q += 4;
        break;
      case TYPE_INT8:
        if (!getVarint(in, inSize, &pos, &v))
          return *whyReturn = cut, 0;
        c->last[i] += unzig64(v);
        store(out + q, c->last[i], 8, big);
        q += 8;
        break;
      case TYPE_RAW8:
        if (inSize - pos < 8)
          return *whyReturn = cut, 0;
        memcpy(out + q, in + pos, 8);
        pos += 8;
        q += 8;
        break;
      default:                          /* TYPE_STRING, last */
        if (!getVarint(in, inSize, &pos, &v))
          return *whyReturn = cut, 0;
        if (v > inSize - pos)
          return *whyReturn = cut, 0;
        if (v > 0xFFFFu - length || room - o < length + v)
          return *whyReturn = "compact block expands past the raw size it gives", 0;
        memcpy(out + q, in + pos, (size_t)v);
        out[q + v] = 0;
        pos += (size_t)v;
        length += (size_t)v;
        break;
      }
    }
    store(out + o, c->code, 2, big);
    store(out + o + 2, length, 2, big);
    store(out + o + 4, prevClock, 8, big);
    o += length;
    *outSizeReturn = o;
  }
  if (o != rawSize)
    return *whyReturn = "compact block expands to fewer bytes than the raw size it gives", 0;
  return 1;
}
