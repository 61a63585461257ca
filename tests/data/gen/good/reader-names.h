/* Events named like telltale's own types (EventLayoutStruct,
 * EventRecordStruct, EventRegistryStruct, ...): their generated names
 * (EventStructLayout, ...) cannot clash.  Generated with --core, and
 * compiled with both event.h and eventread.h.  tests/tools/gen.sh */

#ifndef gentest_h
#define gentest_h

#define EVENT_REGISTRY_NAME "gen test"

#define EVENT_KIND_LIST(KIND) \
  KIND(Extra, "a kind of the test's own")

#define EVENT_LIST(RELATION, RETIRED) \
  RELATION( Layout       , 0x0100, TRUE , Extra, W  ) \
  RELATION( Record       , 0x0101, TRUE , Extra, W  ) \
  RELATION( Registry     , 0x0102, TRUE , Extra, WS ) \
  RELATION( Stream       , 0x0103, TRUE , Extra, W  ) \
  RELATION( StreamInfo   , 0x0104, TRUE , Extra, W  ) \
  RELATION( FormatContext, 0x0105, TRUE , Extra, W  ) \
  RELATION( Header       , 0x0106, TRUE , Extra, W  ) \
  RELATION( Desc         , 0x0107, TRUE , Extra, W  ) \
  RELATION( KindDesc     , 0x0108, TRUE , Extra, W  ) \
  RELATION( Buf          , 0x0109, TRUE , Extra, W  ) \
  RELATION( Thread       , 0x010A, TRUE , Extra, W  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(Layout, "named like EventLayoutStruct") \
    PARAM(W, w, "a word") \
  DOC(Record, "named like EventRecordStruct") \
    PARAM(W, w, "a word") \
  DOC(Registry, "named like EventRegistryStruct") \
    PARAM(W, w, "a word") \
    PARAM(S, s, "a string") \
  DOC(Stream, "named like EventStreamStruct") \
    PARAM(W, w, "a word") \
  DOC(StreamInfo, "named like EventStreamInfoStruct") \
    PARAM(W, w, "a word") \
  DOC(FormatContext, "named like EventFormatContextStruct") \
    PARAM(W, w, "a word") \
  DOC(Header, "named like EventHeaderStruct") \
    PARAM(W, w, "a word") \
  DOC(Desc, "named like EventDescStruct") \
    PARAM(W, w, "a word") \
  DOC(KindDesc, "named like EventKindDescStruct") \
    PARAM(W, w, "a word") \
  DOC(Buf, "named like EventBufStruct") \
    PARAM(W, w, "a word") \
  DOC(Thread, "named like EventThreadStruct") \
    PARAM(W, w, "a word")

#endif /* gentest_h */
