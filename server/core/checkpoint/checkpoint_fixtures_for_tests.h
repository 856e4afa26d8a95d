// Test-only: the torch.save / safetensors fixtures written by
// tests/fixtures/make_checkpoint_fixtures.py (real torch.save, run with
// Debian's /usr/bin/python3), made once per test binary.
#ifndef BERTOLOGY_CORE_CHECKPOINT_CHECKPOINT_FIXTURES_FOR_TESTS_H_
#define BERTOLOGY_CORE_CHECKPOINT_CHECKPOINT_FIXTURES_FOR_TESTS_H_

#include <string>

namespace bertology {

// The fixture directory, or "" with the reason in `why` (no python3, no
// torch, no script) so the caller can GTEST_SKIP with it.
std::string MakeCheckpointFixtures(std::string* why);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_CHECKPOINT_CHECKPOINT_FIXTURES_FOR_TESTS_H_
