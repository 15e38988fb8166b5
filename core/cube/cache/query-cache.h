/* sedp — the query cache's API is public (the SDK's query-cache header). */
#pragma once

#include <sedp/query-cache.h>
