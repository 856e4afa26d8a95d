// Head masks and sweep specs from flags.
//   --ablate=L:H,L:H   these heads off        --keep=L:H,...  only these on
//   --mode=zero|uniform|mean|resample
//   mean/resample: --statistics=ID (ComputeHeadStatistics) or
//   --reference=FILE (inputs to compute them from); resample: --draws=N,
//   --seed=S
//   sweep: --heads, --layers, --random=FRACTION[,REPEATS[,SEED[,B-E]]],
//          --keep-only=B-E[:L:H,L:H...], --mask=L:H,L:H (all repeatable)
// Layer ranges B-E are inclusive ("0-5" is layers 0 to 5).
#ifndef BERTOLOGY_CLIENT_CLI_MASK_FLAGS_H_
#define BERTOLOGY_CLIENT_CLI_MASK_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"
#include "client/cli/args.h"

namespace bertology {
namespace client {

// --ablate, --keep, --mode and ReferenceFlags().
std::vector<FlagSpec> HeadMaskFlags();
std::vector<FlagSpec> SweepSpecFlags();  // --heads ... --mode
// --statistics, --reference, --draws, --seed.
std::vector<FlagSpec> ReferenceFlags();

// --mode: zero (the default), uniform, mean or resample.
absl::StatusOr<v1::AblationMode> ParseMode(const Args& args);
// "zero", "uniform", "mean", "resample": the names --mode takes.
std::string ModeName(v1::AblationMode mode);
// --draws and --seed (draws 0 when absent: the server's 1). INVALID_ARGUMENT
// for a bad number or draws outside 0..64.
absl::StatusOr<v1::ResampleOptions> ParseResample(const Args& args);
// The reference flags against `mode`: mean and resample need --statistics
// or --reference (not both); the other modes take neither, and --draws and
// --seed only go with resample, so a flag that would be ignored is refused.
absl::Status CheckReferenceFlags(const Args& args, v1::AblationMode mode);
// "2:3,4:0" -> heads. INVALID_ARGUMENT naming `flag`.
absl::StatusOr<v1::HeadList> ParseHeadList(const std::string& text,
                                           const char* flag);
// No --ablate/--keep: an unset mask (all heads on). Sets the mode,
// --statistics and the resample options; --reference is left to
// ResolveMaskStatistics (reference_statistics.h), which needs the server.
absl::StatusOr<v1::HeadMask> ParseHeadMask(const Args& args);
// In flag order: --mask, --heads, --layers, --random, --keep-only.
absl::StatusOr<std::vector<v1::MaskSpec>> ParseSweepSpecs(const Args& args);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_MASK_FLAGS_H_
