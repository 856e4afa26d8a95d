#include "client/transport/replica_resolver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace bertology {
namespace client {

absl::StatusOr<std::vector<std::string>> SystemLookup(const std::string& host,
                                                      const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ":",
                                               port, ": ", gai_strerror(rc)));
  }
  std::vector<std::string> out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      out.push_back(absl::StrCat("ipv4:", text, ":", ntohs(in->sin_port)));
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      out.push_back(absl::StrCat("ipv6:[", text, "]:", ntohs(in6->sin6_port)));
    }
  }
  freeaddrinfo(found);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) {
    return absl::UnavailableError(
        absl::StrCat(host, ":", port, " has no IPv4 or IPv6 address"));
  }
  return out;
}

ReplicaResolver::ReplicaResolver(std::vector<ChannelTarget> targets,
                                 absl::Duration interval, Clock* clock,
                                 LookupFn lookup)
    : targets_(std::move(targets)),
      interval_(interval),
      clock_(clock != nullptr ? clock : Clock::Real()),
      lookup_(std::move(lookup)) {}

absl::StatusOr<std::vector<ChannelTarget>> ReplicaResolver::Current() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  if (now >= next_lookup_) {
    next_lookup_ = now + interval_;
    for (int i = 0; i < static_cast<int>(targets_.size()); ++i) {
      const ChannelTarget& t = targets_[i];
      if (t.dns_host.empty()) continue;
      absl::StatusOr<std::vector<std::string>> found =
          lookup_(t.dns_host, t.dns_port);
      if (found.ok()) {
        addresses_[i] = *std::move(found);
        errors_.erase(i);
      } else {
        errors_[i] = found.status().ToString();
      }
    }
  }
  std::vector<ChannelTarget> out;
  std::string errors;
  for (int i = 0; i < static_cast<int>(targets_.size()); ++i) {
    const ChannelTarget& t = targets_[i];
    if (t.dns_host.empty()) {
      out.push_back(t);
      continue;
    }
    for (const std::string& uri : addresses_[i]) out.push_back({uri, "", 1});
    if (errors_.count(i) > 0) absl::StrAppend(&errors, " ", errors_[i]);
  }
  if (out.empty()) {
    return absl::UnavailableError(
        absl::StrCat("no replica to send shards to:", errors));
  }
  return out;
}

}  // namespace client
}  // namespace bertology
