# bertology_checkpoint: config.json parsing, the safetensors and torch.save
# (zip) readers, and Checkpoint::Load, which validates an HF model
# directory. No tokenizer dependency: vocab.txt is only checked for
# existence and [CLS].
add_library(bertology_checkpoint STATIC
  bert_config.cc
  safetensors.cc
  pickle.cc
  pytorch_bin.cc
  checkpoint.cc
)
target_include_directories(bertology_checkpoint PUBLIC ${BERTOLOGY_CORE_INCLUDE})
target_link_libraries(bertology_checkpoint PUBLIC
  ${TORCH_LIBRARIES}
  absl::status
  absl::statusor
  absl::strings
  nlohmann_json::nlohmann_json
)

foreach(t bert_config safetensors pickle)
  bertology_test(NAME ${t}_test SOURCES ${t}_test.cc LIBS bertology_checkpoint)
endforeach()
# Both need the torch.save fixtures (checkpoint_fixtures.cc).
foreach(t pytorch_bin checkpoint)
  bertology_test(NAME ${t}_test SOURCES ${t}_test.cc checkpoint_fixtures.cc
                 LIBS bertology_checkpoint)
endforeach()
