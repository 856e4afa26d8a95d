#include "client/cli/mask_flags.h"

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/ablation_mode_proto.h"

namespace bertology {
namespace client {
namespace {

// "B-E" inclusive, or "B" -> [begin, end).
absl::Status ParseLayerRange(const std::string& text, const char* flag,
                             int* begin, int* end) {
  std::vector<std::string> be = absl::StrSplit(text, absl::MaxSplits('-', 1));
  int b, e;
  if (!absl::SimpleAtoi(be[0], &b) ||
      !absl::SimpleAtoi(be.size() == 2 ? be[1] : be[0], &e) || b < 0 || e < b) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": '", text, "' is not a layer range like 0-5"));
  }
  *begin = b;
  *end = e + 1;
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> HeadMaskFlags() {
  std::vector<FlagSpec> flags = {
      {"ablate", true, "mask these heads, e.g. 2:3,4:0 (layer:head)", "L:H,.."},
      {"keep", true, "keep only these heads, mask all others", "L:H,.."},
      {"mode", true,
       "zero (HF head_mask), uniform (Kovaleva et al.), mean, mean_by_role "
       "(the head's mean output over reference inputs, pooled or per token "
       "role) or resample (sweeps: its output on other inputs, per position)",
       "MODE"},
  };
  for (FlagSpec& f : ReferenceFlags()) flags.push_back(f);
  return flags;
}

std::vector<FlagSpec> ReferenceFlags() {
  return {
      {"statistics", true,
       "mean/mean_by_role/resample: reference statistics id on the server "
       "(bertology statistics)",
       "ID"},
      {"reference", true,
       "mean/mean_by_role/resample: reference inputs (.tsv, .csv, .jsonl; "
       "labels ignored) "
       "to compute the statistics from",
       "FILE"},
      {"draws", true, "resample: reference examples drawn per input (1-64)",
       "N"},
      {"seed", true, "resample: seed of the draws (default 0)", "S"},
      {"alignment", true,
       "resample: matched (default: reference inputs with the same segment "
       "lengths) or scaled (positions scaled within each segment)",
       "A"},
  };
}

std::vector<FlagSpec> SweepSpecFlags() {
  std::vector<FlagSpec> flags = {
      {"heads", false, "one mask per single head (the layers x heads grid)"},
      {"layers", false, "one mask per whole layer"},
      {"random", true,
       "ROUND(FRACTION x heads) random heads, REPEATS masks (default 1), "
       "SEED (default 0), within layers B-E (inclusive; default all); "
       "repeatable",
       "F[,R[,SEED[,B-E]]]"},
      {"keep-only", true,
       "mask layers B-E (inclusive) except the listed heads; repeatable",
       "B-E[:L:H,..]"},
      {"mask", true, "one explicit mask of these heads; repeatable", "L:H,.."},
      {"mode", true,
       "zero, uniform, mean, mean_by_role or resample (default zero)", "MODE"},
  };
  for (FlagSpec& f : ReferenceFlags()) flags.push_back(f);
  return flags;
}

absl::StatusOr<v1::AblationMode> ParseMode(const Args& args) {
  const std::string mode = args.Get("mode", "zero");
  const std::optional<AblationMode> core = AblationModeFromName(mode);
  if (!core) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode=", mode,
                     " is not zero, uniform, mean, mean_by_role or resample"));
  }
  return AblationModeToProto(*core);
}

std::string ModeName(v1::AblationMode mode) {
  return AblationModeName(
      AblationModeFromProto(mode).value_or(AblationMode::kZero));
}

absl::StatusOr<v1::ResampleOptions> ParseResample(const Args& args) {
  v1::ResampleOptions options;
  absl::StatusOr<int> draws = args.GetInt("draws", 0);
  if (!draws.ok()) return draws.status();
  if (*draws < 0 || *draws > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--draws=", *draws, " is not in 1..64"));
  }
  uint64_t seed = 0;
  if (args.Has("seed") && !absl::SimpleAtoi(args.Get("seed"), &seed)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--seed=", args.Get("seed"), " is not a non-negative integer"));
  }
  options.set_draws(*draws);
  options.set_seed(seed);
  const std::string alignment = args.Get("alignment", "matched");
  if (alignment == "matched") {
    options.set_alignment(v1::RESAMPLE_ALIGNMENT_MATCHED_LENGTHS);
  } else if (alignment == "scaled") {
    options.set_alignment(v1::RESAMPLE_ALIGNMENT_SCALED);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--alignment=", alignment, " is not matched or scaled"));
  }
  return options;
}

