#include "tests/integration/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"

namespace bertology {
namespace testing {
namespace {

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  std::perror("execv");
  _exit(127);
}

int DecodeWait(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string TempLog() {
  static int counter = 0;
  return absl::StrCat(Env("TMPDIR", "/tmp"), "/bertology-server-", getpid(),
                      "-", counter++, ".log");
}

}  // namespace

std::string GoldenModelDir() {
  return Env("BERTOLOGY_SOURCE_DIR", ".") + "/tests/golden/tiny-bert-cls";
}

std::string ServerBinary() {
  return Env("BERTOLOGY_BIN_DIR", "build/bin") + "/bertology-server";
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::vector<std::string>& args, absl::Duration timeout) {
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  p->log_path_ = TempLog();
  std::vector<std::string> argv = {ServerBinary(), "--listen=127.0.0.1:0",
                                   "--metrics_listen=127.0.0.1:0"};
  argv.insert(argv.end(), args.begin(), args.end());
  // A --listen in `args` (the last one wins, as in absl) sets the host the
  // test connects to, e.g. 127.0.0.2 for replicas behind one DNS name.
  for (const std::string& a : args) {
    if (absl::StartsWith(a, "--listen=")) {
      const std::string hostport = a.substr(9);
      p->host_ = hostport.substr(0, hostport.rfind(':'));
    }
  }
  p->pid_ = Spawn(argv, p->log_path_);
  const std::regex ports(R"(listening on port (\d+), metrics on port (\d+))");
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    std::smatch m;
    const std::string log = p->Log();
    if (std::regex_search(log, m, ports)) {
      p->port_ = std::stoi(m[1]);
      p->metrics_port_ = std::stoi(m[2]);
      p->channel_ =
          grpc::CreateChannel(p->address(), grpc::InsecureChannelCredentials());
      return p;
    }
    if (!p->Running()) {
      return absl::InternalError(absl::StrCat("bertology-server exited with ",
                                              p->exit_code_, ":\n", log));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("bertology-server printed no port:\n", p->Log()));
}

ServerProcess::~ServerProcess() {
  if (Running()) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  std::remove(log_path_.c_str());
}

std::string ServerProcess::address() const {
  return absl::StrCat(host_, ":", port_);
}

std::unique_ptr<v1::Bertology::Stub> ServerProcess::NewStub() const {
  return v1::Bertology::NewStub(channel_);
}

absl::StatusOr<int> ServerProcess::Health() const {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return static_cast<int>(response.status());
}

absl::Status ServerProcess::WaitServing(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<int> health;
  while (absl::Now() < deadline) {
    health = Health();
    if (health.ok() && *health == 1) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "not SERVING: ",
      health.ok() ? absl::StrCat(*health) : health.status().ToString(), "\n",
      Log()));
}

void ServerProcess::Signal(int signal) const { kill(pid_, signal); }

bool ServerProcess::Running() {
  if (exit_code_ >= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = DecodeWait(status);
    return false;
  }
  return r == 0;
}

absl::StatusOr<int> ServerProcess::WaitExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (!Running()) return exit_code_;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError("the server did not exit");
}

std::string ServerProcess::Log() const { return ReadAll(log_path_); }

absl::StatusOr<std::string> ServerProcess::FetchMetrics() const {
  return FetchMetricsAt(metrics_port_);
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

absl::StatusOr<std::string> FetchMetricsAt(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError("cannot connect to the metrics port");
  }
  const std::string request =
      "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("cannot send the metrics request");
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) {
    return absl::InternalError(absl::StrCat("bad HTTP response: ", response));
  }
  if (response.rfind("HTTP/1.1 200", 0) != 0 &&
      response.rfind("HTTP/1.0 200", 0) != 0) {
    return absl::InternalError(absl::StrCat("HTTP error: ", response));
  }
  return response.substr(body + 4);
}

RunResult RunServerToExit(const std::vector<std::string>& args,
                          absl::Duration timeout) {
  RunResult result;
  const std::string log = TempLog();
  std::vector<std::string> argv = {ServerBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = Spawn(argv, log);
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (absl::Now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      result.exit_code = DecodeWait(status);
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (result.exit_code < 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  result.output = ReadAll(log);
  std::remove(log.c_str());
  return result;
}

}  // namespace testing
}  // namespace bertology
