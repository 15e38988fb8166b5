/* sedp — the load generator's errors (core/load: workload.h, loadgen.h, capacity.h). */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/** SEDP_LOADGEN_ERROR: errors of the load generator. Codes are #SedpLoadgenError. */
#define SEDP_LOADGEN_ERROR (sedp_loadgen_error_quark ())
SEDP_API GQuark sedp_loadgen_error_quark (void);

/**
 * SedpLoadgenError:
 * @SEDP_LOADGEN_ERROR_CONFIG: a field of a #SedpLoadgenConfig or #SedpLoadgenSearch is out of
 *   range; the message names the field, its value and the range.
 * @SEDP_LOADGEN_ERROR_WORKLOAD: a request is not a PredictRequest in JSON (or cannot be encoded);
 *   the message names where (FILE:LINE) and what.
 * @SEDP_LOADGEN_ERROR_TARGET: the target URL is not an http:// or https:// URL.
 * @SEDP_LOADGEN_ERROR_SYSTEM: the system refused a resource (the open loop's timer).
 * @SEDP_LOADGEN_ERROR_NO_CAPACITY: a capacity search found no rate that met the SLO.
 */
typedef enum {
  SEDP_LOADGEN_ERROR_CONFIG,
  SEDP_LOADGEN_ERROR_WORKLOAD,
  SEDP_LOADGEN_ERROR_TARGET,
  SEDP_LOADGEN_ERROR_SYSTEM,
  SEDP_LOADGEN_ERROR_NO_CAPACITY,
} SedpLoadgenError;

G_END_DECLS
