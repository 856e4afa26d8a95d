// A Patch stream's plan and results as JSON, CSV, a terminal table of the
// strongest sites, and the render::PatchGrid the figure takes.
#ifndef BERTOLOGY_CLIENT_CLI_PATCH_OUTPUT_H_
#define BERTOLOGY_CLIENT_CLI_PATCH_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bertology/v1/bertology.pb.h"
#include "client/render/patch_figure.h"

namespace bertology {
namespace client {

struct PatchRun {
  v1::PatchPlan plan;
  std::vector<v1::PatchResult> results;  // in site order
};

// OK when the results are the plan's sites, each once, in order (what the
// server promises); INTERNAL naming the first gap otherwise, so a cut or
// reordered stream is not written as a complete run.
absl::Status CheckPatchRun(const PatchRun& run);

// "clean-into-corrupted" / "corrupted-into-clean".
std::string DirectionName(v1::PatchDirection direction);
// "exact" (also UNSPECIFIED) / "attribution".
std::string PatchMethodName(v1::PatchMethod method);
// "L3H5", "L3H5@7", "resid L3", "resid L3@7".
std::string SiteName(const v1::PatchSite& site);

// {"plan": {..., method}, "results": [{site_index, kind, layer, head,
// position, logits, logit_diff, normalized_effect}]}; position and
// normalized_effect are null when unset; logits are empty for the
// attribution method (it estimates logit_diff alone).
std::string PatchJson(const PatchRun& run);

// Header: site_index,kind,layer,head,position,logit_diff,normalized_effect,
// method; position and normalized_effect are empty when unset; method is
// the plan's ("exact", or "attribution": logit_diff is then the
// first-order estimate).
std::string PatchCsv(const PatchRun& run);

// How strongly a site matters in the run's direction, the score the table
// ranks by (NaN without a normalized effect):
//   clean-into-corrupted (denoising; also UNSPECIFIED): |normalized_effect|,
//     the share of the clean behaviour the site alone restores;
//   corrupted-into-clean (noising): |1 - normalized_effect|, the share of
//     the clean behaviour the site alone destroys (a site that does not
//     matter leaves the clean run as it was: effect 1, score 0).
double PatchSiteScore(const v1::PatchResult& result,
                      v1::PatchDirection direction);
// "|normalized_effect|" or "|1 - normalized_effect|".
std::string PatchScoreName(v1::PatchDirection direction);

// The run's method and logit differences, then the `top` sites by
// PatchSiteScore (descending; ties and sites without a score in site order, the
// latter last), one line each; the header names the score.
std::string PatchTable(const PatchRun& run, int top);

// Whole-head sites (no position) as a layers x heads grid.
render::PatchGrid PatchHeadGrid(const PatchRun& run);
// Head sites with a position as one row per (layer, head), in site order,
// and one column per clean token.
render::PatchGrid PatchPositionGrid(const PatchRun& run);
// Residual sites at one position: one row per layer whose input was
// patched ("L0" = the embeddings, "L<num_layers>" = the encoder output), one
// column per clean token: causal tracing's grid.
render::PatchGrid PatchResidualGrid(const PatchRun& run);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_PATCH_OUTPUT_H_
