// How the scheduler reaches the replicas, from one --target string:
//   "ipv4:10.0.0.1:50051,10.0.0.2:50051" or "h1:50051,h2:50051"
//       a list of replicas: one channel each (kPerReplica: bounded in-flight
//       shards and failure accounting per replica, retries go to another
//       one), or with `round_robin` one channel over the list with gRPC's
//       round_robin policy;
//   "dns:///bertology-headless:50051"
//       a name for many replicas (a Kubernetes headless Service: one A record
//       per ready pod). The scheduler looks it up itself and keeps one
//       channel per address, each with its own in-flight limit, and looks it
//       up again as pods come and go (ReplicaResolver); with
//       `round_robin_list`, one channel with gRPC's round_robin policy over
//       the addresses instead;
//   "host:port"
//       one channel to one server or to an L7 load balancer.
#ifndef BERTOLOGY_CLIENT_TRANSPORT_TARGETS_H_
#define BERTOLOGY_CLIENT_TRANSPORT_TARGETS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {
namespace client {

struct ChannelTarget {
  std::string uri;        // what grpc::CreateCustomChannel gets
  std::string lb_policy;  // "" (pick_first) or "round_robin"
  int backends = 1;       // addresses behind it, when known (else 1)
  // Set for a dns:/// target that the scheduler resolves itself: the name
  // and port to look up; `uri` is then the target as given.
  std::string dns_host;
  std::string dns_port;
};

struct TargetOptions {
  // A list becomes one round_robin channel instead of one channel each.
  bool round_robin_list = false;
};

// INVALID_ARGUMENT for an empty target or an empty list entry, and for a
// dns: target with an authority (dns://SERVER/...) or without a port.
absl::StatusOr<std::vector<ChannelTarget>> ParseTargets(
    const std::string& target, const TargetOptions& options = {});

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_TRANSPORT_TARGETS_H_
