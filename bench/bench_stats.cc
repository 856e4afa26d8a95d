#include "bench/bench_stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>

namespace bertology::bench {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Percentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
  return samples[std::min(samples.size() - 1, rank == 0 ? 0 : rank - 1)];
}

void EmitResult(const nlohmann::json& result, const std::string& json_out) {
  std::cout << result.dump(2) << "\n";
  if (!json_out.empty()) std::ofstream(json_out) << result.dump(2) << "\n";
}

}  // namespace bertology::bench
