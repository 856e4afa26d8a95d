// The metrics endpoint over real sockets: a scrape answers, unknown paths
// and methods are refused, and 20 slow clients (one byte a second, as the
// one that held the old one-thread server for a scrape's whole timeout) do
// not delay a scrape past a second.
#include "server/service/metrics/metrics_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace bertology {
namespace {

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads the reply until the server closes or
// `timeout_ms` passes; "" on timeout.
std::string Exchange(int port, const std::string& request, int timeout_ms) {
  // The deadline covers the connect too: a server that does not accept
  // keeps a client waiting in the listen backlog.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const int fd = Connect(port);
  if (fd < 0) return "";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char buffer[4096];
  while (true) {
    const int left =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now())
                             .count());
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, left) <= 0) {
      reply.clear();  // timed out
      break;
    }
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return reply;
}

constexpr char kGet[] =
    "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

TEST(MetricsHttpServerTest, ServesMetricsAndRefusesTheRest) {
  auto server = MetricsHttpServer::Start(
      "127.0.0.1:0", [] { return std::string("bertology_up 1\n"); });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  const std::string ok = Exchange(port, kGet, 5000);
  EXPECT_NE(ok.find("HTTP/1.1 200"), std::string::npos) << ok;
  EXPECT_NE(ok.find("text/plain; version=0.0.4"), std::string::npos) << ok;
  EXPECT_NE(ok.find("\r\n\r\nbertology_up 1\n"), std::string::npos) << ok;
  const std::string missing = Exchange(
      port, "GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      5000);
  EXPECT_NE(missing.find("HTTP/1.1 404"), std::string::npos) << missing;
  const std::string post =
      Exchange(port,
               "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
               "Connection: close\r\n\r\n",
               5000);
  EXPECT_NE(post.find("HTTP/1.1 405"), std::string::npos) << post;
}

TEST(MetricsHttpServerTest, BadListenAddressesNameTheFlag) {
  auto s = MetricsHttpServer::Start("nocolon", [] { return std::string(); });
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("--metrics_listen=nocolon"),
            std::string::npos);
  auto first =
      MetricsHttpServer::Start("127.0.0.1:0", [] { return std::string(); });
  ASSERT_TRUE(first.ok());
  auto taken =
      MetricsHttpServer::Start("127.0.0.1:" + std::to_string((*first)->port()),
                               [] { return std::string(); });
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kUnavailable)
      << taken.status();
}

TEST(MetricsHttpServerTest, TwentySlowClientsDoNotBlockAScrape) {
  auto server = MetricsHttpServer::Start(
      "127.0.0.1:0", [] { return std::string("bertology_up 1\n"); });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  // 20 connections, each sending its request one byte a second from one
  // thread, for longer than the scrapes below take.
  std::vector<int> slow;
  for (int i = 0; i < 20; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    slow.push_back(fd);
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    const std::string request = kGet;
    for (size_t i = 0; i < request.size() && !stop.load(); ++i) {
      for (int fd : slow) send(fd, &request[i], 1, MSG_NOSIGNAL);
      for (int t = 0; t < 10 && !stop.load(); ++t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int scrape = 0; scrape < 3; ++scrape) {
    const auto start = std::chrono::steady_clock::now();
    const std::string reply = Exchange(port, kGet, 1000);
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    EXPECT_NE(reply.find("bertology_up 1"), std::string::npos)
        << "scrape " << scrape << " not answered within 1 s beside 20 slow "
        << "clients";
    EXPECT_LT(ms, 1000) << "scrape " << scrape;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  stop.store(true);
  trickle.join();
  for (int fd : slow) close(fd);
}

}  // namespace
}  // namespace bertology
