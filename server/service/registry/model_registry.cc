#include "server/service/registry/model_registry.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/head_mask.h"
#include "common/status_macros.h"
#include "server/core/model/model.h"
#include "server/core/sweep/sweep.h"
#include "server/service/registry/batcher.h"
#include "server/service/registry/reference_store.h"
#include "server/service/registry/row_budget.h"
#include "server/service/registry/version.h"

namespace bertology {
namespace {

// A [CLS] [UNK]... [SEP] input of `length` tokens.
Encoding WarmupEncoding(const Model& model, int length) {
  const SpecialTokens& s = model.tokenizer().specials();
  Encoding encoding;
  for (int i = 0; i < length; ++i) {
    Token token;
    token.special = (i == 0 || i == length - 1);
    token.id = i == 0 ? s.cls_id : (i == length - 1 ? s.sep_id : s.unk_id);
    token.text = i == 0 ? s.cls : (i == length - 1 ? s.sep : s.unk);
    token.word_index = token.special ? -1 : i - 1;
    encoding.tokens.push_back(std::move(token));
  }
  encoding.num_words = length - 2;
  return encoding;
}

absl::Status WarmUp(const Model& model, int passes, int batch_size) {
  if (passes <= 0) return absl::OkStatus();
  const Encoding encoding = WarmupEncoding(model, model.max_seq_len());
  // Alternate unmasked and masked passes so both code paths are warm.
  const BertConfig& c = model.config();
  ASSIGN_OR_RETURN(HeadMask masked,
                   HeadMask::Ablate(c.num_hidden_layers, c.num_attention_heads,
                                    {LayerHead{0, 0}}, AblationMode::kUniform));
  const std::vector<ModelRow> plain(std::max(1, batch_size),
                                    ModelRow{&encoding, nullptr});
  const std::vector<ModelRow> with_mask(plain.size(),
                                        ModelRow{&encoding, &masked});
  ForwardOptions options;
  options.compute_logits = model.has_classifier();
  for (int i = 0; i < passes; ++i) {
    RETURN_IF_ERROR(
        model.Forward(i % 2 == 1 ? with_mask : plain, options).status());
  }
  return absl::OkStatus();
}

}  // namespace

ServedModel::ServedModel() = default;
ServedModel::~ServedModel() = default;

std::string ServedModel::identity() const {
  return absl::StrCat(model->identity(), ";server=", kBertologyVersion);
}

ModelRegistry::~ModelRegistry() { Shutdown(); }

absl::Status ModelRegistry::Load(const ModelLoadOptions& options) {
  const std::string what =
      absl::StrCat("model ", options.name, " (", options.dir, ")");
  for (const auto& served : models_) {
    if (served->name == options.name) {
      return absl::InvalidArgumentError(
          absl::StrCat("--model: the name ", options.name, " is used twice"));
    }
  }
  // Model::Load checks the device (CUDA present, index in range) first.
  ModelOptions model_options;
  model_options.dir = options.dir;
  model_options.device = options.device;
  model_options.dtype = options.dtype;
  model_options.attention = options.attention;
  model_options.tf32 = options.tf32;
  model_options.max_seq_len = options.max_seq_len;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(model_options);
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat(what, ": ", model.status().message()));
  }
  auto served = std::make_unique<ServedModel>();
  served->name = options.name;
  served->model = std::move(model).value();
  served->sweep_rows =
      std::make_unique<RowBudget>(options.max_queued_rows, "--max_queued_rows",
                                  absl::StrCat("model ", options.name));
  served->references =
      std::make_unique<ReferenceStore>(options.max_reference_sets);
  const Model& loaded = *served->model;
  if (loaded.device() != "cpu") {
    if (options.max_sweeps_per_device < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--max_sweeps_per_device=", options.max_sweeps_per_device,
          " must be >= 1"));
    }
    std::shared_ptr<RowBudget>& sweeps = device_sweeps_[loaded.device()];
    if (sweeps == nullptr) {
      sweeps = std::make_shared<RowBudget>(
          options.max_sweeps_per_device, "--max_sweeps_per_device",
          absl::StrCat("device ", loaded.device()));
    }
    served->device_sweeps = sweeps;
  }
  served->sweep_workers = options.sweep_workers > 0 ? options.sweep_workers
                                                    : AutoSweepWorkers(loaded);
  std::cerr << "bertology-server: " << what << ": " << loaded.architecture()
            << " (" << HeadKindName(loaded.head_kind()) << " head) on "
            << loaded.device() << " in " << loaded.dtype() << ", "
            << loaded.attention() << " attention; sweeps on "
            << served->sweep_workers << " worker thread(s)\n";
  if (!loaded.unused_keys().empty()) {
    std::cerr << "bertology-server: " << what << ": skipped "
              << loaded.unused_keys().size()
              << " weights this server does not compute with: "
              << absl::StrJoin(loaded.unused_keys(), ", ") << "\n";
  }
  absl::Status warm =
      WarmUp(*served->model, options.warmup_passes, options.max_batch_size);
  if (!warm.ok()) {
    return absl::Status(warm.code(),
                        absl::StrCat(what, ": warm-up: ", warm.message()));
  }
  if (!served->model->has_classifier()) {
    models_.push_back(std::move(served));
    return absl::OkStatus();
  }
  Batcher::Options batcher_options;
  batcher_options.max_batch_size = options.max_batch_size;
  batcher_options.max_queue_delay = options.max_queue_delay;
  batcher_options.max_queued_rows = options.max_queued_rows;
  batcher_options.num_workers = options.batch_workers;
  batcher_options.stats.on_batch = options.on_batch;
  absl::StatusOr<std::unique_ptr<Batcher>> batcher =
      Batcher::Create(served->model.get(), batcher_options);
  if (!batcher.ok()) {
    return absl::Status(
        batcher.status().code(),
        absl::StrCat(what, ": batcher: ", batcher.status().message()));
  }
  served->batcher = std::move(batcher).value();
  models_.push_back(std::move(served));
  return absl::OkStatus();
}

absl::StatusOr<const ServedModel*> ModelRegistry::Find(
    const std::string& name) const {
  if (!ready()) {
    return absl::UnavailableError(
        "the server is loading its models; retry when health is SERVING");
  }
  if (name.empty()) return models_.front().get();
  std::vector<std::string> names;
  for (const auto& served : models_) {
    if (served->name == name) return served.get();
    names.push_back(served->name);
  }
  return absl::NotFoundError(
      absl::StrCat("model=\"", name,
                   "\" is not loaded; loaded: ", absl::StrJoin(names, ", ")));
}

std::vector<const ServedModel*> ModelRegistry::All() const {
  std::vector<const ServedModel*> out;
  if (!ready()) return out;
  for (const auto& served : models_) out.push_back(served.get());
  return out;
}

std::vector<ModelSummary> ModelRegistry::Summaries() const {
  std::vector<ModelSummary> out;
  for (const ServedModel* served : All()) {
    const BertConfig& c = served->model->config();
    out.push_back(ModelSummary{served->name, served->model->device(),
                               served->model->dtype(), c.num_hidden_layers,
                               c.num_attention_heads});
  }
  return out;
}

void ModelRegistry::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  for (const auto& served : models_) {
    if (served->batcher) served->batcher->Shutdown();
  }
}

}  // namespace bertology
