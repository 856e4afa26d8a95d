# bertology_model: the torch::nn BERT (bert_layer, bert_model), the loaded,
# thread-safe Model facade (model) and the sizing of libtorch's and
# OpenBLAS's thread pools (threading).
add_library(bertology_model STATIC
  bert_layer.cc
  bert_model.cc
  model.cc
  model_forward.cc
  threading.cc
)
target_include_directories(bertology_model PUBLIC ${BERTOLOGY_CORE_INCLUDE})
target_link_libraries(bertology_model PUBLIC
  bertology_masks
  bertology_checkpoint
  bertology_tokenizer
  ${TORCH_LIBRARIES}
  absl::status
  absl::statusor
  absl::strings
  ${CMAKE_DL_LIBS}
)

bertology_test(NAME bert_model_test SOURCES bert_model_test.cc
  LIBS bertology_model)
# Numerical goldens from tests/golden/make_golden.py, plus the shared tiny
# BertModel fixture.
bertology_test(NAME model_test SOURCES model_test.cc
  LIBS bertology_model nlohmann_json::nlohmann_json)
