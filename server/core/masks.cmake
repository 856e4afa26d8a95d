# Head masks and the sweep mask generators: plain values, no libtorch, so
# the client's scheduler expands generators exactly as the server does.
add_library(bertology_masks STATIC head_mask.cc mask_generators.cc)
target_include_directories(bertology_masks PUBLIC ${BERTOLOGY_CORE_INCLUDE})
target_link_libraries(bertology_masks PUBLIC
  absl::status absl::statusor absl::strings absl::str_format)
