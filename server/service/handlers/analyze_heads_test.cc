// HandleAnalyzeHeads on the golden tiny model, without gRPC: the events it
// streams, cancellation between passes, a client that went away, and
// results that do not depend on how inputs are batched (padded rows).
// Numbers against the float64 reference: tests/python/test_analyze.py.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

// bertology_test runs from the source root; BERTOLOGY_SOURCE_DIR overrides.
std::string ModelDir() {
  const char* root = std::getenv("BERTOLOGY_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/golden/tiny-bert-cls";
}

class AnalyzeHeadsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry_ = new ModelRegistry;
    ModelLoadOptions options;
    options.name = "tiny";
    options.dir = ModelDir();
    options.warmup_passes = 0;
    *load_status_ = registry_->Load(options);
    registry_->MarkReady();
  }
  // A failed load fails every test (an ASSERT in SetUpTestSuite would only
  // skip them).
  void SetUp() override { ASSERT_TRUE(load_status_->ok()) << *load_status_; }
  static void TearDownTestSuite() {
    registry_->Shutdown();
    delete registry_;
  }

  static v1::AnalyzeHeadsRequest Request() {
    v1::AnalyzeHeadsRequest r;
    for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
             {"the cat sat on the mat.", ""},
             {"a dog, it was there", "it was the dog"},
             {"no", "what she said was not this at all"}}) {
      v1::TextInput* in = r.add_inputs();
      in->set_text_a(a);
      in->set_text_b(b);
    }
    return r;
  }

  // Runs the handler; `cancel_after` is_cancelled polls answer false first.
  absl::Status Run(const v1::AnalyzeHeadsRequest& request, int batch,
                   std::vector<v1::AnalyzeHeadsResponse>* events,
                   int cancel_after = 1 << 30, bool write_ok = true) {
    ServiceLimits limits;
    limits.max_batch_size = batch;
    HandlerContext ctx{registry_, &limits, nullptr};
    int polls = 0;
    EventStream<v1::AnalyzeHeadsResponse> stream;
    stream.write = [&](const v1::AnalyzeHeadsResponse& e) {
      events->push_back(e);
      return write_ok;
    };
    stream.is_cancelled = [&] { return polls++ >= cancel_after; };
    return HandleAnalyzeHeads(ctx, request, stream);
  }

  static ModelRegistry* registry_;
  static absl::Status* load_status_;
};

ModelRegistry* AnalyzeHeadsTest::registry_ = nullptr;
absl::Status* AnalyzeHeadsTest::load_status_ = new absl::Status;

TEST_F(AnalyzeHeadsTest, ProgressThenOneResult) {
  std::vector<v1::AnalyzeHeadsResponse> events;
  ASSERT_TRUE(Run(Request(), 1, &events).ok());
  ASSERT_GE(events.size(), 2u);
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    ASSERT_TRUE(events[i].has_progress());
    EXPECT_EQ(events[i].progress().total(), 3);
  }
  EXPECT_EQ(events[events.size() - 2].progress().done(), 3);
  ASSERT_TRUE(events.back().has_result());
  const v1::AnalyzeHeadsResult& r = events.back().result();
  EXPECT_EQ(r.num_layers(), 3);
  EXPECT_EQ(r.num_heads(), 4);
  EXPECT_EQ(r.examples(), 3);
  EXPECT_EQ(r.pair_examples(), 2);
  EXPECT_EQ(r.examples_with_match(), 1);  // "it", "was", "dog" in pair 1
  EXPECT_EQ(r.stats().to_cls_size(), 12);
  EXPECT_EQ(r.stats().pattern_size(), 12);
  for (int p : r.stats().pattern()) {
    EXPECT_NE(p, v1::ATTENTION_PATTERN_UNSPECIFIED);
  }
}

