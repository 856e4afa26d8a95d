#include "client/scheduler/progress_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

using nlohmann::json;

json CountsToJson(const MaskCounts& c) {
  json ablated = json::array();
  for (const auto& [l, h] : c.ablated) ablated.push_back({l, h});
  // loss_sum as a %.17g double round-trips exactly through nlohmann.
  const PairedSums& p = c.paired;
  return json{
      {"i", c.mask_index},
      {"id", c.mask_id},
      {"spec", c.spec},
      {"ablated", ablated},
      {"n", c.examples},
      {"scored", c.scored},
      {"correct", c.correct},
      {"loss_sum", c.loss_sum},
      {"draws", c.draws},
      {"draw_correct", c.draw_correct},
      {"paired",
       {p.clusters, p.units, p.units_sq, p.diff, p.diff_sq, p.units_diff}}};
}

MaskCounts CountsFromJson(const json& j) {
  MaskCounts c;
  c.mask_index = j.at("i").get<int>();
  c.mask_id = j.at("id").get<std::string>();
  c.spec = j.at("spec").get<std::string>();
  for (const json& lh : j.at("ablated")) {
    c.ablated.push_back({lh.at(0).get<int>(), lh.at(1).get<int>()});
  }
  c.examples = j.at("n").get<int64_t>();
  // Lines written before `scored` existed scored one unit per example.
  c.scored = j.value("scored", c.examples);
  c.correct = j.at("correct").get<int64_t>();
  c.loss_sum = j.at("loss_sum").get<double>();
  // Lines written before intervals existed carry no draws or paired sums:
  // their results merge without an interval of the change.
  c.draws = j.value("draws", 1);
  c.draw_correct = j.value("draw_correct", std::vector<int64_t>{});
  if (j.contains("paired")) {
    const json& p = j.at("paired");
    c.paired = PairedSums{p.at(0).get<int64_t>(), p.at(1).get<double>(),
                          p.at(2).get<double>(),  p.at(3).get<double>(),
                          p.at(4).get<double>(),  p.at(5).get<double>()};
  }
  return c;
}

}  // namespace

std::string ShardResultToJson(const ShardResult& r) {
  json masks = json::array();
  for (const MaskCounts& c : r.masks) masks.push_back(CountsToJson(c));
  const Shard& s = r.shard;
  json j{{"shard", s.Key()},
         {"index", s.index},
         {"masks_range", {s.mask_begin, s.mask_end}},
         {"examples_range", {s.example_begin, s.example_end}},
         {"replica", r.replica},
         {"baseline", CountsToJson(r.baseline)},
         {"masks", masks}};
  return j.dump();
}

absl::StatusOr<ShardResult> ShardResultFromJson(const std::string& line) {
  try {
    const json j = json::parse(line);
    ShardResult r;
    r.shard.index = j.at("index").get<int>();
    r.shard.mask_begin = j.at("masks_range").at(0).get<int>();
    r.shard.mask_end = j.at("masks_range").at(1).get<int>();
    r.shard.example_begin = j.at("examples_range").at(0).get<int>();
    r.shard.example_end = j.at("examples_range").at(1).get<int>();
    r.replica = j.at("replica").get<std::string>();
    r.baseline = CountsFromJson(j.at("baseline"));
    for (const json& m : j.at("masks")) r.masks.push_back(CountsFromJson(m));
    return r;
  } catch (const json::exception& e) {
    return absl::DataLossError(absl::StrCat("bad shard line: ", e.what()));
  }
}

// The header check and the finished shards; `has_header` says whether the
// file had its header line (a new or empty file has none).
static absl::StatusOr<std::vector<ShardResult>> ReadProgressLines(
    const std::string& path, const std::string& fingerprint, bool* has_header) {
  *has_header = false;
  std::vector<ShardResult> finished;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (!*has_header) {
      std::string found;
      try {
        found = json::parse(line).at("sweep").get<std::string>();
      } catch (const json::exception&) {
        return absl::FailedPreconditionError(absl::StrCat(
            path,
            ":1 is not a sweep progress file; delete it or choose another "
            "--progress-file"));
      }
      if (found != fingerprint) {
        return absl::FailedPreconditionError(absl::StrCat(
            path, " is the progress of another sweep (", found,
            ", this one is ", fingerprint,
            "); delete it or choose another --progress-file (a part of an "
            "Indexed Job must be run with the same flags as the others)"));
      }
      *has_header = true;
      continue;
    }
    absl::StatusOr<ShardResult> r = ShardResultFromJson(line);
    // A torn line (the writer died mid-line; a resumed run starts a new
    // line after it) only means that shard runs again.
    if (!r.ok()) continue;
    finished.push_back(*std::move(r));
  }
  return finished;
}

absl::StatusOr<std::vector<ShardResult>> ReadProgressFile(
    const std::string& path, const std::string& fingerprint) {
  if (!std::ifstream(path)) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the progress file ", path));
  }
  bool has_header = false;
  return ReadProgressLines(path, fingerprint, &has_header);
}

absl::StatusOr<std::unique_ptr<ProgressLog>> ProgressLog::Open(
    const std::string& path, const std::string& fingerprint) {
  std::unique_ptr<ProgressLog> log(new ProgressLog());
  log->path_ = path;
  bool torn_tail = false;
  {
    std::ifstream tail(path, std::ios::binary | std::ios::ate);
    if (tail && tail.tellg() > 0) {
      tail.seekg(-1, std::ios::end);
      torn_tail = tail.get() != '\n';
    }
  }
  bool has_header = false;
  absl::StatusOr<std::vector<ShardResult>> finished =
      ReadProgressLines(path, fingerprint, &has_header);
  if (!finished.ok()) return finished.status();
  log->finished_ = *std::move(finished);
  // A sweep Job's first pod meets a fresh volume: the file's folder is
  // made here (as `mkdir -p`), not left to an init step.
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create the progress file's folder ",
                       parent.string(), ": ", ec.message()));
    }
  }
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot write the progress file ", path, ": ", std::strerror(errno)));
  }
  if (torn_tail) std::fputc('\n', f);  // keep the torn line on its own
  if (!has_header) {
    std::fprintf(f, "%s\n", json{{"sweep", fingerprint}}.dump().c_str());
    std::fflush(f);
  }
  absl::MutexLock lock(&log->mu_);
  log->file_ = f;
  return log;
}

ProgressLog::~ProgressLog() {
  absl::MutexLock lock(&mu_);
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status ProgressLog::Append(const ShardResult& result) {
  const std::string line = ShardResultToJson(result) + "\n";
  absl::MutexLock lock(&mu_);
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fflush(file_) != 0) {
    return absl::DataLossError(
        absl::StrCat("cannot append to the progress file ", path_));
  }
  return absl::OkStatus();
}

}  // namespace client
}  // namespace bertology
