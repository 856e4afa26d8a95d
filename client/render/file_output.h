// Writing rendered documents to disk.
#ifndef BERTOLOGY_CLIENT_RENDER_FILE_OUTPUT_H_
#define BERTOLOGY_CLIENT_RENDER_FILE_OUTPUT_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace bertology::render {

// Writes `contents` to `<dir>/<name>`, creating `dir` (and parents) first;
// the file is written to a temporary name and renamed so readers never see
// a partial file. Appends the path to `written` when non-null.
absl::Status WriteOutputFile(const std::string& dir, const std::string& name,
                             std::string_view contents,
                             std::vector<std::string>* written);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_FILE_OUTPUT_H_
