#include "client/render/color_scale.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_format.h"

namespace bertology::render {
namespace {

struct Rgb {
  double r, g, b;
};

Rgb Mix(const Rgb& a, const Rgb& b, double t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

std::string Hex(const Rgb& c) {
  auto byte = [](double v) {
    return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0)));
  };
  return absl::StrFormat("#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
}

// Interpolates along three stops at t = 0, 0.5, 1.
Rgb ThreeStop(const Rgb& lo, const Rgb& mid, const Rgb& hi, double t) {
  return t < 0.5 ? Mix(lo, mid, t * 2) : Mix(mid, hi, (t - 0.5) * 2);
}

constexpr Rgb kWhite{255, 255, 255};
constexpr Rgb kBlue{5, 48, 97};        // RdBu dark blue
constexpr Rgb kMidBlue{67, 147, 195};  // RdBu mid blue
constexpr Rgb kRed{103, 0, 31};        // RdBu dark red
constexpr Rgb kMidRed{214, 96, 77};    // RdBu mid red

}  // namespace

std::string DivergingColor(double value, double max_abs) {
  if (std::isnan(value)) return kMissingColor;
  if (!(max_abs > 0)) return Hex(kWhite);
  const double t = std::clamp(value / max_abs, -1.0, 1.0);
  if (t < 0) return Hex(ThreeStop(kWhite, kMidBlue, kBlue, -t));
  return Hex(ThreeStop(kWhite, kMidRed, kRed, t));
}

std::string SequentialColor(double value) {
  if (std::isnan(value)) return kMissingColor;
  const double t = std::clamp(value, 0.0, 1.0);
  return Hex(ThreeStop(kWhite, kMidBlue, kBlue, t));
}

std::string TextColorOn(const std::string& background) {
  if (background.size() != 7 || background[0] != '#') return "#000000";
  const long v = std::strtol(background.c_str() + 1, nullptr, 16);
  const double r = (v >> 16) & 0xFF, g = (v >> 8) & 0xFF, b = v & 0xFF;
  const double luma = 0.299 * r + 0.587 * g + 0.114 * b;
  return luma < 128 ? "#ffffff" : "#000000";
}

}  // namespace bertology::render
