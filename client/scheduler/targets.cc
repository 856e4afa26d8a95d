#include "client/scheduler/targets.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace bertology {
namespace client {

absl::StatusOr<std::vector<ChannelTarget>> ParseTargets(
    const std::string& target, const TargetOptions& options) {
  if (target.empty()) return absl::InvalidArgumentError("--target is empty");
  if (absl::StartsWith(target, "dns:")) {
    return std::vector<ChannelTarget>{{target, "round_robin", 1}};
  }
  absl::string_view list = target;
  const bool ipv4 = absl::ConsumePrefix(&list, "ipv4:");
  const bool ipv6 = !ipv4 && absl::ConsumePrefix(&list, "ipv6:");
  std::vector<std::string> addresses = absl::StrSplit(list, ',');
  for (const std::string& a : addresses) {
    if (a.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--target=", target, " has an empty address"));
    }
  }
  if (addresses.size() == 1 && !ipv4 && !ipv6) {
    return std::vector<ChannelTarget>{{target, "", 1}};
  }
  const std::string scheme = ipv6 ? "ipv6:" : "ipv4:";
  if (options.round_robin_list) {
    // gRPC's ipv4: resolver takes the list; plain host names do not resolve
    // there, so such a list is only accepted in the per-replica form.
    const std::string uri =
        (ipv4 || ipv6) ? target
                       : absl::StrCat(scheme, absl::StrJoin(addresses, ","));
    return std::vector<ChannelTarget>{
        {uri, "round_robin", static_cast<int>(addresses.size())}};
  }
  std::vector<ChannelTarget> out;
  for (const std::string& a : addresses) {
    out.push_back({(ipv4 || ipv6) ? absl::StrCat(scheme, a) : a, "", 1});
  }
  return out;
}

}  // namespace client
}  // namespace bertology
