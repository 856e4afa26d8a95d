#include "client/render/mask_groups.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bertology::render {
namespace {

// Parses the "-L{b}-{e}" part of a "random-L{b}-{e}-k{k}-s{seed}-r{n}" id.
// Returns false when there is none (a mask over all layers).
bool ParseRange(absl::string_view id, int* begin, int* end) {
  const size_t at = id.find("-L");
  if (at == absl::string_view::npos) return false;
  std::vector<absl::string_view> parts = absl::StrSplit(id.substr(at + 2), '-');
  return parts.size() >= 2 && absl::SimpleAtoi(parts[0], begin) &&
         absl::SimpleAtoi(parts[1], end) && *begin < *end;
}

}  // namespace

int NumZeroed(const MaskOutcome& r) {
  return static_cast<int>(r.ablated.size() - r.scaled.size());
}

bool IsSingleHead(const MaskOutcome& r, int layers, int heads,
                  HeadIndex* head) {
  if (r.ablated.size() != 1 || !r.scaled.empty()) return false;
  const HeadIndex& h = r.ablated[0];
  if (h.layer < 0 || h.layer >= layers || h.head < 0 || h.head >= heads) {
    return false;
  }
  *head = h;
  return true;
}

bool IsWholeLayer(const MaskOutcome& r, int layers, int heads, int* layer) {
  if (heads < 1 || r.ablated.size() != static_cast<size_t>(heads) ||
      !r.scaled.empty()) {
    return false;
  }
  // A single-head layer would make every single-head mask a layer mask too;
  // that is still true, and harmless for the figures.
  const int l = r.ablated[0].layer;
  if (l < 0 || l >= layers) return false;
  std::set<int> seen;
  for (const HeadIndex& h : r.ablated) {
    if (h.layer != l || h.head < 0 || h.head >= heads) return false;
    seen.insert(h.head);
  }
  if (seen.size() != static_cast<size_t>(heads)) return false;
  *layer = l;
  return true;
}

std::vector<FractionSeries> RandomSeries(const SweepResults& sweep) {
  const int layers = sweep.num_layers, heads = sweep.num_heads;
  // (begin, end) -> num_ablated -> accuracies
  std::map<std::pair<int, int>, std::map<int, std::vector<double>>> groups;
  for (const MaskOutcome& r : sweep.results) {
    if (!absl::StartsWith(r.mask_id, "random-") || r.ablated.empty() ||
        !std::isfinite(r.accuracy)) {
      continue;
    }
    int begin = 0, end = layers;
    if (ParseRange(r.mask_id, &begin, &end)) {
      begin = std::clamp(begin, 0, layers);
      end = std::clamp(end, begin, layers);
    }
    if (end <= begin) continue;
    groups[{begin, end}][static_cast<int>(r.ablated.size())].push_back(
        r.accuracy);
  }
  std::vector<FractionSeries> series;
  for (const auto& [range, by_k] : groups) {
    FractionSeries s;
    s.layer_begin = range.first;
    s.layer_end = range.second;
    s.label = range.first == 0 && range.second == layers
                  ? "all layers"
                  : absl::StrCat("layers ", range.first, "-", range.second - 1);
    const double n = static_cast<double>(range.second - range.first) * heads;
    for (const auto& [k, accs] : by_k) {
      FractionPoint p;
      p.num_ablated = k;
      p.fraction = n > 0 ? k / n : 0;
      p.repeats = static_cast<int>(accs.size());
      p.min_accuracy = *std::min_element(accs.begin(), accs.end());
      p.max_accuracy = *std::max_element(accs.begin(), accs.end());
      double sum = 0;
      for (double a : accs) sum += a;
      p.mean_accuracy = sum / accs.size();
      s.points.push_back(p);
    }
    series.push_back(std::move(s));
  }
  return series;
}

}  // namespace bertology::render
