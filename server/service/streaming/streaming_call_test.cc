// StreamingCall on a real response message, time driven by a
// SimulatedClock: progress throttled (the last always sent), a failed write
// turned into CANCELLED with no later write attempted, the transport's
// cancel poll, concurrent writers serialised; and CheckInputCount's
// statuses naming the field and the flag.
#include "server/service/streaming/streaming_call.h"

#include <atomic>
#include <thread>
#include <vector>

#include "bertology/v1/bertology.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using Event = v1::AnalyzeHeadsResponse;
using ::testing::HasSubstr;

struct Recorder {
  std::vector<Event> events;
  bool accept = true;
  bool cancelled = false;
  int attempts = 0;
  EventStream<Event> Stream() {
    return {[this](const Event& e) {
              ++attempts;
              if (accept) events.push_back(e);
              return accept;
            },
            [this] { return cancelled; }};
  }
};

TEST(StreamingCallTest, ProgressIsThrottledAndTheLastAlwaysGoes) {
  Recorder r;
  const EventStream<Event> stream = r.Stream();
  SimulatedClock clock;
  StreamingCall<Event> call(stream, &clock);
  EXPECT_TRUE(call.Progress(1, 10));  // the first goes
  EXPECT_TRUE(call.Progress(2, 10));  // within the interval: dropped
  clock.AdvanceTime(kProgressInterval);
  EXPECT_TRUE(call.Progress(3, 10));   // an interval later: goes
  EXPECT_TRUE(call.Progress(10, 10));  // the last: goes at once
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[0].progress().done(), 1);
  EXPECT_EQ(r.events[1].progress().done(), 3);
  EXPECT_EQ(r.events[2].progress().done(), 10);
  EXPECT_EQ(r.events[2].progress().total(), 10);
  EXPECT_TRUE(call.Finish(absl::OkStatus()).ok());
}

TEST(StreamingCallTest, AClientThatWentAwayIsCancelledAndNotWrittenAgain) {
  Recorder r;
  const EventStream<Event> stream = r.Stream();
  StreamingCall<Event> call(stream);
  EXPECT_FALSE(call.Cancelled());
  r.accept = false;
  Event event;
  event.mutable_result()->set_examples(3);
  EXPECT_FALSE(call.Write(event));
  EXPECT_TRUE(call.Cancelled());
  EXPECT_TRUE(call.Gone());
  EXPECT_FALSE(call.Write(event));
  EXPECT_FALSE(call.Progress(5, 5));
  EXPECT_EQ(r.attempts, 1);  // nothing written after the failure
  const absl::Status s = call.Finish(absl::OkStatus());
  EXPECT_TRUE(absl::IsCancelled(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("the client went away"));
  // An error the handler already has stays the call's status.
  EXPECT_TRUE(absl::IsInternal(call.Finish(absl::InternalError("x"))));
}

TEST(StreamingCallTest, CloseSendsTheLastEvent) {
  Recorder r;
  const EventStream<Event> stream = r.Stream();
  StreamingCall<Event> call(stream);
  Event last;
  last.mutable_result()->set_examples(7);
  EXPECT_TRUE(call.Close(last).ok());
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].result().examples(), 7);
  r.accept = false;
  EXPECT_TRUE(absl::IsCancelled(call.Close(last)));
}

TEST(StreamingCallTest, TheTransportsCancelIsPolled) {
  Recorder r;
  const EventStream<Event> stream = r.Stream();
  StreamingCall<Event> call(stream);
  EXPECT_FALSE(call.Cancelled());
  r.cancelled = true;
  EXPECT_TRUE(call.Cancelled());
  EXPECT_FALSE(call.Gone());
  EXPECT_TRUE(call.is_cancelled()());
}

TEST(StreamingCallTest, ConcurrentWritesAreSerialised) {
  std::atomic<int> in_flight{0}, overlaps{0}, written{0};
  const EventStream<Event> stream{[&](const Event&) {
                                    if (in_flight.fetch_add(1) != 0) {
                                      overlaps.fetch_add(1);
                                    }
                                    std::this_thread::yield();
                                    written.fetch_add(1);
                                    in_flight.fetch_sub(1);
                                    return true;
                                  },
                                  nullptr};
  StreamingCall<Event> call(stream);
  EXPECT_FALSE(call.Cancelled());  // an empty cancel poll is "not cancelled"
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) call.Write(Event());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(written.load(), 800);
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(CheckInputCountTest, NamesTheFieldAndTheFlag) {
  ServiceLimits limits;
  limits.max_examples_per_sweep = 3;
  EXPECT_TRUE(CheckInputCount(limits, 3, "inputs").ok());
  const absl::Status empty = CheckInputCount(limits, 0, "reference.inputs");
  EXPECT_TRUE(absl::IsInvalidArgument(empty));
  EXPECT_EQ(empty.message(), "reference.inputs is empty");
  const absl::Status over = CheckInputCount(limits, 4, "examples");
  EXPECT_TRUE(absl::IsResourceExhausted(over));
  EXPECT_EQ(over.message(),
            "examples has 4 entries, over the limit "
            "--max_examples_per_sweep=3");
}

}  // namespace
}  // namespace bertology
