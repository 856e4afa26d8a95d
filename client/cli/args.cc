#include "client/cli/args.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bertology {
namespace client {

absl::StatusOr<Args> Args::Parse(const std::vector<std::string>& argv,
                                 const std::vector<FlagSpec>& specs) {
  Args args;
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (flags_done || !absl::StartsWith(a, "--") || a == "-") {
      args.positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    std::vector<std::string> kv =
        absl::StrSplit(a.substr(2), absl::MaxSplits('=', 1));
    const std::string& name = kv[0];
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const FlagSpec& s) { return s.name == name; });
    if (spec == specs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    if (!spec->takes_value) {
      if (kv.size() == 2) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " takes no value"));
      }
      args.values_[name].push_back("true");
    } else if (kv.size() == 2) {
      args.values_[name].push_back(kv[1]);
    } else if (i + 1 < argv.size()) {
      args.values_[name].push_back(argv[++i]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value"));
    }
  }
  return args;
}

std::string Args::Get(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second.back();
}

std::vector<std::string> Args::GetAll(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>() : it->second;
}

absl::StatusOr<int> Args::GetInt(const std::string& name, int def) const {
  if (!Has(name)) return def;
  int v;
  if (!absl::SimpleAtoi(Get(name), &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, "=", Get(name), " is not an integer"));
  }
  return v;
}

absl::StatusOr<double> Args::GetDouble(const std::string& name,
                                       double def) const {
  if (!Has(name)) return def;
  double v;
  if (!absl::SimpleAtod(Get(name), &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, "=", Get(name), " is not a number"));
  }
  return v;
}

std::string FlagsHelp(const std::string& usage,
                      const std::vector<FlagSpec>& specs) {
  std::string out = usage;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "\nFlags:\n";
  for (const FlagSpec& s : specs) {
    std::string left = absl::StrCat("  --", s.name);
    if (s.takes_value) absl::StrAppend(&left, "=", s.value_name);
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "\n" + std::string(28, ' ');
    absl::StrAppend(&out, left, s.help, "\n");
  }
  return out;
}

}  // namespace client
}  // namespace bertology
