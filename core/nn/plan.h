/* sedp — the executor's API is public (the SDK's engine header); this header joins it to the
 * model IR for the core's own users. */
#pragma once

#include <sedp/engine.h>

#include "model.h"
