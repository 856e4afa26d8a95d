#include "tests/integration/cli_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace bertology {
namespace testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string CliBinary() {
  const char* bin_dir = std::getenv("BERTOLOGY_BIN_DIR");
  return absl::StrCat(bin_dir != nullptr ? bin_dir : "build/bin", "/bertology");
}

CliResult RunCli(const std::vector<std::string>& args, absl::Duration timeout,
                 const std::vector<std::string>& wrapper) {
  std::vector<std::string> argv = wrapper;
  argv.push_back(CliBinary());
  argv.insert(argv.end(), args.begin(), args.end());
  static int counter = 0;
  const char* tmp = std::getenv("TMPDIR");
  const std::string base =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/bertology_cli_", getpid(),
                   "_", counter++);
  const std::string out_path = base + ".out";
  const std::string err_path = base + ".err";
  // Or the child's freopen flushes the parent's pending output a second time.
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out_path.c_str(), "w", stdout) ||
        !freopen(err_path.c_str(), "w", stderr)) {
      _exit(126);
    }
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  CliResult r;
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.err = "timed out; ";
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out_path);
  r.err += Slurp(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

std::string Describe(const CliResult& r) {
  return absl::StrCat("exit ", r.exit_code, "\n--- stdout\n", r.out,
                      "\n--- stderr\n", r.err);
}

}  // namespace testing
}  // namespace bertology
