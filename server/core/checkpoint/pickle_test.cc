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

// Found by pickle_fuzz (tests/fuzz/corpus/pickle_fuzz/regression-*): a list
// appended to itself through its memo'd copy made a shared_ptr cycle (a
// leak, and DebugString recursed forever).
TEST(PickleTest, ContainerHoldingItselfIsRefused) {
  // l = []; l.append(l): EMPTY_LIST BINPUT 0 BINGET 0 APPEND STOP.
  auto list = Unpickle(
      "\x80\x02]q\x00h\x00"
      "a."s,
      {}, "t.pkl");
  EXPECT_THAT(list.status().message(), HasSubstr("would hold itself"));
  // d = {}; d['k'] = d, and the same through a tuple: (d,) into d.
  auto dict =
      Unpickle("\x80\x02}q\x00X\x01\x00\x00\x00kh\x00\x85s."s, {}, "t.pkl");
  EXPECT_THAT(dict.status().message(), HasSubstr("would hold itself"));
}

TEST(PickleTest, DeepNestingIsRefused) {
  // ((((...)))) one EMPTY_TUPLE and TUPLE1 per level.
  const std::string deep =
      "\x80\x02)" + std::string(kMaxPickleDepth + 1, '\x85') + ".";
  auto v = Unpickle(deep, {}, "t.pkl");
  EXPECT_THAT(v.status().message(), HasSubstr("nested deeper than"));
  const std::string ok =
      "\x80\x02)" + std::string(kMaxPickleDepth - 2, '\x85') + ".";
  EXPECT_TRUE(Unpickle(ok, {}, "t.pkl").ok());
}

TEST(PickleTest, DebugStringOfSharedTuplesStaysShort) {
  // t0 = (); t(k+1) = (tk, tk) through the memo: 2^40 leaves if rendered.
  // Each level: BINGET k BINGET k TUPLE2 BINPUT k+1 POP.
  std::string p =
      "\x80\x02)q\x00"
      "0"s;
  for (int k = 0; k < 40; ++k) {
    const std::string memo(1, static_cast<char>(k));
    p += "h" + memo + "h" + memo + "\x86q" +
         std::string(1, static_cast<char>(k + 1)) + "0";
  }
  p += "h" + std::string(1, static_cast<char>(40)) + ".";
  auto v = Unpickle(p, {}, "t.pkl");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_LT(v->DebugString().size(), 1000u);
}

}  // namespace
}  // namespace bertology
