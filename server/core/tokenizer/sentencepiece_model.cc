#include "server/core/tokenizer/sentencepiece_model.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#ifndef BERTOLOGY_SENTENCEPIECE_PLUGIN_BUILT
#define BERTOLOGY_SENTENCEPIECE_PLUGIN_BUILT ""
#endif

#if defined(__SANITIZE_ADDRESS__)
#define BERTOLOGY_NO_DEEPBIND 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BERTOLOGY_NO_DEEPBIND 1
#endif
#endif

namespace bertology {
namespace {

constexpr char kPluginName[] = "libbertology_sentencepiece_plugin.so";

struct Plugin {
  void* (*load)(const char*, size_t, char*, size_t) = nullptr;
  void (*free)(void*) = nullptr;
  int (*size)(const void*) = nullptr;
  int (*unk_id)(const void*) = nullptr;
  void (*encode)(const void*, const char*, size_t,
                 void (*)(void*, int, const char*, size_t, int, int),
                 void*) = nullptr;
  std::string error;  // why it did not load; empty when it did
};

// Where the plugin may be: $BERTOLOGY_SENTENCEPIECE_PLUGIN, beside the
// executable, in ../lib from it (an install), and where the build wrote it.
std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("BERTOLOGY_SENTENCEPIECE_PLUGIN")) {
    out.push_back(env);
  }
  std::error_code ec;
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / kPluginName).string());
    out.push_back(
        (exe.parent_path().parent_path() / "lib" / kPluginName).string());
  }
  if (*BERTOLOGY_SENTENCEPIECE_PLUGIN_BUILT != '\0') {
    out.push_back(BERTOLOGY_SENTENCEPIECE_PLUGIN_BUILT);
  }
  return out;
}

const Plugin& LoadPlugin() {
  static const Plugin* plugin = [] {
    auto* p = new Plugin();
#ifdef BERTOLOGY_NO_DEEPBIND
    p->error =
        "XLM-R's SentencePiece tokenizer cannot load in an AddressSanitizer "
        "build (the plugin needs dlopen's RTLD_DEEPBIND, which ASan refuses)";
    return p;
#else
    std::string tried;
    void* handle = nullptr;
    for (const std::string& path : Candidates()) {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        tried += " " + path;
        continue;
      }
      // RTLD_LOCAL keeps libsentencepiece's bundled protobuf-lite 3.14 out
      // of the global scope, where libtorch's and gRPC's libprotobuf 3.21
      // would bind to it; RTLD_DEEPBIND makes libsentencepiece bind to its
      // own copy rather than theirs.
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (handle == nullptr) {
        p->error = std::string("cannot load ") + path + ": " + dlerror();
        return p;
      }
      break;
    }
    if (handle == nullptr) {
      p->error = std::string("cannot find ") + kPluginName + " (tried" + tried +
                 "; set BERTOLOGY_SENTENCEPIECE_PLUGIN)";
      return p;
    }
    p->load = reinterpret_cast<decltype(p->load)>(
        dlsym(handle, "bertology_spm_load"));
    p->free = reinterpret_cast<decltype(p->free)>(
        dlsym(handle, "bertology_spm_free"));
    p->size = reinterpret_cast<decltype(p->size)>(
        dlsym(handle, "bertology_spm_size"));
    p->unk_id = reinterpret_cast<decltype(p->unk_id)>(
        dlsym(handle, "bertology_spm_unk_id"));
    p->encode = reinterpret_cast<decltype(p->encode)>(
        dlsym(handle, "bertology_spm_encode"));
    if (!p->load || !p->free || !p->size || !p->unk_id || !p->encode) {
      p->error = std::string(kPluginName) + " lacks a bertology_spm_ symbol";
    }
    return p;
#endif
  }();
  return *plugin;
}

void Emit(void* context, int id, const char* piece, size_t piece_size,
          int begin, int end) {
  static_cast<std::vector<SentencePiece>*>(context)->push_back(
      {id, std::string(piece, piece_size), begin, end});
}

}  // namespace

SentencePieceModel::SentencePieceModel() = default;

SentencePieceModel::~SentencePieceModel() {
  if (processor_ != nullptr) LoadPlugin().free(processor_);
}

std::unique_ptr<SentencePieceModel> SentencePieceModel::Load(
    const std::string& serialized, std::string* error) {
  const Plugin& plugin = LoadPlugin();
  if (!plugin.error.empty()) {
    *error = plugin.error;
    return nullptr;
  }
  char message[512] = {0};
  void* processor = plugin.load(serialized.data(), serialized.size(), message,
                                sizeof(message));
  if (processor == nullptr) {
    *error = message;
    return nullptr;
  }
  std::unique_ptr<SentencePieceModel> model(new SentencePieceModel());
  model->processor_ = processor;
  return model;
}

std::vector<SentencePiece> SentencePieceModel::Encode(
    std::string_view text) const {
  std::vector<SentencePiece> out;
  LoadPlugin().encode(processor_, text.data(), text.size(), &Emit, &out);
  return out;
}

int SentencePieceModel::size() const { return LoadPlugin().size(processor_); }

int SentencePieceModel::unk_id() const {
  return LoadPlugin().unk_id(processor_);
}

}  // namespace bertology
