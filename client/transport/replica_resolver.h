// The replicas behind the scheduler's targets, as they are now. A dns:///
// target (a Kubernetes headless Service: one A record per ready pod) becomes
// one replica per address, looked up with the system resolver (so
// /etc/hosts and the cluster's DNS both count) and looked up again every
// `interval`, so pods that come and go are seen during a sweep.
#ifndef BERTOLOGY_CLIENT_TRANSPORT_REPLICA_RESOLVER_H_
#define BERTOLOGY_CLIENT_TRANSPORT_REPLICA_RESOLVER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/transport/targets.h"
#include "common/clock.h"

namespace bertology {
namespace client {

// The addresses of `host` as gRPC target URIs ("ipv4:10.0.0.7:50051",
// "ipv6:[fd00::7]:50051"), sorted and without duplicates.
using LookupFn = std::function<absl::StatusOr<std::vector<std::string>>(
    const std::string& host, const std::string& port)>;

// getaddrinfo(3). UNAVAILABLE naming the host when it does not resolve.
absl::StatusOr<std::vector<std::string>> SystemLookup(const std::string& host,
                                                      const std::string& port);

// Thread-safe.
class ReplicaResolver {
 public:
  ReplicaResolver(std::vector<ChannelTarget> targets, absl::Duration interval,
                  Clock* clock, LookupFn lookup = SystemLookup);

  // Targets without a DNS name as given, each DNS name expanded to one
  // target per address. Names are looked up again once `interval` has
  // passed; a failed lookup keeps that name's last addresses (a DNS blip
  // must not drop the fleet). An error only when the result is empty: it
  // gives the last lookup errors.
  absl::StatusOr<std::vector<ChannelTarget>> Current();

 private:
  const std::vector<ChannelTarget> targets_;
  const absl::Duration interval_;
  Clock* const clock_;
  const LookupFn lookup_;

  absl::Mutex mu_;
  absl::Time next_lookup_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // target index -> its last good addresses, and its last error.
  std::map<int, std::vector<std::string>> addresses_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::string> errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_TRANSPORT_REPLICA_RESOLVER_H_
