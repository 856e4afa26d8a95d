// The one map between the wire's v1::AblationMode and the core's
// AblationMode, for the server (request validation) and the client (mask
// flags, sweep plans). No libtorch.
#ifndef BERTOLOGY_COMMON_ABLATION_MODE_PROTO_H_
#define BERTOLOGY_COMMON_ABLATION_MODE_PROTO_H_

#include <optional>

#include "bertology/v1/bertology.pb.h"
#include "common/head_mask.h"

namespace bertology {

// The core's mode for a wire value; nullopt for ABLATION_MODE_UNSPECIFIED
// and for values this build does not know.
std::optional<AblationMode> AblationModeFromProto(v1::AblationMode mode);

v1::AblationMode AblationModeToProto(AblationMode mode);

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_ABLATION_MODE_PROTO_H_
