#include "server/service/metrics/metrics_http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace bertology {
namespace {

MHD_Result Reply(MHD_Connection* connection, unsigned status,
                 const std::string& content, const char* type) {
  MHD_Response* response = MHD_create_response_from_buffer(
      content.size(), const_cast<char*>(content.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  const MHD_Result result = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return result;
}

MHD_Result Answer(void* cls, MHD_Connection* connection, const char* url,
                  const char* method, const char* /*version*/,
                  const char* /*upload_data*/, size_t* upload_data_size,
                  void** /*con_cls*/) {
  const auto* body = static_cast<const std::function<std::string()>*>(cls);
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0) {
    return Reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                 "only GET /metrics is served here\n", "text/plain");
  }
  if (*upload_data_size != 0) return MHD_NO;  // a GET carries no body
  if (std::strcmp(url, "/metrics") != 0 && std::strcmp(url, "/") != 0) {
    return Reply(connection, MHD_HTTP_NOT_FOUND,
                 "only GET /metrics is served here\n", "text/plain");
  }
  return Reply(connection, MHD_HTTP_OK, (*body)(), "text/plain; version=0.0.4");
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, std::function<std::string()> body) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_listen=", listen, " is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                             port.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_listen=", listen, ": ", gai_strerror(rc)));
  }
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->body_ = std::move(body);
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (a->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    server->daemon_ = MHD_start_daemon(
        flags, /*port=*/0, /*apc=*/nullptr, nullptr, &Answer, &server->body_,
        MHD_OPTION_SOCK_ADDR, a->ai_addr, MHD_OPTION_THREAD_POOL_SIZE,
        static_cast<unsigned>(kThreads), MHD_OPTION_CONNECTION_TIMEOUT,
        static_cast<unsigned>(kConnectionTimeoutS), MHD_OPTION_CONNECTION_LIMIT,
        static_cast<unsigned>(kMaxConnections), MHD_OPTION_END);
    if (server->daemon_ != nullptr) break;
    error = std::strerror(errno);
  }
  freeaddrinfo(found);
  if (server->daemon_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--metrics_listen=", listen, ": cannot listen: ", error));
  }
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  server->port_ = info != nullptr ? info->port : 0;
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace bertology
