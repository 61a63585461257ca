/* <tests/clients/registries/plugin_eventdef.h> -- the registries test's plugin's registry
 *
 * .design: design/tests.txt .test.registries
 *
 * THIS FILE IS READ BY A PROGRAM (gen).  A plugin the program opens
 * with dlopen after its events began, and closes with dlclose: its
 * registry joins the log in a registry block.  tag is 4.
 */

#ifndef plugin_eventdef_h
#define plugin_eventdef_h

#define EVENT_REGISTRY_NAME "plugin"

#define EVENT_KIND_LIST(KIND) \
  /*   name  doc */ \
  KIND(Plug, "the plugin's calls")

#define EVENT_LIST(RELATION, RETIRED) \
  /*        name        code    always kind  format */ \
  RELATION( PluginCall, 0x1000, TRUE  , Plug, UUWP  )

#define EVENT_DOC_LIST(DOC, PARAM) \
  DOC(PluginCall, "the plugin was called") \
    PARAM(U, tag,    "the registry's tag: 4") \
    PARAM(U, thread, "the emitting thread's slot") \
    PARAM(W, seq,    "the thread's event number") \
    PARAM(P, self,   "the plugin's function") 

#endif /* plugin_eventdef_h */
