// The pickle VM: a value stack, a mark stack and a memo, one opcode at a
// time. Opcode meanings follow CPython's Lib/pickletools.py.
#include "server/core/checkpoint/pickle.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace bertology {

PickleValue PickleValue::Int(int64_t v) {
  PickleValue p;
  p.kind = Kind::kInt;
  p.i = v;
  return p;
}

PickleValue PickleValue::String(std::string v) {
  PickleValue p;
  p.kind = Kind::kString;
  p.str = std::move(v);
  return p;
}

PickleValue PickleValue::Global(std::string qualified_name) {
  PickleValue p;
  p.kind = Kind::kGlobal;
  p.str = std::move(qualified_name);
  return p;
}

namespace {

// Containers shared through the memo can make a graph whose full rendering
// doubles with each level ((t, t) of (t, t) of ...): error messages show at
// most this many values.
constexpr int kMaxRenderedValues = 64;

void Render(const PickleValue& v, int* budget, std::string* out);

void RenderItems(const std::vector<PickleValue>& items, int* budget,
                 std::string* out) {
  for (size_t k = 0; k < items.size(); ++k) {
    if (k > 0) out->append(", ");
    if (*budget <= 0) {
      out->append("...");
      return;
    }
    Render(items[k], budget, out);
  }
}

void Render(const PickleValue& v, int* budget, std::string* out) {
  using K = PickleValue::Kind;
  --*budget;
  if (v.is(K::kTuple) || v.is(K::kList)) {
    out->append(v.is(K::kTuple) ? "(" : "[");
    RenderItems(*v.items, budget, out);
    out->append(v.is(K::kTuple) ? ")" : "]");
  } else {
    out->append(v.ScalarString());
  }
}

}  // namespace

std::string PickleValue::DebugString() const {
  int budget = kMaxRenderedValues;
  std::string out;
  Render(*this, &budget, &out);
  return out;
}

std::string PickleValue::ScalarString() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b ? "True" : "False";
    case Kind::kInt:
      return absl::StrCat(i);
    case Kind::kFloat:
      return absl::StrCat(f);
    case Kind::kString:
      return absl::StrCat("'", str, "'");
    case Kind::kTuple:
      return absl::StrCat("(", items->size(), " items)");
    case Kind::kList:
      return absl::StrCat("[", items->size(), " items]");
    case Kind::kDict:
      return absl::StrCat("{", dict->size(), " items}");
    case Kind::kGlobal:
      return str;
    case Kind::kTensor:
      return "<tensor>";
    case Kind::kStorage:
      return "<storage>";
  }
  return "?";
}

namespace {

class Machine {
 public:
  Machine(std::string_view data, const PickleHooks& hooks,
          const std::string& source)
      : data_(data), hooks_(hooks), source_(source) {}

  absl::StatusOr<PickleValue> Run();

