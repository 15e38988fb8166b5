/* sedp — tensors of the dense engine (declared in the SDK's engine header). */
#pragma once

#include <sedp/engine.h>
