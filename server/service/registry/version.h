// The server's version: part of ModelInfo.identity, so a sweep resumed
// against a server whose numerics may differ refuses its old progress.
// Bump it with any change that can move a logit.
#ifndef BERTOLOGY_SERVICE_REGISTRY_VERSION_H_
#define BERTOLOGY_SERVICE_REGISTRY_VERSION_H_

namespace bertology {

inline constexpr char kBertologyVersion[] = "0.4.0";

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_REGISTRY_VERSION_H_
