#include "server/service/registry/reference_store.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace bertology {

absl::StatusOr<std::shared_ptr<const HeadReference>> ReferenceStore::Find(
    const std::string& id, const std::string& field) const {
  if (std::shared_ptr<const HeadReference> ref = Get(id)) return ref;
  std::vector<std::string> held;
  for (const Info& info : List()) held.push_back(info.id);
  return absl::FailedPreconditionError(absl::StrCat(
      field, "=", id,
      " is not held by this replica (statistics live on each replica: call "
      "ComputeHeadStatistics there, or give a sweep its `reference`); held: ",
      held.empty() ? "none" : absl::StrJoin(held, ", ")));
}

std::shared_ptr<const HeadReference> ReferenceStore::Get(
    const std::string& id) const {
  absl::MutexLock lock(&mu_);
  for (const Entry& e : entries_) {
    if (e.info.id == id) return e.reference;
  }
  return nullptr;
}

std::shared_ptr<const HeadReference> ReferenceStore::Add(
    std::shared_ptr<const HeadReference> reference, const Info& info) {
  absl::MutexLock lock(&mu_);
  for (const Entry& e : entries_) {
    if (e.info.id == info.id) return e.reference;
  }
  entries_.push_back(Entry{info, reference});
  while (static_cast<int>(entries_.size()) > std::max(1, capacity_)) {
    entries_.pop_front();
  }
  return reference;
}

std::vector<ReferenceStore::Info> ReferenceStore::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<Info> out;
  for (const Entry& e : entries_) out.push_back(e.info);
  return out;
}

}  // namespace bertology
