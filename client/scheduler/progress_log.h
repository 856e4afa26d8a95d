// The progress file of a sweep: JSONL, a header line naming the sweep (its
// fingerprint) and then one line per finished shard with its full result,
// flushed as each shard finishes. Reopening it resumes: the finished shards
// are read back and not run again, so a restarted job pod loses only the
// shards that were in flight. A torn last line (the pod died mid-write) is
// skipped (that shard runs again).
#ifndef BERTOLOGY_CLIENT_SCHEDULER_PROGRESS_LOG_H_
#define BERTOLOGY_CLIENT_SCHEDULER_PROGRESS_LOG_H_

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/scheduler/shard.h"

namespace bertology {
namespace client {

class ProgressLog {
 public:
  // FAILED_PRECONDITION when the file belongs to another sweep (another
  // fingerprint); the message says to delete it or pick another path.
  static absl::StatusOr<std::unique_ptr<ProgressLog>> Open(
      const std::string& path, const std::string& fingerprint);
  ~ProgressLog();

  // Shards finished by earlier runs, in file order.
  const std::vector<ShardResult>& finished() const { return finished_; }

  // Appends and flushes one line. Thread-safe.
  absl::Status Append(const ShardResult& result);

 private:
  ProgressLog() = default;
  std::string path_;
  std::vector<ShardResult> finished_;
  absl::Mutex mu_;
  std::FILE* file_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// The finished shards of a progress file written by another run of the same
// sweep (a part of an Indexed Job), without opening it for writing.
// NOT_FOUND when it cannot be read; FAILED_PRECONDITION, naming the file,
// when it belongs to another sweep.
absl::StatusOr<std::vector<ShardResult>> ReadProgressFile(
    const std::string& path, const std::string& fingerprint);

// One shard result as one line of JSON (no newline), and back.
std::string ShardResultToJson(const ShardResult& result);
absl::StatusOr<ShardResult> ShardResultFromJson(const std::string& line);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_SCHEDULER_PROGRESS_LOG_H_
