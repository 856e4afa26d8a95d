// MEAN and RESAMPLE ablation read reference statistics the server keeps
// under an id; these helpers compute them from a --reference file
// (ComputeHeadStatistics), for `statistics` and for the commands that take
// a head mask.
#ifndef BERTOLOGY_CLIENT_CLI_REFERENCE_STATISTICS_H_
#define BERTOLOGY_CLIENT_CLI_REFERENCE_STATISTICS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bertology/v1/bertology.grpc.pb.h"
#include "client/cli/args.h"

namespace bertology {
namespace client {

// One ComputeHeadStatistics call for --model with `inputs`, under the
// --timeout deadline (default 10 minutes: the reference set runs through
// the whole model).
absl::StatusOr<v1::ComputeHeadStatisticsResponse> ComputeStatistics(
    v1::Bertology::Stub* stub, const Args& args,
    const std::vector<v1::TextInput>& inputs);

// "hs-0123456789abcdef: 100 examples, 2345 tokens (2 truncated)".
std::string StatisticsLine(const v1::ReferenceStatistics& statistics);

// With --reference (for --mode=mean or resample, as CheckReferenceFlags
// allows): reads the file (the --data column flags when `column_flags`),
// computes its statistics and sets *statistics to their id (a HeadMask's
// or a PruneCurveRequest's field), telling stderr the id so later runs can
// pass --statistics. Errors carry their exit code (kExitUsage for a bad
// --reference, kExitData for an unreadable one, kExitRpc for the call);
// without --reference does nothing.
absl::Status ResolveMaskStatistics(v1::Bertology::Stub* stub, const Args& args,
                                   bool column_flags, std::string* statistics);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_REFERENCE_STATISTICS_H_
