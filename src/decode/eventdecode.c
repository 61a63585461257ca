/* <src/decode/eventdecode.c> -- the event layer: one event's bytes to its fields
 *
 * .design: design/index.txt .req.share design/stream.txt .stream.event
 *
 * See eventread.h for the interface.  string.h only: no allocation, no
 * stdio, no OS, so a signal handler may call it, and the runtime links
 * it for its traceback and text mirror.  Every read of the input is
 * checked against the bytes left, so that no input, however malformed,
 * makes this code read outside the buffer it was given.
 */

#include "eventdecode.h"

#include <string.h>



/* THE EVENT LAYER */


/* EventLayoutNative -- the layout of the running program */

void EventLayoutNative(EventLayoutStruct *layoutReturn)
{
  const uint16_t mark = EVENT_BYTE_ORDER_MARK;
  unsigned char bytes[2];
  memcpy(bytes, &mark, sizeof bytes);
  layoutReturn->bigEndian = bytes[0] == 0x01;
  layoutReturn->pointerSize = (unsigned)sizeof(EventA);
  layoutReturn->wordSize = (unsigned)sizeof(EventW);
}


/* EventTypes -- the one table of type letters.  design/registry.txt
 * .reg.format .gen.letters
 *                letter size                form               hex key value ctype     name */
const EventTypeStruct EventTypes[32] = {
  ['P' & 31] = {'P', EVENT_TYPE_POINTER, EventTypeUNSIGNED, 1,  1,  0,    "EventP", "pointer"},
  ['A' & 31] = {'A', EVENT_TYPE_POINTER, EventTypeUNSIGNED, 1,  1,  0,    "EventA", "address"},
  ['W' & 31] = {'W', EVENT_TYPE_WORD,    EventTypeUNSIGNED, 0,  1,  1,    "EventW", "word"},
  ['U' & 31] = {'U', 4,                  EventTypeUNSIGNED, 0,  1,  1,    "EventU", "unsigned 32-bit"},
  ['S' & 31] = {'S', EVENT_TYPE_REST,    EventTypeSTRING,   0,  0,  0,    "EventS", "string"},
  ['D' & 31] = {'D', 8,                  EventTypeDOUBLE,   0,  0,  1,    "EventD", "double"},
};


/* EventRegistryLookup -- binary search of a registry sorted by code */

const EventDescStruct *EventRegistryLookup(const EventRegistryStruct *registry, unsigned code)
{
  size_t lo, hi;
  if (registry == NULL || registry->events == NULL)
    return NULL;
  lo = 0;
  hi = registry->eventCount;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    unsigned midCode = registry->events[mid].code;
    if (midCode == code)
      return &registry->events[mid];
    if (midCode < code)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}



/* EventDecode -- decode one event.  design/stream.txt .stream.event
 *
 * Each check comes before the read it guards: avail for the header,
 * then length (now known to be within avail) for every field.
 */

EventDecodeRes EventDecode(const EventLayoutStruct *layout,
                           const EventRegistryStruct *registry,
                           const unsigned char *p, size_t avail,
                           EventRecordStruct *rec, const char **whyReturn)
{
  const char *whyDummy;
  const EventDescStruct *desc;
  unsigned bigEndian = layout->bigEndian;
  size_t length;

  if (whyReturn == NULL)
    whyReturn = &whyDummy;
  memset(rec, 0, sizeof *rec);

  if (avail < 2) {
    *whyReturn = "event header truncated";
    return EventDecodeTRUNCATED;
  }
  rec->code = (unsigned)EventLoad(p, 2, bigEndian);
  if (rec->code == 0)           /* design/stream.txt .stream.block */
    return EventDecodeEND;
  if (avail < EVENT_HEADER_LEN) {
    *whyReturn = "event header truncated";
    return EventDecodeTRUNCATED;
  }
  length = (size_t)EventLoad(p + 2, 2, bigEndian);
  rec->length = (unsigned)length;
  rec->clock = EventLoad(p + 4, 8, bigEndian);
  if (length < EVENT_HEADER_LEN) {
    *whyReturn = "event length is less than the 12-byte event header";
    return EventDecodeCORRUPT;
  }
  if (length > avail) {
    *whyReturn = "event runs past the end of the data";
    return EventDecodeTRUNCATED;
  }

  desc = EventRegistryLookup(registry, rec->code);
  if (desc == NULL)             /* design/stream.txt .stream.unknown */
    return EventDecodeUNKNOWN;
  return EventDecodeFields(layout, desc, p, length, rec, whyReturn);
}

