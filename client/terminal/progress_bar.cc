#include "client/terminal/progress_bar.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace bertology {
namespace client {
namespace {

std::string HoursMinutes(double seconds) {
  if (!(seconds >= 0) || seconds > 359999) return "--:--";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) {
    return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  }
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

}  // namespace

ProgressBar::ProgressBar(std::FILE* out, bool tty, Clock* clock)
    : out_(out), tty_(tty), clock_(clock), start_(clock->Now()) {}

std::string ProgressBar::Line(const SweepProgressSnapshot& s, double rate,
                              int width) {
  const double frac =
      s.pairs_total > 0
          ? std::min(1.0, static_cast<double>(s.pairs_done) / s.pairs_total)
          : 0.0;
  std::string line;
  if (width > 0) {
    const int filled = static_cast<int>(frac * width);
    line = absl::StrCat("[", std::string(filled, '#'),
                        std::string(width - filled, '.'), "] ");
  }
  const double eta =
      rate > 0 ? static_cast<double>(s.pairs_total - s.pairs_done) / rate : -1;
  absl::StrAppend(
      &line, absl::StrFormat("%5.1f%%  %d/%d pairs  %.0f/s  ETA %s  "
                             "shards %d/%d",
                             frac * 100, s.pairs_done, s.pairs_total, rate,
                             HoursMinutes(eta), s.shards_done, s.shards_total));
  if (s.shards_resumed > 0)
    absl::StrAppend(&line, " (", s.shards_resumed, " resumed)");
  if (s.retries > 0) absl::StrAppend(&line, "  retries ", s.retries);
  return line;
}

void ProgressBar::Update(const SweepProgressSnapshot& s) {
  const absl::Time now = clock_->Now();
  if (start_pairs_ < 0) start_pairs_ = s.pairs_done;
  const double elapsed = absl::ToDoubleSeconds(now - start_);
  const double rate =
      elapsed > 0 ? static_cast<double>(s.pairs_done - start_pairs_) / elapsed
                  : 0.0;
  if (tty_) {
    if (now - last_draw_ < absl::Milliseconds(100) &&
        s.shards_done != s.shards_total) {
      return;
    }
    std::fprintf(out_, "\r%s\033[K", Line(s, rate, 30).c_str());
    std::fflush(out_);
    drawn_ = true;
  } else {
    if (s.shards_done == last_shards_ && now - last_draw_ < absl::Seconds(10)) {
      return;
    }
    std::fprintf(out_, "sweep: %s\n", Line(s, rate, 0).c_str());
    std::fflush(out_);
  }
  last_draw_ = now;
  last_shards_ = s.shards_done;
}

void ProgressBar::Done() {
  if (tty_ && drawn_) std::fprintf(out_, "\n");
  drawn_ = false;
}

}  // namespace client
}  // namespace bertology
