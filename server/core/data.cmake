# Labelled pair datasets (TSV/CSV/JSONL); no libtorch, so the CLI can use it.
add_library(bertology_data STATIC pair_dataset.cc)
target_include_directories(bertology_data PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(bertology_data PUBLIC absl::status absl::statusor
                      absl::strings nlohmann_json::nlohmann_json)
bertology_test(NAME pair_dataset_test SOURCES pair_dataset_test.cc
               LIBS bertology_data)
