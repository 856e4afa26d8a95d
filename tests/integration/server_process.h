// Starts the real bertology-server binary as a child process on free ports
// and talks to it: the harness of the integration tests.
#ifndef BERTOLOGY_TESTS_INTEGRATION_SERVER_PROCESS_H_
#define BERTOLOGY_TESTS_INTEGRATION_SERVER_PROCESS_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bertology/v1/bertology.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace bertology {
namespace testing {

// $BERTOLOGY_SOURCE_DIR (or ".") + "/tests/golden/tiny-bert-cls".
std::string GoldenModelDir();
std::string ServerBinary();  // $BERTOLOGY_BIN_DIR/bertology-server

class ServerProcess {
 public:
  // Spawns the server with `args` plus --listen/--metrics_listen on
  // 127.0.0.1:0 (a --listen in `args` overrides it), and waits (up to
  // `timeout`) until it has printed its ports. Fails if it exits first (with
  // its log in the message).
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::vector<std::string>& args,
      absl::Duration timeout = absl::Seconds(60));
  ~ServerProcess();  // SIGKILL if still running

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::string address() const;
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  std::unique_ptr<v1::Bertology::Stub> NewStub() const;

  // Health of service "" (SERVING=1, NOT_SERVING=2), or an error status.
  absl::StatusOr<int> Health() const;
  // Polls Health() until SERVING or `timeout`.
  absl::Status WaitServing(absl::Duration timeout = absl::Seconds(60)) const;

  void Signal(int signal) const;
  // The exit code (128 + signal when killed), or an error after `timeout`.
  absl::StatusOr<int> WaitExit(absl::Duration timeout);
  bool Running();
  std::string Log() const;  // the server's stderr so far

  // GET /metrics from the metrics port.
  absl::StatusOr<std::string> FetchMetrics() const;

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string log_path_;
  std::string host_ = "127.0.0.1";
  int port_ = 0;
  int metrics_port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
};

// A free loopback TCP port (bound and released).
int FreePort();

// GET /metrics from 127.0.0.1:`port` (a server's or a CLI's exporter).
absl::StatusOr<std::string> FetchMetricsAt(int port);

// Runs the server to completion with `args` (e.g. --help or a bad model),
// returning the exit code and the combined output.
struct RunResult {
  int exit_code = -1;
  std::string output;
};
RunResult RunServerToExit(const std::vector<std::string>& args,
                          absl::Duration timeout = absl::Seconds(60));

}  // namespace testing
}  // namespace bertology

#endif  // BERTOLOGY_TESTS_INTEGRATION_SERVER_PROCESS_H_
