// The reference statistics a served model holds for mean and resample
// ablation (ComputeHeadStatistics, or a sweep's `reference` on first use),
// by id. Bounded: over `capacity` sets the oldest is dropped (a request
// naming it then gets FAILED_PRECONDITION and can compute it again; the id
// is a digest, so it comes back the same).
//
// Thread-safe. No tensors here: the statistics are held as opaque
// shared pointers (HeadReference, server/core/model/head_reference.h), with
// the numbers GetModelInfo lists beside them.
#ifndef BERTOLOGY_SERVICE_REGISTRY_REFERENCE_STORE_H_
#define BERTOLOGY_SERVICE_REGISTRY_REFERENCE_STORE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/head_mask.h"

namespace bertology {

class ReferenceStore {
 public:
  struct Info {
    std::string id;
    int examples = 0;
    int64_t tokens = 0;
    int truncated_examples = 0;
  };

  explicit ReferenceStore(int capacity) : capacity_(capacity) {}

  // The set named `id`; FAILED_PRECONDITION naming `field` and the ids held
  // when there is none (statistics are per replica: compute them there).
  absl::StatusOr<std::shared_ptr<const HeadReference>> Find(
      const std::string& id, const std::string& field) const;
  // The set named `id`, or null.
  std::shared_ptr<const HeadReference> Get(const std::string& id) const;
  // Holds `reference` under info.id; when that id is already held, keeps
  // the one held and returns it.
  std::shared_ptr<const HeadReference> Add(
      std::shared_ptr<const HeadReference> reference, const Info& info);
  // Oldest first.
  std::vector<Info> List() const;

 private:
  struct Entry {
    Info info;
    std::shared_ptr<const HeadReference> reference;
  };
  const int capacity_;
  mutable absl::Mutex mu_;
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_REGISTRY_REFERENCE_STORE_H_
