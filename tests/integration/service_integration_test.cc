// Every RPC of the real bertology-server, called through the generated C++
// stubs: results, bad input, concurrency, cancellation and metrics.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"

namespace bertology {
namespace {

using testing::GoldenModelDir;
using testing::ServerProcess;

constexpr int kLayers = 3, kHeads = 4;

const std::vector<std::string>& Texts() {
  static const auto* texts = new std::vector<std::string>{
      "the cat sat on the mat", "a dog", "this was not what they said", "it is",
      "she had been there with him"};
  return *texts;
}

// Texts() as sweep examples, labelled i % 3.
void AddLabeledTexts(v1::SweepAblationRequest* request) {
  for (size_t i = 0; i < Texts().size(); ++i) {
    auto* e = request->add_examples();
    e->mutable_input()->set_text_a(Texts()[i]);
    e->set_label(static_cast<int>(i % 3));
  }
}

v1::HeadMask Ablate(const std::vector<std::pair<int, int>>& heads) {
  v1::HeadMask mask;
  auto* list = mask.mutable_ablate();
  for (auto [l, h] : heads) {
    auto* lh = list->add_heads();
    lh->set_layer(l);
    lh->set_head(h);
  }
  return mask;
}

std::vector<float> DecodeF32(const std::string& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

float HalfToFloat(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exponent == 0)
    return sign * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
}

std::vector<float> DecodeF16(const std::string& bytes) {
  std::vector<float> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint16_t bits = static_cast<uint8_t>(bytes[2 * i]) |
                          (static_cast<uint8_t>(bytes[2 * i + 1]) << 8);
    out[i] = HalfToFloat(bits);
  }
  return out;
}

class ServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = ServerProcess::Start(
        {"--model=tiny=" + GoldenModelDir(),
         "--model=other=" + GoldenModelDir(), "--threads=1",
         "--max_batch_size=8", "--max_queue_delay_us=3000",
         "--max_inputs_per_call=16", "--max_masks_per_sweep=300",
         "--max_text_bytes=4000", "--max_message_bytes=100000",
         "--warmup_passes=1"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
    ASSERT_TRUE(server_->WaitServing().ok()) << server_->Log();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    stub_ = server_->NewStub();
  }

  grpc::Status Classify(const v1::ClassifyRequest& request,
                        v1::ClassifyResponse* response) {
    grpc::ClientContext context;
    return stub_->Classify(&context, request, response);
  }
  v1::ClassifyResponse ClassifyOk(const std::vector<std::string>& texts,
                                  const v1::HeadMask& mask = {}) {
    v1::ClassifyRequest request;
    for (const auto& t : texts) request.add_inputs()->set_text_a(t);
    *request.mutable_head_mask() = mask;
    v1::ClassifyResponse response;
    grpc::Status status = Classify(request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }
  // Runs a sweep to completion, collecting its events.
  grpc::Status Sweep(const v1::SweepAblationRequest& request,
                     std::vector<v1::SweepAblationResponse>* events,
                     grpc::ClientContext* context = nullptr) {
    grpc::ClientContext own;
    if (context == nullptr) context = &own;
    auto reader = stub_->SweepAblation(context, request);
    v1::SweepAblationResponse event;
    while (reader->Read(&event)) events->push_back(event);
    return reader->Finish();
  }

  static ServerProcess* server_;
  std::unique_ptr<v1::Bertology::Stub> stub_;
};
ServerProcess* ServiceTest::server_ = nullptr;

TEST_F(ServiceTest, GetModelInfo) {
  grpc::ClientContext context;
  v1::GetModelInfoRequest request;
  v1::GetModelInfoResponse response;
  ASSERT_TRUE(stub_->GetModelInfo(&context, request, &response).ok());
  ASSERT_EQ(response.models_size(), 2);
  const v1::ModelInfo& m = response.models(0);
  EXPECT_EQ(m.name(), "tiny");
  EXPECT_TRUE(m.is_default());
  EXPECT_FALSE(response.models(1).is_default());
  EXPECT_EQ(m.num_layers(), kLayers);
  EXPECT_EQ(m.num_heads(), kHeads);
  EXPECT_EQ(m.hidden_size(), 32);
  EXPECT_EQ(m.max_seq_len(), 64);
  EXPECT_EQ(m.vocab_size(), 120);
  ASSERT_EQ(m.label_names_size(), 3);
  EXPECT_EQ(m.label_names(2), "positive");
  EXPECT_EQ(m.device(), "cpu");
  EXPECT_FALSE(m.dtype().empty());
  EXPECT_TRUE(m.has_classifier());
  EXPECT_EQ(response.limits().max_inputs_per_call(), 16);
  EXPECT_EQ(response.limits().max_masks_per_sweep(), 300);
}

TEST_F(ServiceTest, Tokenize) {
  grpc::ClientContext context;
  v1::TokenizeRequest request;
  request.set_text_a("The cat");
  request.set_text_b("a dog");
  v1::TokenizeResponse response;
  ASSERT_TRUE(stub_->Tokenize(&context, request, &response).ok());
  ASSERT_GE(response.tokens_size(), 6);
  EXPECT_EQ(response.tokens(0).text(), "[CLS]");
  EXPECT_TRUE(response.tokens(0).special());
  EXPECT_EQ(response.tokens(1).text(), "the");  // lower-cased
  EXPECT_EQ(response.tokens(1).char_start(), 0);
  EXPECT_EQ(response.tokens(1).char_end(), 3);
  EXPECT_EQ(response.tokens(1).word_index(), 0);
  const v1::Token& last = response.tokens(response.tokens_size() - 1);
  EXPECT_EQ(last.text(), "[SEP]");
  EXPECT_EQ(last.segment(), 1);
  EXPECT_FALSE(response.truncated());
  EXPECT_EQ(response.num_words(), 4);
}

TEST_F(ServiceTest, ClassifyGivesDistributions) {
  v1::ClassifyResponse r = ClassifyOk(Texts());
  ASSERT_EQ(r.predictions_size(), static_cast<int>(Texts().size()));
  EXPECT_EQ(r.model(), "tiny");
  for (const v1::Prediction& p : r.predictions()) {
    ASSERT_EQ(p.logits_size(), 3);
    ASSERT_EQ(p.probabilities_size(), 3);
    float sum = 0;
    int best = 0;
    for (int i = 0; i < 3; ++i) {
      sum += p.probabilities(i);
      if (p.logits(i) > p.logits(best)) best = i;
    }
    EXPECT_NEAR(sum, 1.0f, 1e-5);
    EXPECT_EQ(p.label(), best);
    EXPECT_FALSE(p.label_name().empty());
    EXPECT_FALSE(p.truncated());
  }
}

TEST_F(ServiceTest, ClassifyMaskFormsAgree) {
  // Ablating {L0H1, L2H3} three ways gives the same result, different from
  // no mask; an all-ones dense mask equals no mask.
  v1::HeadMask ablate = Ablate({{0, 1}, {2, 3}});
  v1::HeadMask dense;
  v1::HeadMask keep;
  v1::HeadMask ones;
  for (int l = 0; l < kLayers; ++l) {
    for (int h = 0; h < kHeads; ++h) {
      const bool off = (l == 0 && h == 1) || (l == 2 && h == 3);
      dense.mutable_dense()->add_values(off ? 0.0f : 1.0f);
      ones.mutable_dense()->add_values(1.0f);
      if (!off) {
        auto* lh = keep.mutable_keep()->add_heads();
        lh->set_layer(l);
        lh->set_head(h);
      }
    }
  }
  const auto none = ClassifyOk(Texts());
  const auto a = ClassifyOk(Texts(), ablate);
  const auto d = ClassifyOk(Texts(), dense);
  const auto k = ClassifyOk(Texts(), keep);
  const auto o = ClassifyOk(Texts(), ones);
  float max_change = 0;
  for (size_t i = 0; i < Texts().size(); ++i) {
    for (int c = 0; c < 3; ++c) {
      const float x = a.predictions(i).logits(c);
      EXPECT_NEAR(d.predictions(i).logits(c), x, 1e-5);
      EXPECT_NEAR(k.predictions(i).logits(c), x, 1e-5);
      EXPECT_NEAR(o.predictions(i).logits(c), none.predictions(i).logits(c),
                  1e-5);
      max_change =
          std::max(max_change, std::abs(x - none.predictions(i).logits(c)));
    }
  }
  EXPECT_GT(max_change, 1e-3) << "the mask changed nothing";
}

TEST_F(ServiceTest, LongInputIsTruncated) {
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "the cat ";
  const auto r = ClassifyOk({long_text});
  EXPECT_TRUE(r.predictions(0).truncated());
  EXPECT_EQ(r.predictions(0).num_tokens(), 64);
}

TEST_F(ServiceTest, GetAttentionTokenAndWord) {
  v1::GetAttentionRequest request;
  request.mutable_input()->set_text_a("the cats sat");
  request.mutable_input()->set_text_b("a dog");
  request.add_layers(2);
  request.add_layers(0);
  request.add_heads(1);
  grpc::ClientContext c1;
  v1::GetAttentionResponse token;
  ASSERT_TRUE(stub_->GetAttention(&c1, request, &token).ok());
  const int t = token.tokens_size();
  EXPECT_EQ(token.size(), t);
  ASSERT_EQ(token.maps_size(), 2);
  EXPECT_EQ(token.maps(0).layer(), 2);
  EXPECT_EQ(token.maps(1).layer(), 0);
  const std::vector<float> map = DecodeF32(token.maps(0).data());
  ASSERT_EQ(static_cast<int>(map.size()), t * t);
  for (int i = 0; i < t; ++i) {
    float sum = 0;
    for (int j = 0; j < t; ++j) sum += map[i * t + j];
    EXPECT_NEAR(sum, 1.0f, 1e-4);
  }
  // The prediction equals Classify's for the same input.
  v1::ClassifyRequest classify;
  *classify.add_inputs() = request.input();
  v1::ClassifyResponse classified;
  ASSERT_TRUE(Classify(classify, &classified).ok());
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(token.prediction().logits(c),
                classified.predictions(0).logits(c), 1e-4);
  }

  // FLOAT16 decodes to the FLOAT32 values.
  request.set_encoding(v1::ATTENTION_ENCODING_FLOAT16);
  grpc::ClientContext c2;
  v1::GetAttentionResponse half;
  ASSERT_TRUE(stub_->GetAttention(&c2, request, &half).ok());
  const std::vector<float> map16 = DecodeF16(half.maps(0).data());
  ASSERT_EQ(map16.size(), map.size());
  for (size_t i = 0; i < map.size(); ++i) EXPECT_NEAR(map16[i], map[i], 1e-3);

  // WORD: [CLS] the cats sat [SEP] a dog [SEP]; "cats" has several pieces.
  request.set_granularity(v1::GRANULARITY_WORD);
  request.set_encoding(v1::ATTENTION_ENCODING_FLOAT32);
  grpc::ClientContext c3;
  v1::GetAttentionResponse word;
  ASSERT_TRUE(stub_->GetAttention(&c3, request, &word).ok());
  ASSERT_EQ(word.size(), 8);
  ASSERT_LT(word.size(), t);
  EXPECT_EQ(word.units(2).text(), "cats");
  EXPECT_GT(word.units(2).num_tokens(), 1);
  const std::vector<float> wmap = DecodeF32(word.maps(0).data());
  const int w = word.size();
  // To a word = sum over its pieces (from [CLS], a single-token word).
  float to_cats = 0;
  for (int k = 0; k < word.units(2).num_tokens(); ++k) {
    to_cats += map[0 * t + word.units(2).first_token() + k];
  }
  EXPECT_NEAR(wmap[0 * w + 2], to_cats, 1e-5);
  for (int i = 0; i < w; ++i) {
    float sum = 0;
    for (int j = 0; j < w; ++j) sum += wmap[i * w + j];
    EXPECT_NEAR(sum, 1.0f, 1e-4);
  }
}

TEST_F(ServiceTest, GetAttentionShowsTheMask) {
  v1::GetAttentionRequest request;
  request.mutable_input()->set_text_a("it is what it was");
  *request.mutable_head_mask() = Ablate({{1, 2}});
  request.add_layers(1);
  request.add_heads(2);
  grpc::ClientContext c1;
  v1::GetAttentionResponse zero;
  ASSERT_TRUE(stub_->GetAttention(&c1, request, &zero).ok());
  for (float v : DecodeF32(zero.maps(0).data())) EXPECT_EQ(v, 0.0f);
  request.mutable_head_mask()->set_mode(v1::ABLATION_MODE_UNIFORM);
  grpc::ClientContext c2;
  v1::GetAttentionResponse uniform;
  ASSERT_TRUE(stub_->GetAttention(&c2, request, &uniform).ok());
  const float expected = 1.0f / uniform.size();
  for (float v : DecodeF32(uniform.maps(0).data())) {
    EXPECT_NEAR(v, expected, 1e-6);
  }
}

TEST_F(ServiceTest, SweepAblation) {
  v1::SweepAblationRequest request;
  AddLabeledTexts(&request);
  request.add_masks()->mutable_all_layers();
  request.add_masks()->mutable_all_single_heads();
  auto* random = request.add_masks()->mutable_random();
  random->set_fraction(0.5);
  random->set_repeats(3);
  random->set_seed(7);
  random->set_layer_begin(1);
  auto* keep = request.add_masks()->mutable_keep_only();
  keep->set_layer_begin(0);
  keep->set_layer_end(2);
  auto* kh = keep->add_keep();
  kh->set_layer(1);
  kh->set_head(3);
  auto* explicit_mask = request.add_masks()->mutable_explicit_mask();
  explicit_mask->set_id("two-heads");
  *explicit_mask->mutable_mask() = Ablate({{0, 1}, {2, 3}});
  request.add_masks()->mutable_explicit_mask();  // identity mask

  std::vector<v1::SweepAblationResponse> events;
  grpc::Status status = Sweep(request, &events);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const int masks = kLayers + kLayers * kHeads + 3 + 1 + 2;
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events[0].has_plan());
  EXPECT_EQ(events[0].plan().num_masks(), masks);
  EXPECT_EQ(events[0].plan().total_pairs(), (masks + 1) * 5);
  int results = 0, baselines = 0;
  int64_t last_done = -1;
  v1::MaskResult baseline;
  std::map<std::string, v1::MaskResult> by_id;
  for (const auto& e : events) {
    if (e.has_progress()) {
      EXPECT_GE(e.progress().done(), last_done);
      last_done = e.progress().done();
    }
    if (e.has_baseline()) {
      ++baselines;
      baseline = e.baseline();
      EXPECT_EQ(results, 0) << "baseline after a result";
    }
    if (e.has_result()) {
      ++results;
      by_id[e.result().mask_id()] = e.result();
      EXPECT_EQ(e.result().examples(), 5);
    }
  }
  EXPECT_EQ(baselines, 1);
  EXPECT_EQ(results, masks);
  EXPECT_EQ(last_done, (masks + 1) * 5);
  ASSERT_TRUE(by_id.count("layer-1"));
  ASSERT_TRUE(by_id.count("head-L2H3"));
  EXPECT_EQ(by_id["head-L2H3"].ablated_size(), 1);
  ASSERT_TRUE(by_id.count("keep-3"));
  EXPECT_EQ(by_id["keep-3"].ablated_size(), 7);
  // The identity mask scores exactly the baseline.
  ASSERT_TRUE(by_id.count("mask-5"));
  EXPECT_EQ(by_id["mask-5"].correct(), baseline.correct());
  EXPECT_NEAR(by_id["mask-5"].accuracy_delta(), 0.0, 1e-12);
  EXPECT_NEAR(by_id["mask-5"].loss_sum(), baseline.loss_sum(), 1e-3);
  // An explicit mask's result matches Classify under the same mask.
  const auto classified = ClassifyOk(Texts(), Ablate({{0, 1}, {2, 3}}));
  int correct = 0;
  for (int i = 0; i < 5; ++i) {
    correct += classified.predictions(i).label() == i % 3 ? 1 : 0;
  }
  const v1::MaskResult& two = by_id["two-heads"];
  EXPECT_EQ(two.correct(), correct);
  EXPECT_NEAR(two.accuracy_delta(), two.accuracy() - baseline.accuracy(), 1e-9);
}

