#include "client/render/file_output.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace bertology::render {

absl::Status WriteOutputFile(const std::string& dir, const std::string& name,
                             std::string_view contents,
                             std::vector<std::string>* written) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path folder = dir.empty() ? fs::path(".") : fs::path(dir);
  fs::create_directories(folder, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", folder.string(), ": ", ec.message()));
  }
  const fs::path path = folder / name;
  const fs::path tmp = folder / absl::StrCat(".", name, ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) {
      return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot rename to ", path.string(), ": ", ec.message()));
  }
  if (written != nullptr) written->push_back(path.string());
  return absl::OkStatus();
}

}  // namespace bertology::render
