// Subcommand flags through CLI11 (libcli11-dev): `--name=value`,
// `--name value` and boolean `--name`, with dashes in names (`--text-a`),
// which absl flags cannot do. A valued flag takes one value per occurrence
// and may repeat. Unknown flags are usage errors, and so is any other
// argument starting with "-" (a text that starts with one goes after "--",
// which ends the flags, or in --text-a=...); the rest are positional.
// The help text is FlagsHelp's, from the same FlagSpec table.
#ifndef BERTOLOGY_CLIENT_CLI_ARGS_H_
#define BERTOLOGY_CLIENT_CLI_ARGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {
namespace client {

struct FlagSpec {
  std::string name;  // without the dashes
  bool takes_value = true;
  std::string help;
  std::string value_name = "VALUE";  // in the help text
};

class Args {
 public:
  // INVALID_ARGUMENT naming the flag for an unknown flag, a missing value or
  // a value given to a boolean flag.
  static absl::StatusOr<Args> Parse(const std::vector<std::string>& argv,
                                    const std::vector<FlagSpec>& specs);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  // The last value of a flag, or `def`.
  std::string Get(const std::string& name, const std::string& def = "") const;
  // Every value of a repeated flag, in order.
  std::vector<std::string> GetAll(const std::string& name) const;
  // INVALID_ARGUMENT "--name=x is not an integer" and the like.
  absl::StatusOr<int> GetInt(const std::string& name, int def) const;
  absl::StatusOr<double> GetDouble(const std::string& name, double def) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

// The usage text: `usage` then one line per flag, aligned.
std::string FlagsHelp(const std::string& usage,
                      const std::vector<FlagSpec>& specs);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_ARGS_H_