// A sweep carrying the identity it was planned against runs on a server
// serving that identity and is refused, before any event, by one serving
// another (the scheduler then sends the shard to other replicas).
TEST_F(ServiceTest, SweepRefusesAnotherModelIdentity) {
  grpc::ClientContext info_context;
  v1::GetModelInfoRequest info_request;
  info_request.set_model("tiny");
  v1::GetModelInfoResponse info;
  ASSERT_TRUE(stub_->GetModelInfo(&info_context, info_request, &info).ok());
  const std::string identity = info.models(0).identity();
  EXPECT_NE(identity.find("model.safetensors:sha256="), std::string::npos)
      << identity;

  v1::SweepAblationRequest request;
  AddLabeledTexts(&request);
  request.add_masks()->mutable_all_layers();
  request.set_model_identity(identity);
  std::vector<v1::SweepAblationResponse> events;
  grpc::Status ok = Sweep(request, &events);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_FALSE(events.empty());

  request.set_model_identity(identity + "-other");
  events.clear();
  grpc::Status refused = Sweep(request, &events);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(refused.error_message().rfind("model identity mismatch: ", 0), 0u)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find(identity + "-other"),
            std::string::npos);
  EXPECT_TRUE(events.empty());
}

// The scheduler merges the shards of one example chunk against one
// baseline: the server scores the same baseline, to the bit, for a shard
// of first-layer heads and for one of last-layer heads (whose baseline pass
// once ran the last layer in full instead of for [CLS] alone).
TEST_F(ServiceTest, SweepBaselineDoesNotDependOnTheMasks) {
  auto baseline_beside = [&](int layer) {
    v1::SweepAblationRequest request;
    AddLabeledTexts(&request);
    for (int h = 0; h < kHeads; ++h) {
      *request.add_masks()->mutable_explicit_mask()->mutable_mask() =
          Ablate({{layer, h}});
    }
    std::vector<v1::SweepAblationResponse> events;
    const grpc::Status status = Sweep(request, &events);
    EXPECT_TRUE(status.ok()) << status.error_message();
    v1::MaskResult baseline;
    for (const auto& e : events) {
      if (e.has_baseline()) baseline = e.baseline();
    }
    return baseline;
  };
  const v1::MaskResult first = baseline_beside(0);
  const v1::MaskResult last = baseline_beside(kLayers - 1);
  EXPECT_EQ(first.examples(), 5);
  EXPECT_EQ(last.correct(), first.correct());
  EXPECT_EQ(last.loss_sum(), first.loss_sum());
}