// Rows of one padded batch are reduced over their own tokens only: the
// same numbers as one example per pass.
TEST_F(AnalyzeHeadsTest, BatchingDoesNotChangeTheResult) {
  std::vector<v1::AnalyzeHeadsResponse> one, three;
  ASSERT_TRUE(Run(Request(), 1, &one).ok());
  ASSERT_TRUE(Run(Request(), 3, &three).ok());
  const v1::HeadStatistics& a = one.back().result().stats();
  const v1::HeadStatistics& b = three.back().result().stats();
  ASSERT_EQ(a.entropy_size(), b.entropy_size());
  for (int k = 0; k < a.entropy_size(); ++k) {
    EXPECT_NEAR(a.to_cls(k), b.to_cls(k), 1e-5) << k;
    EXPECT_NEAR(a.to_sep(k), b.to_sep(k), 1e-5) << k;
    EXPECT_NEAR(a.entropy(k), b.entropy(k), 1e-4) << k;
    EXPECT_NEAR(a.mean_distance(k), b.mean_distance(k), 1e-4) << k;
    EXPECT_NEAR(a.cross_segment_match(k), b.cross_segment_match(k), 1e-5) << k;
    EXPECT_NEAR(a.to_own_segment(k), b.to_own_segment(k), 1e-5) << k;
  }
}

// V and D are returned beside the classes; the per-map shares only when
// asked, [layers x heads x 5], each head's summing to 1 in thirds (three
// examples), and the same for any batching.
TEST_F(AnalyzeHeadsTest, PerMapClassesOnRequest) {
  std::vector<v1::AnalyzeHeadsResponse> plain, per_map, batched;
  ASSERT_TRUE(Run(Request(), 1, &plain).ok());
  const v1::AnalyzeHeadsResult& p = plain.back().result();
  EXPECT_EQ(p.map_pattern_share_size(), 0);
  ASSERT_EQ(p.stats().vertical_size(), 12);
  ASSERT_EQ(p.stats().diagonal_size(), 12);
  for (int k = 0; k < 12; ++k) {
    EXPECT_NEAR(p.stats().vertical(k),
                p.stats().to_cls(k) + p.stats().to_sep(k), 1e-6);
    EXPECT_LE(p.stats().diagonal(k), p.stats().to_previous(k) +
                                         p.stats().to_self(k) +
                                         p.stats().to_next(k) + 1e-6);
  }
  v1::AnalyzeHeadsRequest request = Request();
  request.set_per_map_classes(true);
  ASSERT_TRUE(Run(request, 1, &per_map).ok());
  ASSERT_TRUE(Run(request, 3, &batched).ok());
  const v1::AnalyzeHeadsResult& r = per_map.back().result();
  ASSERT_EQ(r.map_pattern_share_size(), 12 * 5);
  for (int k = 0; k < 12; ++k) {
    double sum = 0;
    for (int c = 0; c < 5; ++c) {
      const float v = r.map_pattern_share(k * 5 + c);
      EXPECT_NEAR(v * 3, std::round(v * 3), 1e-5) << k << " " << c;
      EXPECT_NEAR(v, batched.back().result().map_pattern_share(k * 5 + c),
                  1e-6);
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << k;
  }
  // The per-head classes are the same with or without the option.
  for (int k = 0; k < 12; ++k) {
    EXPECT_EQ(r.stats().pattern(k), p.stats().pattern(k)) << k;
  }
}

TEST_F(AnalyzeHeadsTest, CancelledBetweenPasses) {
  std::vector<v1::AnalyzeHeadsResponse> events;
  const absl::Status s = Run(Request(), 1, &events, /*cancel_after=*/1);
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("after 1 of 3 examples"));
  for (const auto& e : events) EXPECT_FALSE(e.has_result());
}

TEST_F(AnalyzeHeadsTest, ClientGoneStopsTheCall) {
  std::vector<v1::AnalyzeHeadsResponse> events;
  const absl::Status s =
      Run(Request(), 1, &events, 1 << 30, /*write_ok=*/false);
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_EQ(events.size(), 1u);  // the first progress event failed
}

TEST_F(AnalyzeHeadsTest, RefusalsNameTheField) {
  std::vector<v1::AnalyzeHeadsResponse> events;
  v1::AnalyzeHeadsRequest empty;
  absl::Status s = Run(empty, 1, &events);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("inputs is empty"));
  v1::AnalyzeHeadsRequest bad_text = Request();
  bad_text.mutable_inputs(2)->set_text_a("");
  s = Run(bad_text, 1, &events);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("inputs[2]"));
  v1::AnalyzeHeadsRequest bad_mask = Request();
  bad_mask.mutable_head_mask()->mutable_dense()->add_values(NAN);
  s = Run(bad_mask, 1, &events);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("head_mask"));
  EXPECT_TRUE(events.empty());  // nothing streamed before validation
}

}  // namespace
}  // namespace bertology
