# bertology_sweep: the sweep executor (baseline once, masked passes from the
# cached unmasked prefix, dense per-row-mask batches); no gRPC.
add_library(bertology_sweep
  sweep.cc
)
target_include_directories(bertology_sweep PUBLIC ${BERTOLOGY_CORE_INCLUDE})
target_link_libraries(bertology_sweep PUBLIC bertology_model
  absl::status absl::statusor absl::strings absl::str_format)

bertology_test(NAME sweep_test
  SOURCES sweep_test.cc
  LIBS bertology_sweep GTest::gmock)
