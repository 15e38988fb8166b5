/* sedp — the load generator's error domain (see error.h). */
#include "error.h"

G_DEFINE_QUARK (sedp-loadgen-error-quark, sedp_loadgen_error)
