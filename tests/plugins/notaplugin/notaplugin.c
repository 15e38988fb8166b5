/* notaplugin — a loadable module that exports a symbol, but not sedp_stage_descriptor. */
#include <sedp/sedp.h>

SEDP_PLUGIN_EXPORT int notaplugin_answer (void);

int
notaplugin_answer (void)
{
  return 42;
}
