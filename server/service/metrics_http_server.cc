#include "server/service/metrics_http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace bertology {
namespace {

constexpr int kPollMs = 100;  // how often the thread checks stop_
constexpr int kReadTimeoutMs = 2000;

void WriteAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
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
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 16) == 0) {
      server->fd_ = fd;
      break;
    }
    error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  if (server->fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("--metrics_listen=", listen, ": cannot listen: ", error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(server->fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  server->port_ =
      bound.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  server->body_ = std::move(body);
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
}

void MetricsHttpServer::Serve() {
  while (!stop_.load()) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, kPollMs) <= 0) continue;
    const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::string request;
    char buffer[2048];
    while (request.find("\r\n\r\n") == std::string::npos &&
           request.size() < 16384) {
      pollfd c{client, POLLIN, 0};
      if (poll(&c, 1, kReadTimeoutMs) <= 0) break;
      const ssize_t n = recv(client, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      request.append(buffer, static_cast<size_t>(n));
    }
    std::string status = "200 OK", type = "text/plain; version=0.0.4";
    std::string content;
    if (absl::StartsWith(request, "GET /metrics ") ||
        absl::StartsWith(request, "GET /metrics?") ||
        absl::StartsWith(request, "GET / ")) {
      content = body_();
    } else {
      status = "404 Not Found";
      type = "text/plain";
      content = "only GET /metrics is served here\n";
    }
    WriteAll(client, absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ",
                                  type, "\r\nContent-Length: ", content.size(),
                                  "\r\nConnection: close\r\n\r\n", content));
    close(client);
  }
}

}  // namespace bertology