/* DecodeFields -- the fields of an event whose header EventDecode (or
 * the stream's index) has read: desc is its code's descriptor and
 * length, at least EVENT_HEADER_LEN, bytes at p are readable.  Sets
 * rec->desc, rec->kind and the values; rec's header fields are the
 * caller's. */
EventDecodeRes EventDecodeFields(const EventLayoutStruct *layout, const EventDescStruct *desc,
                                   const unsigned char *p, size_t length,
                                   EventRecordStruct *rec, const char **whyReturn)
{
  unsigned bigEndian = layout->bigEndian;
  size_t offset;
  unsigned i;

  rec->desc = desc;
  rec->kind = desc->kind;
  offset = EVENT_HEADER_LEN;
  for (i = 0; desc->format != NULL && desc->format[i] != '\0'; ++i) {
    const EventTypeStruct *type;
    size_t size;
    if (i >= EVENT_PARAM_MAX) {
      *whyReturn = "the event's format has more than 16 parameters";
      return EventDecodeCORRUPT;
    }
    type = EventTypeOf(desc->format[i]);
    if (type == NULL) {
      *whyReturn = "the event's format has an unknown letter";
      return EventDecodeCORRUPT;
    }
    if (type->form == EventTypeSTRING) {   /* design/registry.txt .reg.format design/stream.txt .stream.event */
      size_t chars;
      if (desc->format[i + 1] != '\0') {
        *whyReturn = "the event's format has a string that is not last";
        return EventDecodeCORRUPT;
      }
      if (length - offset < 1) {
        *whyReturn = "event is too short for its format";
        return EventDecodeCORRUPT;
      }
      chars = length - offset - 1;
      if (p[length - 1] != '\0') {
        *whyReturn = "string does not end with a NUL at the end of the event";
        return EventDecodeCORRUPT;
      }
      if (memchr(p + offset, '\0', chars) != NULL) {
        *whyReturn = "string has a NUL before the end of the event";
        return EventDecodeCORRUPT;
      }
      if (chars > EVENT_STRING_MAX) {
        *whyReturn = "string is longer than EVENT_STRING_MAX (1023)";
        return EventDecodeCORRUPT;
      }
      rec->values[i].s = (const char *)(p + offset);
      rec->stringLength = chars;
      offset = length;
      continue;
    }
    size = EventTypeSize(type, layout->pointerSize, layout->wordSize);
    if (size != 4 && size != 8) {
      *whyReturn = "pointer or word size is not 4 or 8";
      return EventDecodeCORRUPT;
    }
    if (length - offset < size) {
      *whyReturn = "event is too short for its format";
      return EventDecodeCORRUPT;
    }
    if (type->form == EventTypeDOUBLE) {
      uint64_t bits = EventLoad(p + offset, 8, bigEndian);
      memcpy(&rec->values[i].d, &bits, sizeof bits);
    } else {
      rec->values[i].u = EventLoad(p + offset, (unsigned)size, bigEndian);
    }
    offset += size;
  }
  if (offset != length) {
    *whyReturn = "event is longer than its format";
    return EventDecodeCORRUPT;
  }
  return EventDecodeOK;
}

/* EventDescPlan -- eventdecode.h */
unsigned EventDescPlan(const EventDescStruct *desc, const EventLayoutStruct *layout,
                       unsigned char plan[EVENT_PARAM_MAX])
{
  unsigned length = EVENT_HEADER_LEN, i;
  memset(plan, 0, EVENT_PARAM_MAX);
  for (i = 0; desc->format != NULL && desc->format[i] != '\0'; ++i) {
    const EventTypeStruct *type = EventTypeOf(desc->format[i]);
    unsigned size;
    if (i >= EVENT_PARAM_MAX || type == NULL || type->form == EventTypeSTRING
        || ((size = EventTypeSize(type, layout->pointerSize, layout->wordSize)) != 4 && size != 8)) {
      memset(plan, 0, EVENT_PARAM_MAX);
      return 0;
    }
    plan[i] = (unsigned char)size;
    length += size;
  }
  return length;
}
