/* <tests/clients/install/eventdef.h> -- the registry of the C++ client of
 * tests/tools/install.sh (tests/clients/install/client.cpp)
 *
 * THIS FILE IS READ BY A PROGRAM: gen accepts exactly the row patterns
 * of eventdef.h.
 */

#ifndef tests_install_eventdef_h
#define tests_install_eventdef_h

#define EVENT_REGISTRY_NAME "C++ client"

#define EVENT_KIND_LIST(KIND) \
  /*   name     doc */ \
  KIND(Shape  , "the client's shapes")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name          code    always kind    format */ \
  RELATION( ShapeMade   , 0x1000, TRUE  , Shape , PWDS ) \
  RELATION( ShapeCount  , 0x1001, FALSE , Shape , U    )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(ShapeMade, "a shape was made") \
    PARAM(P, shape, "the shape") \
    PARAM(W, sides, "its sides") \
    PARAM(D, area, "its area") \
    PARAM(S, name, "its name") \
  DOC(ShapeCount, "shapes made so far") \
    PARAM(U, count, "how many")

#endif /* tests_install_eventdef_h */
