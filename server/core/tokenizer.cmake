# bertology_tokenizer: BERT's vocab and WordPiece tokenizer with offsets;
# no libtorch.
add_library(bertology_tokenizer STATIC
  vocab.cc
  basic_tokenizer.cc
  wordpiece.cc
  tokenizer.cc
)
target_include_directories(bertology_tokenizer PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(bertology_tokenizer PUBLIC
  absl::status
  absl::statusor
  absl::strings
  PkgConfig::UTF8PROC
  bertology_utf8
)

bertology_test(NAME vocab_test SOURCES vocab_test.cc LIBS bertology_tokenizer)
bertology_test(NAME basic_tokenizer_test SOURCES basic_tokenizer_test.cc
               LIBS bertology_tokenizer)
bertology_test(NAME wordpiece_test SOURCES wordpiece_test.cc
               LIBS bertology_tokenizer)
bertology_test(NAME tokenizer_test SOURCES tokenizer_test.cc
               LIBS bertology_tokenizer nlohmann_json::nlohmann_json)
bertology_test(NAME tokenizer_encode_test SOURCES tokenizer_encode_test.cc
               LIBS bertology_tokenizer)
