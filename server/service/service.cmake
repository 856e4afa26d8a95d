# bertology_batcher: dynamic batching of Classify rows over a Model, on the
# injectable clock (common/clock.h). Included from server/CMakeLists.txt;
# paths are relative to this file.
add_library(bertology_batcher
  ${CMAKE_CURRENT_LIST_DIR}/batcher.cc
)
target_include_directories(bertology_batcher PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(bertology_batcher PUBLIC
  bertology_model
  bertology_clock
  absl::flat_hash_set
  absl::status
  absl::statusor
  absl::strings
  absl::synchronization
  absl::time
  Threads::Threads
)

bertology_test(NAME batcher_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/batcher_test.cc
  LIBS bertology_batcher GTest::gmock)

# RowBudget: sweeps admitted by their batch rows against --max_queued_rows
# (row_budget.h). In this library because the registry that owns a budget
# per model links it already.
target_sources(bertology_batcher PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/row_budget.cc)
bertology_test(NAME row_budget_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/row_budget_test.cc
  LIBS bertology_batcher GTest::gmock TIMEOUT 60)
