// Hand-parsed subcommand flags: `--name=value`, `--name value` and boolean
// `--name`, with dashes in names (`--text-a`), which absl flags cannot do.
// Unknown flags are usage errors; anything not starting with "--" is a
// positional argument ("--" ends the flags).
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
