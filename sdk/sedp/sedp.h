/* sedp — the plugin SDK. A stage plugin includes this header and nothing else of sedp. */
#pragma once

#include <sedp/cube.h>
#include <sedp/engine.h>
#include <sedp/frame.h>
#include <sedp/load.h>
#include <sedp/macros.h>
#include <sedp/metrics.h>
#include <sedp/protocol.h>
#include <sedp/query-cache.h>
#include <sedp/request.h>
#include <sedp/stage.h>
#include <sedp/version.h>