// --sweep_workers: a server running each sweep on 3 workers (each on one
// thread) and one on a single worker with one OpenBLAS thread compute the
// same batches in the same order, so every figure agrees to the bit.
TEST_F(ServiceTest, SweepWorkersDoNotChangeResults) {
  // This suite's server logs its default (one per usable core).
  EXPECT_NE(server_->Log().find("worker thread(s)"), std::string::npos);
  auto start = [](int workers) {
    auto server = ServerProcess::Start(
        {"--model=tiny=" + GoldenModelDir(), "--threads=1", "--blas_threads=1",
         "--sweep_workers=" + std::to_string(workers), "--max_batch_size=8",
         "--warmup_passes=1"});
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return std::unique_ptr<ServerProcess>();
    EXPECT_TRUE((*server)->WaitServing().ok()) << (*server)->Log();
    const std::string said =
        "sweeps on " + std::to_string(workers) + " worker thread(s)";
    EXPECT_NE((*server)->Log().find(said), std::string::npos)
        << (*server)->Log();
    return std::move(server).value();
  };
  const std::unique_ptr<ServerProcess> serial = start(1);
  const std::unique_ptr<ServerProcess> three = start(3);
  ASSERT_NE(serial, nullptr);
  ASSERT_NE(three, nullptr);
  v1::SweepAblationRequest request;
  request.set_model("tiny");
  AddLabeledTexts(&request);
  request.add_masks()->mutable_all_single_heads();
  request.add_masks()->mutable_all_layers();
  request.mutable_options()->set_max_batch_rows(4);  // many batches
  auto collect = [&](v1::Bertology::Stub* stub) {
    std::map<std::string, v1::MaskResult> results;
    grpc::ClientContext context;
    auto reader = stub->SweepAblation(&context, request);
    v1::SweepAblationResponse event;
    while (reader->Read(&event)) {
      if (event.has_result())
        results[event.result().mask_id()] = event.result();
      if (event.has_baseline()) results["baseline"] = event.baseline();
    }
    EXPECT_TRUE(reader->Finish().ok());
    return results;
  };
  const auto parallel = collect(three->NewStub().get());
  const auto one = collect(serial->NewStub().get());
  ASSERT_EQ(parallel.size(),
            static_cast<size_t>(kLayers * kHeads + kLayers + 1));
  ASSERT_EQ(one.size(), parallel.size());
  int changed = 0;
  for (const auto& [id, r] : one) {
    ASSERT_TRUE(parallel.count(id)) << id;
    EXPECT_EQ(parallel.at(id).correct(), r.correct()) << id;
    EXPECT_EQ(parallel.at(id).loss_sum(), r.loss_sum()) << id;
    changed += r.loss_sum() != one.at("baseline").loss_sum() ? 1 : 0;
  }
  EXPECT_GT(changed, kLayers * kHeads / 2);  // the masks do something
}

