// The pickle VM on its own, with bytes from CPython's `pickle.dumps`.
#include "server/core/checkpoint/pickle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bertology {
namespace {

using ::testing::HasSubstr;
using K = PickleValue::Kind;
using namespace std::string_literals;

// pickle.dumps({'a': 1, 'b': [1.5, True, None, -7, 300, 70000, 2**40,
//               -2**40], 'c': ('x',)}, protocol=2)
const unsigned char kDumped[] = {
    0x80, 0x02, 0x7d, 0x71, 0x00, 0x28, 0x58, 0x01, 0x00, 0x00, 0x00, 0x61,
    0x71, 0x01, 0x4b, 0x01, 0x58, 0x01, 0x00, 0x00, 0x00, 0x62, 0x71, 0x02,
    0x5d, 0x71, 0x03, 0x28, 0x47, 0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x88, 0x4e, 0x4a, 0xf9, 0xff, 0xff, 0xff, 0x4d, 0x2c, 0x01, 0x4a,
    0x70, 0x11, 0x01, 0x00, 0x8a, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x8a, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x65, 0x58, 0x01, 0x00,
    0x00, 0x00, 0x63, 0x71, 0x04, 0x58, 0x01, 0x00, 0x00, 0x00, 0x78, 0x71,
    0x05, 0x85, 0x71, 0x06, 0x75, 0x2e};

std::string_view Dumped() {
  return {reinterpret_cast<const char*>(kDumped), sizeof(kDumped)};
}

TEST(PickleTest, DecodesPythonPickle) {
  auto v = Unpickle(Dumped(), {}, "t.pkl");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(v->is(K::kDict));
  ASSERT_EQ(v->dict->size(), 3u);
  const auto& d = *v->dict;
  EXPECT_EQ(d[0].first.str, "a");
  EXPECT_EQ(d[0].second.i, 1);
  const auto& list = *d[1].second.items;
  ASSERT_TRUE(d[1].second.is(K::kList));
  ASSERT_EQ(list.size(), 8u);
  EXPECT_DOUBLE_EQ(list[0].f, 1.5);
  EXPECT_TRUE(list[1].is(K::kBool) && list[1].b);
  EXPECT_TRUE(list[2].is(K::kNone));
  EXPECT_EQ(list[3].i, -7);
  EXPECT_EQ(list[4].i, 300);
  EXPECT_EQ(list[5].i, 70000);
  EXPECT_EQ(list[6].i, int64_t{1} << 40);
  EXPECT_EQ(list[7].i, -(int64_t{1} << 40));
  EXPECT_TRUE(d[2].second.is(K::kTuple));
  EXPECT_EQ((*d[2].second.items)[0].str, "x");
}

TEST(PickleTest, TruncationIsAnError) {
  auto v = Unpickle(Dumped().substr(0, 40), {}, "t.pkl");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("t.pkl"));
  EXPECT_THAT(v.status().message(), HasSubstr("truncated"));
}

TEST(PickleTest, UnknownOpcodeNamed) {
  auto v = Unpickle(std::string_view("\x80\x02\xff.", 4), {}, "t.pkl");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("opcode 0xff"));
}

TEST(PickleTest, ReduceWithoutHookRefusesTheGlobal) {
  // pickle.dumps(os.system, ...) style: GLOBAL then REDUCE.
  const std::string p =
      "\x80\x02"
      "cos\nsystem\nX\x02\x00\x00\x00ls\x85R."s;
  auto v = Unpickle(p, {}, "evil.pkl");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("os.system"));
}

TEST(PickleTest, ReduceHookSeesGlobalAndArgs) {
  const std::string p =
      "\x80\x02"
      "cm\nf\nK\x05\x85R."s;
  PickleHooks hooks;
  hooks.reduce = [](const PickleValue& fn,
                    const PickleValue& args) -> absl::StatusOr<PickleValue> {
    EXPECT_EQ(fn.str, "m.f");
    return PickleValue::Int((*args.items)[0].i * 2);
  };
  auto v = Unpickle(p, hooks, "t.pkl");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->i, 10);
}

TEST(PickleTest, MemoSharesMutableDict) {
  // d = {}; pickle.dumps([d, d]) then SETITEM through the memo'd copy.
  const std::string p = "\x80\x02](}q\x00h\x00X\x01\x00\x00\x00kK\x01se."s;
  auto v = Unpickle(p, {}, "t.pkl");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->items->size(), 2u);
  // The SETITEM went to the BINGET copy; the original sees it too.
  EXPECT_EQ((*v->items)[0].dict->size(), 1u);
  EXPECT_EQ((*v->items)[0].dict, (*v->items)[1].dict);
}

}  // namespace
}  // namespace bertology
