// Attribution patching (Nanda 2023; Kramar et al. 2024, "AtP"): the
// first-order estimate of what activation patching (patching.h) measures,
// for every site at once from one forward and one backward pass:
//
//   ld(patched) ~ ld(target) + sum over the site's entries of
//                 (a_source - a_target) * d ld / d a   (at the target run),
//
// ld = logit[answer] - logit[foil], the target the run patching writes into
// (the corrupted input for kCleanIntoCorrupted, the clean one for
// kCorruptedIntoClean). A head site's entries are its head_size values at
// each of its positions (the context vector before the output projection);
// a residual site's the hidden_size values of the layer's input hidden
// state. Exact where ld is linear in the activation; it fails where it is
// not, e.g. behind saturated softmax attention (bench/RESULTS.md).
//
// Thread-safe (no state); the Model must outlive the call.
#ifndef BERTOLOGY_CORE_ATTRIBUTION_PATCHING_H_
#define BERTOLOGY_CORE_ATTRIBUTION_PATCHING_H_

#include <vector>

#include "absl/status/statusor.h"
#include "server/core/model/model.h"
#include "server/core/model/patch_site.h"
#include "server/core/patch/patching.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

struct PatchEstimates {
  double target_logit_diff = 0;  // ld of the unpatched target run
  double source_logit_diff = 0;  // ld of the unpatched source run
  // Per site (in `sites`' order): the estimated ld of the patched run.
  std::vector<double> logit_diffs;
};

// Both inputs run as one batch of two with grad, every layer's input hidden
// state and head outputs kept; one backward pass from the target row's ld.
// FAILED_PRECONDITION for a model that is not a sequence classifier;
// INVALID_ARGUMENT for encodings of different lengths, answer or foil out
// of range, or a site outside the model or the inputs (checked as
// CheckPatchSite (patching.h) checks them, naming "sites[i]").
absl::StatusOr<PatchEstimates> EstimatePatchEffects(
    const Model& model, const Encoding& clean, const Encoding& corrupted,
    PatchDirection direction, int answer, int foil,
    const std::vector<PatchSite>& sites);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_ATTRIBUTION_PATCHING_H_
