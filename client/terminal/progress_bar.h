// Shows a sweep's progress on stderr: a redrawn bar with rate and ETA when
// the stream is a terminal, otherwise one plain line per finished shard (and
// at most one every few seconds in between), which is what a job log wants.
#ifndef BERTOLOGY_CLIENT_TERMINAL_PROGRESS_BAR_H_
#define BERTOLOGY_CLIENT_TERMINAL_PROGRESS_BAR_H_

#include <cstdio>
#include <string>

#include "absl/time/time.h"
#include "client/scheduler/sweep_scheduler.h"
#include "common/clock.h"

namespace bertology {
namespace client {

// Not thread-safe: ScheduleSweep calls its progress function one call at a
// time.
class ProgressBar {
 public:
  // `tty`: draw a bar (else plain lines). `clock` outlives the bar.
  ProgressBar(std::FILE* out, bool tty, Clock* clock = Clock::Real());
  void Update(const SweepProgressSnapshot& s);
  void Done();  // ends the bar's line

  // "[#####.....]  45.0%  1234/5000 pairs  300/s  ETA 0:12  shards 5/20"
  static std::string Line(const SweepProgressSnapshot& s, double rate,
                          int width);

 private:
  std::FILE* out_;
  bool tty_;
  Clock* clock_;
  absl::Time start_;
  int64_t start_pairs_ = -1;  // pairs already done (resumed) at the start
  int last_shards_ = -1;
  absl::Time last_draw_ = absl::InfinitePast();
  bool drawn_ = false;
};

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_TERMINAL_PROGRESS_BAR_H_