// A bad request gets `code` with `text` in the message.
struct BadCase {
  std::string name;
  std::function<grpc::Status(v1::Bertology::Stub*)> call;
  grpc::StatusCode code;
  std::string text;
};

grpc::Status ClassifyWith(v1::Bertology::Stub* stub,
                          std::function<void(v1::ClassifyRequest*)> edit) {
  v1::ClassifyRequest request;
  request.add_inputs()->set_text_a("the cat");
  edit(&request);
  v1::ClassifyResponse response;
  grpc::ClientContext context;
  return stub->Classify(&context, request, &response);
}

grpc::Status AttentionWith(v1::Bertology::Stub* stub,
                           std::function<void(v1::GetAttentionRequest*)> edit) {
  v1::GetAttentionRequest request;
  request.mutable_input()->set_text_a("the cat");
  edit(&request);
  v1::GetAttentionResponse response;
  grpc::ClientContext context;
  return stub->GetAttention(&context, request, &response);
}

grpc::Status SweepWith(v1::Bertology::Stub* stub,
                       std::function<void(v1::SweepAblationRequest*)> edit) {
  v1::SweepAblationRequest request;
  auto* e = request.add_examples();
  e->mutable_input()->set_text_a("the cat");
  e->set_label(1);
  request.add_masks()->mutable_all_layers();
  edit(&request);
  grpc::ClientContext context;
  auto reader = stub->SweepAblation(&context, request);
  v1::SweepAblationResponse event;
  while (reader->Read(&event)) {
  }
  return reader->Finish();
}

