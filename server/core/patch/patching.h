// Activation patching between two inputs of the same length: the source
// run's activation at a site (one head's output, or the residual stream
// entering a layer, at one position or all) replaces the target run's, and
// the target's logits are read.
//
// Both inputs run once, as one batch of two, with every layer's input and
// head outputs kept (ActivatePatcher::Create); each patched row then starts
// from the target's cached input of the lowest layer its sites touch (the
// layers below compute exactly the target's unpatched values), with many
// rows, each its own patch, packed into one forward pass (Run).
//
// Thread-compatible: an ActivationPatcher is immutable after Create; Run
// may be called from many threads. The Model must outlive it.
#ifndef BERTOLOGY_CORE_PATCHING_H_
#define BERTOLOGY_CORE_PATCHING_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/model/model.h"
#include "server/core/model/patch_site.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

enum class PatchDirection {
  kCleanIntoCorrupted,  // run the corrupted input, patch in the clean values
  kCorruptedIntoClean,  // run the clean input, patch in the corrupted values
};

// OK when `site` exists in a model of `config` and inputs of `tokens`
// tokens; else INVALID_ARGUMENT naming `field` ("sites[3].head=12 out of
// range [0, 12)"). Shared by exact and attribution patching.
absl::Status CheckPatchSite(const BertConfig& config, int tokens,
                            const PatchSite& site, const std::string& field);

class ActivationPatcher {
 public:
  // FAILED_PRECONDITION for a model that is not a sequence classifier;
  // INVALID_ARGUMENT when the encodings' lengths differ (naming both).
  static absl::StatusOr<std::unique_ptr<ActivationPatcher>> Create(
      const Model& model, const Encoding& clean, const Encoding& corrupted,
      PatchDirection direction);
  ~ActivationPatcher();

  // The unpatched runs' logits, [C] each.
  const std::vector<float>& clean_logits() const { return clean_logits_; }
  const std::vector<float>& corrupted_logits() const {
    return corrupted_logits_;
  }
  int num_tokens() const { return num_tokens_; }

  // CheckPatchSite for this model and these inputs.
  absl::Status CheckSite(const PatchSite& site, const std::string& field) const;

  // The target run's logits [rows][C], row r with all of `rows[r]`'s sites
  // patched at once (an empty list: the unpatched target). One forward pass.
  absl::StatusOr<std::vector<std::vector<float>>> Run(
      const std::vector<std::vector<PatchSite>>& rows) const;

 private:
  struct Cache;
  ActivationPatcher(const Model& model, std::unique_ptr<Cache> cache);
  const Model& model_;
  std::unique_ptr<Cache> cache_;
  std::vector<float> clean_logits_, corrupted_logits_;
  int num_tokens_ = 0;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_PATCHING_H_