 private:
  absl::Status Error(const std::string& what) const {
    return absl::DataLossError(
        absl::StrCat(source_, ": pickle byte ", op_pos_, ": ", what));
  }
  absl::Status Take(size_t n, std::string_view* out) {
    if (data_.size() - pos_ < n) return Error("truncated pickle data");
    *out = data_.substr(pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  // Little-endian unsigned integer of n bytes.
  absl::Status TakeUint(size_t n, uint64_t* out) {
    std::string_view s;
    if (auto st = Take(n, &s); !st.ok()) return st;
    *out = 0;
    for (size_t k = n; k-- > 0;) {
      *out = (*out << 8) | static_cast<unsigned char>(s[k]);
    }
    return absl::OkStatus();
  }
  absl::Status TakeLine(std::string* out) {
    size_t nl = data_.find('\n', pos_);
    if (nl == std::string_view::npos) return Error("unterminated line");
    *out = std::string(data_.substr(pos_, nl - pos_));
    pos_ = nl + 1;
    return absl::OkStatus();
  }
  absl::Status Pop(PickleValue* out) {
    if (stack_.size() <= Floor()) return Error("stack underflow");
    *out = std::move(stack_.back());
    stack_.pop_back();
    return absl::OkStatus();
  }
  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // Pops everything above the topmost MARK, and the mark.
  absl::Status PopMark(std::vector<PickleValue>* out) {
    if (marks_.empty()) return Error("no MARK on the stack");
    size_t m = marks_.back();
    marks_.pop_back();
    out->assign(std::make_move_iterator(stack_.begin() + m),
                std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return absl::OkStatus();
  }
  absl::Status Top(PickleValue** out) {
    if (stack_.size() <= Floor()) return Error("stack underflow");
    *out = &stack_.back();
    return absl::OkStatus();
  }
  absl::Status Memoize(uint64_t index) {
    PickleValue* top;
    if (auto st = Top(&top); !st.ok()) return st;
    memo_[index] = *top;
    return absl::OkStatus();
  }
  absl::Status Get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return Error(absl::StrCat("memo ", index, " unset"));
    stack_.push_back(it->second);
    return absl::OkStatus();
  }
  absl::Status SetItems(std::vector<PickleValue> kv);
  absl::Status Appends(std::vector<PickleValue> v);
  absl::Status CheckNesting(const std::vector<PickleValue>& values,
                            const void* into);
  absl::Status Visit(const PickleValue& v, const void* into, int depth,
                     std::unordered_set<const void*>* seen);
  absl::Status Step(unsigned char op, bool* stop);
  absl::Status ScalarOp(unsigned char op, bool* known);
  absl::Status ContainerOp(unsigned char op, bool* known);
  absl::Status MemoOp(unsigned char op, bool* known);
  absl::Status ObjectOp(unsigned char op, bool* known);

  std::string_view data_;
  const PickleHooks& hooks_;
  const std::string& source_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  std::vector<PickleValue> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PickleValue> memo_;
  int64_t visits_left_ = kMaxPickleVisits;
};

// Where a container goes, what it holds may not reach it: the memo aliases
// lists and dicts (as Python does), so APPEND or SETITEM through a memo'd
// copy could make a list hold itself, a cycle of shared_ptrs that would
// leak and make DebugString recurse forever. Nesting deeper than
// kMaxPickleDepth is refused too (freeing it recurses once per level).
// Shared sub-graphs are walked once per check; the walks of one pickle
// together visit at most kMaxPickleVisits values, which state dicts (whose
// containers hold strings, ints and tensors) never approach.
absl::Status Machine::CheckNesting(const std::vector<PickleValue>& values,
                                   const void* into) {
  std::unordered_set<const void*> seen;
  for (const PickleValue& v : values) {
    if (auto st = Visit(v, into, 1, &seen); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status Machine::Visit(const PickleValue& v, const void* into, int depth,
                            std::unordered_set<const void*>* seen) {
  const void* id = v.items ? static_cast<const void*>(v.items.get())
                           : static_cast<const void*>(v.dict.get());
  if (id == nullptr) return absl::OkStatus();  // not a container
  if (id == into) return Error("a container would hold itself");
  if (depth > kMaxPickleDepth) {
    return Error(
        absl::StrCat("containers nested deeper than ", kMaxPickleDepth));
  }
  if (!seen->insert(id).second) return absl::OkStatus();
  if (--visits_left_ < 0) {
    return Error(absl::StrCat("more than ", kMaxPickleVisits,
                              " container visits (shared references)"));
  }
  if (v.items) {
    for (const PickleValue& x : *v.items) {
      if (auto st = Visit(x, into, depth + 1, seen); !st.ok()) return st;
    }
  } else {
    for (const auto& [key, value] : *v.dict) {
      if (auto st = Visit(key, into, depth + 1, seen); !st.ok()) return st;
      if (auto st = Visit(value, into, depth + 1, seen); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

absl::Status Machine::SetItems(std::vector<PickleValue> kv) {
  PickleValue* d;
  if (auto st = Top(&d); !st.ok()) return st;
  if (!d->is(PickleValue::Kind::kDict) || kv.size() % 2 != 0) {
    return Error("SETITEM(S) on a non-dict or odd item count");
  }
  if (auto st = CheckNesting(kv, d->dict.get()); !st.ok()) return st;
  for (size_t k = 0; k < kv.size(); k += 2) {
    d->dict->emplace_back(std::move(kv[k]), std::move(kv[k + 1]));
  }
  return absl::OkStatus();
}

absl::Status Machine::Appends(std::vector<PickleValue> v) {
  PickleValue* l;
  if (auto st = Top(&l); !st.ok()) return st;
  if (!l->is(PickleValue::Kind::kList)) return Error("APPEND(S) on a non-list");
  if (auto st = CheckNesting(v, l->items.get()); !st.ok()) return st;
  for (auto& x : v) l->items->push_back(std::move(x));
  return absl::OkStatus();
}

absl::StatusOr<PickleValue> Machine::Run() {
  bool stop = false;
  while (!stop) {
    op_pos_ = pos_;
    std::string_view op;
    if (auto st = Take(1, &op); !st.ok()) return Error("no STOP opcode");
    if (auto st = Step(static_cast<unsigned char>(op[0]), &stop); !st.ok()) {
      return st;
    }
  }
  if (stack_.size() != 1 || !marks_.empty()) {
    return Error(absl::StrCat("STOP with ", stack_.size(), " values on stack"));
  }
  return std::move(stack_.back());
}

// Each opcode family in its own function; `known` is false when `op` is
// not of that family.
#define PICKLE_TRY(expr) \
  if (absl::Status st = (expr); !st.ok()) return st

absl::Status Machine::Step(unsigned char op, bool* stop) {
  uint64_t n = 0;
  switch (op) {
    case 0x80:
      return TakeUint(1, &n);  // PROTO
    case 0x95:
      return TakeUint(8, &n);  // FRAME (ignored)
    case '.':
      *stop = true;  // STOP
      return absl::OkStatus();
    case '(':
      marks_.push_back(stack_.size());  // MARK
      return absl::OkStatus();
    default:
      break;
  }
  bool known = true;
  for (auto family : {&Machine::ScalarOp, &Machine::ContainerOp,
                      &Machine::MemoOp, &Machine::ObjectOp}) {
    absl::Status st = (this->*family)(op, &known);
    if (known) return st;
    known = true;
  }
  return Error(absl::StrCat("unsupported pickle opcode 0x",
                            absl::Hex(op, absl::kZeroPad2)));
}

// None, booleans, integers, floats and strings.
absl::Status Machine::ScalarOp(unsigned char op, bool* known) {
  using K = PickleValue::Kind;
  uint64_t n = 0;
  std::string_view bytes;
  switch (op) {
    case 'N':
      stack_.push_back(PickleValue::None());
      break;
    case 0x88:
    case 0x89: {  // NEWTRUE / NEWFALSE
      PickleValue v;
      v.kind = K::kBool;
      v.b = op == 0x88;
      stack_.push_back(v);
      break;
    }
    case 'J':
      PICKLE_TRY(TakeUint(4, &n));  // BININT, signed 32-bit
      stack_.push_back(PickleValue::Int(static_cast<int32_t>(n)));
      break;
    case 'K':
      PICKLE_TRY(TakeUint(1, &n));  // BININT1
      stack_.push_back(PickleValue::Int(static_cast<int64_t>(n)));
      break;
    case 'M':
      PICKLE_TRY(TakeUint(2, &n));  // BININT2
      stack_.push_back(PickleValue::Int(static_cast<int64_t>(n)));
      break;
    case 0x8a: {  // LONG1: little-endian two's complement of n bytes
      PICKLE_TRY(TakeUint(1, &n));
      if (n > 8) return Error(absl::StrCat("LONG1 of ", n, " bytes"));
      uint64_t v = 0;
      PICKLE_TRY(TakeUint(n, &v));
      if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~0ULL << (8 * n);
      stack_.push_back(PickleValue::Int(static_cast<int64_t>(v)));
      break;
    }
    case 'G': {  // BINFLOAT, big-endian double
      PICKLE_TRY(Take(8, &bytes));
      uint64_t bits = 0;
      for (char c : bytes) bits = (bits << 8) | static_cast<unsigned char>(c);
      PickleValue v;
      v.kind = K::kFloat;
      std::memcpy(&v.f, &bits, sizeof(bits));
      stack_.push_back(v);
      break;
    }
    case 'X':
    case 'B':
    case 'T':  // BINUNICODE, BINBYTES, BINSTRING
      PICKLE_TRY(TakeUint(4, &n));
      PICKLE_TRY(Take(n, &bytes));
      stack_.push_back(PickleValue::String(std::string(bytes)));
      break;
    case 0x8c:
    case 'C':
    case 'U':  // SHORT_BINUNICODE/BINBYTES/BINSTRING
      PICKLE_TRY(TakeUint(1, &n));
      PICKLE_TRY(Take(n, &bytes));
      stack_.push_back(PickleValue::String(std::string(bytes)));
      break;
    default:
      *known = false;
  }
  return absl::OkStatus();
}

// Tuples, lists and dicts, and what fills them.
absl::Status Machine::ContainerOp(unsigned char op, bool* known) {
  using K = PickleValue::Kind;
  std::vector<PickleValue> items;
  PickleValue a, b;
  auto push_container = [&](K kind) {
    if (auto st = CheckNesting(items, nullptr); !st.ok()) return st;
    PickleValue v;
    v.kind = kind;
    if (kind == K::kDict) {
      v.dict =
          std::make_shared<std::vector<std::pair<PickleValue, PickleValue>>>();
    } else {
      v.items = std::make_shared<std::vector<PickleValue>>(std::move(items));
    }
    stack_.push_back(std::move(v));
    return absl::OkStatus();
  };
  switch (op) {
    case '}':
      PICKLE_TRY(push_container(K::kDict));
      break;  // EMPTY_DICT
    case ']':
      PICKLE_TRY(push_container(K::kList));
      break;  // EMPTY_LIST
    case ')':
      PICKLE_TRY(push_container(K::kTuple));
      break;  // EMPTY_TUPLE
    case 't':
      PICKLE_TRY(PopMark(&items));
      PICKLE_TRY(push_container(K::kTuple));
      break;
    case 'l':
      PICKLE_TRY(PopMark(&items));
      PICKLE_TRY(push_container(K::kList));
      break;
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1..3
      size_t count = op - 0x84;
      if (stack_.size() < Floor() + count) return Error("stack underflow");
      items.assign(std::make_move_iterator(stack_.end() - count),
                   std::make_move_iterator(stack_.end()));
      stack_.resize(stack_.size() - count);
      PICKLE_TRY(push_container(K::kTuple));
      break;
    }
    case 'd': {  // DICT from marked key/value pairs
      PICKLE_TRY(PopMark(&items));
      PICKLE_TRY(push_container(K::kDict));
      PICKLE_TRY(SetItems(std::move(items)));
      break;
    }
    case 's':  // SETITEM
      PICKLE_TRY(Pop(&b));
      PICKLE_TRY(Pop(&a));
      PICKLE_TRY(SetItems({std::move(a), std::move(b)}));
      break;
    case 'u':
      PICKLE_TRY(PopMark(&items));
      PICKLE_TRY(SetItems(std::move(items)));
      break;
    case 'a':
      PICKLE_TRY(Pop(&a));
      PICKLE_TRY(Appends({std::move(a)}));
      break;
    case 'e':
      PICKLE_TRY(PopMark(&items));
      PICKLE_TRY(Appends(std::move(items)));
      break;
    default:
      *known = false;
  }
  return absl::OkStatus();
}

// The memo and plain stack manipulation.
absl::Status Machine::MemoOp(unsigned char op, bool* known) {
  uint64_t n = 0;
  std::vector<PickleValue> items;
  PickleValue a;
  switch (op) {
    case 'q':
      PICKLE_TRY(TakeUint(1, &n));
      PICKLE_TRY(Memoize(n));
      break;
    case 'r':
      PICKLE_TRY(TakeUint(4, &n));
      PICKLE_TRY(Memoize(n));
      break;
    case 0x94:
      PICKLE_TRY(Memoize(memo_.size()));
      break;  // MEMOIZE
    case 'h':
      PICKLE_TRY(TakeUint(1, &n));
      PICKLE_TRY(Get(n));
      break;
    case 'j':
      PICKLE_TRY(TakeUint(4, &n));
      PICKLE_TRY(Get(n));
      break;
    case '0':
      PICKLE_TRY(Pop(&a));
      break;  // POP
    case '1':
      PICKLE_TRY(PopMark(&items));
      break;     // POP_MARK
    case '2': {  // DUP
      PickleValue* top;
      PICKLE_TRY(Top(&top));
      stack_.push_back(*top);
      break;
    }
    default:
      *known = false;
  }
  return absl::OkStatus();
}

// Globals, persistent ids (torch storages) and object construction.
absl::Status Machine::ObjectOp(unsigned char op, bool* known) {
  using K = PickleValue::Kind;
  PickleValue a, b;
  switch (op) {
    case 'c': {  // GLOBAL "module\nname\n"
      std::string module, name;
      PICKLE_TRY(TakeLine(&module));
      PICKLE_TRY(TakeLine(&name));
      stack_.push_back(PickleValue::Global(absl::StrCat(module, ".", name)));
      break;
    }
    case 0x93: {  // STACK_GLOBAL
      PICKLE_TRY(Pop(&b));
      PICKLE_TRY(Pop(&a));
      if (!a.is(K::kString) || !b.is(K::kString)) {
        return Error("STACK_GLOBAL needs two strings");
      }
      stack_.push_back(PickleValue::Global(absl::StrCat(a.str, ".", b.str)));
      break;
    }
    case 'Q': {  // BINPERSID
      PICKLE_TRY(Pop(&a));
      if (!hooks_.persistent_load) return Error("unexpected persistent id");
      auto v = hooks_.persistent_load(a);
      if (!v.ok()) return v.status();
      stack_.push_back(*std::move(v));
      break;
    }
    case 'R': {  // REDUCE
      PICKLE_TRY(Pop(&b));
      PICKLE_TRY(Pop(&a));
      if (!b.is(K::kTuple)) return Error("REDUCE arguments are not a tuple");
      if (!hooks_.reduce) return Error("cannot call " + a.DebugString());
      auto v = hooks_.reduce(a, b);
      if (!v.ok()) return v.status();
      stack_.push_back(*std::move(v));
      break;
    }
    case 'b': {  // BUILD: object state (OrderedDict._metadata) is dropped
      PICKLE_TRY(Pop(&a));
      PickleValue* obj;
      PICKLE_TRY(Top(&obj));
      break;
    }
    default:
      *known = false;
  }
  return absl::OkStatus();
}
#undef PICKLE_TRY

}  // namespace

absl::StatusOr<PickleValue> Unpickle(std::string_view data,
                                     const PickleHooks& hooks,
                                     const std::string& source) {
  return Machine(data, hooks, source).Run();
}

}  // namespace bertology
