#include "client/transport/targets.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace bertology {
namespace client {
namespace {

// "dns:///host:port", "dns:host:port", "dns:///[v6::addr]:port".
absl::StatusOr<std::vector<ChannelTarget>> ParseDnsTarget(
    const std::string& target) {
  absl::string_view rest = target;
  absl::ConsumePrefix(&rest, "dns:");
  if (absl::ConsumePrefix(&rest, "//")) {
    const size_t slash = rest.find('/');
    if (slash != 0) {
      // The system resolver is what the scheduler uses; a DNS server named
      // in the target would be silently ignored, so it is refused.
      return absl::InvalidArgumentError(absl::StrCat(
          "--target=", target,
          ": a DNS server in the target (dns://SERVER/...) is not supported; "
          "use dns:///NAME:PORT (the system resolver)"));
    }
    rest.remove_prefix(1);
  }
  std::string host, port;
  if (absl::StartsWith(rest, "[")) {
    const size_t close = rest.find("]:");
    if (close != absl::string_view::npos) {
      host = std::string(rest.substr(1, close - 1));
      port = std::string(rest.substr(close + 2));
    }
  } else {
    const size_t colon = rest.rfind(':');
    if (colon != absl::string_view::npos) {
      host = std::string(rest.substr(0, colon));
      port = std::string(rest.substr(colon + 1));
    }
  }
  if (host.empty() || port.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--target=", target, ": expected dns:///NAME:PORT"));
  }
  ChannelTarget t{target, "", 1};
  t.dns_host = host;
  t.dns_port = port;
  return std::vector<ChannelTarget>{t};
}

}  // namespace

absl::StatusOr<std::vector<ChannelTarget>> ParseTargets(
    const std::string& target, const TargetOptions& options) {
  if (target.empty()) return absl::InvalidArgumentError("--target is empty");
  if (absl::StartsWith(target, "dns:")) {
    if (options.round_robin_list) {
      return std::vector<ChannelTarget>{{target, "round_robin", 1}};
    }
    return ParseDnsTarget(target);
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