grpc::Status PatchWith(v1::Bertology::Stub* stub,
                       std::function<void(v1::PatchRequest*)> edit) {
  v1::PatchRequest request;
  request.mutable_clean()->set_text_a("the cat was here");
  request.mutable_corrupted()->set_text_a("the dog was here");
  request.set_all_heads(true);
  edit(&request);
  grpc::ClientContext context;
  auto reader = stub->Patch(&context, request);
  v1::PatchResponse event;
  while (reader->Read(&event)) {
  }
  return reader->Finish();
}

// Invalid UTF-8 is not here: text fields are proto3 `string`, which protobuf
// refuses to serialize or parse when not UTF-8, so it never reaches a
// handler (request_validation_test covers the server's own check).
TEST_F(ServiceTest, BadInputGetsAClearStatus) {
  using C = grpc::StatusCode;
  auto set_dense = [](v1::HeadMask* m, int n, float v) {
    for (int i = 0; i < n; ++i)
      m->mutable_dense()->add_values(i == 5 ? v : 1.0f);
  };
  std::vector<BadCase> cases = {
      {"unknown model",
       [](auto* s) {
         return ClassifyWith(s, [](auto* r) { r->set_model("nope"); });
       },
       C::NOT_FOUND, "model=\"nope\""},
      {"layer out of range",
       [](auto* s) {
         return ClassifyWith(s, [](auto* r) {
           *r->mutable_head_mask() = Ablate({{3, 0}});
         });
       },
       C::INVALID_ARGUMENT, "head_mask.ablate.heads[0].layer=3"},
      {"head out of range",
       [](auto* s) {
         return ClassifyWith(s, [](auto* r) {
           *r->mutable_head_mask() = Ablate({{0, -1}});
         });
       },
       C::INVALID_ARGUMENT, "head_mask.ablate.heads[0].head=-1"},
      {"dense length",
       [&](auto* s) {
         return ClassifyWith(
             s, [&](auto* r) { set_dense(r->mutable_head_mask(), 11, 1); });
       },
       C::INVALID_ARGUMENT, "head_mask.dense.values has 11 values"},
      {"dense value > 1",
       [&](auto* s) {
         return ClassifyWith(
             s, [&](auto* r) { set_dense(r->mutable_head_mask(), 12, 1.5f); });
       },
       C::INVALID_ARGUMENT, "head_mask.dense.values[5]"},
      {"dense NaN",
       [&](auto* s) {
         return ClassifyWith(
             s, [&](auto* r) { set_dense(r->mutable_head_mask(), 12, NAN); });
       },
       C::INVALID_ARGUMENT, "head_mask.dense.values[5]"},
      {"unknown mode",
       [](auto* s) {
         return ClassifyWith(s, [](auto* r) {
           r->mutable_head_mask()->set_mode(static_cast<v1::AblationMode>(7));
         });
       },
       C::INVALID_ARGUMENT, "head_mask.mode=7"},
      {"no inputs",
       [](auto* s) {
         return ClassifyWith(s, [](auto* r) { r->clear_inputs(); });
       },
       C::INVALID_ARGUMENT, "inputs is empty"},
      {"empty text",
       [](auto* s) {
         return ClassifyWith(s,
                             [](auto* r) { r->add_inputs()->set_text_b("x"); });
       },
       C::INVALID_ARGUMENT, "inputs[1].text_a is empty"},
      {"too many inputs",
       [](auto* s) {
         return ClassifyWith(s, [](auto* r) {
           for (int i = 0; i < 16; ++i) r->add_inputs()->set_text_a("x");
         });
       },
       C::RESOURCE_EXHAUSTED, "--max_inputs_per_call=16"},
      {"text too long",
       [](auto* s) {
         return ClassifyWith(s, [](auto* r) {
           r->mutable_inputs(0)->set_text_a(std::string(5000, 'a'));
         });
       },
       C::INVALID_ARGUMENT, "--max_text_bytes=4000"},
      {"message too large",
       [](auto* s) {
         return ClassifyWith(s, [](auto* r) {
           r->mutable_inputs(0)->set_text_a(std::string(200000, 'a'));
         });
       },
       C::RESOURCE_EXHAUSTED, ""},
      {"attention layer out of range",
       [](auto* s) {
         return AttentionWith(s, [](auto* r) { r->add_layers(3); });
       },
       C::INVALID_ARGUMENT, "layers[0]=3"},
      {"attention head out of range",
       [](auto* s) {
         return AttentionWith(s, [](auto* r) { r->add_heads(9); });
       },
       C::INVALID_ARGUMENT, "heads[0]=9"},
      {"attention unknown granularity",
       [](auto* s) {
         return AttentionWith(s, [](auto* r) {
           r->set_granularity(static_cast<v1::Granularity>(5));
         });
       },
       C::INVALID_ARGUMENT, "granularity=5"},
      {"attention unknown encoding",
       [](auto* s) {
         return AttentionWith(s, [](auto* r) {
           r->set_encoding(static_cast<v1::AttentionEncoding>(5));
         });
       },
       C::INVALID_ARGUMENT, "encoding=5"},
      {"attention empty input",
       [](auto* s) {
         return AttentionWith(s, [](auto* r) { r->clear_input(); });
       },
       C::INVALID_ARGUMENT, "input.text_a is empty"},
      {"sweep label outside the label set",
       [](auto* s) {
         return SweepWith(
             s, [](auto* r) { r->mutable_examples(0)->set_label(3); });
       },
       C::INVALID_ARGUMENT, "examples[0].label=3"},
      {"sweep no examples",
       [](auto* s) {
         return SweepWith(s, [](auto* r) { r->clear_examples(); });
       },
       C::INVALID_ARGUMENT, "examples is empty"},
      {"sweep no masks",
       [](auto* s) { return SweepWith(s, [](auto* r) { r->clear_masks(); }); },
       C::INVALID_ARGUMENT, "masks is empty"},
      {"sweep spec not set",
       [](auto* s) { return SweepWith(s, [](auto* r) { r->add_masks(); }); },
       C::INVALID_ARGUMENT, "masks[1] sets no spec"},
      {"sweep bad fraction",
       [](auto* s) {
         return SweepWith(s, [](auto* r) {
           auto* random = r->add_masks()->mutable_random();
           random->set_fraction(1.5);
           random->set_repeats(2);
         });
       },
       C::INVALID_ARGUMENT, "masks[1].random.fraction"},
      {"sweep bad layer range",
       [](auto* s) {
         return SweepWith(s, [](auto* r) {
           auto* keep = r->add_masks()->mutable_keep_only();
           keep->set_layer_begin(2);
           keep->set_layer_end(1);
         });
       },
       C::INVALID_ARGUMENT, "masks[1].keep_only.layer_begin=2"},
      {"sweep repeated explicit id",
       [](auto* s) {
         return SweepWith(s, [](auto* r) {
           r->add_masks()->mutable_explicit_mask()->set_id("x");
           r->add_masks()->mutable_explicit_mask()->set_id("x");
         });
       },
       C::INVALID_ARGUMENT, "masks[2].explicit_mask.id \"x\" repeats masks[1]"},
      {"sweep generated id repeated",
       [](auto* s) {
         return SweepWith(
             s, [](auto* r) { r->add_masks()->mutable_all_layers(); });
       },
       C::INVALID_ARGUMENT, "masks[1].all_layers: id \"layer-0\" repeats"},
      {"sweep kept head outside its layer range",
       [](auto* s) {
         return SweepWith(s, [](auto* r) {
           auto* keep = r->add_masks()->mutable_keep_only();
           keep->set_layer_end(1);
           auto* head = keep->add_keep();
           head->set_layer(2);
           head->set_head(0);
         });
       },
       C::INVALID_ARGUMENT,
       "masks[1].keep_only.keep[0]=L2H0 is outside layers [0, 1)"},
      {"sweep unknown mode",
       [](auto* s) {
         return SweepWith(
             s, [](auto* r) { r->set_mode(static_cast<v1::AblationMode>(9)); });
       },
       C::INVALID_ARGUMENT, "mode=9"},
      {"sweep resample without statistics",
       [](auto* s) {
         return SweepWith(
             s, [](auto* r) { r->set_mode(v1::ABLATION_MODE_RESAMPLE); });
       },
       C::INVALID_ARGUMENT, "give the sweep `statistics`"},
      {"sweep unknown statistics",
       [](auto* s) {
         return SweepWith(s, [](auto* r) {
           r->set_mode(v1::ABLATION_MODE_MEAN);
           r->set_statistics("hs-0000000000000000");
         });
       },
       C::FAILED_PRECONDITION, "hs-0000000000000000"},
      {"sweep too many masks",
       [](auto* s) {
         return SweepWith(s, [](auto* r) {
           auto* random = r->add_masks()->mutable_random();
           random->set_fraction(0.5);
           random->set_repeats(1000);
         });
       },
       C::RESOURCE_EXHAUSTED, "--max_masks_per_sweep=300"},
      {"sweep unknown model",
       [](auto* s) {
         return SweepWith(s, [](auto* r) { r->set_model("nope"); });
       },
       C::NOT_FOUND, "nope"},
      {"patch lengths differ",
       [](auto* s) {
         return PatchWith(s, [](auto* r) {
           r->mutable_corrupted()->set_text_a("the dog was not here at all");
         });
       },
       C::INVALID_ARGUMENT, "must tokenize to the same length"},
      {"patch no sites",
       [](auto* s) {
         return PatchWith(s, [](auto* r) { r->set_all_heads(false); });
       },
       C::INVALID_ARGUMENT, "no sites"},
      {"patch layer out of range",
       [](auto* s) {
         return PatchWith(s, [](auto* r) { r->add_sites()->set_layer(3); });
       },
       C::INVALID_ARGUMENT, "sites[0].layer=3"},
      {"patch head out of range",
       [](auto* s) {
         return PatchWith(s, [](auto* r) {
           auto* site = r->add_sites();
           site->set_layer(1);
           site->set_head(4);
         });
       },
       C::INVALID_ARGUMENT, "sites[0].head=4"},
      {"patch negative position",
       [](auto* s) {
         return PatchWith(s, [](auto* r) { r->add_sites()->set_position(-1); });
       },
       C::INVALID_ARGUMENT, "sites[0].position=-1"},
      {"patch position past the tokens",
       [](auto* s) {
         return PatchWith(s, [](auto* r) { r->add_sites()->set_position(99); });
       },
       C::INVALID_ARGUMENT, "sites[0].position=99"},
      {"patch foil equals answer",
       [](auto* s) {
         return PatchWith(s, [](auto* r) {
           r->set_answer(1);
           r->set_foil(1);
         });
       },
       C::INVALID_ARGUMENT, "foil=1"},
      {"patch answer not a class",
       [](auto* s) { return PatchWith(s, [](auto* r) { r->set_answer(3); }); },
       C::INVALID_ARGUMENT, "answer=3"},
      {"patch empty input",
       [](auto* s) { return PatchWith(s, [](auto* r) { r->clear_clean(); }); },
       C::INVALID_ARGUMENT, "clean"},
      {"statistics no inputs",
       [](auto* s) {
         v1::ComputeHeadStatisticsRequest request;
         v1::ComputeHeadStatisticsResponse response;
         grpc::ClientContext context;
         return s->ComputeHeadStatistics(&context, request, &response);
       },
       C::INVALID_ARGUMENT, "inputs is empty"},
      {"classify mean without statistics",
       [](auto* s) {
         v1::ClassifyRequest request;
         request.add_inputs()->set_text_a("the cat");
         request.mutable_head_mask()->set_mode(v1::ABLATION_MODE_MEAN);
         auto* lh = request.mutable_head_mask()->mutable_ablate()->add_heads();
         lh->set_layer(1);
         v1::ClassifyResponse response;
         grpc::ClientContext context;
         return s->Classify(&context, request, &response);
       },
       C::INVALID_ARGUMENT, "head_mask.statistics is empty"},
      {"model info unknown model",
       [](auto* s) {
         v1::GetModelInfoRequest request;
         request.set_model("nope");
         v1::GetModelInfoResponse response;
         grpc::ClientContext context;
         return s->GetModelInfo(&context, request, &response);
       },
       C::NOT_FOUND, "nope"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    grpc::Status status = c.call(stub_.get());
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    EXPECT_NE(status.error_message().find(c.text), std::string::npos)
        << status.error_message();
  }
  // Nothing broke.
  EXPECT_EQ(ClassifyOk({"the cat"}).predictions_size(), 1);
}

TEST_F(ServiceTest, ConcurrentMasksStayRequestScoped) {
  // Eight masks, each with its answer computed alone first.
  std::vector<v1::HeadMask> masks;
  for (int i = 0; i < 8; ++i) {
    v1::HeadMask m =
        Ablate({{i % kLayers, i % kHeads}, {(i + 1) % kLayers, 0}});
    if (i % 2) m.set_mode(v1::ABLATION_MODE_UNIFORM);
    if (i == 0) m = v1::HeadMask();
    masks.push_back(m);
  }
  std::vector<v1::ClassifyResponse> alone;
  for (const auto& m : masks) alone.push_back(ClassifyOk(Texts(), m));
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      auto stub = server_->NewStub();
      for (int iter = 0; iter < 10; ++iter) {
        const int m = (t + iter) % masks.size();
        v1::ClassifyRequest request;
        // A rotating subset so batches mix lengths too.
        for (size_t i = 0; i < Texts().size(); ++i) {
          request.add_inputs()->set_text_a(
              Texts()[(i + iter) % Texts().size()]);
        }
        *request.mutable_head_mask() = masks[m];
        v1::ClassifyResponse response;
        grpc::ClientContext context;
        if (!stub->Classify(&context, request, &response).ok()) {
          ++failures;
          continue;
        }
        for (size_t i = 0; i < Texts().size(); ++i) {
          const auto& want = alone[m].predictions((i + iter) % Texts().size());
          for (int c = 0; c < 3; ++c) {
            if (std::abs(response.predictions(i).logits(c) - want.logits(c)) >
                1e-4) {
              ++mismatches;
            }
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

v1::SweepAblationRequest BigSweep() {
  v1::SweepAblationRequest request;
  for (int i = 0; i < 200; ++i) {
    auto* e = request.add_examples();
    e->mutable_input()->set_text_a(absl::StrCat(Texts()[i % 5], " ", i));
    e->set_label(i % 3);
  }
  auto* random = request.add_masks()->mutable_random();
  random->set_fraction(0.3);
  random->set_repeats(250);
  request.mutable_options()->set_max_batch_rows(4);
  return request;
}

TEST_F(ServiceTest, CancellingASweepStopsIt) {
  grpc::ClientContext context;
  auto reader = stub_->SweepAblation(&context, BigSweep());
  v1::SweepAblationResponse event;
  int64_t total = 0;
  bool progressed = false;
  while (reader->Read(&event)) {
    if (event.has_plan()) total = event.plan().total_pairs();
    if (event.has_progress() && event.progress().done() > 0) {
      progressed = true;
      break;
    }
  }
  ASSERT_TRUE(progressed);
  const absl::Time cancelled_at = absl::Now();
  context.TryCancel();
  while (reader->Read(&event)) {
  }
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  // The server stops within a batch: the next call is answered promptly.
  EXPECT_EQ(ClassifyOk({"the cat"}).predictions_size(), 1);
  EXPECT_LT(absl::Now() - cancelled_at, absl::Seconds(5));
  EXPECT_GT(total, 0);
  // And it really stopped: the metrics show no sweep still active.
  absl::SleepFor(absl::Milliseconds(300));
  auto metrics = server_->FetchMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_NE(metrics->find("bertology_sweeps_active 0"), std::string::npos)
      << *metrics;
}

TEST_F(ServiceTest, SweepDeadlineStopsIt) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(500));
  std::vector<v1::SweepAblationResponse> events;
  grpc::Status status = Sweep(BigSweep(), &events, &context);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(ClassifyOk({"the cat"}).predictions_size(), 1);
}

TEST_F(ServiceTest, MetricsPassPromtool) {
  ClassifyOk({"the cat"});
  ASSERT_FALSE(
      ClassifyWith(stub_.get(), [](auto* r) { r->clear_inputs(); }).ok());
  auto metrics = server_->FetchMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  for (const char* name :
       {"bertology_requests_total{",
        "bertology_request_duration_seconds_bucket",
        "bertology_queue_wait_seconds_bucket", "bertology_batch_size_bucket",
        "bertology_examples_processed_total{", "bertology_inflight_requests",
        "bertology_model_info{", "bertology_sweep_pairs_total",
        "bertology_sweep_pairs_done_total"}) {
    EXPECT_NE(metrics->find(name), std::string::npos) << name;
  }
  EXPECT_NE(metrics->find("method=\"Classify\""), std::string::npos);
  EXPECT_NE(metrics->find("code=\"INVALID_ARGUMENT\""), std::string::npos)
      << *metrics;
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not installed";
  }
  const std::string path =
      absl::StrCat(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp",
                   "/bertology-metrics-", getpid(), ".txt");
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fwrite(metrics->data(), 1, metrics->size(), f);
  std::fclose(f);
  const int rc =
      std::system(absl::StrCat("promtool check metrics < ", path).c_str());
  std::remove(path.c_str());
  EXPECT_EQ(rc, 0) << *metrics;
}

}  // namespace
}  // namespace bertology
