#include "client/transport/targets.h"

#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

TEST(TargetsTest, ListIsOneChannelPerReplica) {
  auto t = ParseTargets("ipv4:127.0.0.1:5001,127.0.0.1:5002");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[1].uri, "ipv4:127.0.0.1:5002");
  EXPECT_EQ((*t)[1].lb_policy, "");
}

TEST(TargetsTest, ListCanBeOneRoundRobinChannel) {
  auto t = ParseTargets("ipv4:127.0.0.1:5001,127.0.0.1:5002",
                        {/*round_robin_list=*/true});
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].uri, "ipv4:127.0.0.1:5001,127.0.0.1:5002");
  EXPECT_EQ((*t)[0].lb_policy, "round_robin");
  EXPECT_EQ((*t)[0].backends, 2);
}

TEST(TargetsTest, DnsAndSingleAddress) {
  auto dns = ParseTargets("dns:///bertology:50051");
  ASSERT_TRUE(dns.ok());
  EXPECT_EQ((*dns)[0].lb_policy, "");  // resolved by the scheduler
  EXPECT_EQ((*dns)[0].dns_host, "bertology");
  EXPECT_EQ((*dns)[0].dns_port, "50051");
  auto v6 = ParseTargets("dns:///[::1]:7");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ((*v6)[0].dns_host, "::1");
  auto rr = ParseTargets("dns:///bertology:50051", {/*round_robin_list=*/true});
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ((*rr)[0].lb_policy, "round_robin");
  EXPECT_EQ((*rr)[0].dns_host, "");
  EXPECT_FALSE(ParseTargets("dns://8.8.8.8/bertology:50051").ok());
  EXPECT_FALSE(ParseTargets("dns:///bertology").ok());
  auto one = ParseTargets("lb.example:443");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0].uri, "lb.example:443");
  EXPECT_EQ((*one)[0].lb_policy, "");
  EXPECT_FALSE(ParseTargets("").ok());
  EXPECT_FALSE(ParseTargets("a:1,,b:2").ok());
}

}  // namespace
}  // namespace client
}  // namespace bertology
