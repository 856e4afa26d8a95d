// Per-request limits of the service, set from flags. Requests over a limit
// are refused with a status that names the limit's flag.
#ifndef BERTOLOGY_SERVICE_REGISTRY_SERVICE_LIMITS_H_
#define BERTOLOGY_SERVICE_REGISTRY_SERVICE_LIMITS_H_

#include <cstdint>

namespace bertology {

struct ServiceLimits {
  int max_inputs_per_call = 256;          // --max_inputs_per_call (Classify)
  int max_examples_per_sweep = 10000;     // --max_examples_per_sweep
  int max_masks_per_sweep = 10000;        // --max_masks_per_sweep
  int max_text_bytes = 64 * 1024;         // --max_text_bytes, per text
  int max_message_bytes = 64 << 20;       // --max_message_bytes (gRPC receive)
  int max_batch_size = 32;                // --max_batch_size (sweep rows too)
  int64_t sweep_cache_bytes = 256 << 20;  // --sweep_cache_mb
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_REGISTRY_SERVICE_LIMITS_H_
