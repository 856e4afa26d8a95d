#include "client/cli/args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace bertology {
namespace client {

namespace {

// What CLI11 would refuse with a message of its own wording (which differs
// between CLI11 versions: 2.1 on Debian 12, 2.4 on 13), refused here first
// in this parser's words: a value given to a boolean flag, a valued flag
// with nothing after it. Unknown flags come back from CLI11 as extras.
absl::Status CheckFlagValues(const std::vector<std::string>& argv,
                             const std::vector<FlagSpec>& specs) {
  for (size_t i = 0; i < argv.size() && argv[i] != "--"; ++i) {
    const std::string& a = argv[i];
    if (!absl::StartsWith(a, "--")) continue;
    const size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? eq : eq - 2);
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const FlagSpec& s) { return s.name == name; });
    if (spec == specs.end()) continue;
    if (!spec->takes_value && eq != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " takes no value"));
    }
    if (spec->takes_value && eq == std::string::npos && i + 1 == argv.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Args> Args::Parse(const std::vector<std::string>& argv,
                                 const std::vector<FlagSpec>& specs) {
  if (absl::Status s = CheckFlagValues(argv, specs); !s.ok()) return s;
  Args args;
  CLI::App app;
  app.set_help_flag();  // --help is a FlagSpec (ParseCommandArgs adds it)
  app.allow_extras();   // unknown flags come back to be named below
  std::map<std::string, int64_t> counts;  // boolean flags
  for (const FlagSpec& spec : specs) {
    const std::string name = absl::StrCat("--", spec.name);
    if (spec.takes_value) {
      // One value per occurrence (`--random 0.1 pos`: pos stays
      // positional), every occurrence kept in order.
      app.add_option(name, args.values_[spec.name])
          ->type_size(1)
          ->expected(1)
          ->allow_extra_args(false)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    } else {
      app.add_flag(name, counts[spec.name])->disable_flag_override();
    }
  }
  app.add_option("positional", args.positional_);
  // CLI11 2.1 refuses `--name=` (an empty value, which --label= and
  // --text-b= mean: "no such column"); `--name ""` it takes. It parses a
  // reversed vector (it pops from the back).
  std::vector<std::string> reversed;
  bool flags_done = false;
  for (const std::string& a : argv) {
    flags_done = flags_done || a == "--";
    if (!flags_done && absl::StartsWith(a, "--") && absl::EndsWith(a, "=")) {
      reversed.push_back(a.substr(0, a.size() - 1));
      reversed.push_back("");
    } else {
      reversed.push_back(a);
    }
  }
  std::reverse(reversed.begin(), reversed.end());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  for (const std::string& extra : app.remaining()) {
    if (extra == "--") continue;  // ended the flags; CLI11 leaves it here
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown flag ", extra.substr(0, extra.find('=')), " (see --help)"));
  }
  for (auto& [name, count] : counts) {
    if (count > 0) args.values_[name].push_back("true");
  }
  // Flags never given have no entry (Has() is false for them).
  for (auto it = args.values_.begin(); it != args.values_.end();) {
    it = it->second.empty() ? args.values_.erase(it) : std::next(it);
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
