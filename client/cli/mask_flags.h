// Head masks and sweep specs from flags.
//   --ablate=L:H,L:H   these heads off        --keep=L:H,...  only these on
//   --mode=zero|uniform
//   sweep: --heads, --layers, --random=FRACTION[,REPEATS[,SEED[,B-E]]],
//          --keep-only=B-E[:L:H,L:H...], --mask=L:H,L:H (all repeatable)
// Layer ranges B-E are inclusive ("0-5" is layers 0 to 5).
#ifndef BERTOLOGY_CLIENT_CLI_MASK_FLAGS_H_
#define BERTOLOGY_CLIENT_CLI_MASK_FLAGS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "bertology/v1/bertology.pb.h"
#include "client/cli/args.h"

namespace bertology {
namespace client {

std::vector<FlagSpec> HeadMaskFlags();   // --ablate, --keep, --mode
std::vector<FlagSpec> SweepSpecFlags();  // --heads ... --mode

absl::StatusOr<v1::AblationMode> ParseMode(const Args& args);
// "2:3,4:0" -> heads. INVALID_ARGUMENT naming `flag`.
absl::StatusOr<v1::HeadList> ParseHeadList(const std::string& text,
                                           const char* flag);
// No --ablate/--keep: an unset mask (all heads on).
absl::StatusOr<v1::HeadMask> ParseHeadMask(const Args& args);
// In flag order: --mask, --heads, --layers, --random, --keep-only.
absl::StatusOr<std::vector<v1::MaskSpec>> ParseSweepSpecs(const Args& args);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_MASK_FLAGS_H_