absl::Status CheckReferenceFlags(const Args& args, v1::AblationMode mode) {
  const bool reads_reference = mode == v1::ABLATION_MODE_MEAN ||
                               mode == v1::ABLATION_MODE_MEAN_BY_ROLE ||
                               mode == v1::ABLATION_MODE_RESAMPLE;
  const std::string name = ModeName(mode);
  if (!reads_reference) {
    for (const char* flag :
         {"statistics", "reference", "draws", "seed", "alignment"}) {
      if (args.Has(flag)) {
        const bool resample_only = std::string(flag) == "draws" ||
                                   std::string(flag) == "seed" ||
                                   std::string(flag) == "alignment";
        return absl::InvalidArgumentError(absl::StrCat(
            "--", flag, " goes with --mode=",
            resample_only ? "resample" : "mean, mean_by_role or resample",
            ", not ", name));
      }
    }
    return absl::OkStatus();
  }
  if (args.Has("statistics") && args.Has("reference")) {
    return absl::InvalidArgumentError(
        "--statistics and --reference exclude each other");
  }
  if (!args.Has("statistics") && !args.Has("reference")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mode=", name, " needs --statistics=ID or --reference=FILE"));
  }
  if (mode != v1::ABLATION_MODE_RESAMPLE &&
      (args.Has("draws") || args.Has("seed") || args.Has("alignment"))) {
    return absl::InvalidArgumentError(
        "--draws, --seed and --alignment go with --mode=resample");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::HeadList> ParseHeadList(const std::string& text,
                                           const char* flag) {
  v1::HeadList list;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> lh = absl::StrSplit(item, ':');
    int l, h;
    if (lh.size() != 2 || !absl::SimpleAtoi(lh[0], &l) ||
        !absl::SimpleAtoi(lh[1], &h)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, ": '", item, "' is not LAYER:HEAD (e.g. 2:3)"));
    }
    v1::LayerHead* out = list.add_heads();
    out->set_layer(l);
    out->set_head(h);
  }
  return list;
}

absl::StatusOr<v1::HeadMask> ParseHeadMask(const Args& args) {
  v1::HeadMask mask;
  if (args.Has("ablate") && args.Has("keep")) {
    return absl::InvalidArgumentError("--ablate and --keep exclude each other");
  }
  absl::StatusOr<v1::AblationMode> mode = ParseMode(args);
  if (!mode.ok()) return mode.status();
  absl::Status reference = CheckReferenceFlags(args, *mode);
  if (!reference.ok()) return reference;
  if (args.Has("ablate")) {
    absl::StatusOr<v1::HeadList> l =
        ParseHeadList(args.Get("ablate"), "ablate");
    if (!l.ok()) return l.status();
    *mask.mutable_ablate() = *l;
  } else if (args.Has("keep")) {
    absl::StatusOr<v1::HeadList> l = ParseHeadList(args.Get("keep"), "keep");
    if (!l.ok()) return l.status();
    *mask.mutable_keep() = *l;
  }
  mask.set_mode(*mode);
  mask.set_statistics(args.Get("statistics"));
  if (*mode == v1::ABLATION_MODE_RESAMPLE) {
    absl::StatusOr<v1::ResampleOptions> resample = ParseResample(args);
    if (!resample.ok()) return resample.status();
    *mask.mutable_resample() = *resample;
  }
  return mask;
}

absl::StatusOr<std::vector<v1::MaskSpec>> ParseSweepSpecs(const Args& args) {
  std::vector<v1::MaskSpec> specs;
  for (const std::string& m : args.GetAll("mask")) {
    absl::StatusOr<v1::HeadList> l = ParseHeadList(m, "mask");
    if (!l.ok()) return l.status();
    v1::MaskSpec spec;
    *spec.mutable_explicit_mask()->mutable_mask()->mutable_ablate() = *l;
    specs.push_back(spec);
  }
  if (args.Has("heads")) specs.emplace_back().mutable_all_single_heads();
  if (args.Has("layers")) specs.emplace_back().mutable_all_layers();
  for (const std::string& r : args.GetAll("random")) {
    std::vector<std::string> parts = absl::StrSplit(r, ',');
    v1::MaskSpec spec;
    auto* random = spec.mutable_random();
    double fraction;
    int repeats = 1;
    uint64_t seed = 0;
    if (parts.size() > 4 || !absl::SimpleAtod(parts[0], &fraction) ||
        (parts.size() > 1 && !absl::SimpleAtoi(parts[1], &repeats)) ||
        (parts.size() > 2 && !absl::SimpleAtoi(parts[2], &seed))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--random=", r, " is not FRACTION[,REPEATS[,SEED[,B-E]]]"));
    }
    random->set_fraction(fraction);
    random->set_repeats(repeats);
    random->set_seed(seed);
    if (parts.size() == 4) {
      int b, e;
      absl::Status s = ParseLayerRange(parts[3], "random", &b, &e);
      if (!s.ok()) return s;
      random->set_layer_begin(b);
      random->set_layer_end(e);
    }
    specs.push_back(spec);
  }
  for (const std::string& k : args.GetAll("keep-only")) {
    std::vector<std::string> parts = absl::StrSplit(k, absl::MaxSplits(':', 1));
    v1::MaskSpec spec;
    auto* keep = spec.mutable_keep_only();
    int b, e;
    absl::Status s = ParseLayerRange(parts[0], "keep-only", &b, &e);
    if (!s.ok()) return s;
    keep->set_layer_begin(b);
    keep->set_layer_end(e);
    if (parts.size() == 2) {
      absl::StatusOr<v1::HeadList> l = ParseHeadList(parts[1], "keep-only");
      if (!l.ok()) return l.status();
      *keep->mutable_keep() = l->heads();
    }
    specs.push_back(spec);
  }
  if (specs.empty()) {
    return absl::InvalidArgumentError(
        "no masks: give --heads, --layers, --random, --keep-only or --mask");
  }
  return specs;
}

}  // namespace client
}  // namespace bertology
