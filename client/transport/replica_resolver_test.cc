#include "client/transport/replica_resolver.h"

#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

TEST(ReplicaResolverTest, ExpandsNamesAndLooksThemUpAgainWhenDue) {
  SimulatedClock clock;
  std::vector<std::string> answer = {"ipv4:10.0.0.1:5"};
  absl::Status fail;
  int lookups = 0;
  LookupFn lookup =
      [&](const std::string& host,
          const std::string& port) -> absl::StatusOr<std::vector<std::string>> {
    EXPECT_EQ(host, "svc");
    EXPECT_EQ(port, "5");
    ++lookups;
    if (!fail.ok()) return fail;
    return answer;
  };
  auto targets = ParseTargets("dns:///svc:5");
  ASSERT_TRUE(targets.ok());
  targets->push_back({"lb:443", "", 1});  // a plain address stays as it is
  ReplicaResolver resolver(*targets, absl::Seconds(10), &clock, lookup);

  auto now = resolver.Current();
  ASSERT_TRUE(now.ok()) << now.status();
  ASSERT_EQ(now->size(), 2u);
  EXPECT_EQ((*now)[0].uri, "ipv4:10.0.0.1:5");
  EXPECT_EQ((*now)[1].uri, "lb:443");

  answer = {"ipv4:10.0.0.1:5", "ipv4:10.0.0.2:5", "ipv4:10.0.0.3:5"};
  EXPECT_EQ(resolver.Current()->size(), 2u);  // not due yet
  EXPECT_EQ(lookups, 1);
  clock.SleepFor(absl::Seconds(10));
  EXPECT_EQ(resolver.Current()->size(), 4u);  // two pods came up
  EXPECT_EQ(lookups, 2);

  fail = absl::UnavailableError("SERVFAIL");
  clock.SleepFor(absl::Seconds(10));
  EXPECT_EQ(resolver.Current()->size(), 4u);  // a DNS blip keeps the fleet

  fail = absl::OkStatus();
  answer = {"ipv4:10.0.0.3:5"};
  clock.SleepFor(absl::Seconds(10));
  now = resolver.Current();
  ASSERT_EQ(now->size(), 2u);  // two pods went away
  EXPECT_EQ((*now)[0].uri, "ipv4:10.0.0.3:5");
}

TEST(ReplicaResolverTest, NoAddressAtAllIsAnError) {
  SimulatedClock clock;
  LookupFn lookup =
      [](const std::string&,
         const std::string&) -> absl::StatusOr<std::vector<std::string>> {
    return absl::UnavailableError("NXDOMAIN");
  };
  ReplicaResolver resolver(*ParseTargets("dns:///svc:5"), absl::Seconds(1),
                           &clock, lookup);
  auto now = resolver.Current();
  ASSERT_FALSE(now.ok());
  EXPECT_NE(now.status().message().find("NXDOMAIN"), std::string::npos);
}

TEST(ReplicaResolverTest, SystemLookupReadsTheHostsFile) {
  auto local = SystemLookup("localhost", "50051");
  ASSERT_TRUE(local.ok()) << local.status();
  bool v4 = false;
  for (const std::string& a : *local) v4 |= a == "ipv4:127.0.0.1:50051";
  EXPECT_TRUE(v4) << "localhost did not resolve to 127.0.0.1";
  auto none = SystemLookup("no-such-host.invalid", "1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no-such-host.invalid"),
            std::string::npos);
}

}  // namespace
}  // namespace client
}  // namespace bertology
