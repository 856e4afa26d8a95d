// A site of activation patching: where a source run's activation replaces
// the target run's (server/core/patch/patching.h). No libtorch; the
// activations themselves are activation_patch.h's.
#ifndef BERTOLOGY_CORE_PATCH_SITE_H_
#define BERTOLOGY_CORE_PATCH_SITE_H_

namespace bertology {

struct PatchSite {
  enum class Kind {
    kHead,      // one head's output (p @ V, before the output projection)
    kResidual,  // the input hidden state of `layer` (layer L: encoder output)
  };
  Kind kind = Kind::kHead;
  int layer = 0;
  int head = 0;       // kHead only
  int position = -1;  // a token index; -1: every position
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_PATCH_SITE_H_
